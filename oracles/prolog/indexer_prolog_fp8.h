/* indexer_prolog_fp8.h — builder, oracle and geometry shared by
 * lightning_indexer_prolog_quant_fp8 and lightning_indexer_prolog_quant_mxfp8 (the two
 * differ only in the quantisation format). Output order: 0 q_fp8, 1 q_scale, 2 k_cache,
 * 3 k_scale, 4 weights. */
#ifndef UG_ORACLE_INDEXER_PROLOG_FP8_H
#define UG_ORACLE_INDEXER_PROLOG_FP8_H
#include "core/registry.h"
#include "kernels/sim/prolog/indexer_prolog_fp8.h"
#include "oracles/oracle.h"

int ug_lip8_build(ug_case *c, ug_lip8_format fmt, char *err, size_t errlen);
int ug_lip8_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel, ug_lip8_format fmt);
void ug_lip8_geometry(const ug_case *c, int out, ug_geom *g);

/* The params_doc text both ops share, with the format-specific scale tensors spliced in. */
#define UG_LIP8_PARAMS_DOC(SCALES)                                                                                     \
    "{\"tokens\":\"tokens T (int >= 1)\",\"hidden\":\"hidden size h of x (int >= 1; 7168 in production)\","           \
    "\"heads\":\"indexer heads H (int >= 1; 64 in production)\",\"d\":\"indexer head dim D: 32, 64 or 128 "           \
    "(production 128)\",\"rope\":\"RoPE_half dims R at the start of each row: a power of two, 2..D (default "         \
    "min(64, D))\",\"rope_base\":\"RoPE base (default 10000)\",\"pos\":\"position of token 0 (default 0; token t "    \
    "is at pos + t)\",\"blocks\":\"paged k-cache blocks (int >= 1)\",\"block_size\":\"slots per block (int >= 1)\","    \
    "\"pad\":\"trailing padding tokens with slot -1, not written to the cache (default 0)\",\"eps\":\"fp32 "        \
    "LayerNorm epsilon (default 1e-6)\",\"tensors\":\"in q[T,H,D] bf16 (the already dequantised q_i8*W_qb_i8: the "  \
    "int8 q input is simplified away), x[T,h] bf16, w_k[h,D] bf16, ln_gamma[D] bf16, ln_beta[D] bf16, "             \
    "w_proj[h,H] bf16, cos[T,R/2] bf16, sin[T,R/2] bf16 (angle (pos+t)*base^(-2i/R)), slot_mapping[T] int32 "        \
    "(distinct slots, -1 padding); out q_fp8[T,H,D] e4m3, " SCALES ", k_cache[blocks,block_size,D] e4m3 "           \
    "(unwritten slots hold 0), weights[T,H] bf16 = (x.w_proj)/sqrt(H*D)\"}"
#endif
