/* arith_engine_private.h — the engine's own view of an arithmetic (struct ug_ar), shared by
 * the files that implement arith.h (arith.c, arith_engine.c, arith_fn.c, arith_tile.c) and
 * by no one else: an operator's oracle sees ug_ar only through arith.h and arith_inline.h,
 * and never its mode. */
#ifndef UG_ARITH_ENGINE_PRIVATE_H
#define UG_ARITH_ENGINE_PRIVATE_H
#include <stddef.h>

#include <mpfr.h>

#include "oracles/mp/arith_num.h"

struct ug_ar {
    ug_ar_mode mode;
    mpfr_prec_t prec;
    ug_dtype naive_dt;
    mpfr_t **blocks; /* pool: blocks of POOL_BLOCK numbers, never moved */
    size_t nblocks, used, inited;
    mpfr_ptr *ptrs; /* scratch for mpfr_sum */
    mpfr_t *prods;  /* scratch products, 128 bits: exact for two doubles */
    size_t scratch_cap, prods_inited;
    ug_ar_sink *sinks;
    int nsinks;
    unsigned long emitted, unsure;
};

#define UG_AR_IS_MP(ar) ((ar)->mode == UG_AR_EXACT || (ar)->mode == UG_AR_MPFR_SEQ)
#define UG_AR_IS_DEV(ar) ((ar)->mode == UG_AR_DEVICE)
/* ugx_of(ar), inline: the arithmetic as arith_inline.h's forms take it. */
#define UG_AR_ARX(ar) ((ug_arx){(ar), (ar)->mode, (ar)->naive_dt})

#endif
