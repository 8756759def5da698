/* glm_moe_fusion.c — sim kernel and planted-bug mutants of glm_moe_fusion, the GLM-4.5
 * MoE block in one kernel: gate -> select_experts -> (form shared) the int8 shared expert
 * on x, or (form routed) the weighted sum of the chosen SwiGLU experts.
 *
 * Device model: the gate weight is staged once as fp32; each token row of x is widened
 * exactly and the cube reduces 128-deep K-tiles into an fp32 accumulator (ktile.h); the
 * fp32 logits are written out and feed the router part (fp32 sigmoid, e^x/(1+e^x) for
 * x < 0 so that a logit below -88 keeps its subnormal score, bias add, group
 * top-k, weights from s; glm_moe_parts.c). Form shared runs the shared-expert part
 * (DynQuant in fp32, exact int32 GEMMs, bf16 gu and a). Form routed groups the tokens by
 * expert: each chosen expert's bf16 weights are staged once, its tokens run the two
 * fp32-accumulated GEMMs with act = silu(g)*u written back as bf16 in between (exported),
 * and the per-slot down projections are combined per token in slot order in fp32,
 * out rounded once to bf16. Every exported intermediate is what the next stage reads.
 *
 * Mutants (bugs a fused MoE kernel has had):
 *   mut_no_renorm       the router's weights never divided by their sum (renormalize 1)
 *   mut_unbiased_choice experts chosen by the unbiased sigmoid score, the correction bias
 *                       ignored (ids differ wherever the bias reorders the top-k)
 *   mut_tensor_scale    form shared: x quantised with one scale for the whole tensor
 *                       (amax over all tokens) instead of per token (tokens > 1 only)
 *   mut_bf16_combine    form routed: the weighted combine's running sum kept in bf16
 *   mut_drop_last       form routed: the combine loop stops one slot early (k-1 experts)
 *   mut_swiglu_swap     form routed: silu applied to the up projection, gate multiplied */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/moe/glm_moe_parts.h"
#include "kernels/sim/simlib.h"

typedef enum {
    MUT_NONE,
    MUT_NO_RENORM,
    MUT_UNBIASED,
    MUT_TENSOR_SCALE,
    MUT_BF16_COMBINE,
    MUT_DROP_LAST,
    MUT_SWIGLU_SWAP
} mf_bug;

static gmp_se_bug se_bug(int bug)
{
    return bug == MUT_NO_RENORM ? GMP_SE_NO_RENORM : bug == MUT_UNBIASED ? GMP_SE_UNBIASED : GMP_SE_OK;
}

static gmp_rt_bug rt_bug(int bug)
{
    return bug == MUT_BF16_COMBINE ? GMP_RT_BF16_ACC
           : bug == MUT_DROP_LAST  ? GMP_RT_DROP_LAST
           : bug == MUT_SWIGLU_SWAP ? GMP_RT_SWAP
                                    : GMP_RT_OK;
}

/* Form shared: the shared-expert part, token by token. */
static int mf_shared(const ulpgym_call *call, const ulpgym_tensor *out, int bug, char *err, size_t errlen)
{
    gmp_ffn k;
    gmp_ffn_bug fb = bug == MUT_TENSOR_SCALE ? GMP_FFN_TENSOR_SCALE : GMP_FFN_OK;
    int rc = gmp_ffn_open(&k, call, fb, err, errlen);
    if (rc) return rc;
    for (size_t t = 0; t < k.T; t++) {
        gmp_ffn_token(&k, t, fb);
        ug_sim_store(out, t * k.h, k.h, k.o); /* rounds: bf16 */
    }
    gmp_ffn_close(&k);
    return 0;
}

/* Form routed: the routed part into a zeroed fp32 accumulator, stored as bf16. */
static int mf_routed(const ulpgym_call *call, const ulpgym_tensor *out, const float *w, const float *ids, size_t K,
                     int bug, char *err, size_t errlen)
{
    size_t n = (size_t)out->shape[0] * (size_t)out->shape[1];
    float *acc = calloc(n ? n : 1, sizeof *acc);
    if (!acc) return -1;
    int rc = gmp_routed_run(call, w, ids, K, acc, rt_bug(bug), err, errlen);
    if (!rc) ug_sim_store(out, 0, n, acc); /* rounds: bf16 */
    free(acc);
    return rc;
}

static int mf_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *out, *tw, **slots[] = {&out, &tw};
    if (ug_sim_bind(call, "out topk_weights", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    gmp_se_cfg c;
    gmp_se_cfg_read(&p, ug_p_int(&p, "experts"), tw->shape[1], se_bug(bug), &c);
    int routed = ug_p_is(&p, "form", "routed");
    c.stable = 1; /* the fused kernels' sigmoid keeps subnormal scores of logits below -88 */
    ug_params_free(&p);
    size_t TK = (size_t)tw->shape[0] * (size_t)tw->shape[1];
    float *w = malloc(2 * (TK ? TK : 1) * sizeof *w), *ids = w + TK;
    if (!w) return -1;
    int rc = gmp_gate_router_run(call, &c, w, ids, err, errlen);
    if (!rc) rc = routed ? mf_routed(call, out, w, ids, (size_t)c.k, bug, err, errlen)
                         : mf_shared(call, out, bug, err, errlen);
    free(w);
    return rc;
}

const ug_kernel_variant ug_variants_glm_moe_fusion[] = {
    {"sim", "fp32 K-tiled gate, fp32 router, int8 shared expert (form shared) or grouped bf16 SwiGLU experts with "
            "bf16 act and an fp32 weighted combine (form routed)",
     mf_kernel, 0, MUT_NONE},
    {"mut_no_renorm", "the router's weights are not divided by their sum (renormalize ignored)", mf_kernel, 0,
     MUT_NO_RENORM},
    {"mut_unbiased_choice", "experts chosen by the sigmoid score alone: the e_score_correction_bias is ignored",
     mf_kernel, 0, MUT_UNBIASED},
    {"mut_tensor_scale", "form shared: x quantised with one per-tensor scale (amax over all tokens), not per token",
     mf_kernel, 0, MUT_TENSOR_SCALE},
    {"mut_bf16_combine", "form routed: the weighted sum over the chosen experts is accumulated in bf16", mf_kernel, 0,
     MUT_BF16_COMBINE},
    {"mut_drop_last", "form routed: the combine stops one slot early, the k-th expert never added", mf_kernel, 0,
     MUT_DROP_LAST},
    {"mut_swiglu_swap", "form routed: silu applied to x*W3 (up) and multiplied by x*W1 (gate)", mf_kernel, 0,
     MUT_SWIGLU_SWAP},
    {NULL, NULL, NULL},
};
