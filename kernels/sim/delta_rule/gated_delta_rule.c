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
 * normalised in fp32 (ug_delta_io_qk_norm), before q is scaled. */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/delta_rule/delta_rule_io.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_DECAY_AFTER, MUT_BETA_V_ONLY, MUT_QK_HEAD } gdr_bug;

static float dot32(const float *a, const float *b, size_t n)
{
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
                       size_t dk, gdr_bug bug, float *o)
{
    if (bug != MUT_DECAY_AFTER) scale32(S, dv * dk, a);
    for (size_t i = 0; i < dv; i++) {
        float *row = S + i * dk;
        float kv = dot32(row, k, dk);
        float u = bug == MUT_BETA_V_ONLY ? beta * v[i] - kv : beta * (v[i] - kv); /* rounds: fp32 */
        for (size_t j = 0; j < dk; j++) row[j] += u * k[j];                       /* rounds: fp32 */
    }
    if (bug == MUT_DECAY_AFTER) scale32(S, dv * dk, a); /* bug: decays the update too */
    for (size_t i = 0; i < dv; i++) o[i] = dot32(S + i * dk, q, dk);
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
    for (size_t h = 0; h < io.hv; h++) {
        size_t hk = bug == MUT_QK_HEAD ? h % io.hqk : ug_delta_io_qk_head(&io, h); /* bug: interleaved heads */
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
            token_step(S, q, k, v, expf(g) /* rounds: fp32 exp */, beta, dv, dk, bug, o);
            ug_sim_store(io.o, th * dv, dv, o); /* rounds: to o's dtype */
        }
        ug_sim_store(io.ht, h * dv * dk, dv * dk, S);
    }
    free(S);
    ug_delta_io_close(&io);
    return 0;
}

const ug_kernel_variant ug_variants_gated_delta_rule[] = {
    {"sim", "fused recurrent kernel: fp32 state tile, fp32 S*k and S*q sums, o rounded once", gdr_kernel, 0, MUT_NONE},
    {"mut_decay_after", "decay e^g applied after the delta update instead of before (decays the new write)", gdr_kernel,
     0, MUT_DECAY_AFTER},
    {"mut_beta_v_only", "beta scales v only: the erase term S*k is subtracted unscaled", gdr_kernel, 0,
     MUT_BETA_V_ONLY},
    {"mut_qk_head", "value head h reads qk head h % Hqk instead of h / (Hv/Hqk): wrong only when Hqk > 1 and Hv > Hqk",
     gdr_kernel, 0, MUT_QK_HEAD},
    {NULL, NULL, NULL},
};
