/* lightning_indexer_prolog_quant_fp8.c — operator definition of
 * lightning_indexer_prolog_quant_fp8: the lightning indexer prolog with per-row e4m3
 * quantisation (scale = amax/448, fp32). Declaration, builder and oracle are shared with the MXFP8
 * variant (indexer_prolog_fp8.c, where the math and the staged rule are described).
 * Primary standard pypto: codes boundary-aware within 1 quantum, scales and weights at
 * the silent default 1e-3 / 1e-3. */
#include "oracles/prolog/indexer_prolog_fp8.h"
#include "oracles/verdict.h"

static const ug_output_rule outputs[] = {
    {"q_fp8", UG_CMP_BOUNDARY, 1.0, 0.0, 0.0}, /* budget in quanta (atol 1 of quantised codes) */
    {"q_scale", UG_CMP_NUMERIC, 1e-3, 1e-3, 0.005},
    {"k_cache", UG_CMP_BOUNDARY, 1.0, 0.0, 0.0},
    {"k_scale", UG_CMP_NUMERIC, 1e-3, 1e-3, 0.005},
    {"weights", UG_CMP_NUMERIC, 1e-3, 1e-3, 0.005},
};

const ug_op_def ug_opdef_lightning_indexer_prolog_quant_fp8 = {
    .op = UG_OP_LIGHTNING_INDEXER_PROLOG_QUANT_FP8,
    .summary = "indexer prolog: q and LayerNorm(x.W_k) through RoPE_half + Hadamard, quantised per row to e4m3 "
               "(scale amax/448), k scattered into a paged cache; weights = x.W_proj/sqrt(H*D)",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 5,
    .decl = {"lightning_indexer_prolog_quant_fp8", ug_lip8_params, ug_lip8_derived, ug_lip8_tensors_fp8, ug_lip8_check},
    .semantics = UG_LIP8_SEMANTICS("Scales: amax/448 per row in fp32 (rounded once), amax the exact |max| of the row; an all-zero row and "
                                   "an unwritten cache slot have scale 0 and codes 0. Codes are judged against v/scale with "
                                   "the kernel's own scale."),
    .build = ug_lip8_build,
    .oracle = ug_lip8_oracle,
    .geometry = ug_lip8_geometry,
};
