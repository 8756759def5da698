/* lightning_indexer_prolog_quant_fp8.c — the definition of
 * lightning_indexer_prolog_quant_fp8: the lightning indexer prolog with per-row e4m3
 * quantisation (scale = amax/448, fp32). Check, builder and oracle are shared with the MXFP8
 * variant (indexer_prolog_fp8.c, where the math and the staged rule are described).
 * Primary standard pypto: codes boundary-aware within 1 quantum, scales and weights at
 * the silent default 1e-3 / 1e-3. */
#include "oracles/prolog/indexer_prolog_fp8.h"

const ug_op_def ug_opdef_lightning_indexer_prolog_quant_fp8 = {.decl.check = ug_lip8_check,
                                                               .build = ug_lip8_build,
                                                               .oracle = ug_lip8_oracle,
                                                               .geometry = ug_lip8_geometry,
                                                               .scratch = ug_lip8_scratch};
