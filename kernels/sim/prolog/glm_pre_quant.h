/* glm_pre_quant.h — the device computation of glm_attention_pre_quant for one token, for
 * every sim kernel that contains it (glm_attention_pre_quant; glm_attention_fusion, which
 * then scatters k and v into its paged cache), with the planted bugs of its mutants.
 *
 * Device model (one token row on a vector core, the GEMM on the cube):
 *   r = x + residual in fp32; input norm: sum of squares in 64 fp32 lanes (simlib), den =
 *   sqrt(ss/H + eps) in fp32, n = bf16(r/den*gamma + beta); rows whose largest |r| is
 *   above 2^32 are first scaled by a power of two (exact), so the fp32 squares never
 *   overflow where the exact norm is finite;
 *   codes: v = n*s + o in fp32 (the product exact), rint (RNE), saturated to int8;
 *   GEMM: int8 x int8 into an exact integer accumulator, + int32 bias, converted to fp32,
 *   times deq_scale in fp32, rounded to bf16;
 *   q/k heads: the same norm over D values with the head weight and bias, bf16; RoPE_half
 *   on dims [0, R) in fp32 (two products and a sub/add), bf16; dims [R, D) copied.
 * Use: fill a ug_gpq_dev once per call (ug_gpq_dev_load: per-channel vectors widened to
 * fp32, W read in place), then ug_gpq_dev_token per token; free with
 * ug_gpq_dev_free. Every buffer of ug_gpq_tok holds the values the kernel exports.
 * ug_gpq_kernel is the whole walk (bind, every token, store every exported stage) of a
 * kernel whose declaration has glm_attention_pre_quant's tensors and params.
 * Legal variants (UG_VAR_LEGAL_SEQ_FMA, UG_VAR_LEGAL_TILE64): the norms' sums of squares in another fp32 order (the
 * certified device model's sums in any order); the GEMM's integer sum is exact in any order
 * and sqrt and the division are correctly rounded fp32 operations in the contract. */
#ifndef UG_SIM_GLM_PRE_QUANT_H
#define UG_SIM_GLM_PRE_QUANT_H
#include <stddef.h>
#include <stdint.h>

#include "op_params.h" /* ug_variant_code */
#include "ulpgym/kernel_abi.h"

typedef struct {
    size_t H, Nq, Nk, D, R, cols; /* cols = (Nq + 2 Nk)*D */
    float eps;
    float *nw, *nb, *sr, *off, *deq, *hw[2], *hb[2]; /* fp32 copies; hw/hb [0] q heads, [1] k heads */
    int32_t *qb, *acc;                               /* bias; the GEMM's int32 accumulators, one per column */
    const int8_t *w;                                 /* W [H, cols] in the call's tensor */
    float *scratch;                                  /* max(H, D) floats for the pre-scaled squares */
} ug_gpq_dev;

/* One token's values, each as the kernel exports it (bf16 or int8 values held in fp32/int8). */
typedef struct {
    float *r;     /* [H] fp32 x + residual (stored as bf16 residual_res) */
    float *n;     /* [H] bf16 */
    int8_t *code; /* [H] */
    float *mm;    /* [cols] bf16: q | k | v */
    float *qkn;   /* [(Nq+Nk) D] bf16 head norms */
    float *qk;    /* [(Nq+Nk) D] bf16 after RoPE: q heads then k heads */
} ug_gpq_tok;

/* Loads the weights and vectors of the call's tensors (names of glm_attention_pre_quant's
 * declaration) into m, whose H, Nq, Nk, D, R and eps the caller set. 0, or -1 (memory). */
int ug_gpq_dev_load(ug_gpq_dev *m, const ulpgym_call *call);
void ug_gpq_dev_free(ug_gpq_dev *m);
/* Allocates the buffers of one token (free with ug_gpq_tok_free). 0 or -1. */
int ug_gpq_tok_alloc(const ug_gpq_dev *m, ug_gpq_tok *tk);
void ug_gpq_tok_free(ug_gpq_tok *tk);
/* Every stage of one token: x, residual rows [H], cos/sin rows [R/2]. */
void ug_gpq_dev_token(const ug_gpq_dev *m, const float *x, const float *res, const float *cs, const float *sn,
                      ug_gpq_tok *tk, ug_variant_code bug);

/* The call's tensors the walk binds (names of glm_attention_pre_quant's declaration). */
typedef struct {
    const ulpgym_tensor *x, *res, *cos, *sin, *q, *k, *v, *rr, *n, *n8, *qkmm, *qkn;
} ug_gpq_io;

/* Called after token t's values are stored (tk holds them; m->acc its integer sums). */
typedef void (*ug_gpq_token_fn)(void *ctx, const ug_gpq_dev *m, const ug_gpq_tok *tk, size_t t);

/* Binds, loads, and for every token t runs ug_gpq_dev_token and stores residual_res, n,
 * n_i8, qk_mm, qk_norm, q, k and v (then calls fn(ctx, ...) when fn is set). 0, -1
 * (memory) or -2 (binding, with err set). */
int ug_gpq_kernel(const ulpgym_call *call, char *err, size_t errlen, ug_variant_code bug, ug_gpq_token_fn fn,
                  void *ctx);

#endif
