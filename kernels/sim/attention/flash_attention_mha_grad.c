/* flash_attention_mha_grad.c — sim kernel and planted-bug mutants for
 * flash_attention_mha_grad, the FlashAttention-2 backward of the varlen MHA forward:
 *     Delta_i = rowsum(dO_i * O_i),  P_ij = exp(scale*q_i.k_j - lse_i),
 *     dV = P^T dO,  dP = dO V^T,  dS = P * (dP - Delta),  dQ = scale dS K,  dK = scale dS^T Q
 *
 * Device model (FA2 backward): Delta is computed first from the stored o and dO in fp32.
 * Then per (batch element, head) the keys are cut into 64-key tiles; each key tile keeps
 * fp32 dK and dV accumulators and walks the 64-row query tiles (causal: only tiles with a
 * row that sees one of its keys). P is recomputed from the stored lse in fp32 (no online
 * softmax is needed backward), cast to the input dtype for dV += P^T dO; dP = dO V^T in
 * fp32; dS = P * (dP - Delta) in fp32, cast to the input dtype for dK += dS^T Q and
 * dQ += dS K (dQ kept in an fp32 buffer across key tiles, in key-tile order, as the
 * device's fp32 atomics would with one writer). The scale is applied to dQ and dK once
 * at the end, and the results are rounded once to the dtype. Keys a row does not see are
 * left out of its products (as the op's semantics state: no 0*NaN from them).
 *
 * Speed: K and V of a key tile are transposed once, q.k and dO.v of 64 query rows at a
 * time come from the vectorised loops of attn_vec.h, and the dK/dV/dQ updates run across
 * d; the query rows still update dK, dV and dQ one after another in row order, so every
 * fp32 sum keeps the order of the row-at-a-time loops (tests/test_kernel_digests.sh).
 *
 * Legal variant (another correct kernel, which must pass every case): legal_fn_ulps, the exp
 * of P moved by 3 fp32 ulps off libm's (ug_sim_fn_ulps; the certified device model charges
 * exp 4 ulps, docs/STANDARDS.md). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define FB_BQ 64
#define FB_BK 64

typedef struct {
    long heads, dim, causal;
    float scale;
    int dt;
    const float *q, *k, *v, *dout, *lse, *delta;
    float *dq; /* fp32 accumulators [Tq,H,D] */
    ug_variant_code bug;
    int fn_ulps; /* ulps the exp of P is moved by (ug_sim_fn_ulps): 0, or legal_fn_ulps' */
} fb_ctx;

/* Keys (a prefix) that local query i of an element with lq queries and lk keys sees. */
static long visible(const fb_ctx *x, long i, long lq, long lk)
{
    if (!x->causal) return lk;
    long n = i + 1 + lk - lq;
    if (x->bug == UG_VAR_MUT_CAUSAL_STRICT) n--; /* bug: j < i + lk - lq, the diagonal is masked */
    return n < 0 ? 0 : n > lk ? lk : n;
}

/* The mut_tail_key_tile bug: a short last key tile (Lk % 64 != 0, not the first) never runs. */
static int tile_dropped(const fb_ctx *x, long j0, long nk)
{
    return x->bug == UG_VAR_MUT_TAIL_KEY_TILE && nk < FB_BK && j0 > 0;
}

static float dot(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t d = 0; d < n; d++) s += a[d] * b[d]; /* rounds: fp32 acc */
    return s;
}

/* Per-kernel scratch of the key-tile loop. */
typedef struct {
    float *kt, *vt; /* [D, FB_BK] the key tile's K and V transposed (attn_vec.h) */
    float *sd, *pd; /* [FB_BQ, FB_BK] q.k and dO.v of a query tile, unscaled */
    float *pr, *ds; /* [FB_BQ, FB_BK] P and dS of a query tile, in the input dtype */
    long nc[FB_BQ]; /* keys of the tile each row of the query tile sees (0: none) */
} fb_work;

/* P and dS of query row i (lse/delta row lrow) over key tile [j0, j0+nk), from its q.k
 * (sd) and dO.v (pd); returns how many keys of the tile the row sees. */
static long row_p_ds(const fb_ctx *x, long i, long lq, long lk, long j0, long nk, size_t lrow, const float *sd,
                     const float *pd, float *pr, float *ds)
{
    long vis = visible(x, i, lq, lk);
    if (vis <= j0) return 0; /* this row sees none of the tile (a whole query tile skips on device) */
    float lse = x->lse[lrow], delta = x->delta[lrow];
    for (long c = 0; c < nk; c++) {
        float p = 0.0f, dp = 0.0f;
        if (j0 + c < vis) {
            float z = sd[c] * x->scale - lse;           /* rounds: fp32 score, fp32 sub */
            p = ug_sim_fn_ulps(expf(z), z, x->fn_ulps); /* rounds: fp32 exp (legal_fn_ulps: a device's) */
            dp = pd[c];
        }
        pr[c] = ug_av_round_to(x->dt, p);                /* rounds: P to the input dtype */
        ds[c] = ug_av_round_to(x->dt, p * (dp - delta)); /* rounds: fp32, then dS to the dtype */
    }
    return vis - j0 < nk ? vis - j0 : nk;
}

/* Query tile [i0, i0+nr) against key tile [j0, j0+nk) at kofs: accumulates dK, dV (fp32,
 * [nk x D]) and the rows' dQ, row after row in row order (attn_vec.h keeps each
 * accumulator's adds in that order). */
static void query_tile(const fb_ctx *x, fb_work *w, long q0, long i0, long nr, long lq, long lk, long h, long j0,
                       long nk, size_t kofs, float *dk, float *dv)
{
    size_t D = (size_t)x->dim, HD = (size_t)x->heads * D, q0ofs = (size_t)(q0 + i0) * HD + (size_t)h * D;
    ug_av_scores(x->q + q0ofs, HD, (size_t)nr, w->kt, FB_BK, ug_av_cols((size_t)nk), D, w->sd,
                 FB_BK); /* rounds: fp32 acc */
    ug_av_scores(x->dout + q0ofs, HD, (size_t)nr, w->vt, FB_BK, ug_av_cols((size_t)nk), D, w->pd,
                 FB_BK); /* rounds: fp32 acc */
    for (long r = 0; r < nr; r++) {
        size_t lrow = (size_t)(q0 + i0 + r) * (size_t)x->heads + (size_t)h, o = (size_t)r * FB_BK;
        w->nc[r] = row_p_ds(x, i0 + r, lq, lk, j0, nk, lrow, w->sd + o, w->pd + o, w->pr + o, w->ds + o);
        if (w->nc[r]) /* dQ row += dS K over the keys it sees (rounds: fp32 acc in key order, then dq +=) */
            ug_av_pv(x->dq + q0ofs + (size_t)r * HD, 1.0f, w->ds + o, NULL, (size_t)w->nc[r], x->k + kofs, HD, D);
    }
    ug_av_outer_rows(dv, (size_t)nk, w->pr, FB_BK, w->nc, (size_t)nr, x->dout + q0ofs, HD, D); /* rounds: fp32 acc */
    ug_av_outer_rows(dk, (size_t)nk, w->ds, FB_BK, w->nc, (size_t)nr, x->q + q0ofs, HD, D);    /* rounds: fp32 acc */
}

/* Key tile [j0, j0+nk) of an element (query offset q0, key offset k0), head h: accumulates
 * dK/dV of the tile into dk/dv ([nk x D], fp32) and dQ of every query row into x->dq, the
 * rows in order. K and V are transposed once; the query rows come a 64-row tile at a time. */
static void key_tile(const fb_ctx *x, long q0, long lq, long k0, long lk, long h, long j0, long nk, float *dk,
                     float *dv, fb_work *w)
{
    size_t D = (size_t)x->dim, HD = (size_t)x->heads * D, kofs = (size_t)(k0 + j0) * HD + (size_t)h * D;
    if (tile_dropped(x, j0, nk)) return; /* bug: a short last key tile is skipped */
    for (size_t e = 0; e < (size_t)nk * D; e++) dk[e] = dv[e] = 0.0f;
    ug_av_stage_kt(x->k + kofs, HD, (size_t)nk, D, w->kt, FB_BK);
    ug_av_stage_kt(x->v + kofs, HD, (size_t)nk, D, w->vt, FB_BK);
    for (long i0 = 0; i0 < lq; i0 += FB_BQ) {
        long nr = lq - i0 < FB_BQ ? lq - i0 : FB_BQ;
        if (visible(x, i0 + nr - 1, lq, lk) <= j0) continue; /* no row of the query tile sees the keys */
        query_tile(x, w, q0, i0, nr, lq, lk, h, j0, nk, kofs, dk, dv);
    }
}

static int fb_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *in[7], *lse, *dq, *dk, *dv;
    const ulpgym_tensor **slots[] = {&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &lse, &dq, &dk, &dv};
    if (ug_sim_bind(call, "q k v o do cu_seqlens_q cu_seqlens_k lse dq dk dv", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    fb_ctx x = {.heads = in[0]->shape[1],
                .dim = in[0]->shape[2],
                .causal = UG_P(flash_attention_mha_grad, &p)->causal,
                .dt = in[0]->dtype,
                .bug = bug,
                .fn_ulps = bug == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0};
    double scale = UG_P(flash_attention_mha_grad, &p)->scale; /* exact: an fp32 value; 0 is the 1/sqrt(D) sentinel */
    x.scale = scale == 0.0 ? (float)(1.0 / sqrt((double)x.dim)) : (float)scale; /* rounds: fp32 */
    ug_params_free(&p);
    size_t tq = (size_t)in[0]->shape[0], tk = (size_t)in[1]->shape[0], H = (size_t)x.heads, D = (size_t)x.dim;
    long batch = in[5]->shape[0] - 1;
    size_t nq = tq * H * D, nk = tk * H * D;
    float *buf = malloc((4 * nq + 4 * nk + 2 * tq * H + 2 * (size_t)(batch + 1) + 4 * FB_BK * D + 4 * FB_BQ * FB_BK) *
                        sizeof *buf);
    if (!buf) return -1;
    float *qf = buf, *of = qf + nq, *dof = of + nq, *dqf = dof + nq, *kf = dqf + nq, *vf = kf + nk, *dkf = vf + nk;
    float *dvf = dkf + nk, *lf = dvf + nk, *delta = lf + tq * H, *cu = delta + tq * H;
    float *dkt = cu + 2 * (batch + 1), *dvt = dkt + FB_BK * D;
    fb_work w = {.kt = dvt + FB_BK * D};
    w.vt = w.kt + FB_BK * D;
    w.sd = w.vt + FB_BK * D;
    w.pd = w.sd + FB_BQ * FB_BK;
    w.pr = w.pd + FB_BQ * FB_BK;
    w.ds = w.pr + FB_BQ * FB_BK;
    ug_sim_load(in[0], 0, nq, qf);
    ug_sim_load(in[1], 0, nk, kf);
    ug_sim_load(in[2], 0, nk, vf);
    ug_sim_load(in[3], 0, nq, of);
    ug_sim_load(in[4], 0, nq, dof);
    ug_sim_load(lse, 0, tq * H, lf);
    ug_sim_load(in[5], 0, (size_t)batch + 1, cu);
    ug_sim_load(in[6], 0, (size_t)batch + 1, cu + batch + 1);
    for (size_t r = 0; r < tq * H; r++) delta[r] = dot(dof + r * D, of + r * D, D); /* rounds: fp32 acc */
    for (size_t e = 0; e < nq; e++) dqf[e] = 0.0f;
    for (size_t e = 0; e < nk; e++) dkf[e] = dvf[e] = 0.0f;
    x.q = qf, x.k = kf, x.v = vf, x.dout = dof, x.lse = lf, x.delta = delta, x.dq = dqf;
    for (long b = 0; b < batch; b++) {
        long q0 = (long)cu[b], lq = (long)cu[b + 1] - q0, k0 = (long)cu[batch + 1 + b],
             lk = (long)cu[batch + 2 + b] - k0;
        for (long h = 0; h < x.heads; h++)
            for (long j0 = 0; j0 < lk; j0 += FB_BK) {
                long n = lk - j0 < FB_BK ? lk - j0 : FB_BK;
                key_tile(&x, q0, lq, k0, lk, h, j0, n, dkt, dvt, &w);
                if (tile_dropped(&x, j0, n)) continue; /* its dK, dV stay 0 */
                for (long c = 0; c < n; c++)
                    for (size_t d = 0; d < D; d++) {
                        size_t at = ((size_t)(k0 + j0 + c) * H + (size_t)h) * D + d;
                        float sk = x.bug == UG_VAR_MUT_DK_NO_SCALE ? 1.0f : x.scale; /* bug: dK misses the scale */
                        dkf[at] = dkt[(size_t)c * D + d] * sk;                       /* rounds: fp32 */
                        dvf[at] = dvt[(size_t)c * D + d];
                    }
            }
    }
    for (size_t e = 0; e < nq; e++) dqf[e] *= x.scale; /* rounds: fp32 */
    ug_sim_store(dq, 0, nq, dqf);
    ug_sim_store(dk, 0, nk, dkf);
    ug_sim_store(dv, 0, nk, dvf);
    free(buf);
    return 0;
}

const ug_kernel_fn ug_sim_flash_attention_mha_grad = fb_kernel;
