/* mla_prolog_quant.c — sim kernel and planted-bug mutants of mla_prolog_quant, the
 * DeepSeek-V3.2 MLA prolog with int8 q_b and an int8 paged kv cache (math and device
 * numerics: mla_prolog_quant_core.h). The kernel runs the query path of every token first
 * (c_q of all tokens, then the per-token DynQuant exported as q_norm / q_norm_scale, then
 * q_nope_abs and q_rope per head from those codes), copies the three caches from their
 * inputs and scatters each token's key row (int8 codes, group scales, bf16 rope) to
 * slot_mapping[t]; slot -1 is a padding token that writes nothing.
 *
 * Mutants, the bug classes of a hand-written quantised prolog: one scale per tensor instead
 * of per token (only cases with several tokens see it), the c_kv group amax over 64 of 128
 * elements (the rest saturate), RoPE pairing swapped (interleaved for half and back), eps
 * added outside the RMSNorm root (tiny activations: the scales), and the scatter one block
 * too far (slot + block_size, dropped past the cache).
 *
 * Legal variants (prolog_legal.h): every fp32 dot (x.W_dq, x.W_dkv, q.W_uk) and RMSNorm sum
 * of squares as one sequential fmaf chain (legal_seq_fma) or in K-tiles of 64 with the
 * partials summed pairwise (legal_tile64), and the RMSNorms' rstd from an rsqrt 3 fp32 ulps
 * off (legal_fn_ulps): the certified device model's sums in any order, rsqrt within 4 ulps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/prolog/mla_prolog_quant_core.h"
#include "kernels/sim/simlib.h"

typedef struct {
    size_t T, S, bs, G;
    ug_mlaq_k_w w;
    ug_mlaq_k_bugs kb;
    ug_variant_code bug;
    const ulpgym_tensor *x, *w_dq, *g_q, *w_uq, *s_uq, *w_uk, *w_dkv, *g_kv, *cos, *sin, *slot, *kv_in, *ks_in, *kr_in;
    const ulpgym_tensor *q_nope_abs, *q_rope, *q_norm, *q_scale, *kv_cache, *kv_scale, *kr_cache;
    float *cq, *xr, *cs, *sn, *o, *r, *buf, *codes, *scales; /* cq: [T][Lq] */
    /* a block of TOKEN_BLOCK tokens: x (or q_norm) rows / cos, sin rows / q_nope_abs, q_rope / q_b rows / scales */
    float *bx, *bcs, *bsn, *bo, *br, *bqb, *bsc;
    int8_t *bcodes;          /* the block's q_norm codes */
    int32_t *bdots, *bpairs; /* their exact dots with every w_uq column; ug_i8_gemm's scratch */
} mlaq_ctx;

#define TOKEN_BLOCK 16 /* tokens that share each pass over W_dq, w_uq and W_uk */

static int mlaq_bind(mlaq_ctx *k, const ulpgym_call *call, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    k->w.eps = (float)ug_p_num(&p, "eps"); /* exact: an fp32 value */
    k->w.rope_inter = ug_p_is(&p, "rope_layout", "interleaved_to_half");
    k->w.group = (size_t)ug_p_int(&p, "kv_group");
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&k->x,        &k->w_dq,     &k->g_q,        &k->w_uq,   &k->s_uq,   &k->w_uk,
                                     &k->w_dkv,    &k->g_kv,     &k->cos,        &k->sin,    &k->slot,   &k->kv_in,
                                     &k->ks_in,    &k->kr_in,    &k->q_nope_abs, &k->q_rope, &k->q_norm, &k->q_scale,
                                     &k->kv_cache, &k->kv_scale, &k->kr_cache};
    if (ug_sim_bind(call,
                    "x w_dq gamma_q w_uq w_uq_scale w_uk w_dkv gamma_kv cos sin slot_mapping kv_cache_in kv_scale_in "
                    "kr_cache_in q_nope_abs q_rope q_norm q_norm_scale kv_cache kv_scale kr_cache",
                    slots, err, errlen))
        return -2;
    ug_mlaq_k_w *w = &k->w;
    k->T = (size_t)k->x->shape[0], w->h = (size_t)k->x->shape[1], w->Lq = (size_t)k->w_dq->shape[1];
    w->N = (size_t)k->w_uk->shape[0], w->dn = (size_t)k->w_uk->shape[1], w->Lkv = (size_t)k->w_uk->shape[2];
    w->dr = (size_t)k->cos->shape[1], w->dq = w->dn + w->dr;
    k->bs = (size_t)k->kv_in->shape[1], k->S = (size_t)k->kv_in->shape[0] * k->bs;
    k->G = w->group ? w->Lkv / w->group : 0;
    if (w->dr > UG_MLA_MAX_ROPE || w->dr % 2 || !w->group || w->Lkv % w->group) {
        snprintf(err, errlen, "mla_prolog_quant: d_rope must be even and <= %d, kv_group must divide kv_lora",
                 UG_MLA_MAX_ROPE);
        return -2;
    }
    return 0;
}

static int mlaq_alloc(mlaq_ctx *k)
{
    const ug_mlaq_k_w *w = &k->w;
    size_t nrow = w->Lq > w->Lkv + w->dr ? w->Lq : w->Lkv + w->dr;
    size_t n = k->T * w->Lq + w->h + 2 * w->dr + w->Lkv + w->dr + 3 * nrow + k->G + w->dq;
    size_t tb = TOKEN_BLOCK, nq = w->N * w->dq, xw = w->h > w->Lq ? w->h : w->Lq;
    size_t nb = tb * (xw + 2 * w->dr + w->N * (w->Lkv + w->dr) + w->dq + 1);
    k->cq = malloc((n + 1) * sizeof *k->cq);
    k->bx = malloc((nb + 1) * sizeof *k->bx);
    k->bcodes = malloc(tb * w->Lq + 1);
    k->bdots = malloc((tb * nq + 1) * sizeof *k->bdots);
    k->bpairs = malloc((tb * (w->Lq / 2 + 1)) * sizeof *k->bpairs);
    if (!k->cq || !k->bx || !k->bcodes || !k->bdots || !k->bpairs) return -1;
    k->bcs = k->bx + tb * xw, k->bsn = k->bcs + tb * w->dr, k->bo = k->bsn + tb * w->dr;
    k->br = k->bo + tb * w->N * w->Lkv, k->bqb = k->br + tb * w->N * w->dr, k->bsc = k->bqb + tb * w->dq;
    k->xr = k->cq + k->T * w->Lq, k->cs = k->xr + w->h, k->sn = k->cs + w->dr, k->o = k->sn + w->dr;
    k->r = k->o + w->Lkv, k->buf = k->r + w->dr, k->codes = k->buf + nrow + w->dq;
    k->scales = k->codes + 2 * nrow;
    return 0;
}

static void load_rope(mlaq_ctx *k, size_t t)
{
    ug_sim_load(k->cos, t * k->w.dr, k->w.dr, k->cs);
    ug_sim_load(k->sin, t * k->w.dr, k->w.dr, k->sn);
}

/* c_q of every token, then its DynQuant (per token; the mutant: one amax for the tensor). */
static void query_quant(mlaq_ctx *k)
{
    size_t Lq = k->w.Lq;
    for (size_t t = 0; t < k->T; t += TOKEN_BLOCK) {
        size_t m = k->T - t < TOKEN_BLOCK ? k->T - t : TOKEN_BLOCK;
        ug_sim_load(k->x, t * k->w.h, m * k->w.h, k->bx);
        ug_mlaq_k_cq_rows(&k->w, k->bx, m, k->cq + t * Lq, &k->kb);
    }
    int fin_all = 1, fin;
    float amax_all = 0.0f;
    for (size_t t = 0; t < k->T; t++) {
        amax_all = fmaxf(amax_all, ug_mlaq_k_amax(k->cq + t * Lq, Lq, &fin));
        fin_all &= fin;
    }
    for (size_t t = 0; t < k->T; t++) {
        float amax = ug_mlaq_k_amax(k->cq + t * Lq, Lq, &fin);
        if (k->bug == UG_VAR_MUT_SCALE_PER_TENSOR) amax = amax_all, fin = fin_all; /* bug: one scale for every token */
        float s = ug_mlaq_k_quant(k->cq + t * Lq, Lq, amax, fin, k->codes, k->kb.half_away);
        ug_sim_store(k->q_norm, t * Lq, Lq, k->codes); /* exact: integers */
        ug_sim_store(k->q_scale, t, 1, &s);            /* exact: fp32 */
    }
}

/* q_nope_abs and q_rope of tokens [t, t+m) and every head, from the exported codes and
 * scales: the block's int32 dots in one product over w_uq, then head by head. */
static void query_block(mlaq_ctx *k, size_t t, size_t m)
{
    const ug_mlaq_k_w *w = &k->w;
    size_t nq = w->N * w->dq;
    ug_sim_load(k->q_norm, t * w->Lq, m * w->Lq, k->bx); /* exact: integers (bx holds max(h, Lq) a token) */
    for (size_t i = 0; i < m * w->Lq; i++) k->bcodes[i] = (int8_t)k->bx[i];
    ug_sim_load(k->q_scale, t, m, k->bsc);
    ug_sim_load(k->cos, t * w->dr, m * w->dr, k->bcs);
    ug_sim_load(k->sin, t * w->dr, m * w->dr, k->bsn);
    ug_i8_gemm(k->bcodes, w->Lq, m, &w->wuq, k->bdots, nq, k->bpairs);
    for (size_t n = 0; n < w->N; n++)
        ug_mlaq_k_query_head_rows(w, k->bdots, nq, k->bsc, m, n, k->bcs, k->bsn, k->bo + n * m * w->Lkv,
                                  k->br + n * m * w->dr, k->bqb, &k->kb);
    for (size_t r = 0; r < m; r++)
        for (size_t n = 0; n < w->N; n++) {
            size_t row = (t + r) * w->N + n;
            ug_sim_store(k->q_nope_abs, row * w->Lkv, w->Lkv, k->bo + (n * m + r) * w->Lkv); /* rounds: bf16 */
            ug_sim_store(k->q_rope, row * w->dr, w->dr, k->br + (n * m + r) * w->dr);        /* rounds: bf16 */
        }
}

static void query_heads(mlaq_ctx *k)
{
    for (size_t t = 0; t < k->T; t += TOKEN_BLOCK) query_block(k, t, k->T - t < TOKEN_BLOCK ? k->T - t : TOKEN_BLOCK);
}

/* Copies a cache input to its output (exact: same dtype). */
static void copy_cache(const ulpgym_tensor *in, const ulpgym_tensor *out, size_t rows, size_t cols, float *buf)
{
    for (size_t r = 0; r < rows; r++) {
        ug_sim_load(in, r * cols, cols, buf);
        ug_sim_store(out, r * cols, cols, buf);
    }
}

/* The key row of token t scattered to its slot; -2 for a slot outside the cache. */
static int key_token(mlaq_ctx *k, size_t t, char *err, size_t errlen)
{
    const ug_mlaq_k_w *w = &k->w;
    float s;
    ug_sim_load(k->slot, t, 1, &s);
    if (s < -1 || s >= (float)k->S) {
        snprintf(err, errlen, "mla_prolog_quant: slot_mapping[%zu] = %g is outside -1..%zu", t, s, k->S - 1);
        return -2;
    }
    if (s < 0) return 0; /* padding token */
    ug_sim_load(k->x, t * w->h, w->h, k->xr);
    load_rope(k, t);
    ug_mlaq_k_key(w, k->xr, k->cs, k->sn, k->codes, k->scales, k->r, k->buf, &k->kb);
    size_t slot = (size_t)s + (k->bug == UG_VAR_MUT_SLOT_NEXT_BLOCK ? k->bs : 0); /* bug: one block too far */
    if (slot >= k->S) return 0;
    ug_sim_store(k->kv_cache, slot * w->Lkv, w->Lkv, k->codes); /* exact: integers */
    ug_sim_store(k->kv_scale, slot * k->G, k->G, k->scales);    /* exact: fp32 */
    ug_sim_store(k->kr_cache, slot * w->dr, w->dr, k->r);       /* rounds: bf16 */
    return 0;
}

int ug_mlaq_k_run(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_prolog_legal legal = ug_pl_of_variant(bug);
    if (legal != UG_PL_NONE) /* a legal variant: the correct kernel with other numerics */
        return ug_mlaq_k_run_legal(call, err, errlen, UG_VAR_SIM, legal);
    return ug_mlaq_k_run_legal(call, err, errlen, bug, UG_PL_NONE);
}

int ug_mlaq_k_run_legal(const ulpgym_call *call, char *err, size_t errlen, int bug, ug_prolog_legal legal)
{
    mlaq_ctx k = {0};
    int rc = mlaq_bind(&k, call, err, errlen);
    if (rc) return rc;
    k.bug = bug;
    k.kb = (ug_mlaq_k_bugs){bug == UG_VAR_MUT_EPS_OUTSIDE ? UG_MLA_NORM_EPS_OUTSIDE : UG_MLA_NORM_OK,
                            bug == UG_VAR_MUT_ROPE_INTERLEAVED, bug == UG_VAR_MUT_KV_GROUP_64,
                            bug == UG_VAR_MUT_HALF_AWAY, legal};
    if (ug_mlaq_k_load(&k.w, k.w_dq, k.g_q, k.w_uq, k.s_uq, k.w_uk, k.w_dkv, k.g_kv) || mlaq_alloc(&k)) {
        ug_mlaq_k_free(&k.w);
        return -1;
    }
    query_quant(&k);
    query_heads(&k);
    copy_cache(k.kv_in, k.kv_cache, k.S, k.w.Lkv, k.buf);
    copy_cache(k.ks_in, k.kv_scale, k.S, k.G, k.buf);
    copy_cache(k.kr_in, k.kr_cache, k.S, k.w.dr, k.buf);
    for (size_t t = 0; t < k.T && !rc; t++) rc = key_token(&k, t, err, errlen);
    ug_mlaq_k_free(&k.w);
    free(k.cq), free(k.bx), free(k.bcodes), free(k.bdots), free(k.bpairs);
    return rc;
}

const ug_kernel_fn ug_sim_mla_prolog_quant = ug_mlaq_k_run;
