/* mla_prolog.c — sim kernel and planted-bug mutants for mla_prolog (the MLA prolog of
 * DeepSeek without quantisation):
 *     c_q = RMSNorm(bf16(x·W_dq); γ_q) -> bf16;   q = c_q·W_uq -> bf16, per head [nope | rope]
 *     q_nope_abs = q_nope·W_uk[head];        q_rope = RoPE_half(q_rope; cos, sin)
 *     kv = x·W_dkv -> bf16;  c_kv = RMSNorm(kv[:kv_lora]; γ_kv) -> kv_cache[slot]
 *     k_rope = RoPE_half(kv[kv_lora:]) -> kr_cache[slot]
 *
 * Device model: weights are staged once as fp32, transposed so every GEMM output is a
 * contiguous fp32 K-tiled reduction (ktile.h). The cube unit writes x·W_dq (as the
 * reference's kernel does), c_q, q and kv to bf16 between stages; RMSNorm statistics are an fp32 K-tiled sum of squares, rstd =
 * 1/sqrt(ss/n + eps) in fp32, the norm is (v·rstd)·γ in fp32; RoPE is fp32 mul/mul/sub
 * per pair. Caches are copied from their inputs and each token's row is scattered to
 * slot_mapping[t] (slot -1: padding, not written); the scatter walks tokens in tiles of
 * MLA_TOKEN_TILE. Every stored output rounds once to bf16. params.rope_layout =
 * interleaved_to_half rotates the pairs (2i, 2i+1) and writes them to (i, i + d/2), the
 * layout of the reference suite's DeepSeek-V3.2 prolog; the default half pairs (i, i + d/2).
 * Where the caller passes the optional q_norm (the reference test's qNorm), each token's bf16
 * c_q is stored there as it is, the very values its q GEMM reads.
 *
 * Legal variants (other correct kernels, prolog_legal.h): every fp32 GEMM dot and RMSNorm
 * sum of squares as one sequential fmaf chain (legal_seq_fma) or in K-tiles of 64 with the
 * partials summed pairwise (legal_tile64): the contract's sums are exact, the certified
 * device model's in any order; and rstd from an rsqrt 3 fp32 ulps off (legal_fn_ulps: the
 * model charges rsqrt as one function within 4 ulps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/sim/ktile.h"
#include "core/ops.h"
#include "kernels/sim/prolog/mla_common.h"
#include "kernels/sim/prolog/prolog_legal.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define MLA_TOKEN_TILE 16
#define MLA_MAX_ROPE UG_MLA_MAX_ROPE

typedef struct {
    size_t T, h, Lq, N, Lkv, dn, dr, dq, S; /* dq = dn + dr per head; S = cache slots */
    float eps;
    int rope_inter;        /* params.rope_layout == interleaved_to_half */
    ug_prolog_legal legal; /* a legal variant's numerics (UG_PL_NONE: the sim kernel's) */
    const ulpgym_tensor *x, *w_dq, *g_q, *w_uq, *w_uk, *w_dkv, *g_kv, *cos, *sin, *slot, *kv_in, *kr_in;
    const ulpgym_tensor *q_nope_abs, *q_rope, *kv_cache, *kr_cache;
    const ulpgym_tensor *q_norm;   /* the optional q_norm (or NULL) */
    float *wdq, *wuq, *wuk, *wdkv; /* transposed fp32 weights */
    float *gq, *gkv, *xr, *cq, *q, *kv, *o, *cs, *sn;
    float *qn, *ones; /* [Lq] each: what a q_norm mutant writes instead of c_q, and unit weights */
} mla_ctx;

/* Stores token t's c_q (already bf16) as the optional q_norm where the caller passed it; its
 * planted bugs write something else there (qn), the rest of the query path keeps c_q. */
static void mla_store_qnorm(mla_ctx *m, size_t t, ug_variant_code bug)
{
    if (!m->q_norm) return;
    const float *out = m->cq;
    if (bug == UG_VAR_MUT_QNORM_NO_GAMMA || bug == UG_VAR_MUT_QNORM_PRENORM) {
        for (size_t j = 0; j < m->Lq; j++) m->qn[j] = ug_ktile_dot_f32(m->xr, m->wdq + j * m->h, m->h);
        /* bug (no gamma): the norm with unit weights; bug (pre-norm): x·W_dq before the norm */
        if (bug == UG_VAR_MUT_QNORM_NO_GAMMA)
            ug_mla_rmsnorm_bf16(m->qn, m->ones, m->Lq, m->eps, UG_MLA_NORM_OK, UG_PL_NONE);
        out = m->qn;
    }
    ug_sim_store(m->q_norm, t * m->Lq, m->Lq, out); /* rounds: bf16 (exact for c_q) */
}

/* The query path of token t: q_nope_abs and q_rope for every head, and c_q as q_norm. */
static void mla_query(mla_ctx *m, size_t t, ug_variant_code bug)
{
    for (size_t j = 0; j < m->Lq; j++) /* rounds: fp32 dot, then bf16 (q_a_proj, the spec's) */
        m->cq[j] = ug_sim_round_bf16(ug_pl_dot(m->xr, m->wdq + j * m->h, m->h, m->legal));
    ug_mla_rmsnorm_bf16(m->cq, m->gq, m->Lq, m->eps, UG_MLA_NORM_OK, m->legal);
    mla_store_qnorm(m, t, bug);
    for (size_t n = 0; n < m->N; n++) {
        for (size_t c = 0; c < m->dq; c++)
            m->q[c] = ug_sim_round_bf16(ug_pl_dot(m->cq, m->wuq + (n * m->dq + c) * m->Lq, m->Lq, m->legal));
        for (size_t l = 0; l < m->Lkv; l++) /* rounds: fp32 dot (stored as bf16 below) */
            m->o[l] = ug_pl_dot(m->q, m->wuk + (n * m->Lkv + l) * m->dn, m->dn, m->legal);
        ug_sim_store(m->q_nope_abs, (t * m->N + n) * m->Lkv, m->Lkv, m->o); /* rounds: bf16 */
        ug_mla_rope(m->q + m->dn, m->cs, m->sn, m->dr, m->rope_inter, bug == UG_VAR_MUT_ROPE_SIN_SIGN);
        ug_sim_store(m->q_rope, (t * m->N + n) * m->dr, m->dr, m->q + m->dn); /* rounds: bf16 */
    }
}

/* The key path of token t: c_kv and k_rope, scattered to the caches at its slot. */
static void mla_key(mla_ctx *m, size_t t, long slot, ug_variant_code bug)
{
    size_t w = m->Lkv + m->dr;
    for (size_t j = 0; j < w; j++) /* rounds: fp32 dot, then bf16 (kv_a_proj) */
        m->kv[j] = ug_sim_round_bf16(ug_pl_dot(m->xr, m->wdkv + j * m->h, m->h, m->legal));
    ug_mla_rmsnorm_bf16(m->kv, m->gkv, m->Lkv, m->eps,
                        bug == UG_VAR_MUT_KV_NORM_BF16 ? UG_MLA_NORM_BF16_SUM : UG_MLA_NORM_OK, m->legal);
    ug_mla_rope(m->kv + m->Lkv, m->cs, m->sn, m->dr, m->rope_inter, bug == UG_VAR_MUT_ROPE_SIN_SIGN);
    if (slot < 0) return;                          /* padding token */
    if (bug == UG_VAR_MUT_SLOT_OFF_BY_ONE) slot++; /* bug: slot = block*bs + offset + 1 */
    if ((size_t)slot >= m->S) return;
    ug_sim_store(m->kv_cache, (size_t)slot * m->Lkv, m->Lkv, m->kv);        /* exact: already bf16 */
    ug_sim_store(m->kr_cache, (size_t)slot * m->dr, m->dr, m->kv + m->Lkv); /* rounds: bf16 */
}

static int mla_alloc(mla_ctx *m)
{
    size_t nw = m->h * m->Lq + m->N * m->dq * m->Lq + m->N * m->Lkv * m->dn + (m->Lkv + m->dr) * m->h;
    size_t stage = m->h * (m->Lkv + m->dr);
    if (m->N * m->dq * m->Lq > stage) stage = m->N * m->dq * m->Lq;
    if (m->N * m->Lkv * m->dn > stage) stage = m->N * m->Lkv * m->dn;
    if (m->h * m->Lq > stage) stage = m->h * m->Lq;
    size_t nv = m->Lq + m->Lkv + m->h + m->Lq + m->dq + (m->Lkv + m->dr) + m->Lkv + 2 * m->dr + 2 * m->Lq;
    float *stg = malloc((stage + 1) * sizeof *stg);
    m->wdq = malloc((nw + nv + 1) * sizeof *m->wdq);
    if (!stg || !m->wdq) {
        free(stg);
        return -1;
    }
    m->wuq = m->wdq + m->h * m->Lq;
    m->wuk = m->wuq + m->N * m->dq * m->Lq;
    m->wdkv = m->wuk + m->N * m->Lkv * m->dn;
    m->gq = m->wdkv + (m->Lkv + m->dr) * m->h;
    m->gkv = m->gq + m->Lq;
    m->xr = m->gkv + m->Lkv;
    m->cq = m->xr + m->h;
    m->q = m->cq + m->Lq;
    m->kv = m->q + m->dq;
    m->o = m->kv + m->Lkv + m->dr;
    m->cs = m->o + m->Lkv;
    m->sn = m->cs + m->dr;
    m->qn = m->sn + m->dr;
    m->ones = m->qn + m->Lq;
    for (size_t j = 0; j < m->Lq; j++) m->ones[j] = 1.0f;
    ug_ktile_load_transposed(m->w_dq, 0, m->h, m->Lq, m->wdq, stg);
    ug_ktile_load_transposed(m->w_uq, 0, m->Lq, m->N * m->dq, m->wuq, stg);
    for (size_t n = 0; n < m->N; n++)
        ug_ktile_load_transposed(m->w_uk, n * m->dn * m->Lkv, m->dn, m->Lkv, m->wuk + n * m->Lkv * m->dn, stg);
    ug_ktile_load_transposed(m->w_dkv, 0, m->h, m->Lkv + m->dr, m->wdkv, stg);
    ug_sim_load(m->g_q, 0, m->Lq, m->gq);
    ug_sim_load(m->g_kv, 0, m->Lkv, m->gkv);
    free(stg);
    return 0;
}

static int mla_bind(mla_ctx *m, const ulpgym_call *call, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_mla_prolog_params *params = UG_P(mla_prolog, &p);
    m->eps = (float)params->eps; /* exact: an fp32 value */
    m->rope_inter = !strcmp(params->rope_layout_name, "interleaved_to_half");
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&m->x,          &m->w_dq,   &m->g_q,      &m->w_uq,     &m->w_uk,  &m->w_dkv,
                                     &m->g_kv,       &m->cos,    &m->sin,      &m->slot,     &m->kv_in, &m->kr_in,
                                     &m->q_nope_abs, &m->q_rope, &m->kv_cache, &m->kr_cache, &m->q_norm};
    if (ug_sim_bind(call,
                    "x w_dq gamma_q w_uq w_uk w_dkv gamma_kv cos sin slot_mapping kv_cache_in kr_cache_in "
                    "q_nope_abs q_rope kv_cache kr_cache q_norm?",
                    slots, err, errlen))
        return -2;
    m->T = (size_t)m->x->shape[0];
    m->h = (size_t)m->x->shape[1];
    m->Lq = (size_t)m->w_dq->shape[1];
    m->N = (size_t)m->w_uk->shape[0];
    m->dn = (size_t)m->w_uk->shape[1];
    m->Lkv = (size_t)m->w_uk->shape[2];
    m->dr = (size_t)m->cos->shape[1];
    m->dq = m->dn + m->dr;
    m->S = (size_t)(m->kv_in->shape[0] * m->kv_in->shape[1]);
    if (m->dr > MLA_MAX_ROPE || m->dr % 2 || (size_t)m->w_uq->shape[1] != m->N * m->dq) {
        snprintf(err, errlen, "mla_prolog: d_rope must be even and <= %d, w_uq[q_lora, heads*(d_nope+d_rope)]",
                 MLA_MAX_ROPE);
        return -2;
    }
    return 0;
}

/* Copies a cache input to its output (exact: same dtype). */
static void mla_copy_cache(const ulpgym_tensor *in, const ulpgym_tensor *out, size_t rows, size_t cols, float *buf)
{
    for (size_t r = 0; r < rows; r++) {
        ug_sim_load(in, r * cols, cols, buf);
        ug_sim_store(out, r * cols, cols, buf);
    }
}

static int mla_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    mla_ctx m = {0};
    int rc = mla_bind(&m, call, err, errlen);
    if (rc) return rc;
    m.legal = ug_pl_of_variant(bug);
    if (mla_alloc(&m)) return -1;
    mla_copy_cache(m.kv_in, m.kv_cache, m.S, m.Lkv, m.o);
    mla_copy_cache(m.kr_in, m.kr_cache, m.S, m.dr, m.o);
    size_t tiles = m.T / MLA_TOKEN_TILE ? m.T / MLA_TOKEN_TILE : 1; /* the mutant's floor */
    size_t scatter_end = bug == UG_VAR_MUT_TAIL_TOKENS && tiles * MLA_TOKEN_TILE < m.T ? tiles * MLA_TOKEN_TILE : m.T;
    for (size_t t = 0; t < m.T; t++) {
        float s;
        ug_sim_load(m.slot, t, 1, &s);
        if (s < -1 || s >= (float)m.S) {
            snprintf(err, errlen, "mla_prolog: slot_mapping[%zu] = %g is outside -1..%zu", t, s, m.S - 1);
            rc = -2;
            break;
        }
        ug_sim_load(m.x, t * m.h, m.h, m.xr);
        ug_sim_load(m.cos, t * m.dr, m.dr, m.cs);
        ug_sim_load(m.sin, t * m.dr, m.dr, m.sn);
        mla_query(&m, t, bug);
        /* bug (tail tokens): the scatter loop covers whole tiles only, the last partial tile is lost */
        mla_key(&m, t, t < scatter_end ? (long)s : -1, bug);
    }
    free(m.wdq);
    return rc;
}

const ug_kernel_fn ug_sim_mla_prolog = mla_kernel;
