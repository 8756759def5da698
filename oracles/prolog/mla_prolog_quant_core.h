/* mla_prolog_quant_core.h — the exact per-token computation of mla_prolog_quant, callable
 * with any op's tensors and output indices: mla_prolog_quant's oracle uses it, and so can
 * the fused mla_indexer_prolog_quant (one x, union of outputs) without copying it.
 *
 * Math (docs: oracles/prolog/mla_prolog_quant.json), every value exact except the
 * roundings the reference golden makes (marked in the .c):
 *     c_q  = bf16(RMSNorm(bf16(x[t]*W_dq); gamma_q, eps))                 ug_mlaq_cq
 *     q_i8, s_q = DynQuant(c_q)  (amax/127 in fp32, rne codes)             ug_mlaq_quant_emit
 *     q[n] = bf16((q_i8*W_uq_i8[:, n])*s_q*s_w)  from the KERNEL's codes   ug_mlaq_q_head
 *     q_nope_abs = q[n][:dn]*W_uk[n]; q_rope = RoPE(q[n][dn:])             ug_mlaq_nope_abs_at, ug_mla_rope_at
 *     kv = bf16(x[t]*W_dkv); c_kv = bf16(RMSNorm(kv[:Lkv]; gamma_kv, eps)) ug_mlaq_kv
 *     c_kv quantised per group of `group` elements, k_rope = RoPE(kv[Lkv:])
 *
 * Usage: fill a ug_mlaq_in from the case's decoded inputs (ug_case_input(c, name)->values);
 * call ug_mlaq_cq / ug_mlaq_kv into caller-owned ug_num rows; quantise a row or group
 * with ug_mlaq_quant_emit, naming the judged outputs (codes, scales, view; -1 for none)
 * and where in them the row lies. Staged rule: the codes are judged against the value
 * divided by the KERNEL's exported scale (and, in the view, by the oracle's own fp32
 * scale); the query path continues from the kernel's codes and scale (ug_mlaq_q_head).
 * All functions allocate ug_nums in ar: wrap each row in ug_ar_mark/ug_ar_release. */
#ifndef UG_ORACLE_MLA_PROLOG_QUANT_CORE_H
#define UG_ORACLE_MLA_PROLOG_QUANT_CORE_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/oracle.h"
#include "oracles/prolog/mla_common.h"

/* The exact inputs of one prolog (row-major doubles, the case's decoded tensors). */
typedef struct {
    size_t h, Lq, N, Lkv, dn, dr, group; /* group: c_kv elements per scale */
    double eps;                          /* fp32 value */
    int rope_inter;                      /* rope_layout interleaved_to_half */
    const double *x;                     /* [T, h] */
    const double *wdq, *gq;              /* [h, Lq], [Lq] */
    const double *wuq, *wuq_s;           /* int8 [Lq, N*(dn+dr)], fp32 [N*(dn+dr)] */
    const int8_t *wuq8;                  /* w_uq's int8 storage (its exact codes) */
    const double *wuk;                   /* [N, dn, Lkv] */
    const double *wdkv, *gkv;            /* [h, Lkv+dr], [Lkv] */
    const double *cs, *sn;               /* [T, dr] */
} ug_mlaq_in;

/* One DynQuant's judged outputs (indices into the selection; -1: not judged). */
typedef struct {
    int codes, scales, view;
} ug_mlaq_qouts;

/* c_q of token t into cq[Lq] (bf16 values, exact in between); sq: scratch of Lq numbers.
 * dots: x[t].W_dq already taken (ug_dot_d_rows, plain arithmetics), or NULL. settled
 * (Lq flags, or NULL): where every correct device rounds c_q to the same bf16, given its
 * row of bf16(x.W_dq) (the tie rule of ug_mlaq_quant_emit). */
void ug_mlaq_cq(ug_ar *ar, const ug_mlaq_in *m, size_t t, const ug_num *dots, ug_num *cq, ug_num *sq,
                unsigned char *settled);

/* kv of token t into kv[Lkv+dr]: kv[:Lkv] = c_kv (bf16 RMSNorm of bf16 kv), kv[Lkv:] = the
 * bf16 k_rope part before RoPE; sq: scratch of Lkv numbers. dots: x[t].W_dkv already taken,
 * or NULL. settled: Lkv flags as ug_mlaq_cq's, or NULL. */
void ug_mlaq_kv(ug_ar *ar, const ug_mlaq_in *m, size_t t, const ug_num *dots, ug_num *kv, ug_num *sq,
                unsigned char *settled);

/* What decides an exact tie of a row's codes: settled flags of the n values (ug_mlaq_cq /
 * ug_mlaq_kv, offset to the row) and the RMS row's projection x[t] . w[:, 0..ncols) (w [h, ld]),
 * whose sums must be exact in fp32 for every device to hold the same values. */
typedef struct {
    const unsigned char *settled;
    const double *x, *w;
    size_t h, ld, ncols;
} ug_mlaq_tie;

/* DynQuant of v[0..n), whose codes sit at flat indices code_base + [0, n) of q->codes and
 * q->view and whose scale sits at scale_idx of q->scales: emits the selected scale (exact
 * amax/127; NaN for a row with NaN/inf), codes v/scale_kernel (0 for a zero or non-finite
 * row; the exact scale where the kernel's is not positive and finite) and view codes
 * v/fp32(amax/127). Where v/scale is exactly k + 1/2 and tie (NULL: never) says every
 * correct device holds that v, the code judged is the even one (no legal flip). */
void ug_mlaq_quant_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, const ug_mlaq_qouts *q, const ug_num *v,
                        size_t n, size_t code_base, size_t scale_idx, const ug_mlaq_tie *tie);

/* The int dots sum_j codes[j]*w_uq[j, n*(dn+dr) + c] of the ng heads n = heads[g] into
 * dot[g*(dn+dr) + c], from the kernel's codes of the token (Lq doubles), in one row-order
 * pass over w_uq (exact; int8_dot.h). col0, acc: scratch of ng and ng*(dn+dr). */
void ug_mlaq_q_dots(const ug_mlaq_in *m, const double *codes, const size_t *heads, size_t ng, size_t *col0,
                    int32_t *acc, int64_t *dot);
/* q of head n into q[dn+dr] from its int dots (ug_mlaq_q_dots) and the token's scale sq:
 * bf16(dot[c] * sq * w_uq_scale[c]). */
void ug_mlaq_q_head(ug_ar *ar, const ug_mlaq_in *m, const int64_t *dot, double sq, size_t n, ug_num *q);

/* q_nope_abs[., n, l] = sum_c q[c]*w_uk[n, c, l] over the dn nope columns of q (exact). */
ug_num ug_mlaq_nope_abs_at(ug_ar *ar, const ug_mlaq_in *m, const ug_num *q, size_t n, size_t l);

/* mla_prolog_quant's whole definition (mla_prolog_quant.c), for an op that holds its params
 * and tensors under the same names (a fused op's superset): the check (the message names
 * P's op), the builder of slot_mapping / cos / sin, the oracle of outputs 0..6 in
 * mla_prolog_quant's order (q_nope_abs q_rope q_norm q_norm_scale kv_cache kv_scale
 * kr_cache) and the views q_norm@oracle_scale / kv_cache@oracle_scale found by name, the
 * geometry of those outputs and the scratch. */
int ug_mlaq_check(const ug_params *P, char *err, size_t errlen);
int ug_mlaq_build(ug_case *c, char *err, size_t errlen);
int ug_mlaq_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);
void ug_mlaq_geometry(const ug_case *c, int out, ug_geom *g);
double ug_mlaq_scratch(const ug_params *P);
#endif
