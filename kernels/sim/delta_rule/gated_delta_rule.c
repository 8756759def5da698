/* gated_delta_rule.c — sim kernel and planted-bug mutants of the recurrent (decode) gated
 * delta rule, per value head h reading qk head h / (Hv/Hqk):
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale
 *
 * Device model (the fused recurrent kernel of decode): the head's fp32 state tile
 * [Dv, Dk] stays on chip across tokens; q, k, v are widened from bf16 to fp32 (a NaN or
 * +-inf load becomes NaN), q is scaled in fp32, the state is decayed by expf(g), then per
 * value row the fp32 product S k is subtracted from v, scaled by beta and added back as a
 * rank-one update, and o = S q is summed in fp32 and rounded once to the output dtype.
 * The final state is written in fp32. With qk_norm l2 the loaded q and k rows are first
 * normalised in fp32 (ug_delta_io_qk_norm), before q is scaled.
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the declared device model rounds every product and sum to fp32, lets every dot product
 * run in any order, fused multiply-adds included, and allows exp and rsqrt within 4 fp32
 * ulps): legal_fma, the S k and S q dot products as fmaf chains in index order and the
 * rank-one update row += u k as one fmaf an element; legal_lanes16, the S k and S q dot
 * products in 16 fp32 lanes folded by a pairwise tree (a vector unit's reduction);
 * legal_fn_ulps, the decay e^g and, with qk_norm l2, the norm's rsqrt each 3 fp32 ulps off
 * libm's (ug_sim_fn_ulps). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/delta_rule/delta_rule_io.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"

/* a.b over n as the variant reduces it: the sim's fp32 sum in index order, an fmaf chain,
 * or 16 lanes folded pairwise. */
static float dot32(ug_variant_code how, const float *a, const float *b, size_t n)
{
    if (how == UG_VAR_LEGAL_FMA) return ug_fma_dot_f32(a, b, n);       /* rounds: fp32, once a term */
    if (how == UG_VAR_LEGAL_LANES16) return ug_lanes_dot_f32(a, b, n); /* rounds: fp32, 16 lanes folded pairwise */
    float s = 0.0f;
    for (size_t j = 0; j < n; j++) s += a[j] * b[j]; /* rounds: fp32 mul and add */
    return s;
}

static void scale32(float *x, size_t n, float a)
{
    for (size_t j = 0; j < n; j++) x[j] *= a; /* rounds: fp32 */
}

/* One token on the state tile S [dv][dk]; writes o (dv values). */
static void token_step(float *S, const float *q, const float *k, const float *v, float a, float beta, size_t dv,
                       size_t dk, ug_variant_code bug, float *o)
{
    if (bug != UG_VAR_MUT_DECAY_AFTER) scale32(S, dv * dk, a);
    for (size_t i = 0; i < dv; i++) {
        float *row = S + i * dk;
        float kv = dot32(bug, row, k, dk);
        float u = bug == UG_VAR_MUT_BETA_V_ONLY ? beta * v[i] - kv : beta * (v[i] - kv); /* rounds: fp32 */
        if (bug == UG_VAR_LEGAL_FMA)
            for (size_t j = 0; j < dk; j++) row[j] = fmaf(u, k[j], row[j]); /* rounds: fp32, once (legal) */
        else
            for (size_t j = 0; j < dk; j++) row[j] += u * k[j]; /* rounds: fp32 */
    }
    if (bug == UG_VAR_MUT_DECAY_AFTER) scale32(S, dv * dk, a); /* bug: decays the update too */
    for (size_t i = 0; i < dv; i++) o[i] = dot32(bug, S + i * dk, q, dk);
}

static int gdr_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_delta_io io;
    if (ug_delta_io_open(&io, call, err, errlen)) return -2;
    size_t dk = io.dk, dv = io.dv;
    float *S = malloc((dv * dk + 2 * dk + 2 * dv) * sizeof *S);
    if (!S) {
        ug_delta_io_close(&io);
        return -1;
    }
    float *q = S + dv * dk, *k = q + dk, *v = k + dk, *o = v + dv;
    int fn_ulps = bug == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0; /* legal: a device's exp and rsqrt */
    io.fn_ulps = fn_ulps;                                           /* ug_delta_io_qk_norm's rsqrt */
    for (size_t h = 0; h < io.hv; h++) {
        size_t hk = bug == UG_VAR_MUT_QK_HEAD ? h % io.hqk : ug_delta_io_qk_head(&io, h); /* bug: interleaved heads */
        ug_delta_io_load(io.h0, h * dv * dk, dv * dk, S);
        for (size_t t = 0; t < io.tokens; t++) {
            size_t tk = (t * io.hqk + hk) * dk, th = t * io.hv + h;
            float g, beta;
            ug_delta_io_load(io.q, tk, dk, q);
            ug_delta_io_load(io.k, tk, dk, k);
            ug_delta_io_qk_norm(&io, q, dk);
            ug_delta_io_qk_norm(&io, k, dk);
            ug_delta_io_load(io.v, th * dv, dv, v);
            ug_delta_io_load(io.g, th, 1, &g);
            ug_delta_io_load(io.beta, th, 1, &beta);
            scale32(q, dk, io.scale);
            float a = ug_sim_fn_ulps(expf(g), g, fn_ulps); /* rounds: fp32 exp (legal_fn_ulps: a device's) */
            token_step(S, q, k, v, a, beta, dv, dk, bug, o);
            ug_sim_store(io.o, th * dv, dv, o); /* rounds: to o's dtype */
        }
        ug_sim_store(io.ht, h * dv * dk, dv * dk, S);
    }
    free(S);
    ug_delta_io_close(&io);
    return 0;
}

const ug_kernel_fn ug_sim_gated_delta_rule = gdr_kernel;
