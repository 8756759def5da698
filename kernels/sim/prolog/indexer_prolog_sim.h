/* indexer_prolog_sim.h — the lightning indexer prologs' sim kernel (indexer_prolog_fp8.c)
 * as per-token entry points, so that a fused op (mla_indexer_prolog_quant) runs the same
 * device model over its own call: the formats, the planted bugs, and open / token / close.
 * The call must hold the tensors under the names the three ops declare (x, w_k, ln_gamma,
 * ln_beta, w_proj, cos, sin, slot_mapping, q_scale, k_cache, k_scale, weights, hadamard_q/k
 * when given; fp8/MX: q and q_fp8; int8: q_norm, q_norm_scale, w_qb, w_qb_scale and q_i8)
 * and the params of lightning_indexer_prolog_quant_fp8's declaration. */
#ifndef UG_SIM_INDEXER_PROLOG_H
#define UG_SIM_INDEXER_PROLOG_H
#include <stddef.h>

#include "op_params.h" /* ug_variant_code */
#include "ulpgym/kernel_abi.h"

/* The quantisation format: the op's own (lip8_kernel reads it from call->op). */
typedef enum { LIP8_FP8, LIP8_MX, LIP8_INT8 } lip8_format;

typedef struct lip_sim lip_sim;
/* Binds the call's tensors and params, loads the weights, writes the empty cache (codes 0,
 * scale 0 or MX 2^-127). NULL with *status -2 (bad call, err set) or -1 (no memory). */
lip_sim *lip_sim_open(const ulpgym_call *call, lip8_format fmt, ug_variant_code bug, char *err, size_t errlen,
                      int *status);
/* The params lip_sim_open reads by name (eps, k_norm, tables), given by a fused op whose
 * names differ; lip_sim_open_ex with o NULL is lip_sim_open. */
typedef struct {
    float eps;        /* the k norm's epsilon (an fp32 value) */
    int rms;          /* k_norm rmsnorm */
    int given_tables; /* cos/sin [T, R], column i+R/2 for the second half */
} lip_sim_opts;
lip_sim *lip_sim_open_ex(const ulpgym_call *call, lip8_format fmt, ug_variant_code bug, const lip_sim_opts *o,
                         char *err, size_t errlen, int *status);
size_t lip_sim_tokens(const lip_sim *s);
/* Token t: its q rows, weights, and k row into its cache slot (none for slot -1). */
void lip_sim_token(lip_sim *s, size_t t);
/* lip_sim_token with, int8, the token's dequantised q [H*D] (fp32) from the caller instead of
 * q_norm.w_qb (NULL: lip_sim_token). */
void lip_sim_token_q(lip_sim *s, size_t t, const float *q);
void lip_sim_close(lip_sim *s);
/* One row's quantisation (d values; fp8/int8 one scale, MX d/32): codes as fp32 values
 * before the store, scales likewise. */
void lip_sim_quantise(const float *v, size_t d, lip8_format fmt, ug_variant_code bug, float *codes, float *scales);
#endif
