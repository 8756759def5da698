/* glm_select_experts.c — sim kernel and planted-bug mutants for glm_select_experts, the
 * GLM-4.5 MoE router after the gate: s = sigmoid(logits), b = s + bias, group-limited
 * top-k by b, weights s[ids] (renormalised) times the routed scaling factor.
 *
 * Device model: one token per vector core row. fp32 sigmoid 1 / (1 + exp(-x)), fp32 bias
 * add (the bf16 bias widened exactly), group scores by max or by the fp32 sum of the two
 * largest b, topk_group groups by a sort (ties to the lower index, NaN first), excluded
 * experts set to -inf, top_k by a sort over all experts, ids written best first; weights
 * gathered from s, summed in fp32, divided in fp32, scaled in fp32.
 *
 * Mutants (bug classes real routers have had):
 *   mut_bias_in_weights    weights gathered from the biased b instead of s (most cases)
 *   mut_no_group_limit     the group mask ignored: top_k over every expert (only
 *                          topk_group < num_expert_group)
 *   mut_mask_zero          dropped groups' experts set to 0 instead of excluded, as the
 *                          reference test's masked_fill(0.0): they outrank kept experts
 *                          whose b is negative (only biases that push b below 0)
 *   mut_scale_before_renorm the routed scaling factor applied before renormalisation, which
 *                          cancels it (only renormalize with a factor other than 1) */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_BIAS_IN_WEIGHTS, MUT_NO_GROUP_LIMIT, MUT_MASK_ZERO, MUT_SCALE_BEFORE_RENORM } se_bug;

typedef struct {
    long E, k, ng, tg, per;
    int top2, renorm;
    float rsf;
    se_bug bug;
} se_cfg;

/* a ranks before b: NaN first, then larger, ties to the lower index. */
static int before(float a, long ia, float b, long ib)
{
    if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ia < ib);
    return a > b || (a == b && ia < ib);
}

/* The n best indices of v[0..m) into out, best first (selection, as a sort network would). */
static void top_n(const float *v, long m, long n, long *out, unsigned char *used)
{
    for (long i = 0; i < m; i++) used[i] = 0;
    for (long r = 0; r < n; r++) {
        long best = -1;
        for (long i = 0; i < m; i++)
            if (!used[i] && (best < 0 || before(v[i], i, v[best], best))) best = i;
        used[best] = 1;
        out[r] = best;
    }
}

/* One token: logits x[0..E) -> w[0..k), ids[0..k). s, b, gs, idx and used are scratch. */
static void se_token(const se_cfg *c, const float *x, const float *bias, float *w, float *ids, float *s, float *b,
                     float *gs, long *idx, unsigned char *used)
{
    for (long e = 0; e < c->E; e++) {
        s[e] = 1.0f / (1.0f + expf(-x[e])); /* rounds: fp32 exp, add, divide */
        b[e] = s[e] + bias[e];              /* rounds: fp32 */
    }
    if (c->bug != MUT_NO_GROUP_LIMIT && c->tg < c->ng) {
        for (long g = 0; g < c->ng; g++) {
            long two[2], n = c->top2 && c->per > 1 ? 2 : 1;
            top_n(b + g * c->per, c->per, n, two, used);
            gs[g] = b[g * c->per + two[0]] + (n == 2 ? b[g * c->per + two[1]] : 0.0f); /* rounds: fp32 */
        }
        top_n(gs, c->ng, c->tg, idx, used);
        for (long g = 0; g < c->ng; g++) used[c->E + g] = 0;
        for (long i = 0; i < c->tg; i++) used[c->E + idx[i]] = 1;
        for (long e = 0; e < c->E; e++)
            if (!used[c->E + e / c->per]) b[e] = c->bug == MUT_MASK_ZERO ? 0.0f : -INFINITY; /* bug: 0, not excluded */
    }
    top_n(b, c->E, c->k, idx, used);
    float sum = 0.0f;
    for (long j = 0; j < c->k; j++) {
        ids[j] = (float)idx[j]; /* exact: ids < 2^24 */
        w[j] = c->bug == MUT_BIAS_IN_WEIGHTS ? s[idx[j]] + bias[idx[j]] : s[idx[j]]; /* bug: biased score */
        if (c->bug == MUT_SCALE_BEFORE_RENORM) w[j] *= c->rsf; /* bug: scaled before the sum; rounds: fp32 */
        sum += w[j]; /* rounds: fp32 */
    }
    for (long j = 0; j < c->k; j++) {
        if (c->renorm) w[j] /= sum; /* rounds: fp32 */
        if (c->bug != MUT_SCALE_BEFORE_RENORM) w[j] *= c->rsf; /* rounds: fp32 */
    }
}

static int se_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *bias, *w, *ids, **slots[] = {&x, &bias, &w, &ids};
    if (ug_sim_bind(call, "router_logits e_score_correction_bias topk_weights topk_ids", slots, err, errlen))
        return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    se_cfg c = {.E = x->shape[1], .k = w->shape[1], .ng = ug_p_int(&p, "num_expert_group"),
                .tg = ug_p_int(&p, "topk_group"), .top2 = ug_p_is(&p, "group_score", "top2_sum"),
                .renorm = (int)ug_p_int(&p, "renormalize"), .rsf = (float)ug_p_num(&p, "routed_scaling_factor"),
                .bug = bug}; /* rsf: exact, already an fp32 value */
    ug_params_free(&p);
    c.per = c.E / c.ng;
    size_t T = (size_t)x->shape[0], E = (size_t)c.E, K = (size_t)c.k;
    float *buf = malloc((E * 4 + (size_t)c.ng + 2 * K) * sizeof *buf);
    long *idx = malloc((E + (size_t)c.ng) * sizeof *idx);
    unsigned char *used = malloc(E + (size_t)c.ng);
    if (!buf || !idx || !used) {
        free(buf), free(idx), free(used);
        return -1;
    }
    float *xr = buf, *bf = xr + E, *s = bf + E, *b = s + E, *gs = b + E, *wr = gs + c.ng, *ir = wr + K;
    ug_sim_load(bias, 0, E, bf);
    for (size_t t = 0; t < T; t++) {
        ug_sim_load(x, t * E, E, xr);
        se_token(&c, xr, bf, wr, ir, s, b, gs, idx, used);
        ug_sim_store(w, t * K, K, wr);
        ug_sim_store(ids, t * K, K, ir); /* exact: integers */
    }
    free(buf), free(idx), free(used);
    return 0;
}

const ug_kernel_variant ug_variants_glm_select_experts[] = {
    {"sim", "fp32 sigmoid + bias, group top-k, top_k by b, weights from s (renormalised, scaled)", se_kernel, 0,
     MUT_NONE},
    {"mut_bias_in_weights", "weights gathered from the biased score s + bias instead of s", se_kernel, 0,
     MUT_BIAS_IN_WEIGHTS},
    {"mut_no_group_limit", "group mask ignored: top_k over every expert", se_kernel, 0, MUT_NO_GROUP_LIMIT},
    {"mut_mask_zero", "dropped groups' experts scored 0 instead of excluded: they beat kept experts with b < 0",
     se_kernel, 0, MUT_MASK_ZERO},
    {"mut_scale_before_renorm", "routed scaling applied before renormalisation, which cancels it", se_kernel, 0,
     MUT_SCALE_BEFORE_RENORM},
    {NULL, NULL, NULL},
};
