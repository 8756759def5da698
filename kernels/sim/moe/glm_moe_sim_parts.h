/* glm_moe_sim_parts.h — the device side of the GLM-4.5 MoE parts, shared by the sim kernels
 * made of them: the router after the gate (glm_select_experts, glm_moe_fusion,
 * glm_moe_fusion_mix), the int8 shared expert (glm_ffn_shared_expert_quant and the two
 * fused ops) and the routed SwiGLU activation row (moe_grouped_gemm and the two fused
 * ops), and the front both fused ops share (gate and router, one list of planted bugs). The
 * device models are those ops' file headers; each part's planted bugs are selected by its
 * own bug code so that every op's mutants run the same code.
 * Names start gmoe_ (GLM MoE): gmp_ is GNU GMP's namespace, linked into the same binary. */
#ifndef UG_SIM_GLM_MOE_PARTS_H
#define UG_SIM_GLM_MOE_PARTS_H
#include <stddef.h>
#include <stdint.h>

#include "core/opdecl.h"
#include "op_params.h" /* ug_variant_code */
#include "ulpgym/kernel_abi.h"

/* ---- legal variants: other correct orders of the same fp32 arithmetic, or approximate functions ---- */

/* The legal variants of the ops made of these parts (moe_grouped_gemm, glm_moe_fusion,
 * glm_moe_fusion_mix): GMOE_LEGAL_NONE is the sim kernels' arithmetic, unchanged. */
typedef enum {
    GMOE_LEGAL_NONE,
    GMOE_LEGAL_SEQ_FMA,      /* every fp32 dot product one sequential fmaf chain; the routed combine by fmaf */
    GMOE_LEGAL_TILE64,       /* every fp32 dot product in K-tiles of 64 (each summed sequentially in fp32, the
                             * partials added pairwise); the routed combine in reverse slot order */
    GMOE_LEGAL_K_REVERSE,    /* every fp32 dot product one sequential fp32 sum from the last k to the first */
    GMOE_LEGAL_SCALES_FIRST, /* the int8 shared expert: the two fp32 scales multiplied first, then the int32 sum */
    GMOE_LEGAL_FN_ULPS       /* the sim's dot products; the routed SwiGLU's silu UG_SIM_FN_ULPS ulps off (simlib.h) */
} gmoe_legal;

/* sum_k a[k]*b[k], k < n, in fp32: ug_ktile_dot_f32 for GMOE_LEGAL_NONE (and every mode that
 * does not reorder dot products), else the legal variant's order. */
float gmoe_dot(gmoe_legal how, const float *a, const float *b, size_t n);

/* ---- router: fp32 sigmoid + bias, group top-k, top_k by b, weights from s ---- */

typedef struct {
    long E, k, ng, tg, per;
    int top2, renorm;
    float rsf;
    ug_variant_code bug;
    int stable;       /* sigmoid as e^x/(1+e^x) for x < 0 (the fused ops' device): no exp overflow to a 0 score */
    gmoe_legal legal; /* the fused ops' gate logits: gmoe_dot's order (GMOE_LEGAL_NONE: the sim's K-tiles) */
    int fn_ulps;      /* ulps each sigmoid is moved by (ug_sim_fn_ulps): 0, or the legal_fn_ulps variants' */
} gmoe_se_cfg;

/* Per-token scratch of the router (gmoe_se_alloc / gmoe_se_free). */
typedef struct {
    float *s, *b, *gs;
    long *idx;
    unsigned char *used;
} gmoe_se_work;

/* The router's configuration from parsed params (E experts, k ids). */
void gmoe_se_cfg_read(const ug_params *p, long E, long k, ug_variant_code bug, gmoe_se_cfg *c);
int gmoe_se_alloc(const gmoe_se_cfg *c, gmoe_se_work *w);
void gmoe_se_free(gmoe_se_work *w);
/* One token: fp32 logits x[0..E), fp32 bias -> weights w[0..k), ids[0..k) (as floats). */
void gmoe_se_token(const gmoe_se_cfg *c, const float *x, const float *bias, float *w, float *ids, gmoe_se_work *wk);

/* The fused ops' gate and router: binds x gate_w e_score_correction_bias router_logits
 * topk_weights topk_ids; per token the fp32 K-tiled logits (stored), then gmoe_se_token;
 * weights and ids stored and kept in w, ids [T,k]. 0, -1, -2. */
int gmoe_gate_router_run(const ulpgym_call *call, const gmoe_se_cfg *c, float *w, float *ids, char *err, size_t errlen);

/* ---- int8 shared expert ---- */

typedef struct {
    size_t T, h, I;
    const ulpgym_tensor *x, *w13, *s13, *w2, *s2, *x8, *xs, *a, *a8, *as;
    int8_t *w13t, *w2t, *xq8, *aq8; /* [2I][h], [h][I], one row of codes each */
    float *sw13, *sw2, *xr, *q, *gu, *ar, *o;
    float x_amax; /* amax of the whole x (UG_VAR_MUT_TENSOR_SCALE only) */
} gmoe_ffn;

/* Binds x w13 w13_scale w2 w2_scale x_i8 x_scale a a_i8 a_scale, stages the weights;
 * 0, -1 (memory) or -2 (binding, err set). gmoe_ffn_close frees. */
int gmoe_ffn_open(gmoe_ffn *k, const ulpgym_call *call, ug_variant_code bug, char *err, size_t errlen);
void gmoe_ffn_close(gmoe_ffn *k);
/* Token t: both quantisations, both GEMMs, SwiGLU, the exported intermediates stored;
 * the output row (fp32, before its bf16 store) left in k->o. */
void gmoe_ffn_token(gmoe_ffn *k, size_t t, ug_variant_code bug);
/* Every token (gmoe_ffn_open, gmoe_ffn_token, gmoe_ffn_close): the fp32 output rows into
 * rows [T,h]. 0, -1, -2 as gmoe_ffn_open. */
int gmoe_ffn_run(const ulpgym_call *call, ug_variant_code bug, float *rows, char *err, size_t errlen);

/* ---- routed SwiGLU row ---- */

/* a[i] = bf16(silu(g)*u), g = x.w1t[i], u = x.w3t[i] (fp32 K-tiles over h); swap: gate
 * and up exchanged (a planted bug). */
void gmoe_swiglu_row(const float *x, const float *w1t, const float *w3t, size_t h, size_t I, int swap, float *a);
/* The same row as a legal variant computes it: g and u by gmoe_dot(how) (GMOE_LEGAL_NONE:
 * gmoe_swiglu_row); GMOE_LEGAL_FN_ULPS: silu moved by UG_SIM_FN_ULPS ulps (ug_sim_fn_ulps). */
void gmoe_swiglu_row_legal(const float *x, const float *w1t, const float *w3t, size_t h, size_t I, int swap,
                           gmoe_legal how, float *a);

/* ---- routed experts, grouped by expert, then the weighted combine ---- */

typedef enum {
    GMOE_RT_OK,
    GMOE_RT_BF16_ACC,      /* the combine's running sum kept in bf16 */
    GMOE_RT_DROP_LAST,     /* the combine stops at slot k-2: the last expert never added */
    GMOE_RT_SWAP,          /* gate and up projections swapped */
    GMOE_RT_LEGAL_SEQ_FMA, /* legal: GMOE_LEGAL_SEQ_FMA's GEMMs and combine */
    GMOE_RT_LEGAL_TILE64,  /* legal: GMOE_LEGAL_TILE64's GEMMs and combine */
    GMOE_RT_LEGAL_FN_ULPS  /* legal: the sim's GEMMs and combine, silu UG_SIM_FN_ULPS ulps off */
} gmoe_rt_bug;

/* Binds x expert_w1 expert_w3 expert_w2 act. For every expert chosen by some token (w,
 * ids: [T,k] as the router wrote them), stages its weights once and runs its tokens:
 * act (stored) and the slot's fp32 down projection; then per token, slot by slot,
 * acc[t,:] += w[t,j] * y[t,j,:] in fp32 (acc [T,h] holds the start value). 0, -1, -2. */
int gmoe_routed_run(const ulpgym_call *call, const float *w, const float *ids, size_t k, float *acc, gmoe_rt_bug bug,
                    char *err, size_t errlen);

/* ---- the fused ops' front (glm_moe_fusion, glm_moe_fusion_mix) ---- */

/* A fused op's variant (glm_moe_fusion, glm_moe_fusion_mix: its ug_variant_code) as each
 * part sees it: the router and the shared expert act on their own variants' codes, passed
 * through (UG_VAR_SIM for any other); the routed experts and the gate have their own codes. */
ug_variant_code gmoe_mut_se(int mut);
ug_variant_code gmoe_mut_ffn(int mut);
gmoe_rt_bug gmoe_mut_rt(int mut);
gmoe_legal gmoe_mut_legal(int mut); /* the gate's dot-product order */

typedef struct {
    const ulpgym_tensor *out, *tw; /* out [T,h], topk_weights [T,k] */
    gmoe_se_cfg c;                 /* the router's configuration (stable sigmoid) */
    int routed;                    /* has_form and params form is "routed" */
    size_t n_out;                  /* elements of out */
    float *w, *ids, *acc;          /* the router's weights and ids [T,k]; acc [T,h] fp32, zeroed */
} gmoe_fused;

/* Binds out and topk_weights, reads the router's configuration from the params with mutant
 * `mut`'s router bug (and, has_form: the op declares param form, the form), allocates w,
 * ids and acc and runs the gate and router part
 * (gmoe_gate_router_run) into w, ids. 0, -1 (memory), -2 (err set). gmoe_fused_free frees,
 * also after a failure. */
int gmoe_fused_route(gmoe_fused *f, const ulpgym_call *call, int mut, int has_form, char *err, size_t errlen);
void gmoe_fused_free(gmoe_fused *f);

#endif
