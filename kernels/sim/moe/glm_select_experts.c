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
 *                          cancels it (only renormalize with a factor other than 1)
 * Legal variant (another correct kernel, which must pass every case): legal_fn_ulps, each
 * sigmoid moved by 3 fp32 ulps off libm's formula (ug_sim_fn_ulps: the contract's device
 * model allows an fp32 sigmoid within 4 ulps, and its tie rule is sized for that).
 * The router itself is the shared part (glm_moe_sim_parts.c), which the fused MoE ops run too. */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/moe/glm_moe_sim_parts.h"
#include "kernels/sim/simlib.h"

static int se_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *bias, *w, *ids, **slots[] = {&x, &bias, &w, &ids};
    if (ug_sim_bind(call, "router_logits e_score_correction_bias topk_weights topk_ids", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    gmoe_se_cfg c;
    gmoe_se_cfg_read(&p, x->shape[1], w->shape[1], bug == UG_VAR_LEGAL_FN_ULPS ? UG_VAR_SIM : bug, &c);
    c.fn_ulps = bug == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0; /* legal: a device's sigmoid */
    ug_params_free(&p);
    size_t T = (size_t)x->shape[0], E = (size_t)c.E, K = (size_t)c.k;
    gmoe_se_work wk;
    float *buf = malloc((E * 2 + 2 * K) * sizeof *buf);
    if (!buf || gmoe_se_alloc(&c, &wk)) {
        free(buf);
        return -1;
    }
    float *xr = buf, *bf = xr + E, *wr = bf + E, *ir = wr + K;
    ug_sim_load(bias, 0, E, bf);
    for (size_t t = 0; t < T; t++) {
        ug_sim_load(x, t * E, E, xr);
        gmoe_se_token(&c, xr, bf, wr, ir, &wk);
        ug_sim_store(w, t * K, K, wr);
        ug_sim_store(ids, t * K, K, ir); /* exact: integers */
    }
    free(buf);
    gmoe_se_free(&wk);
    return 0;
}

const ug_kernel_fn ug_sim_glm_select_experts = se_kernel;
