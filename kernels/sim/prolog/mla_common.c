/* mla_common.c — the fp32 RMSNorm and RoPE of the MLA prolog sim kernels (mla_common.h);
 * the legal variants' sums and rsqrt come from prolog_legal.c. */
#include "kernels/sim/prolog/mla_common.h"

#include <math.h>

#include "kernels/sim/simlib.h"

void ug_mla_rmsnorm_bf16(float *v, const float *gamma, size_t n, float eps, ug_mla_norm_bug bug, ug_prolog_legal legal)
{
    float ss = 0.0f;
    if (bug == UG_MLA_NORM_BF16_SUM) { /* bug: one scalar accumulator kept in bf16 */
        for (size_t i = 0; i < n; i++) ss = ug_sim_round_bf16(ss + v[i] * v[i]);
    } else {
        ss = ug_pl_dot(v, v, n, legal); /* rounds: fp32 K-tiled (legal: another order) */
    }
    float rstd = bug == UG_MLA_NORM_EPS_OUTSIDE ? 1.0f / sqrtf(ss / (float)n) + eps  /* bug: eps outside the root */
                                                : 1.0f / sqrtf(ss / (float)n + eps); /* rounds: fp32 */
    rstd = ug_pl_rsqrt(rstd, ss / (float)n + eps, legal); /* rounds: legal_fn_ulps' device rsqrt */
    for (size_t i = 0; i < n; i++) v[i] = ug_sim_round_bf16(v[i] * rstd * gamma[i]); /* rounds: fp32, bf16 */
}

void ug_mla_rope(float *v, const float *c, const float *s, size_t d, int inter, int sin_neg)
{
    float out[UG_MLA_MAX_ROPE];
    size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        size_t a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + half;
        float sa = sin_neg ? -s[i] : s[i], sb = sin_neg ? -s[i + half] : s[i + half]; /* exact: sign */
        out[i] = v[a] * c[i] - v[b] * sa;                                             /* rounds: fp32 mul, mul, sub */
        out[i + half] = v[b] * c[i + half] + v[a] * sb;                               /* rounds: fp32 mul, mul, add */
    }
    for (size_t i = 0; i < d; i++) v[i] = out[i];
}
