/* mla_prolog_quant_core.c — the per-token device stages of mla_prolog_quant (see the
 * header for the numerics). */
#include "kernels/sim/prolog/mla_prolog_quant_core.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* w_uq [Lq, N*dq] int8 (exact through fp32 rows of stage), packed for ug_i8_gemm. */
static int load_wuq(ug_mlaq_k_w *w, const ulpgym_tensor *t, float *stage)
{
    size_t cols = w->N * w->dq;
    int8_t *b = malloc(w->Lq * cols + 1);
    if (!b) return -1;
    for (size_t j = 0; j < w->Lq; j++) {
        ug_sim_load(t, j * cols, cols, stage); /* exact */
        for (size_t c = 0; c < cols; c++) b[j * cols + c] = (int8_t)stage[c];
    }
    int rc = ug_i8_pack(b, cols, w->Lq, cols, &w->wuq);
    free(b);
    return rc;
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
    if (!stage || !w->wdq) {
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
    int rc = load_wuq(w, w_uq, stage);
    free(stage);
    if (rc) ug_mlaq_k_free(w);
    return rc;
}

void ug_mlaq_k_free(ug_mlaq_k_w *w)
{
    free(w->wdq);
    w->wdq = NULL;
    ug_i8_packed_free(&w->wuq);
}

void ug_mlaq_k_cq(const ug_mlaq_k_w *w, const float *x, float *cq, const ug_mlaq_k_bugs *bug)
{
    ug_mlaq_k_cq_rows(w, x, 1, cq, bug);
}

void ug_mlaq_k_cq_rows(const ug_mlaq_k_w *w, const float *X, size_t m, float *CQ, const ug_mlaq_k_bugs *bug)
{
    for (size_t j = 0; j < w->Lq; j++) /* rounds: fp32 K-tiled dot (legal: another order), bf16 q_a_proj */
        for (size_t r = 0; r < m; r++)
            CQ[r * w->Lq + j] = ug_sim_round_bf16(ug_pl_dot(X + r * w->h, w->wdq + j * w->h, w->h, bug->legal));
    for (size_t r = 0; r < m; r++) ug_mla_rmsnorm_bf16(CQ + r * w->Lq, w->gq, w->Lq, w->eps, bug->norm, bug->legal);
}

float ug_mlaq_k_amax(const float *v, size_t n, int *finite)
{
    float amax = 0.0f;
    *finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            *finite = 0;
        else
            amax = fmaxf(amax, fabsf(v[i])); /* exact */
    }
    return amax;
}

float ug_mlaq_k_quant(const float *v, size_t n, float amax, int finite, float *q, int half_away)
{
    for (size_t i = 0; i < n; i++) q[i] = 0.0f;
    if (!finite) return NAN;
    if (amax == 0.0f) return 0.0f;
    float scale = amax / 127.0f; /* rounds: fp32 */
    for (size_t i = 0; i < n; i++) {
        float y = half_away ? roundf(v[i] / scale) /* bug: a tie goes away from zero */
                            : rintf(v[i] / scale); /* rounds: fp32 quotient, RNE to an integer */
        q[i] = fminf(fmaxf(y, -128.0f), 127.0f);   /* saturating int8 */
    }
    return scale;
}

void ug_mlaq_k_query_head_rows(const ug_mlaq_k_w *w, const int32_t *dots, size_t ldd, const float *scales, size_t m,
                               size_t n, const float *cs, const float *sn, float *nope, float *rope, float *qbuf,
                               const ug_mlaq_k_bugs *bug)
{
    for (size_t r = 0; r < m; r++)
        for (size_t c = 0; c < w->dq; c++) { /* rounds: int32 -> fp32, two fp32 products, bf16 q_b_proj */
            size_t col = n * w->dq + c;
            qbuf[r * w->dq + c] = ug_sim_round_bf16((float)dots[r * ldd + col] * scales[r] * w->wuq_s[col]);
        }
    for (size_t l = 0; l < w->Lkv;
         l++) /* rounds: fp32 K-tiled dot (stored as bf16 by the caller); W_uk's row read once */
        for (size_t r = 0; r < m; r++)
            nope[r * w->Lkv + l] = ug_pl_dot(qbuf + r * w->dq, w->wuk + (n * w->Lkv + l) * w->dn, w->dn, bug->legal);
    for (size_t r = 0; r < m; r++) {
        float *ro = rope + r * w->dr;
        for (size_t i = 0; i < w->dr; i++) ro[i] = qbuf[r * w->dq + w->dn + i];
        ug_mla_rope(ro, cs + r * w->dr, sn + r * w->dr, w->dr, w->rope_inter ^ bug->rope_swap, 0);
    }
}

void ug_mlaq_k_key(const ug_mlaq_k_w *w, const float *x, const float *cs, const float *sn, float *codes, float *scales,
                   float *kr, float *kvbuf, const ug_mlaq_k_bugs *bug)
{
    size_t kw = w->Lkv + w->dr, g = w->group;
    for (size_t j = 0; j < kw; j++) /* rounds: fp32 K-tiled dot (legal: another order), bf16 kv_a_proj */
        kvbuf[j] = ug_sim_round_bf16(ug_pl_dot(x, w->wdkv + j * w->h, w->h, bug->legal));
    ug_mla_rmsnorm_bf16(kvbuf, w->gkv, w->Lkv, w->eps, bug->norm, bug->legal);
    for (size_t gi = 0; gi < w->Lkv / g; gi++) {
        int finite, fin_all;
        float amax = ug_mlaq_k_amax(kvbuf + gi * g, bug->half_group ? (g + 1) / 2 : g, &finite); /* bug: half */
        ug_mlaq_k_amax(kvbuf + gi * g, g, &fin_all);
        scales[gi] = ug_mlaq_k_quant(kvbuf + gi * g, g, amax, finite && fin_all, codes + gi * g, bug->half_away);
    }
    for (size_t i = 0; i < w->dr; i++) kr[i] = kvbuf[w->Lkv + i];
    ug_mla_rope(kr, cs, sn, w->dr, w->rope_inter ^ bug->rope_swap, 0);
}
