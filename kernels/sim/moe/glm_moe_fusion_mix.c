/* glm_moe_fusion_mix.c — sim kernel and planted-bug mutants of glm_moe_fusion_mix: the
 * GLM-4.5 MoE block with the int8 shared expert fused in:
 *     out = bf16( sum_j w_j * E_{id_j}(x) + shared(x) )
 *
 * Device model: the gate and router part (fp32 K-tiled logits, fp32 router), then the
 * shared-expert part per token (DynQuant in fp32, exact int32 GEMMs, bf16 gu and a) whose
 * fp32 output row seeds the token's accumulator, then the routed part (tokens grouped by
 * expert, bf16 act written back between the GEMMs, per-slot fp32 down projections) adds
 * w_j * y_j slot by slot into the same fp32 accumulator; out rounded once to bf16. All
 * of it is glm_moe_sim_parts.c, as glm_moe_fusion runs it.
 *
 * Mutants (bugs a fused MoE-with-shared-expert kernel has had):
 *   mut_no_renorm       the router's weights never divided by their sum
 *   mut_tensor_scale    the shared expert quantises x with one per-tensor scale (tokens > 1)
 *   mut_bf16_combine    the accumulator of shared + weighted experts kept in bf16
 *   mut_drop_last       the combine stops one slot early (k-1 routed experts)
 *   mut_swiglu_swap     the routed experts apply silu to the up projection
 *   mut_shared_scaled   the routed scaling factor applied to the whole sum, shared expert
 *                       included (only routed_scaling_factor != 1)
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract's device model: fp32 products and sums in any order, no rounding beyond the
 * declared ones; glm_moe_sim_parts.c, gmoe_legal):
 *   legal_seq_fma       gate logits and the routed GEMMs as sequential fmaf chains, the
 *                       combine acc = fmaf(w, y, acc) onto the shared row
 *   legal_tile64        gate logits and the routed GEMMs in K-tiles of 64 (sequential fp32
 *                       partials added pairwise), the slots added in reverse order (it
 *                       failed the op's former deciding pypto rule at plan seed 7, case
 *                       0093ee3ef1d6e33d: act[0,0,10] 2 bf16 ulps off from fp32 sums of
 *                       cancelling terms, 0 of 32 elements allowed; certified, which decides
 *                       now, passes it)
 *   legal_scales_first  the shared expert's int32 sums times (w_scale * x_scale), the two
 *                       fp32 scales multiplied first
 *   legal_fn_ulps       the router's sigmoid and the shared and routed experts' silu each
 *                       moved by 3 fp32 ulps off libm's formula (ug_sim_fn_ulps: the
 *                       contract allows sigmoid/silu/exp within 4 ulps) */
#include "core/ops.h"
#include "kernels/sim/moe/glm_moe_sim_parts.h"
#include "kernels/sim/simlib.h"

/* The shared expert's fp32 rows seed the accumulator; the routed part adds into it. */
static int mix_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    gmoe_fused f;
    int rc = gmoe_fused_route(&f, call, bug, 0, err, errlen);
    if (!rc) rc = gmoe_ffn_run(call, gmoe_mut_ffn(bug), f.acc, err, errlen);
    if (!rc && bug == UG_VAR_MUT_SHARED_SCALED)
        for (size_t i = 0; i < f.n_out; i++) f.acc[i] *= f.c.rsf; /* rounds: fp32 (bug: the shared rows scaled) */
    if (!rc) rc = gmoe_routed_run(call, f.w, f.ids, (size_t)f.c.k, f.acc, gmoe_mut_rt(bug), err, errlen);
    if (!rc) ug_sim_store(f.out, 0, f.n_out, f.acc); /* rounds: bf16 */
    gmoe_fused_free(&f);
    return rc;
}

const ug_kernel_fn ug_sim_glm_moe_fusion_mix = mix_kernel;
