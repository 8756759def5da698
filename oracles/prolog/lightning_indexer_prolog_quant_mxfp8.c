/* lightning_indexer_prolog_quant_mxfp8.c — operator definition of
 * lightning_indexer_prolog_quant_mxfp8: the lightning indexer prolog with OCP MXFP8
 * quantisation (blocks of 32 e4m3 codes sharing an E8M0 scale 2^(floor(log2 amax)-8)).
 * Builder and oracle are shared with the fp8 variant (indexer_prolog_fp8.c). Primary
 * standard pypto: codes boundary-aware within 1 quantum, E8M0 scales exact (up to the
 * near-binade rule described there), weights at the silent default 1e-3 / 1e-3. */
#include "oracles/prolog/indexer_prolog_fp8.h"
#include "oracles/verdict.h"

static int build(ug_case *c, char *err, size_t errlen) { return ug_lip8_build(c, UG_LIP8_MX, err, errlen); }
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel) { return ug_lip8_oracle(c, ar, sel, UG_LIP8_MX); }

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
    .build = build,
    .oracle = oracle,
    .geometry = ug_lip8_geometry,
    .variants = ug_lightning_indexer_prolog_quant_mxfp8_variants,
    .params_doc = UG_LIP8_PARAMS_DOC("q_scale[T,H,D/32] e8m0, k_scale[blocks,block_size,D/32] e8m0 (2^(floor(log2 "
                                     "amax)-8) per 32-block, clamped to 2^-127..2^127; 2^-127 for an all-zero block "
                                     "and for unwritten slots)"),
};
