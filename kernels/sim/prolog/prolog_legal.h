/* prolog_legal.h — the legal variants' numerics shared by the prolog sim kernels
 * (mla_prolog, mla_prolog_quant, mla_indexer_prolog_quant, the lightning indexer prologs,
 * glm_attention_pre_quant): other correct orders of their fp32 reductions and an
 * approximate rsqrt, each what a device kernel may legally do under the certified device
 * model (docs/STANDARDS.md: every reduction in any order, rsqrt within 4 fp32 ulps).
 * UG_PL_NONE is each kernel's own ("sim") numerics: a caller keeps its own code on that
 * path, so the default kernels stay bit for bit what they were. */
#ifndef UG_SIM_PROLOG_LEGAL_H
#define UG_SIM_PROLOG_LEGAL_H
#include <stddef.h>

typedef enum {
    UG_PL_NONE,    /* the kernel's own numerics */
    UG_PL_SEQ_FMA, /* every fp32 reduction one sequential chain of fused multiply-adds (adds), in order */
    UG_PL_TILE64,  /* K-tiles of 64 each summed sequentially in fp32, the tile partials added pairwise */
    UG_PL_FN_ULPS  /* the reductions the kernel's own; rsqrt moved UG_SIM_FN_ULPS fp32 ulps (ug_sim_fn_ulps) */
} ug_prolog_legal;

/* The legal order a prolog kernel's variant names: UG_VAR_LEGAL_SEQ_FMA, UG_VAR_LEGAL_TILE64 and
 * UG_VAR_LEGAL_FN_ULPS give theirs, any other variant UG_PL_NONE. */
ug_prolog_legal ug_pl_of_variant(int variant);
/* The order of the fp32 sums alone that variant names: ug_pl_of_variant's, but UG_PL_NONE
 * for UG_VAR_LEGAL_FN_ULPS (which keeps the kernel's own sums). */
ug_prolog_legal ug_pl_sum_order(int variant);

/* The K-tile of UG_PL_TILE64. */
#define UG_PL_TILE 64

/* sum_k a[k]*b[k], k < n, in the order `how` names (UG_PL_SEQ_FMA or UG_PL_TILE64; any
 * other: ug_ktile_dot_f32, the GEMM sim kernels' 128-tiles of 16 lanes). */
float ug_pl_dot(const float *a, const float *b, size_t n, ug_prolog_legal how);

/* sum_k v[k], k < n, likewise (UG_PL_SEQ_FMA: a plain sequential fp32 sum; any other
 * than UG_PL_TILE64: the same). */
float ug_pl_sum(const float *v, size_t n, ug_prolog_legal how);

/* A device's rsqrt of x given r = 1/sqrtf(x) (the sim kernels' fp32 sqrt then divide):
 * r for any how but UG_PL_FN_ULPS, there r moved UG_SIM_FN_ULPS ulps (ug_sim_fn_ulps). */
float ug_pl_rsqrt(float r, float x, ug_prolog_legal how);
#endif
