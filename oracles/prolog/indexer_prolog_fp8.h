/* indexer_prolog_fp8.h — declaration, builder, oracle and geometry shared by
 * lightning_indexer_prolog_quant_fp8 and lightning_indexer_prolog_quant_mxfp8 (the two
 * differ only in the quantisation format, which is the op's identity: the shared code
 * tells them apart by c->def->op). Output order: 0 q_fp8, 1 q_scale, 2 k_cache,
 * 3 k_scale, 4 weights. */
#ifndef UG_ORACLE_INDEXER_PROLOG_FP8_H
#define UG_ORACLE_INDEXER_PROLOG_FP8_H
#include "core/registry.h"
#include "oracles/oracle.h"

/* The params both ops declare, their cross-param check, and each op's tensors (same
 * inputs; the scale outputs differ in dtype and shape). */
int ug_lip8_check(const ug_params *p, char *err, size_t errlen);
/* Scratch for the case memory estimate (ug_op_def.scratch). */
double ug_lip8_scratch(const ug_params *p);

int ug_lip8_build(ug_case *c, char *err, size_t errlen);
int ug_lip8_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);
void ug_lip8_geometry(const ug_case *c, int out, ug_geom *g);

/* The semantics text both ops state, with the format's scale rule spliced in. */
#define UG_LIP8_SEMANTICS(SCALE)                                                                                       \
    "Exact arithmetic on the bf16 inputs and the fp32 value of eps up to the quantisation: RoPE_half with the bf16 "   \
    "cos/sin tables, LayerNorm (mean, variance, 1/sqrt(var + eps)) and the normalised Hadamard H_D v / sqrt(D) are "   \
    "not rounded (k_norm rmsnorm: v/sqrt(mean(v^2) + eps)*gamma, no mean, beta unread). " SCALE                     \
    " Codes are e4m3(v/scale), RNE, saturating to +-448; an all-zero block has codes 0. A "                           \
    "quantisation block holding a NaN or +-inf value (a NaN or inf input reaches every element of its row through "  \
    "the Hadamard; an inf in x or a LayerNorm weight poisons the whole k row) has a NaN scale and NaN codes. "        \
    "weights = (x.W_proj)/sqrt(H*D), rounded once to bf16; IEEE special values propagate through it. A padding "      \
    "token (slot -1) writes nothing. Finite inputs never overflow before the quantisation in the oracle: with "       \
    "bf16-max q or huge x the exact Hadamard and LayerNorm stay finite, so a kernel whose fp32 butterfly, GEMM or "   \
    "variance overflows fails there."
#endif
