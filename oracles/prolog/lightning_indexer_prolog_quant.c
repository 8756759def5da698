/* lightning_indexer_prolog_quant.c — the definition of lightning_indexer_prolog_quant, the
 * DeepSeek-V3.2 lightning indexer prolog with int8 DynQuant (scale amax/127 exported in
 * fp16), the int8 sibling of _fp8 and _mxfp8: check, builder, oracle and geometry are
 * theirs (indexer_prolog_fp8.c, where the math and the staged rule are described); the
 * int8 format adds the q dequantisation q_norm.w_qb * scales, the fp16 scales and the fp16
 * weights. Facts from hicann/pypto-gym tests/ops/deepseek_v32_exp/
 * test_lightning_indexer_prolog_quant.py: LayerNorm with gamma/beta and eps 1e-6, given
 * cos/sin [T, 64] with independent halves, given dense bf16 Hadamard matrices, DynQuant
 * r = 127/amax, codes rint(v*r), scale 1/r as fp16, weights (x.W_proj)*n^-1/2*d^-1/2 as
 * fp16, the k cache [blocks, block_size, 1, D] scattered at a cache index. Its rules: codes
 * atol 1 on every element, scales and weights atol 2.5e-5 (q_scale budget 0.005).
 * Primary standard pypto: codes boundary-aware within 1 quantum (views 1/16 quantum),
 * scales within one fp16 ulp, weights at the silent default 1e-3 / 1e-3. The test's goldens
 * cast to bf16 where its kernel's matmuls and vector stages write bf16 (x.W_proj before the
 * weights' scales; q after the dequantisation, RoPE and the Hadamard; k after the LayerNorm,
 * RoPE and the Hadamard), which this contract does not: `reference` judges weights, q_scale
 * and k_scale against those goldens too. */
#include "oracles/prolog/indexer_prolog_fp8.h"
#include "op_params.h"

/* The shared scratch plus the sim kernel's packed w_qb and the block's q_norm rows and int32
 * dots. */
static double lipq_scratch(const ug_params *P)
{
    const ug_lightning_indexer_prolog_quant_params *params = UG_P(lightning_indexer_prolog_quant, P);
    double lora = (double)params->q_lora, H = (double)params->heads, d = (double)params->d;
    return ug_lip8_scratch(P) + ug_lip8_kernel_block_bytes(0, H, d, lora) - ug_lip8_kernel_block_bytes(0, H, d, 0);
}

/* The reference goldens of weights, q_scale and k_scale: the test's _indexer_compute_weights,
 * _q and _k (indexer_prolog_fp8.h). */
static int lipq_reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ug_lip_weights_golden(c, sel, out, "hidden", "heads", "d");
    ug_lip_scales_golden(c, sel, out, NULL, NULL, NULL);
    return 0;
}

const ug_op_def ug_opdef_lightning_indexer_prolog_quant = {.decl.check = ug_lip8_check,
                                                           .build = ug_lip8_build,
                                                           .oracle = ug_lip8_oracle,
                                                           .geometry = ug_lip8_geometry,
                                                           .scratch = lipq_scratch,
                                                           .reference_golden = lipq_reference_golden};
