/* glm_select_experts.c — param checks and exact oracle of glm_select_experts, the GLM-4.5
 * MoE router after the gate (the reference: hicann/pypto-gym
 * tests/ops/glm_v4_5/test_glm_select_experts.py; the group rule of the model: sum of the
 * two largest biased scores per group, as the DeepSeek-V3 router):
 *
 *     s = sigmoid(logits), b = s + bias, groups kept by max(b) or top-2 sum(b),
 *     ids = top_k of b over the kept groups' experts, w = s[ids] (/ sum s[ids]) * rsf.
 *
 * Ids are a set judged under the declared tie rule, which the oracle applies itself: the
 * reference suite compares ids elementwise (assert_allclose), which fails a kernel that
 * returns the same experts in another order (its torch.topk(sorted=False) promises none)
 * or picks the other of two tied experts, while it would pass a kernel whose id differs
 * by one (atol 5e-3 on integers is equality, but a wrong set whose weights still match
 * is not caught by the weights either). Ours: the kernel's ids (any order) must be a
 * top-k the exact scores allow: every id distinct, in a group whose exact group score is
 * within 3d of the topk_group-th (with every group clearly above it kept), and within d
 * of the k-th exact score of its kept groups, where d = 2^-20 (1 + max finite |b|) bounds
 * a device's fp32 sigmoid (4 ulps) and bias add for both scores compared
 * (ug_topk_set_ok does the expert stage). The selection is decided in double before any
 * arithmetic (d is 10^9 times the double error), so every arithmetic sees one decision.
 *
 * Staged rule (docs/STANDARDS.md): the oracle reads the kernel's topk_ids. Where the set is
 * legal it emits the kernel's id at each position, so the topk_set compare passes, and each
 * weight is the exact weight of the id the kernel chose there (renormalised over the
 * kernel's set). Where it is not, it emits the exact top-k (a kernel id that is in it
 * keeps its position, the others take the remaining exact ids), so the ids compare fails
 * and the weights are judged against the exact choice. The declared compare is
 * `topk_set`: the judge requires the kernel's ids to equal these emitted ids (only the
 * oracle holds the scores the set rule needs; docs/STANDARDS.md). The ideal backend's first pass
 * sees zero ids (illegal: duplicates) and writes the exact choice; its second pass
 * accepts it. The rule is written once in glm_moe_oracle_parts.c (the fused MoE ops share it). */
#include "oracles/moe/glm_moe_oracle_parts.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

#define OP "glm_select_experts"

static int check(const ug_params *P, char *err, size_t errlen) { return gmoe_router_check(P, OP, err, errlen); }

/* The rule (file header) is the router part's, on the input logits. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gmoe_router p;
    gmoe_router_read(&c->params, &p);
    gmoe_router_emit(c, ar, sel, &p, ug_case_input(c, "router_logits"), 0, 1); /* 0 topk_weights, 1 topk_ids */
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 1, (size_t)c->out[out].shape[1], g);
}

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of the logits and
 * the bias, and its per-token rows. */
static double scratch(const ug_params *P)
{
    const ug_glm_select_experts_params *params = UG_P(glm_select_experts, P);
    double T = (double)params->tokens, E = (double)params->experts;
    return 4 * (T * E + 4 * E);
}

const ug_op_def ug_opdef_glm_select_experts = {
    .decl.check = check, .oracle = oracle, .geometry = geometry, .scratch = scratch};
