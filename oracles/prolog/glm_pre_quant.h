/* glm_pre_quant.h — the exact math of glm_attention_pre_quant, one token at a time, for
 * every oracle that contains it (glm_attention_pre_quant itself; glm_attention_fusion,
 * which scatters the same k/v into a paged cache before attending).
 *
 * The chain and its spec roundings (declaration: glm_attention_pre_quant.json):
 *     r    = x + residual                                  (residual_res = bf16(r))
 *     n    = bf16(r / sqrt(mean(r^2) + eps) * gamma + beta)          input norm
 *     code = int8_sat(rint(n*scale_recip + offset))                   static quant
 *     mm   = bf16((sum_k code_k*W[k,c] + bias[c]) * deq[c])           q | k | v columns
 *     qk_norm = bf16(RMSNorm_bias(mm head; gamma_qk, beta_qk))        per head of q and k
 *     q/k  = bf16(RoPE_half on dims [0, R) of qk_norm), dims [R, D) copied
 * Staged rule (docs/STANDARDS.md): each stage starts from the kernel's exported values of
 * the stage before (n, codes, mm, qk_norm), so these functions take plain doubles (the
 * exported values, or inputs) and return the exact next value as a ug_num; the caller
 * emits it. Use from another oracle: read the dims with ug_gpq_dims_read (its params carry
 * the same names), take W's codes with ug_gpq_weight_i8, then per token
 *     den = ug_gpq_add_norm_den(ar, x_row, res_row, r, H, eps);
 *     n_i = ug_gpq_norm_at(ar, ug_add(ar, ug_c(ar, x_i), ug_c(ar, res_i)), den, g_i, b_i)
 *     code value = ug_gpq_code_value(ar, n_kernel_i, s_i, o_i)
 *     mm_c = ug_gpq_gemm_value(ar, codes_kernel . W[:, c], bias_c, deq_c), the integer dot
 *            exact by ug_int8_col_dots (oracles/mp/int8_dot.h: one column, or a row's all)
 *     qk_norm from a head row of the kernel's mm with ug_gpq_norm_den / ug_gpq_norm_at (n = D)
 *     q/k dim i < R: ug_gpq_rope_at(ar, head_row_of_qk_norm, cos_t, sin_t, i, R)
 * Everything runs in every arithmetic of oracles/mp/arith.h; nothing branches on the mode. */
#ifndef UG_ORACLE_GLM_PRE_QUANT_H
#define UG_ORACLE_GLM_PRE_QUANT_H
#include <stddef.h>
#include <stdint.h>

#include "core/opdecl.h"
#include "core/registry.h"
#include "oracles/mp/arith.h"
#include "oracles/oracle.h"

typedef struct {
    size_t H, Nq, Nk, D, R; /* hidden, q heads, kv heads, head dim, rotary dims (even, <= D) */
    double eps;             /* the fp32 value of params.eps, both norms */
} ug_gpq_dims;

/* The dims from params hidden, q_heads, kv_heads, head_dim, rotary_dim, eps. */
ug_gpq_dims ug_gpq_dims_read(const ug_params *P);
/* Columns of W: q (Nq*D), then k (Nk*D), then v (Nk*D). */
size_t ug_gpq_cols(const ug_gpq_dims *d);
/* What ranges cannot say: rotary_dim even and <= head_dim. 0, or -2 naming op and param. */
int ug_gpq_check(const ug_params *P, const char *op, char *err, size_t errlen);

/* sqrt(sum v^2 / n + eps) of exact values (a NaN or inf in v gives NaN / inf: IEEE). */
ug_num ug_gpq_norm_den(ug_ar *ar, const double *v, size_t n, double eps);
/* The same for r = a + b (the input norm's r = x + residual) without rounding r: from
 * r_i in double where every r_i is exact there (TwoSum), else from sum a^2 + 2 a.b + b^2.
 * r[0..n) receives the double sums (exact where the first path was taken). */
ug_num ug_gpq_add_norm_den(ug_ar *ar, const double *a, const double *b, double *r, size_t n, double eps);
/* v / den * gamma + beta. */
ug_num ug_gpq_norm_at(ug_ar *ar, ug_num v, ug_num den, double gamma, double beta);
/* The exact value a code rounds: n*s + o. An exact tie (n*s + o = k + 1/2, which fp32
 * represents, so every correct device computes it exactly) and a non-finite value are
 * decided here: the value returned is the code itself (RNE to even; +-inf saturate, NaN 0). */
ug_num ug_gpq_code_value(ug_ar *ar, double n, double s, double o);
/* (acc + bias) * deq: the integer sum exact (an exact constant in every arithmetic), its
 * conversion to fp32 a declared device rounding, one exact product. */
ug_num ug_gpq_gemm_value(ug_ar *ar, int32_t acc, double bias, double deq);
/* RoPE_half of dim i < R of a head row x (exact values), cos/sin rows of R/2 entries:
 * i < R/2: x_i*c_i - x_{i+R/2}*s_i; else x_i*c_{i-R/2} + x_{i-R/2}*s_{i-R/2}. */
ug_num ug_gpq_rope_at(ug_ar *ar, const double *x, const double *cs, const double *sn, size_t i, size_t R);

/* The int8 codes of W [H, cols] as the case stores them (its data, read in place). */
const int8_t *ug_gpq_weight_i8(const ug_tensor *w);

/* The whole staged oracle of glm_attention_pre_quant's outputs, which must be the case's
 * outputs 0..7 in its order (q, k, v, residual_res, n, n_i8, qk_mm, qk_norm; an op that
 * contains the prolog declares them first, with the same inputs and params, and "tokens"
 * as a param or derived size); other outputs are left alone. 0, or -1 (memory). */
int ug_gpq_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);
/* Sampling geometry of those outputs (out < 8): 8-token row tiles; q/k by the rotary
 * half, q/k stages by head, hidden-wide rows by 64 lanes. */
void ug_gpq_geometry(const ug_case *c, int out, ug_geom *g);
/* Case-memory scratch of the prolog's kernel and oracle (bytes). */
double ug_gpq_scratch(const ug_params *P);

#endif
