/* glm_pre_quant.c — the exact per-token math of glm_attention_pre_quant (see
 * glm_pre_quant.h for the chain, the staged rule and how another oracle calls it). */
#include "oracles/prolog/glm_pre_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

ug_gpq_dims ug_gpq_dims_read(const ug_params *P)
{
    ug_gpq_dims d = {(size_t)ug_p_int(P, "hidden"),   (size_t)ug_p_int(P, "q_heads"),
                     (size_t)ug_p_int(P, "kv_heads"), (size_t)ug_p_int(P, "head_dim"),
                     (size_t)ug_p_int(P, "rotary_dim"), ug_p_num(P, "eps")};
    return d;
}

size_t ug_gpq_cols(const ug_gpq_dims *d) { return (d->Nq + 2 * d->Nk) * d->D; }

int ug_gpq_check(const ug_params *P, const char *op, char *err, size_t errlen)
{
    long D = ug_p_int(P, "head_dim"), R = ug_p_int(P, "rotary_dim");
    if (R % 2) return snprintf(err, errlen, "%s: param \"rotary_dim\" = %ld must be even", op, R), -2;
    if (R > D)
        return snprintf(err, errlen, "%s: param \"rotary_dim\" = %ld must be <= head_dim = %ld", op, R, D), -2;
    return 0;
}

ug_num ug_gpq_norm_den(ug_ar *ar, const double *v, size_t n, double eps)
{
    ug_num ss = ug_dot_d(ar, v, 1, v, 1, n);
    return ug_sqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)n)), ug_c(ar, eps)));
}

ug_num ug_gpq_norm_at(ug_ar *ar, ug_num v, ug_num den, double gamma, double beta)
{
    return ug_add(ar, ug_mul(ar, ug_div(ar, v, den), ug_c(ar, gamma)), ug_c(ar, beta));
}

/* Whether p + o is exact in double (TwoSum's error term is zero), with the sum in *sum. */
static int exact_sum(double p, double o, double *sum)
{
    double s = p + o, bb = s - p, e = (p - (s - bb)) + (o - bb);
    *sum = s;
    return e == 0.0 || !isfinite(s);
}

ug_num ug_gpq_add_norm_den(ug_ar *ar, const double *a, const double *b, double *r, size_t n, double eps)
{
    int exact = 1;
    for (size_t i = 0; i < n; i++) exact &= exact_sum(a[i], b[i], &r[i]);
    if (exact) return ug_gpq_norm_den(ar, r, n, eps);
    /* bf16 exponents more than 53 binades apart: sum a^2 + 2 a.b + b^2 of exact terms */
    ug_num ss = ug_add(ar, ug_add(ar, ug_dot_d(ar, a, 1, a, 1, n), ug_mul(ar, ug_c(ar, 2.0), ug_dot_d(ar, a, 1, b, 1, n))),
                       ug_dot_d(ar, b, 1, b, 1, n));
    return ug_sqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)n)), ug_c(ar, eps)));
}

ug_num ug_gpq_code_value(ug_ar *ar, double n, double s, double o)
{
    double p = n * s, v; /* exact: two bf16 significands, the double range holds the product */
    int exact = exact_sum(p, o, &v);
    if (!isfinite(v)) return ug_c(ar, ug_dtype_round(UG_DT_INT8, v)); /* saturates; NaN -> 0 */
    if (exact && v - floor(v) == 0.5) return ug_c(ar, ug_dtype_round(UG_DT_INT8, v)); /* a tie: RNE to even */
    return ug_add(ar, ug_mul(ar, ug_c(ar, n), ug_c(ar, s)), ug_c(ar, o));
}

int32_t ug_gpq_int_sum(const int8_t *codes, const int8_t *w8, size_t H, size_t cols, size_t c)
{
    int32_t acc = 0;
    for (size_t k = 0; k < H; k++) acc += (int32_t)codes[k] * w8[k * cols + c];
    return acc;
}

void ug_gpq_int_sums(const int8_t *codes, const int8_t *w8, size_t H, size_t cols, int32_t *acc)
{
    memset(acc, 0, cols * sizeof *acc);
    for (size_t k = 0; k < H; k++) {
        int32_t a = codes[k];
        if (a)
            for (size_t c = 0; c < cols; c++) acc[c] += a * w8[k * cols + c];
    }
}

ug_num ug_gpq_gemm_value(ug_ar *ar, int32_t acc, double bias, double deq)
{
    /* a device converts the int32 sum to fp32, which rounds once |sum| > 2^24 */
    ug_num sum = ug_dev_round(ar, ug_c(ar, (double)acc + bias), UG_DT_FP32);
    return ug_mul(ar, sum, ug_c(ar, deq));
}

ug_num ug_gpq_rope_at(ug_ar *ar, const double *x, const double *cs, const double *sn, size_t i, size_t R)
{
    size_t half = R / 2, j = i < half ? i : i - half;
    double a[2] = {x[i], i < half ? x[i + half] : x[i - half]};
    double w[2] = {cs[j], i < half ? -sn[j] : sn[j]}; /* exact: negation */
    return ug_dot_d(ar, a, 1, w, 1, 2);
}

const int8_t *ug_gpq_weight_i8(const ug_tensor *w) { return w->dtype == UG_DT_INT8 ? w->data : NULL; }
