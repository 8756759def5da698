/* glm_ffn_shared_expert_quant.c — sim kernel and planted-bug mutants of
 * glm_ffn_shared_expert_quant, the GLM-4.5 int8 shared expert:
 *     x_i8, s_x = DynQuant(x); gu = bf16((x_i8.W13)*s_w13*s_x); a = bf16(silu(g)*u);
 *     a_i8, s_a = DynQuant(a); out = bf16((a_i8.W2)*s_w2*s_a)
 *
 * Device model: the vector unit finds each row's amax (exact), forms scale = amax/127 in
 * fp32 and the codes as rne(v/scale) in fp32, saturated to int8; the cube multiplies int8
 * by int8 into an exact int32 accumulator (|sum| < 2^31 by the declared hidden bound);
 * the fixpipe converts the sum to fp32 and multiplies by the per-channel scale, the vector
 * unit by the per-token scale, and gu is written as bf16 (the golden's quant_matmul
 * output); SwiGLU runs in fp32 on the bf16 g/u and writes a as bf16, which is quantised
 * again. Each exported value is what the next stage reads.
 *
 * Mutants, the bug classes of a hand-written int8 pipeline: the wrong divisor (amax/128),
 * truncation instead of RNE, an int16 accumulator that wraps, silu on the up half, a
 * static-calibration clip ratio (0.982) left on the dynamic scale (scales 1.8 % small, the
 * largest codes saturate: consistent with the kernel's own scale, so only the scale rule
 * and the @oracle_scale views see it), and a quantiser that forms v*127 before dividing by
 * amax (overflows fp32 for |v| > 2.7e36: only the near-overflow inputs see it).
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the int32 GEMMs are exact, so no order of theirs matters; the contract leaves the order
 * of the dequantisation's two fp32 products free and, through the certified device model,
 * allows a silu within 4 fp32 ulps): legal_scales_first multiplies the two fp32 scales
 * first, then the int32 sum (both GEMMs); legal_fn_ulps moves each silu 3 fp32 ulps off
 * libm's formula (ug_sim_fn_ulps). Both act in the shared part (gmoe_ffn_token), as the
 * fused MoE ops run them.
 * The pipeline itself is the shared part (glm_moe_sim_parts.c), which the fused MoE ops run too. */
#include "core/ops.h"
#include "kernels/sim/moe/glm_moe_sim_parts.h"
#include "kernels/sim/simlib.h"

static int ffn_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    gmoe_ffn k;
    const ulpgym_tensor *out, **slots[] = {&out};
    if (ug_sim_bind(call, "out", slots, err, errlen)) return -2;
    int rc = gmoe_ffn_open(&k, call, bug, err, errlen);
    if (rc) return rc;
    for (size_t t = 0; t < k.T; t++) {
        gmoe_ffn_token(&k, t, bug);
        ug_sim_store(out, t * k.h, k.h, k.o); /* rounds: bf16 */
    }
    gmoe_ffn_close(&k);
    return 0;
}

const ug_kernel_fn ug_sim_glm_ffn_shared_expert_quant = ffn_kernel;
