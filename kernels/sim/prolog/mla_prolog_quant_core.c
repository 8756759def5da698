/* mla_prolog_quant_core.c — the per-token device stages of mla_prolog_quant (see the
 * header for the numerics). */
#include "kernels/sim/prolog/mla_prolog_quant_core.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* w_uq [Lq, N*dq] int8 -> [N*dq][Lq] int8 (exact), through fp32 rows of stage. */
static void load_wuq(ug_mlaq_k_w *w, const ulpgym_tensor *t, float *stage)
{
    size_t cols = w->N * w->dq;
    for (size_t j = 0; j < w->Lq; j++) {
        ug_sim_load(t, j * cols, cols, stage); /* exact */
        for (size_t c = 0; c < cols; c++) w->wuq[c * w->Lq + j] = (int8_t)stage[c];
    }
}

int ug_mlaq_k_load(ug_mlaq_k_w *w, const ulpgym_tensor *w_dq, const ulpgym_tensor *g_q, const ulpgym_tensor *w_uq,
                   const ulpgym_tensor *w_uq_scale, const ulpgym_tensor *w_uk, const ulpgym_tensor *w_dkv,
                   const ulpgym_tensor *g_kv)
{
    size_t kw = w->Lkv + w->dr, nq = w->N * w->dq;
    size_t nf = w->h * w->Lq + w->Lq + nq + w->N * w->Lkv * w->dn + kw * w->h + w->Lkv;
    size_t stage_n = zmax(zmax(w->h * w->Lq, w->N * w->Lkv * w->dn), zmax(kw * w->h, nq));
    float *stage = malloc((stage_n + 1) * sizeof *stage);
    w->wdq = malloc((nf + 1) * sizeof *w->wdq);
    w->wuq = malloc(nq * w->Lq + 1);
    if (!stage || !w->wdq || !w->wuq) {
        free(stage), ug_mlaq_k_free(w);
        return -1;
    }
    w->gq = w->wdq + w->h * w->Lq, w->wuq_s = w->gq + w->Lq, w->wuk = w->wuq_s + nq;
    w->wdkv = w->wuk + w->N * w->Lkv * w->dn, w->gkv = w->wdkv + kw * w->h;
    ug_ktile_load_transposed(w_dq, 0, w->h, w->Lq, w->wdq, stage);
    for (size_t n = 0; n < w->N; n++)
        ug_ktile_load_transposed(w_uk, n * w->dn * w->Lkv, w->dn, w->Lkv, w->wuk + n * w->Lkv * w->dn, stage);
    ug_ktile_load_transposed(w_dkv, 0, w->h, kw, w->wdkv, stage);
    ug_sim_load(g_q, 0, w->Lq, w->gq);
    ug_sim_load(w_uq_scale, 0, nq, w->wuq_s);
    ug_sim_load(g_kv, 0, w->Lkv, w->gkv);
    load_wuq(w, w_uq, stage);
    free(stage);
    return 0;
}

void ug_mlaq_k_free(ug_mlaq_k_w *w)
{
    free(w->wdq), free(w->wuq);
    w->wdq = NULL, w->wuq = NULL;
}

void ug_mlaq_k_cq(const ug_mlaq_k_w *w, const float *x, float *cq, const ug_mlaq_k_bugs *bug)
{
    for (size_t j = 0; j < w->Lq; j++) /* rounds: fp32 K-tiled dot, bf16 q_a_proj */
        cq[j] = ug_sim_round_bf16(ug_ktile_dot_f32(x, w->wdq + j * w->h, w->h));
    ug_mla_rmsnorm_bf16(cq, w->gq, w->Lq, w->eps, bug->norm);
}

float ug_mlaq_k_amax(const float *v, size_t n, int *finite)
{
    float amax = 0.0f;
    *finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) *finite = 0;
        else amax = fmaxf(amax, fabsf(v[i])); /* exact */
    }
    return amax;
}

float ug_mlaq_k_quant(const float *v, size_t n, float amax, int finite, float *q)
{
    for (size_t i = 0; i < n; i++) q[i] = 0.0f;
    if (!finite) return NAN;
    if (amax == 0.0f) return 0.0f;
    float scale = amax / 127.0f; /* rounds: fp32 */
    for (size_t i = 0; i < n; i++) {
        float y = rintf(v[i] / scale);           /* rounds: fp32 quotient, RNE to an integer */
        q[i] = fminf(fmaxf(y, -128.0f), 127.0f); /* saturating int8 */
    }
    return scale;
}

/* sum_j a[j]*b[j] of int8 codes (a as fp32 integers) in an exact int32 accumulator. */
static int32_t int_dot(const float *a, const int8_t *b, size_t n)
{
    int32_t acc = 0;
    for (size_t j = 0; j < n; j++) acc += (int32_t)a[j] * (int32_t)b[j]; /* exact */
    return acc;
}

void ug_mlaq_k_query_head(const ug_mlaq_k_w *w, const float *codes, float scale, size_t n, const float *cs,
                          const float *sn, float *nope_abs, float *rope, float *qbuf, const ug_mlaq_k_bugs *bug)
{
    for (size_t c = 0; c < w->dq; c++) { /* rounds: int32 -> fp32, two fp32 products, bf16 q_b_proj */
        size_t col = n * w->dq + c;
        qbuf[c] = ug_sim_round_bf16((float)int_dot(codes, w->wuq + col * w->Lq, w->Lq) * scale * w->wuq_s[col]);
    }
    for (size_t l = 0; l < w->Lkv; l++) /* rounds: fp32 K-tiled dot (stored as bf16 by the caller) */
        nope_abs[l] = ug_ktile_dot_f32(qbuf, w->wuk + (n * w->Lkv + l) * w->dn, w->dn);
    for (size_t i = 0; i < w->dr; i++) rope[i] = qbuf[w->dn + i];
    ug_mla_rope(rope, cs, sn, w->dr, w->rope_inter ^ bug->rope_swap, 0);
}

void ug_mlaq_k_key(const ug_mlaq_k_w *w, const float *x, const float *cs, const float *sn, float *codes,
                   float *scales, float *kr, float *kvbuf, const ug_mlaq_k_bugs *bug)
{
    size_t kw = w->Lkv + w->dr, g = w->group;
    for (size_t j = 0; j < kw; j++) /* rounds: fp32 K-tiled dot, bf16 kv_a_proj */
        kvbuf[j] = ug_sim_round_bf16(ug_ktile_dot_f32(x, w->wdkv + j * w->h, w->h));
    ug_mla_rmsnorm_bf16(kvbuf, w->gkv, w->Lkv, w->eps, bug->norm);
    for (size_t gi = 0; gi < w->Lkv / g; gi++) {
        int finite, fin_all;
        float amax = ug_mlaq_k_amax(kvbuf + gi * g, bug->half_group ? (g + 1) / 2 : g, &finite); /* bug: half */
        ug_mlaq_k_amax(kvbuf + gi * g, g, &fin_all);
        scales[gi] = ug_mlaq_k_quant(kvbuf + gi * g, g, amax, finite && fin_all, codes + gi * g);
    }
    for (size_t i = 0; i < w->dr; i++) kr[i] = kvbuf[w->Lkv + i];
    ug_mla_rope(kr, cs, sn, w->dr, w->rope_inter ^ bug->rope_swap, 0);
}
