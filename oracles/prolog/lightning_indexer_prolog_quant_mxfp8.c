/* lightning_indexer_prolog_quant_mxfp8.c — the definition of
 * lightning_indexer_prolog_quant_mxfp8: the lightning indexer prolog with OCP MXFP8
 * quantisation (blocks of 32 e4m3 codes sharing an E8M0 scale 2^(floor(log2 amax)-8)).
 * Check, builder and oracle are shared with the fp8 variant (indexer_prolog_fp8.c). Primary
 * standard pypto: codes boundary-aware within 1 quantum, E8M0 scales exact (up to the
 * near-binade rule described there), weights at the silent default 1e-3 / 1e-3. */
#include "oracles/prolog/indexer_prolog_fp8.h"

const ug_op_def ug_opdef_lightning_indexer_prolog_quant_mxfp8 = {.decl.check = ug_lip8_check,
                                                                 .build = ug_lip8_build,
                                                                 .oracle = ug_lip8_oracle,
                                                                 .geometry = ug_lip8_geometry,
                                                                 .scratch = ug_lip8_scratch};
