/* lightning_indexer_quant.c — sim kernel and planted-bug mutants for
 * lightning_indexer_quant, the DeepSeek-V3.2 lightning indexer over a paged int8 key
 * cache:
 *     score[r,s] = sum_h w[r,h] q_scale[r,h] k_scale[s] relu(q_i8[r,h,:].k_i8[s,:]),
 *     topk_idx[r] = the min(k, E_r) best s < E_r = actual_seqs[b] - S + 1 + i, -1 after.
 *
 * Device model (the reference kernel, pypto-gym lightning_indexer_quant_impl): one core
 * per sequence walks its block-table row; each block's int8 keys are loaded once and
 * multiplied by the S*H query rows of the step on the cube (int8 x int8 -> int32, exact:
 * here fp32 dots of integers below 2^24, attn_vec's ug_av_scores, which is exact on them);
 * the vector unit then forms each head term in fp16 the way the reference does: relu(dot)
 * times the 2^-11 prescale cast to fp16, times q_scale, times k_scale, times w, each
 * product rounded to fp16, then cast to fp32 and summed over heads in head order in fp32.
 * Top-k: a size-k min-heap over the row's scores (larger first, NaN above everything, ties
 * to the lower position), written best first; -1 fills the row past min(k, E_r).
 *
 * Mutants (bug classes of real indexer kernels):
 *   mut_no_relu          the relu dropped: negative dots subtract (most cases)
 *   mut_no_k_scale       k_scale never applied (most cases: scales vary per slot)
 *   mut_k_scale_logical  k_scale read at the logical block (s / block_size) instead of the
 *                        table's physical block (every case with more than one block)
 *   mut_mtp_causal       MTP causal mask off by one: every row but the step's last sees
 *                        one position too many (only q_per_step > 1)
 *   mut_stop_k1          the selection stops at k-1: the last slot stays -1 (only rows
 *                        with at least topk positions)
 *   mut_table_stride     the block table read with row stride cdiv(max(actual_seqs),
 *                        block_size), not its width (only tables wider than that)
 * Legal variants (the contract allows them; each must pass every case):
 *   legal_ties_high      equal scores ranked by the higher position
 *   legal_golden_chain   the reference golden's numerics (golden_score) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

typedef struct {
    const ulpgym_tensor *q, *qs, *kc, *ks, *w, *bt, *lens, *out;
    long H, Dh, bs, mb, sq, k;
    ug_variant_code bug;
} li_view;

typedef struct {
    float *qf, *qsf, *wf; /* the step's S*H query rows, scales, weights */
    float *kf, *kt, *sc;  /* one block: keys, keys transposed, dots [S*H][ldt] */
    float *kscale;        /* one block's k_scale */
    float *row;           /* [S][maxE] scores */
    long *heap;           /* [k] */
    float *ids;           /* [k] */
    size_t ldt;
} li_bufs;

static int li_open(const ulpgym_call *call, li_view *v, int bug, char *err, size_t errlen)
{
    const ulpgym_tensor **slots[] = {&v->q, &v->qs, &v->kc, &v->ks, &v->w, &v->bt, &v->lens, &v->out};
    if (ug_sim_bind(call, "query q_scale key_cache k_scale weights block_tables actual_seqs topk_idx", slots, err,
                    errlen))
        return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    v->sq = UG_P(lightning_indexer_quant, &p)->q_per_step;
    ug_params_free(&p);
    v->H = v->q->shape[1], v->Dh = v->q->shape[2], v->bs = v->kc->shape[1], v->mb = v->bt->shape[1];
    v->k = v->out->shape[2];
    v->bug = bug;
    return 0;
}

/* One head term, the reference kernel's fp16 chain; dot is an exact integer. */
static float head_term(const li_view *v, float dot, float qs, float ks, float w)
{
    if (v->bug != UG_VAR_MUT_NO_RELU && dot < 0) dot = 0; /* relu (bug: dropped) */
    float x = ug_sim_round_fp16(dot * 0x1p-11f);          /* rounds: fp16 (the prescale itself is exact) */
    x = ug_sim_round_fp16(x * qs);                        /* rounds: fp32 product, then fp16 */
    if (v->bug != UG_VAR_MUT_NO_K_SCALE) x = ug_sim_round_fp16(x * ks); /* rounds: fp16 (bug: k_scale skipped) */
    return ug_sim_round_fp16(x * w);                                    /* rounds: fp16 */
}

/* legal_golden_chain: one row's score at key column c the reference golden's way: per head
 * relu(dot)*2^-11 and w*q_scale each rounded to fp16, their product in fp32, the heads
 * summed in fp32 from the last head down, k_scale applied once in fp32 after the sum. */
static float golden_score(const li_view *v, const li_bufs *B, long i, long c)
{
    float t = 0.0f;
    for (long h = v->H - 1; h >= 0; h--) {
        size_t rh = (size_t)(i * v->H + h);
        float dot = B->sc[rh * B->ldt + (size_t)c];
        float x = ug_sim_round_fp16((dot > 0 ? dot : 0) * 0x1p-11f); /* rounds: fp16 */
        t += x * ug_sim_round_fp16(B->wf[rh] * B->qsf[rh]);          /* rounds: fp16 w*q_scale, fp32 product and sum */
    }
    return t * B->kscale[c]; /* rounds: fp32 */
}

/* Scores of positions [p0, p0+n) of every row of the step (one block of the table). */
static void li_block(const li_view *v, li_bufs *B, long phys, long blk, long p0, long n, const long *end)
{
    size_t D = (size_t)v->Dh, slot0 = (size_t)(phys * v->bs);
    ug_sim_load(v->kc, slot0 * D, (size_t)n * D, B->kf);
    size_t ks0 = v->bug == UG_VAR_MUT_K_SCALE_LOGICAL ? (size_t)(blk * v->bs) : slot0; /* bug: logical block */
    ug_sim_load(v->ks, ks0, (size_t)n, B->kscale);
    ug_av_stage_kt(B->kf, D, (size_t)n, D, B->kt, B->ldt);
    size_t nr = (size_t)(v->sq * v->H);
    ug_av_scores(B->qf, D, nr, B->kt, B->ldt, ug_av_cols((size_t)n), D, B->sc, B->ldt); /* exact: integer dots */
    for (long i = 0; i < v->sq; i++)
        for (long c = 0; c < n && p0 + c < end[i]; c++) {
            float t = 0.0f;
            if (v->bug == UG_VAR_LEGAL_GOLDEN_CHAIN) {
                B->row[(size_t)i * (size_t)end[v->sq] + (size_t)(p0 + c)] = golden_score(v, B, i, c);
                continue;
            }
            for (long h = 0; h < v->H; h++) {
                size_t rh = (size_t)(i * v->H + h), rq = v->bug == UG_VAR_MUT_HEAD0_QSCALE ? (size_t)(i * v->H) : rh;
                t += head_term(v, B->sc[rh * B->ldt + (size_t)c], B->qsf[rq], B->kscale[c],
                               B->wf[rh]); /* rounds: fp32 */
            }
            B->row[(size_t)i * (size_t)end[v->sq] + (size_t)(p0 + c)] = t;
        }
}

/* a ranks above b: NaN first, then larger, ties to the lower position (legal_ties_high:
 * the higher, a order the set rule allows as well). */
static int above(const float *s, long a, long b, int high)
{
    int first = high ? a > b : a < b;
    if (isnan(s[a]) || isnan(s[b])) return isnan(s[a]) && (!isnan(s[b]) || first);
    return s[a] > s[b] || (s[a] == s[b] && first);
}

/* Restores the min-heap (worst at the root) below node i of h[0..n). */
static void sift(const float *s, long *h, long n, long i, int high)
{
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && above(s, h[m], h[l], high)) m = l;
        if (r < n && above(s, h[m], h[r], high)) m = r;
        if (m == i) return;
        long t = h[i];
        h[i] = h[m], h[m] = t, i = m;
    }
}

/* The n best of s[0..E) into ids, best first; -1 up to k. */
static void li_topk(const float *s, long E, long n, long k, long *h, float *ids, int high)
{
    for (long j = 0; j < n; j++) h[j] = j;
    for (long j = n / 2 - 1; j >= 0; j--) sift(s, h, n, j, high);
    for (long p = n; p < E; p++)
        if (n > 0 && above(s, p, h[0], high)) h[0] = p, sift(s, h, n, 0, high);
    for (long m = n; m > 0; m--) { /* pop the worst to the back: best first */
        ids[m - 1] = (float)h[0];  /* exact: positions below 2^24 */
        h[0] = h[m - 1];
        sift(s, h, m - 1, 0, high);
    }
    for (long j = n; j < k; j++) ids[j] = -1.0f;
}

/* Sequence b: its S query rows against the blocks of its table row. end[0..S) are the rows'
 * causal ends, end[S] the row stride of B->row. */
static void li_sequence(const li_view *v, li_bufs *B, long b, long len, long *end)
{
    size_t nr = (size_t)(v->sq * v->H), D = (size_t)v->Dh;
    ug_sim_load(v->q, (size_t)b * nr * D, nr * D, B->qf);
    ug_sim_load(v->qs, (size_t)b * nr, nr, B->qsf);
    ug_sim_load(v->w, (size_t)b * nr, nr, B->wf);
    long maxend = 0;
    for (long i = 0; i < v->sq; i++) {
        end[i] = len - v->sq + 1 + i;
        if (v->bug == UG_VAR_MUT_MTP_CAUSAL && i < v->sq - 1) end[i]++; /* bug: one position too many */
        maxend = end[i] > maxend ? end[i] : maxend;
    }
    end[v->sq] = maxend;
    const int32_t *table = (const int32_t *)v->bt->data + b * v->mb;
    for (long blk = 0; blk * v->bs < maxend; blk++) {
        long n = maxend - blk * v->bs < v->bs ? maxend - blk * v->bs : v->bs;
        /* identity on a valid entry; mut_table_stride reads the -1 past a row's blocks */
        long nb = v->kc->shape[0], phys = (table[blk] % nb + nb) % nb;
        li_block(v, B, phys, blk, blk * v->bs, n, end);
    }
    for (long i = 0; i < v->sq; i++) {
        long n = end[i] < v->k ? end[i] : v->k;
        if (v->bug == UG_VAR_MUT_STOP_K1 && n == v->k) n--; /* bug: stops at k-1 */
        li_topk(B->row + (size_t)i * (size_t)maxend, end[i], n, v->k, B->heap, B->ids,
                v->bug == UG_VAR_LEGAL_TIES_HIGH);
        ug_sim_store(v->out, (size_t)((b * v->sq + i) * v->k), (size_t)v->k, B->ids); /* exact: integers */
    }
}

static void li_free(li_bufs *B) { free(B->qf), free(B->kf), free(B->row), free(B->heap); }

static int li_alloc(const li_view *v, long maxlen, li_bufs *B)
{
    size_t nr = (size_t)(v->sq * v->H), D = (size_t)v->Dh, bs = (size_t)v->bs;
    B->ldt = ug_av_cols(bs);
    B->qf = malloc((nr * D + 2 * nr) * sizeof *B->qf);
    B->kf = malloc((bs * D + D * B->ldt + nr * B->ldt + bs + (size_t)v->k) * sizeof *B->kf);
    B->row = malloc((size_t)v->sq * (size_t)(maxlen + 1) * sizeof *B->row);
    B->heap = malloc(((size_t)v->k + (size_t)v->sq + 1) * sizeof *B->heap);
    if (!B->qf || !B->kf || !B->row || !B->heap) {
        li_free(B);
        return -1;
    }
    B->qsf = B->qf + nr * D, B->wf = B->qsf + nr;
    B->kt = B->kf + bs * D, B->sc = B->kt + D * B->ldt, B->kscale = B->sc + nr * B->ldt, B->ids = B->kscale + bs;
    return 0;
}

static int li_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    li_view v;
    if (li_open(call, &v, bug, err, errlen)) return -2;
    const int32_t *lens = v.lens->data;
    long nseq = v.lens->shape[0], maxlen = 1;
    for (long b = 0; b < nseq; b++) maxlen = lens[b] > maxlen ? lens[b] : maxlen;
    if (v.bug == UG_VAR_MUT_TABLE_STRIDE) v.mb = (maxlen + v.bs - 1) / v.bs; /* bug: row stride from the lengths */
    li_bufs B;
    if (li_alloc(&v, maxlen, &B)) return -1;
    long *end = B.heap + v.k;
    for (long b = 0; b < nseq; b++) li_sequence(&v, &B, b, lens[b], end);
    li_free(&B);
    return 0;
}

const ug_kernel_fn ug_sim_lightning_indexer_quant = li_kernel;
