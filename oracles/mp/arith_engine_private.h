/* arith_private.h — the engine's own view of an arithmetic (struct ug_ar), shared by the
 * files that implement arith.h (arith.c, arith_tile.c) and by no one else: an operator's
 * oracle sees ug_ar only through arith.h and arith_inline.h, and never its mode. */
#ifndef UG_ARITH_PRIVATE_H
#define UG_ARITH_PRIVATE_H
#include <stddef.h>

#include <mpfr.h>

#include "oracles/mp/arith.h"

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

/* ug_dot_d_cols chunk by chunk of 64 columns (arith.c): every arithmetic, each column's own
 * operations in ug_dot_d's order. arith_tile.c's ug_dot_d_cols sends the naive bf16/fp16
 * sums past 64 terms to the rows' vector form and the rest here. */
void ug_dot_d_cols_each(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out);

#endif
