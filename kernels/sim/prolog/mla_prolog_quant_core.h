/* mla_prolog_quant_core.h — device model of mla_prolog_quant's per-token stages, callable
 * by any sim kernel that holds the same weights (mla_prolog_quant's, and the fused
 * mla_indexer_prolog_quant's): the caller stages the weights once (ug_mlaq_k_load), then per
 * token calls the stages with its own rows and stores the results in its own outputs.
 *
 * Device numerics: bf16 inputs widened to fp32; every bf16 x bf16 GEMM an fp32 K-tiled
 * reduction (ktile.h) written to bf16 where the golden casts (q_a_proj, kv_a_proj, q_b_proj,
 * q_nope_abs); RMSNorm in fp32 written to bf16 (mla_common.h); DynQuant: amax exact,
 * scale = amax/127 in fp32, codes rne(v/scale) in fp32 saturated to int8 (zero row: scale 0,
 * codes 0; a row with NaN/inf: scale NaN, codes 0); the int8 x int8 GEMM an exact int32
 * sum, converted to fp32 and scaled by the token's then the channel's scale in fp32; RoPE in
 * fp32 (mla_common.h). The legal variants (prolog_legal.h) change the order of every fp32
 * dot and sum of squares or the RMSNorms' rsqrt; the int32 sum is exact in any order. */
#ifndef UG_SIM_MLA_PROLOG_QUANT_CORE_H
#define UG_SIM_MLA_PROLOG_QUANT_CORE_H
#include <stddef.h>
#include <stdint.h>

#include "core/int8_gemm.h"
#include "ulpgym/kernel_abi.h"
#include "kernels/sim/prolog/mla_common.h"
#include "kernels/sim/prolog/prolog_legal.h"

/* Planted bugs the stages can make, and a legal variant's numerics (all 0: the correct
 * device, the sim kernel's numerics). */
typedef struct {
    ug_mla_norm_bug norm;  /* both RMSNorms */
    int rope_swap;         /* RoPE pairs the other way (half <-> interleaved) */
    int half_group;        /* the c_kv group amax taken over its first half only */
    int half_away;         /* codes rounded half away from zero (roundf) instead of to even */
    ug_prolog_legal legal; /* not a bug: the fp32 dots' and sums of squares' order, the rsqrt (prolog_legal.h) */
} ug_mlaq_k_bugs;

/* The staged weights of one prolog (fp32 transposed: each output column a contiguous
 * reduction; w_uq [Lq, N*dq] packed for ug_i8_gemm). */
typedef struct {
    size_t h, Lq, N, Lkv, dn, dr, dq, group;
    float eps;
    int rope_inter;
    float *wdq, *gq, *wuq_s, *wuk, *wdkv, *gkv; /* [Lq][h], [Lq], [N*dq], [N][Lkv][dn], [Lkv+dr][h], [Lkv] */
    ug_i8_packed wuq;
} ug_mlaq_k_w;

/* Stages the weights from the bound tensors (sizes set in w before the call); 0, or -1
 * out of memory. ug_mlaq_k_free releases them. */
int ug_mlaq_k_load(ug_mlaq_k_w *w, const ulpgym_tensor *w_dq, const ulpgym_tensor *g_q, const ulpgym_tensor *w_uq,
                   const ulpgym_tensor *w_uq_scale, const ulpgym_tensor *w_uk, const ulpgym_tensor *w_dkv,
                   const ulpgym_tensor *g_kv);
void ug_mlaq_k_free(ug_mlaq_k_w *w);

/* c_q[Lq] of one token's x row[h]: bf16(RMSNorm(bf16(x.W_dq))). */
void ug_mlaq_k_cq(const ug_mlaq_k_w *w, const float *x, float *cq, const ug_mlaq_k_bugs *bug);
/* ug_mlaq_k_cq for m tokens' rows X[m][h] into CQ[m][Lq] (each column of W_dq read once for
 * the m rows; the same numbers). */
void ug_mlaq_k_cq_rows(const ug_mlaq_k_w *w, const float *X, size_t m, float *CQ, const ug_mlaq_k_bugs *bug);

/* Exact max |v[i]| over finite values; *finite = 0 if any is NaN/inf. */
float ug_mlaq_k_amax(const float *v, size_t n, int *finite);

/* DynQuant of v[0..n) with the given amax: codes (integers as fp32) into q, returns the
 * scale (0 for amax 0, NaN when !finite); half_away: the mutant's roundf for rintf. */
float ug_mlaq_k_quant(const float *v, size_t n, float amax, int finite, float *q, int half_away);

/* q_nope_abs and q_rope of head n for m tokens: token r's exact int32 dots codes.w_uq (all
 * N*dq columns, ug_i8_gemm) at dots + r*ldd, its scale scales[r] and cos/sin rows at cs/sn +
 * r*dr, into nope[r*Lkv..] and rope[r*dr..]; qbuf is scratch of m*dq floats. */
void ug_mlaq_k_query_head_rows(const ug_mlaq_k_w *w, const int32_t *dots, size_t ldd, const float *scales, size_t m,
                               size_t n, const float *cs, const float *sn, float *nope, float *rope, float *qbuf,
                               const ug_mlaq_k_bugs *bug);

/* The key row of one token: kv codes[Lkv] (fp32 integers), group scales[Lkv/group] and the
 * rope-cache row kr[dr] (fp32, to be stored as bf16); kvbuf is scratch of Lkv+dr floats. */
void ug_mlaq_k_key(const ug_mlaq_k_w *w, const float *x, const float *cs, const float *sn, float *codes, float *scales,
                   float *kr, float *kvbuf, const ug_mlaq_k_bugs *bug);

/* mla_prolog_quant's whole kernel (mla_prolog_quant.c) on any call holding its tensors and
 * params under the same names (a fused op's superset); bug: its variant code, 0 correct. */
int ug_mlaq_k_run(const ulpgym_call *call, char *err, size_t errlen, int bug);
/* The same with legal, a legal variant's numerics, for a fused op's own legal variants (bug
 * 0, legal UG_PL_NONE: ug_mlaq_k_run's correct kernel). */
int ug_mlaq_k_run_legal(const ulpgym_call *call, char *err, size_t errlen, int bug, ug_prolog_legal legal);
#endif
