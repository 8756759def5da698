/* flash_attention_common.h — what flash_attention_mha and flash_attention_mha_grad share:
 * their params (variable-length batches in the packed TND layout), the inputs both build
 * (q, k, v, cu_seqlens_q/k), the causal visibility rule, and the exact softmax row.
 *
 * Both operators are defined on the same forward, so its exact row (scores, max,
 * exponentials, normaliser) is written once here on the arith.h primitives and serves
 * the forward oracle, the gradient oracle and the gradient's input builder (which
 * produces o and lse as a forward kernel would). */
#ifndef UG_ORACLE_FLASH_ATTENTION_COMMON_H
#define UG_ORACLE_FLASH_ATTENTION_COMMON_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/oracle.h"

#define UG_FA_MAX_BATCH 64
#define UG_FA_MAX_LEN 65536

/* Params: "seqlens" "Q[:K],Q[:K],..." (one entry per batch element, K defaults to Q),
 * "heads" H, "head_dim" D, "causal" 0/1 (bottom-right aligned), "scale" (fp32, default
 * 1/sqrt(D)). cu_q/cu_k are the prefix sums the cu_seqlens tensors hold. */
typedef struct {
    long batch, heads, dim;
    int causal;
    double scale; /* fp32 value */
    long lq[UG_FA_MAX_BATCH], lk[UG_FA_MAX_BATCH];
    long cu_q[UG_FA_MAX_BATCH + 1], cu_k[UG_FA_MAX_BATCH + 1];
    long tq, tk; /* total query and key tokens */
} ug_fa_params;

/* Parses and validates the params; op names the operator in messages. -2 on bad input. */
int ug_fa_read_params(const ug_spec *s, const char *op, ug_fa_params *p, char *err, size_t errlen);

/* Checks the dtype and adds q[Tq,H,D], k[Tk,H,D], v[Tk,H,D] (random, dtype), and
 * cu_seqlens_q, cu_seqlens_k (int32 [B+1], written from p), in that order. */
int ug_fa_add_inputs(ug_case *c, const char *op, const ug_fa_params *p, char *err, size_t errlen);

/* Number of keys query row i (local to its batch element) sees: a prefix of the
 * element's keys; 0 when causal masks them all (k shorter than q). */
long ug_fa_visible(const ug_fa_params *p, long b, long i);

/* Batch element of global query token t. */
long ug_fa_batch_of(const ug_fa_params *p, long t);

/* The exact softmax row of query token t (global), head h, over its n visible keys:
 * e[j] = exp(scale*q.k_j - m), m the row max, *total = sum_j e[j]. Returns n (0: the
 * row sees no key; m and total are then not set). e must hold lk[b] numbers. */
long ug_fa_row(ug_ar *ar, const ug_fa_params *p, const double *q, const double *k, long t, long h, ug_num *e, ug_num *m,
               ug_num *total);

#endif
