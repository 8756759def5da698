/* inplace_add_rmsnorm.c — sim kernel and planted-bug mutants for inplace_add_rmsnorm:
 *     x_add = x1 + x2 (written to x2),  rstd = 1/sqrt(mean(x_add^2) + eps),
 *     y = x_add * rstd * gamma (written to x1)
 *
 * Device model: one row per vector core; x1, x2 widened to fp32 and added in fp32; the
 * sum of squares is accumulated in 64 fp32 lanes (lane l takes elements l, l+64, ...),
 * then the lanes are reduced pairwise; rstd = 1/sqrt(sum/H + eps) in fp32; outputs are
 * rounded once to their dtype.
 * Legal variants (other correct kernels: they must pass every case): the sum of squares in
 * one sequential fp32 accumulator with fused multiply-adds; y as x_add * (rstd * gamma); rstd
 * from an rsqrt off by 3 fp32 ulps (legal_fn_ulps, ug_sim_fn_ulps: the certified device model
 * charges rsqrt as one function within 4 ulps, oracles/norm_rope/inplace_add_rmsnorm.c). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define LANES 64

/* rstd after pre-scaling by max|x| (a trick against overflow of the squares): exact in
 * exact arithmetic, but an all-zero row divides 0 by 0. */
static float prescaled_rstd(const float *v, size_t n, float eps)
{
    float s = 0.0f, acc = 0.0f;
    for (size_t i = 0; i < n; i++) s = fmaxf(s, fabsf(v[i]));
    for (size_t i = 0; i < n; i++) acc += (v[i] / s) * (v[i] / s); /* rounds: fp32; NaN when s = 0 */
    return 1.0f / (s * sqrtf(acc / (float)n + eps / (s * s)));
}

/* Sum of squares in 64 fp32 lanes, then a pairwise tree over the lanes. */
static float lane_sumsq(const float *v, size_t n, ug_variant_code bug)
{
    if (bug == UG_VAR_MUT_BF16_SUM) { /* bug: one scalar accumulator kept in bf16 */
        float acc = 0.0f;
        for (size_t i = 0; i < n; i++) acc = ug_sim_round_bf16(acc + v[i] * v[i]);
        return acc;
    }
    if (bug == UG_VAR_LEGAL_SEQ_FMA) return ug_sim_sumsq_seq_fma(v, n);
    size_t full = n / LANES * LANES;
    return ug_sim_sumsq_lanes(v, bug == UG_VAR_MUT_TAIL_LANES && full > 0 ? full : n); /* bug: tail block dropped */
}

static int rms_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    float eps = (float)UG_P(inplace_add_rmsnorm, &p)->eps; /* exact: an fp32 value */
    ug_params_free(&p);
    const ulpgym_tensor *x1, *x2, *gamma, *y, *xa, *rstd, **slots[] = {&x1, &x2, &gamma, &y, &xa, &rstd};
    if (ug_sim_bind(call, "x1 x2 gamma y x_add rstd", slots, err, errlen)) return -2;
    size_t rows = (size_t)x1->shape[0], h = (size_t)x1->shape[1];
    float *a = malloc((h ? h : 1) * 3 * sizeof *a), *b = a + (h ? h : 1), *g = b + (h ? h : 1);
    if (!a) return -1;
    ug_sim_load(gamma, 0, h, g);
    for (size_t r = 0; r < rows; r++) {
        ug_sim_load(x1, r * h, h, a);
        ug_sim_load(x2, r * h, h, b);
        for (size_t i = 0; i < h; i++) a[i] += b[i]; /* rounds: fp32 add */
        if (bug == UG_VAR_MUT_ADD_IN_DTYPE) /* bug: the sum is kept in the storage dtype (fp16 overflows past 65504) */
            for (size_t i = 0; i < h; i++) a[i] = ug_sim_round_to(x1->dtype, a[i]);
        ug_sim_store(xa, r * h, h, a);
        float ms = lane_sumsq(a, h, bug) / (float)h; /* rounds: fp32 */
        float rs = bug == UG_VAR_MUT_EPS_OUTSIDE ? 1.0f / (sqrtf(ms) + eps) : 1.0f / sqrtf(ms + eps);
        if (bug == UG_VAR_MUT_PRESCALE_ZERO_ROW) rs = prescaled_rstd(a, h, eps);
        if (bug == UG_VAR_LEGAL_FN_ULPS) rs = ug_sim_fn_ulps(rs, ms + eps, UG_SIM_FN_ULPS); /* rounds: a device rsqrt */
        ug_sim_store(rstd, r, 1, &rs);
        for (size_t i = 0; i < h; i++) /* rounds: fp32, left to right (legal_reassoc: rstd * gamma first) */
            b[i] = bug == UG_VAR_LEGAL_REASSOC ? a[i] * (rs * g[i]) : a[i] * rs * g[i];
        ug_sim_store(y, r * h, h, b);
    }
    free(a);
    return 0;
}

const ug_kernel_fn ug_sim_inplace_add_rmsnorm = rms_kernel;
