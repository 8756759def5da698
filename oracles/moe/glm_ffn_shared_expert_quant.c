/* glm_ffn_shared_expert_quant.c — exact oracle of glm_ffn_shared_expert_quant, the GLM-4.5
 * int8 shared expert (declaration: glm_ffn_shared_expert_quant.json):
 *     x_i8, s_x = DynQuant(x)                               per token, scale amax/127 (fp32)
 *     gu = bf16((x_i8 . W13_i8) * s_w13 * s_x)              exact int32 dot, one bf16 rounding
 *     a  = bf16(silu(g) * u)                                g = gu[:, :I], u = gu[:, I:]
 *     a_i8, s_a = DynQuant(a)
 *     out = bf16((a_i8 . W2_i8) * s_w2 * s_a)
 * The bf16 roundings of gu and a are the reference golden's (npu_quant_matmul with
 * output_dtype bf16, npu_swiglu on bf16): the specification's own, so they appear here as
 * ug_round. Staged rule (docs/STANDARDS.md): every stage starts from the kernel's exported
 * values of the stage before (x_i8/x_scale for a, a for a_i8/a_scale, a_i8/a_scale for
 * out), so a legitimate flip cannot cascade; each exported value is judged against what the
 * oracle derives from those stage inputs. Scales: the exact amax/127 (numeric, relative
 * 2^-12); codes: v/scale_kernel (consistency, 1 quantum) and, in the views, v/scale_oracle
 * with the oracle's scale rounded to fp32 (accuracy, 1/16 quantum + 2^-11 |g*|).
 *
 * Reference suite: hicann/pypto-gym tests/ops/glm_v4_5/test_glm_ffn_shared_expert_quant.py:
 * hidden 5120, intermediate 192, b 1 and 2 tokens, x = randn*0.02 - 0.01 (bf16), weights
 * quantised per channel to int8 with bf16 scales; out judged by assert_allclose
 * rtol 2^-7 atol 1e-4 on every element (our rule for out and for a), stored; primary: certified.
 * The stages are written once in glm_moe_oracle_parts.c (the fused MoE ops share them). */
#include "oracles/moe/glm_moe_oracle_parts.h"
#include "oracles/oracle.h"
#include "op_params.h"

/* Every stage is the shared-expert part's (glm_moe_oracle_parts.c), on this op's outputs. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gmoe_shared k;
    if (gmoe_shared_open(&k, c)) return -1;
    int o_out = ug_case_judged_find(c, "out");
    for (size_t t = 0; t < k.T; t++) {
        gmoe_shared_front(&k, c, ar, sel, t);
        gmoe_shared_out_emit(&k, c, ar, sel, o_out, t);
    }
    gmoe_shared_close(&k);
    return 0;
}

/* Scratch for the case memory estimate: the sim kernel's int8 transposes of both weights
 * (3Ih bytes), its fp32 staging of W13 while transposing (8Ih), its fp32 scales and rows;
 * the oracle's int8 transposes (3Ih) and one row of doubles. */
static double scratch(const ug_params *P)
{
    const ug_glm_ffn_shared_expert_quant_params *params = UG_P(glm_ffn_shared_expert_quant, P);
    double h = (double)params->hidden, I = (double)params->intermediate;
    return 14 * h * I + 4 * (6 * I + 4 * h) + 2 * (h + I) + 8 * (h + I);
}

const ug_op_def ug_opdef_glm_ffn_shared_expert_quant = {.oracle = oracle, .scratch = scratch};
