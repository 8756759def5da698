/* glm_moe_fusion_mix.c — param checks and exact oracle of glm_moe_fusion_mix, the GLM-4.5
 * MoE block with the shared expert fused in (declaration: glm_moe_fusion_mix.json):
 *     router_logits = x * W_gate^T; topk_ids, topk_weights = select_experts(logits)
 *     out = bf16( sum_j w_j * E_{id_j}(x)  +  shared(x) )
 * E_e(x) = (bf16(silu(x W1_e) * (x W3_e))) W2_e (glm_moe_fusion's form routed) and
 * shared(x) the int8 shared expert (glm_ffn_shared_expert_quant) before its bf16 store.
 *
 * Reference suite: none. hicann/pypto-gym has no test of the mix (tests/ops/glm_v4_5
 * holds test_glm_moe_fusion.py, router + shared expert only); the definition is
 * shared/OPS.md's "glm_moe_fusion(x) + glm_ffn_shared_expert_quant(x) in one kernel", made
 * precise by the parts' own rules: the sum is exact and rounded once to bf16 (one fp32
 * accumulator on the device), the routed scaling factor scales the routed weights only.
 * Output rules: the fusion test's pairs (out rtol 2^-7 atol 1e-4, router 5e-3) and the
 * shared expert's rules for its codes and scales.
 *
 * Staged rule (docs/STANDARDS.md): logits exact; ids and weights from the kernel's
 * logits (tie rule); the shared stages from the kernel's x_i8/x_scale and a; act from the
 * kernel's ids; out from the kernel's act, weights, ids, a_i8 and a_scale. Every part is
 * written once in glm_moe_oracle_parts.c. Primary: certified (its pypto
 * pair failed a legal kernel whose fp32 sums cancel: docs/STANDARDS.md); pypto is stored. */
#include "oracles/moe/glm_moe_oracle_parts.h"
#include "oracles/oracle.h"

#define OP "glm_moe_fusion_mix"

static int check(const ug_params *P, char *err, size_t errlen) { return gmoe_router_check(P, OP, err, errlen); }

/* Token t's selected out elements: the shared stage-4 value plus the routed sum. */
static void out_emit(const gmoe_shared *k, gmoe_routed *r, const ug_case *c, ug_ar *ar, const ug_selection *sel, int o,
                     size_t t)
{
    size_t b, e;
    ug_selection_range(sel, o, t * r->h, (t + 1) * r->h, &b, &e);
    if (b == e) return;
    gmoe_routed_token(r, c, t);
    ug_num sa = gmoe_shared_down_row(k, c, ar, t);
    if (e - b == r->h && gmoe_routed_out_row(r, ar)) { /* the token's row whole */
        for (size_t n = 0; n < r->h; n++)
            ug_ar_emit(ar, o, b + n, ug_add(ar, gmoe_shared_down(k, ar, sa, n), r->row[n]));
        return;
    }
    for (; b < e; b++) {
        size_t n = sel->idx[o][b] - t * r->h, mark = ug_ar_mark(ar);
        ug_ar_emit(ar, o, b, ug_add(ar, gmoe_shared_down(k, ar, sa, n), gmoe_routed_out(r, ar, n)));
        ug_ar_release(ar, mark);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gmoe_fused_route_emit(c, ar, sel);
    int o_out = ug_case_judged_find(c, "out");
    gmoe_shared k;
    gmoe_routed r;
    if (gmoe_shared_open(&k, c)) return -1;
    if (gmoe_routed_open(&r, c)) return gmoe_shared_close(&k), -1;
    for (size_t t = 0; t < k.T; t++) {
        gmoe_shared_front(&k, c, ar, sel, t);
        gmoe_routed_act_emit(&r, c, ar, sel, t);
        out_emit(&k, &r, c, ar, sel, o_out, t);
    }
    gmoe_routed_close(&r);
    gmoe_shared_close(&k);
    return 0;
}

/* Scratch for the case memory estimate: glm_moe_fusion's two forms together
 * (gmoe_fused_scratch). */
static double scratch(const ug_params *P) { return gmoe_fused_scratch(P, 1, 1); }

const ug_op_def ug_opdef_glm_moe_fusion_mix = {.decl.check = check, .oracle = oracle, .scratch = scratch};
