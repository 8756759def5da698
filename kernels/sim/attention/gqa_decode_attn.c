/* gqa_decode_attn.c — sim kernel and planted-bug mutants for gqa_decode_attn: S_q =
 * q_per_step query tokens per sequence (rows b*S_q + i of q and o; 1 = plain decode), Hq
 * query heads sharing Hkv kv heads (query head h reads kv head h / (Hq/Hkv)); row i of
 * sequence b sees keys [max(0, E-window), E), E = L - S_q + 1 + i (window 0 = all E),
 *     o[b*S_q+i,h] = softmax(scale · q[b*S_q+i,h]·K^T) · V.
 *
 * Device model: one core per (sequence, kv head) loads that head's K/V rows once (bf16,
 * widened exactly to fp32) and serves the group's query heads from them, in tiles of 128
 * keys starting at the window's first key: fp32 scores, online softmax, P cast to bf16
 * before P·V, fp32 accumulation, o rounded once to bf16 (attn_tiles.c, which also holds
 * the special-value rule). The scale is the fp32 param (default the fp32 value of
 * 1/sqrt(D)). The K/V rows a step needs are loaded once and serve all S_q rows, each
 * row's tiles starting at its own window's first key.
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set):
 * the online softmax on 16-key tiles; two passes (one tile holding the row's whole window:
 * its max first, then one pass of exp, sum and P·V, nothing rescaled); the window's keys
 * walked last to first (every sum and the running max in reverse key order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define GQA_TILE 128

typedef struct {
    const ulpgym_tensor *q, *k, *v, *lens, *o;
    long b, sq, hq, hkv, s, d, window;
    float scale;
} gqa_view;

static int same_dims(const ulpgym_tensor *t, const int64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        if (t->shape[i] != want[i]) return 0;
    return 1;
}

/* Finds the tensors and checks their shapes agree: q [B*S_q,Hq,D], k/v [B,Hkv,S,D], seq_lens [B], o [B*S_q,Hq,D]. */
static int gqa_open(const ulpgym_call *call, gqa_view *g, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_gqa_decode_attn_params *params = UG_P(gqa_decode_attn, &p);
    g->window = params->window, g->sq = params->q_per_step;
    g->scale = (float)params->scale; /* already an fp32 value */
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&g->q, &g->k, &g->v, &g->lens, &g->o};
    if (ug_sim_bind(call, "q k v seq_lens o", slots, err, errlen)) return -2;
    g->b = g->k->shape[0], g->hq = g->q->shape[1], g->d = g->q->shape[2];
    g->hkv = g->k->shape[1], g->s = g->k->shape[2];
    int64_t kv[4] = {g->b, g->hkv, g->s, g->d}, bl[1] = {g->b}, qs[3] = {g->b * g->sq, g->hq, g->d};
    if (!same_dims(g->q, qs, 3) || !same_dims(g->k, kv, 4) || !same_dims(g->v, kv, 4) || !same_dims(g->lens, bl, 1) ||
        !same_dims(g->o, qs, 3) || g->hkv < 1 || g->hq % g->hkv || g->lens->dtype != ULPGYM_INT32) {
        snprintf(err, errlen,
                 "gqa_decode_attn: tensor shapes disagree (q [B*q_per_step,Hq,D], k/v [B,Hkv,S,D], "
                 "Hq %% Hkv == 0)");
        return -2;
    }
    return 0;
}

/* First key of the window that ends at key `end` (exclusive). */
static long window_start(const gqa_view *g, long end, ug_variant_code bug)
{
    long start = g->window > 0 && end > g->window ? end - g->window : 0;
    if (bug == UG_VAR_MUT_WINDOW_OFF_BY_ONE && start > 0) start--; /* bug: window + 1 keys */
    return start;
}

/* Keys per tile: GQA_TILE, or a legal variant's (two passes: the longest window, S keys). */
static size_t gqa_tile(const gqa_view *g, ug_variant_code bug)
{
    return bug == UG_VAR_LEGAL_TILE16 ? 16 : bug == UG_VAR_LEGAL_TWO_PASS ? (size_t)(g->s > 0 ? g->s : 1) : GQA_TILE;
}

/* legal_reversed: rows [0, n) of k and v (stride d) copied last to first into rk, rv. */
static void reverse_rows(const float *k, const float *v, size_t n, size_t d, float *rk, float *rv)
{
    for (size_t j = 0; j < n; j++) {
        memcpy(rk + j * d, k + (n - 1 - j) * d, d * sizeof *rk);
        memcpy(rv + j * d, v + (n - 1 - j) * d, d * sizeof *rv);
    }
}

/* Serves every query row and head of (b, kv head kvh) from one load of the keys the step
 * needs: [first row's window start, len); the heads of a query row together
 * (ug_gl_attn_rows). rk, rv: legal_reversed's reversed rows (S rows each). */
static void gqa_group(const gqa_view *g, long b, long kvh, long len, ug_variant_code bug, float *kf, float *vf,
                      float *qf, float *of, float *scratch, float *rk, float *rv)
{
    long first = window_start(g, bug == UG_VAR_MUT_MTP_NO_OFFSET ? len : ug_gl_mtp_end(len, g->sq, 0), bug);
    size_t base = (size_t)((b * g->hkv + kvh) * g->s + first) * (size_t)g->d;
    ug_sim_load(g->k, base, (size_t)((len - first) * g->d), kf);
    ug_sim_load(g->v, base, (size_t)((len - first) * g->d), vf);
    ug_gl_attn_cfg cfg = {(size_t)g->d,     (size_t)g->d, (size_t)g->d,     (size_t)g->d,
                          gqa_tile(g, bug), g->scale,     UG_GL_ATTN_P_BF16};
    if (bug == UG_VAR_MUT_PV_BF16) cfg.flags |= UG_GL_ATTN_BUG_PV_BF16;
    if (bug == UG_VAR_MUT_NO_SUM_RESCALE) cfg.flags |= UG_GL_ATTN_BUG_NO_SUM_RESCALE;
    long group = g->hq / g->hkv;
    for (long i = 0; i < g->sq; i++) {
        long end = bug == UG_VAR_MUT_MTP_NO_OFFSET ? len : ug_gl_mtp_end(len, g->sq, i); /* bug: no causal offset */
        long start = window_start(g, end, bug);
        size_t off = (size_t)(start - first) * (size_t)g->d;
        size_t nr = 0, d = (size_t)g->d;
        for (long h = 0; h < g->hq; h++) { /* the heads of kv head kvh share the window's keys */
            long owner = bug == UG_VAR_MUT_KV_HEAD_MOD ? h % g->hkv : h / group; /* bug: h % Hkv */
            if (owner != kvh) continue;
            ug_sim_load(g->q, (size_t)((b * g->sq + i) * g->hq + h) * d, d, qf + nr++ * d);
        }
        if (bug == UG_VAR_LEGAL_REVERSED) { /* legal: the same keys, last to first */
            reverse_rows(kf + off, vf + off, (size_t)(end - start), d, rk, rv);
            ug_gl_attn_rows(&cfg, qf, d, nr, rk, rv, (size_t)(end - start), of, d, scratch);
        } else
            ug_gl_attn_rows(&cfg, qf, d, nr, kf + off, vf + off, (size_t)(end - start), of, d, scratch);
        nr = 0;
        for (long h = 0; h < g->hq; h++) {
            long owner = bug == UG_VAR_MUT_KV_HEAD_MOD ? h % g->hkv : h / group;
            if (owner != kvh) continue;
            ug_sim_store(g->o, (size_t)((b * g->sq + i) * g->hq + h) * d, d, of + nr++ * d); /* rounds: bf16 output */
        }
    }
}

static int gqa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    gqa_view g;
    if (gqa_open(call, &g, err, errlen)) return -2;
    const int32_t *lens = g.lens->data;
    size_t d = (size_t)g.d, s = (size_t)g.s;
    size_t group = (size_t)(g.hq / g.hkv);
    size_t nrev = bug == UG_VAR_LEGAL_REVERSED ? 2 * s * d : 0; /* legal_reversed's reversed K and V rows */
    float *kf = malloc((2 * s * d + 2 * group * d + nrev) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH(gqa_tile(&g, bug), d, d, group) * sizeof *scratch);
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *vf = kf + s * d, *qf = vf + s * d, *of = qf + group * d, *rk = of + group * d, *rv = rk + s * d;
    int rc = 0;
    for (long b = 0; b < g.b && !rc; b++) {
        long len = lens[b];
        if (len < g.sq || len > g.s) {
            snprintf(err, errlen, "gqa_decode_attn: seq_lens[%ld] = %ld outside q_per_step..ctx = %ld..%ld", b, len,
                     g.sq, g.s);
            rc = -2;
            break;
        }
        for (long kvh = 0; kvh < g.hkv; kvh++) gqa_group(&g, b, kvh, len, bug, kf, vf, qf, of, scratch, rk, rv);
    }
    free(kf);
    free(scratch);
    return rc;
}

const ug_kernel_fn ug_sim_gqa_decode_attn = gqa_kernel;
