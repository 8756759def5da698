/* flash_attention_common.h — what flash_attention_mha and flash_attention_mha_grad share
 * (and, for the softmax row and its special values, page_attention):
 * their declared params and derived sizes (variable-length batches in the packed TND
 * layout), the inputs both have (q, k, v, cu_seqlens_q/k), the causal visibility rule,
 * and the exact softmax row with its special-value rule.
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

/* The declared params both operators take (seqlens, heads, head_dim, causal, scale), their
 * derived sizes (batch, total_q, total_k) and the cross-param check (batch count, at least
 * one query and key token; messages name the op). Size is the case memory budget's. */
int ug_fa_check(const ug_params *P, char *err, size_t errlen);

/* The dtype rule of the q/k/v-like tensors: the case dtype, bf16 or fp16 only. */
#define UG_FA_DTYPE "bf16:bf16,fp16:fp16"

/* The params as the oracles use them. cu_q/cu_k are the prefix sums the cu_seqlens
 * tensors hold. */
typedef struct {
    long batch, heads, dim;
    int causal;
    double scale; /* fp32 value; the sentinel 0 resolved to fp32(1/sqrt(D)) */
    long lq[UG_FA_MAX_BATCH], lk[UG_FA_MAX_BATCH];
    long cu_q[UG_FA_MAX_BATCH + 1], cu_k[UG_FA_MAX_BATCH + 1];
    long tq, tk; /* total query and key tokens */
} ug_fa_params;

/* Reads the case's parsed (already validated) params. */
void ug_fa_read(const ug_params *P, ug_fa_params *p);

/* Fills the built inputs cu_seqlens_q and cu_seqlens_k from p. */
void ug_fa_build_cu(ug_case *c, const ug_fa_params *p);

/* Number of keys query row i (local to its batch element) sees: a prefix of the
 * element's keys; 0 when causal masks them all (k shorter than q). */
long ug_fa_visible(const ug_fa_params *p, long b, long i);

/* Batch element of global query token t. */
long ug_fa_batch_of(const ug_fa_params *p, long t);

/* The exact softmax weights of one query row qr (d values) over n keys at k + j*kstride,
 * with the special-value rule the attention forwards state: scores s_j = scale*q.k_j are
 * classified in double (their class - NaN, +-inf, finite - does not depend on rounding);
 * a NaN or +inf score makes the row NaN (returns -1); a -inf score drops key j (live[j]
 * = 0, e[j] = 0 exactly); a row with no live key returns 0 (m and total not set).
 * Otherwise e[j] = exp(s_j - m) over the live keys, m their max, *total = sum_j e[j],
 * and it returns n. e and live hold n entries. p_dt is the dtype a device may round the
 * weights to before P*V (the semantics say so; their sum stays fp32): e is left as
 * ug_dev_round(e, p_dt), which only the device bound sees (UG_DT_FP32: no rounding). */
long ug_attn_weights(ug_ar *ar, const double *qr, const double *k, size_t kstride, long n, size_t d, double scale,
                     ug_dtype p_dt, ug_num *e, unsigned char *live, ug_num *m, ug_num *total);

/* ug_attn_weights' weights from the dots q.k_j of n keys, all live (finite), given in e (as
 * ug_dot_d computes them, e.g. by ug_dot_d_tile): the same numbers in every arithmetic. */
void ug_attn_weights_of_dots(ug_ar *ar, ug_num *e, long n, double scale, ug_dtype p_dt, ug_num *m, ug_num *total);

/* ug_attn_weights for dequantised operands (page_attention quant fp8): qr and k hold the
 * exact products e4m3 code * fp32 scale, so EXACT and CERT are unchanged; the device bound
 * adds what the fp8 device model allows: each q_i and k_i formed in fp32 (2u scale
 * sum_i |q_i k_i| per score) and P quantised to e4m3 per row and key tile with the scale
 * 448/tile max (2^-4 |e_j| + 2^-10/448 + 5u |e_j| per weight, V's fp32 dequantisation
 * included) instead of a p_dt cast. */
long ug_attn_weights_fp8(ug_ar *ar, const double *qr, const double *k, size_t kstride, long n, size_t d, double scale,
                         ug_num *e, unsigned char *live, ug_num *m, ug_num *total);

/* One output element sum_j e_j v_j / total over the n keys of a row (v_j at vc +
 * j*stride): v's special values by class (a NaN among the live keys, or both infinities,
 * give NaN; one infinity wins), else exact. Dead keys weigh exactly 0 whatever v holds
 * there. col is scratch of n doubles. */
ug_num ug_attn_weighted_v(ug_ar *ar, const ug_num *e, const unsigned char *live, const double *vc, size_t stride,
                          long n, ug_num total, double *col);

/* out[c] = ug_attn_weighted_v(..., v0 + c, ...) for the ncols adjacent columns of a row's
 * values, bit for bit, in one pass over the n value rows (ug_dot_nd_cols) when every key is
 * live and every value finite; column by column otherwise. col as for ug_attn_weighted_v. */
void ug_attn_weighted_v_cols(ug_ar *ar, const ug_num *e, const unsigned char *live, const double *v0, size_t stride,
                             long n, size_t ncols, ug_num total, double *col, ug_num *out);
/* The same where the caller knows every key live and every value finite (so no column
 * needs ug_attn_weighted_v's special values): ug_dot_nd_cols and the division. */
void ug_attn_weighted_v_cols_plain(ug_ar *ar, const ug_num *e, const double *v0, size_t stride, long n, size_t ncols,
                                   ug_num total, ug_num *out);

/* Positions [*b, *e) of output o's selected elements in row r of ncols (flat indices
 * r*ncols ..), and whether they are most of the row: then the oracles evaluate the whole
 * row at once (one pass over the rows it weighs), else element by element. */
int ug_attn_row_dense(const ug_selection *sel, int o, size_t r, size_t ncols, size_t *b, size_t *e);

/* 1 (the default): the oracles of both operators take their tile paths where they apply
 * (finite groups, plain arithmetics); 0: row by row everywhere. For the tests that compare
 * the two paths on every element; nothing else sets it. */
extern int ug_fa_tiles;

/* Whether every q row and every key, value (and, given, dO row) of group (batch element b,
 * head h) is finite, and the scale: then every score is finite and every key live (bf16 and
 * fp16 products cannot overflow a double), and the oracles' tile paths apply. */
int ug_fa_group_finite(const ug_fa_params *p, const double *q, const double *k, const double *v, const double *dout,
                       long b, long h);

/* The D x lk transpose of group (b, h)'s keys (or values) x: out[d*ldk + j] = x[key j, h, d],
 * with ldk = ug_fa_kt_ld(lk): padded, so that the rows of a key chunk do not all fall in the
 * same cache sets (lk 4096: 32 KiB apart, which thrashed the scores' loads). */
void ug_fa_group_transpose(const ug_fa_params *p, const double *x, long b, long h, double *out);
static inline size_t ug_fa_kt_ld(long lk) { return (size_t)lk + 8; }

/* Rows [t0, t0 + n) of head h of a [T, H, D] tensor x, contiguous: out[i*D + d] (the weighted
 * sums then read rows D apart, not H*D). */
void ug_fa_gather_rows(const ug_fa_params *p, const double *x, long t0, long n, long h, double *out);

/* ug_attn_weights for query token t (global), head h over its visible keys. */
long ug_fa_row(ug_ar *ar, const ug_fa_params *p, const double *q, const double *k, long t, long h, ug_dtype p_dt,
               ug_num *e, unsigned char *live, ug_num *m, ug_num *total);

#endif
