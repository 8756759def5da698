/* lightning_indexer_prolog_quant_mxfp8.c — operator definition of
 * lightning_indexer_prolog_quant_mxfp8: the lightning indexer prolog with OCP MXFP8
 * quantisation (blocks of 32 e4m3 codes sharing an E8M0 scale 2^(floor(log2 amax)-8)).
 * Declaration, builder and oracle are shared with the fp8 variant (indexer_prolog_fp8.c). Primary
 * standard pypto: codes boundary-aware within 1 quantum, E8M0 scales exact (up to the
 * near-binade rule described there), weights at the silent default 1e-3 / 1e-3. */
#include "oracles/prolog/indexer_prolog_fp8.h"
#include "oracles/verdict.h"

static const ug_output_rule outputs[] = {
    {"q_fp8", UG_CMP_BOUNDARY, 1.0, 0.0, 0.0}, /* budget in quanta (atol 1 of quantised codes) */
    {"q_scale", UG_CMP_EXACT, 0.0, 0.0, 0.0},
    {"k_cache", UG_CMP_BOUNDARY, 1.0, 0.0, 0.0},
    {"k_scale", UG_CMP_EXACT, 0.0, 0.0, 0.0},
    {"weights", UG_CMP_NUMERIC, 1e-3, 1e-3, 0.005},
};

const ug_op_def ug_opdef_lightning_indexer_prolog_quant_mxfp8 = {
    .op = UG_OP_LIGHTNING_INDEXER_PROLOG_QUANT_MXFP8,
    .summary = "indexer prolog: q and LayerNorm(x.W_k) through RoPE_half + Hadamard, quantised to MXFP8 (32-blocks, "
               "E8M0 scales), k scattered into a paged cache; weights = x.W_proj/sqrt(H*D)",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 5,
    .decl = {"lightning_indexer_prolog_quant_mxfp8", ug_lip8_params, ug_lip8_derived, ug_lip8_tensors_mx, ug_lip8_check},
    .semantics = UG_LIP8_SEMANTICS("Scales: 2^(floor(log2 amax)-8) per block of 32 (E8M0, exponent clamped to -127..127), amax the exact "
                                   "|max| of the block; an all-zero block and an unwritten cache slot have scale 2^-127 and "
                                   "codes 0. An E8M0 scale whose exact amax lies within 2^-12 of the binade edge may be "
                                   "either neighbour."),
    .build = ug_lip8_build,
    .oracle = ug_lip8_oracle,
    .geometry = ug_lip8_geometry,
};
