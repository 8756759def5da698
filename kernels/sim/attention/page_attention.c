/* page_attention.c — sim kernel and planted-bug mutants for page_attention, paged decode
 * attention with grouped-query heads and S_q = q_per_step query tokens per sequence:
 *     o[b*S_q+i,h,:] = softmax_t(scale * q[b*S_q+i,h,:].K_b[t, h/G, :]) . V_b[t, h/G, :],
 *     t < context_lens[b] - S_q + 1 + i  (MTP row i sees the tokens up to itself; S_q = 1: all)
 * where token t of sequence b lives in cache block block_tables[b, t / block_size] at slot
 * t % block_size, and G = Hq / Hkv query heads share one kv head.
 *
 * Device model: one (sequence, kv head) per core; the G query heads of the group are the
 * rows of a small tile; the kernel walks the sequence's blocks in order (one block = one
 * key tile, the last one partial), with fp32 scores times the fp32 scale, an online
 * softmax (running max and sum in fp32, the accumulator rescaled by exp(m_old - m_new)),
 * and P cast to the input dtype for the P.V matmul (fp32 accumulation); o = acc * (1/l)
 * is rounded once to the dtype. The block table's row stride is its second dimension.
 * Special values as the op's semantics state: the row max propagates NaN, a -inf score
 * weighs 0 and is left out of P.V (NaN/inf in its V never leaks in), and a row with no
 * weighted token gives o = 0.
 *
 * Speed: the query rows that read one kv head of a sequence (the G heads of its group, all
 * MTP rows) are scored together, up to 64 at a time: each cache block of that kv head is
 * widened to fp32 when it is read (no fp32 copy of the whole cache), its keys transposed
 * once and q.k of all the rows computed with the vectorised loops of attn_vec.h; each row
 * then takes its own online-softmax step over the block. Rows are
 * independent and every fp32 sum keeps its order, so the outputs are those of the
 * row-at-a-time loops, bit for bit (tests/test_kernel_digests.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_TABLE_STRIDE, MUT_FULL_LAST_BLOCK, MUT_KV_HEAD_MAP, MUT_MTP_NO_OFFSET } pa_bug;

typedef struct {
    long hq, hkv, dim, bs, table_stride;
    float scale;
    int dt;
    const ulpgym_tensor *kc, *vc; /* the caches, widened a block at a time */
    pa_bug bug;
} pa_ctx;

#define PA_ROWS 64 /* query rows of one kv head scored together */

/* Per-kernel scratch: one chunk of query rows that share a sequence and a kv head. */
typedef struct {
    long n;                   /* rows in the chunk */
    long len[PA_ROWS];        /* keys each row sees */
    size_t out[PA_ROWS];      /* each row's offset in q and o */
    float m[PA_ROWS], l[PA_ROWS];
    float *q, *acc;           /* [PA_ROWS, D] the rows' q (gathered) and fp32 accumulators */
    float *kb, *vb;           /* [BS, D] a block's keys and values of one kv head, in fp32 */
    float *kt, *dots;         /* [D, cols(BS)] a block's keys transposed; [PA_ROWS, cols(BS)] q.k */
    float *s, *pr;            /* [BS] one row's scores and rounded P */
    int *live;                /* [BS] one row's keys with a weight */
} pa_work;

/* Online-softmax step of one row over the n keys of a block: dots its q.k, v the block's
 * first value row (rows slot apart), m, l, acc its running max, sum and accumulator. */
static void pa_step(const pa_ctx *x, pa_work *w, const float *dots, long n, const float *v, size_t slot, float *m,
                    float *l, float *acc)
{
    float tm = -INFINITY, *s = w->s, *pr = w->pr;
    for (long c = 0; c < n; c++) {
        s[c] = dots[c] * x->scale; /* rounds: fp32 */
        tm = isnan(tm) || isnan(s[c]) ? NAN : fmaxf(tm, s[c]); /* NaN propagates */
    }
    float m_new = isnan(*m) || isnan(tm) ? NAN : fmaxf(*m, tm);
    if (m_new == -INFINITY) return; /* no weighted token yet */
    float alpha = *m == -INFINITY ? 0.0f : expf(*m - m_new); /* rounds: fp32 */
    float ts = 0.0f;
    size_t nl = 0;
    for (long c = 0; c < n; c++) {
        float p = s[c] == -INFINITY ? 0.0f : expf(s[c] - m_new); /* rounds: fp32 */
        ts += p; /* rounds: fp32 */
        pr[c] = ug_av_round_to(x->dt, p); /* rounds: P cast to the input dtype for P.V */
        if (s[c] != -INFINITY) w->live[nl++] = (int)c; /* P.V skips tokens scored -inf */
    }
    *l = *l * alpha + ts; /* rounds: fp32 */
    ug_av_pv(acc, alpha, pr, w->live, nl, v, slot, (size_t)x->dim); /* rounds: fp32 P.V in token order, acc*alpha + P.V */
    *m = m_new;
}

/* Tokens of block i that a row seeing len tokens scores (0: the row has no block i). */
static long pa_block_len(const pa_ctx *x, long len, long i)
{
    if (i >= (len + x->bs - 1) / x->bs) return 0;
    if (x->bug == MUT_FULL_LAST_BLOCK) return x->bs; /* bug: the partial last block read as full */
    return len - i * x->bs < x->bs ? len - i * x->bs : x->bs;
}

/* The chunk's rows (kv head g, block table row table) over their sequence's blocks, in
 * order: per block its keys transposed once and q.k of every row (attn_vec.h), then each
 * row's online-softmax step; at the end o = acc * (1/l). */
static void pa_chunk(const pa_ctx *x, pa_work *w, const float *table, long g, float *of)
{
    size_t D = (size_t)x->dim, slot = (size_t)x->hkv * D; /* slot: distance between slots of one kv head */
    long maxlen = 0;
    for (long r = 0; r < w->n; r++) {
        w->m[r] = -INFINITY, w->l[r] = 0.0f, maxlen = w->len[r] > maxlen ? w->len[r] : maxlen;
        for (size_t d = 0; d < D; d++) w->acc[(size_t)r * D + d] = 0.0f;
    }
    size_t lds = ug_av_cols((size_t)x->bs);
    for (long i = 0; i < (maxlen + x->bs - 1) / x->bs; i++) {
        long phys = (long)table[i], nmax = 0;
        for (long r = 0; r < w->n; r++) nmax = pa_block_len(x, w->len[r], i) > nmax ? pa_block_len(x, w->len[r], i) : nmax;
        size_t base = ((size_t)phys * (size_t)x->bs * (size_t)x->hkv + (size_t)g) * D;
        for (long c = 0; c < nmax; c++) { /* exact: the block's slots of kv head g widened to fp32 */
            ug_sim_load(x->kc, base + (size_t)c * slot, D, w->kb + (size_t)c * D);
            ug_sim_load(x->vc, base + (size_t)c * slot, D, w->vb + (size_t)c * D);
        }
        ug_av_stage_kt(w->kb, D, (size_t)nmax, D, w->kt, lds);
        ug_av_scores(w->q, D, (size_t)w->n, w->kt, lds, ug_av_cols((size_t)nmax), D, w->dots, lds); /* rounds: fp32 acc */
        for (long r = 0; r < w->n; r++) {
            long n = pa_block_len(x, w->len[r], i);
            if (n) pa_step(x, w, w->dots + (size_t)r * lds, n, w->vb, D, &w->m[r], &w->l[r], w->acc + (size_t)r * D);
        }
    }
    for (long r = 0; r < w->n; r++) {
        float inv = w->l[r] == 0.0f ? 0.0f : 1.0f / w->l[r]; /* rounds: fp32 reciprocal */
        for (size_t d = 0; d < D; d++) of[w->out[r] + d] = w->acc[(size_t)r * D + d] * inv; /* rounds: fp32 */
    }
}

/* Sequence b, kv head g: its query rows (MTP row i of query head h, for the heads mapped to
 * g) in chunks of PA_ROWS. */
static void pa_group(const pa_ctx *x, pa_work *w, const float *qf, const float *table, long ctx, long sq, size_t b, long g,
                     float *of)
{
    size_t D = (size_t)x->dim;
    long group = x->hq / x->hkv;
    w->n = 0;
    for (long i = 0; i < sq; i++)
        for (long h = 0; h < x->hq; h++) {
            long gh = x->bug == MUT_KV_HEAD_MAP ? h % x->hkv : h / group; /* bug: heads interleaved over kv heads */
            if (gh != g) continue;
            long len = ug_gl_mtp_end(ctx, sq, i); /* MTP row i: the tokens up to itself */
            if (x->bug == MUT_MTP_NO_OFFSET) len = ctx; /* bug: no causal offset, the whole context */
            size_t row = ((b * (size_t)sq + (size_t)i) * (size_t)x->hq + (size_t)h) * D;
            w->len[w->n] = len, w->out[w->n] = row;
            memcpy(w->q + (size_t)w->n * D, qf + row, D * sizeof *qf);
            if (++w->n == PA_ROWS) pa_chunk(x, w, table, g, of), w->n = 0;
        }
    if (w->n) pa_chunk(x, w, table, g, of);
}

static int pa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *q, *kc, *vc, *bt, *cl, *o, **slots[] = {&q, &kc, &vc, &bt, &cl, &o};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables context_lens o", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    pa_ctx x = {.hq = q->shape[1],
                .dim = q->shape[2],
                .bs = kc->shape[1],
                .hkv = kc->shape[2],
                .table_stride = bt->shape[1],
                .dt = q->dtype,
                .bug = bug};
    double scale = ug_p_num(&p, "scale"); /* exact: an fp32 value; 0 is the 1/sqrt(D) sentinel */
    x.scale = scale == 0.0 ? (float)(1.0 / sqrt((double)x.dim)) : (float)scale; /* rounds: fp32 */
    long sq = ug_p_int(&p, "q_per_step");
    ug_params_free(&p);
    size_t B = (size_t)cl->shape[0], D = (size_t)x.dim, nq = (size_t)q->shape[0] * (size_t)x.hq * D;
    size_t ntab = B * (size_t)x.table_stride;
    size_t lds = ug_av_cols((size_t)x.bs);
    float *buf = malloc((2 * nq + ntab + B + 2 * PA_ROWS * D + 2 * lds * D + (D + PA_ROWS) * lds + 2 * lds) * sizeof *buf);
    int *live = malloc((size_t)x.bs * sizeof *live);
    if (!buf || !live) {
        free(buf);
        free(live);
        return -1;
    }
    float *qf = buf, *of = qf + nq, *tab = of + nq, *ctx = tab + ntab;
    pa_work w = {.q = ctx + B, .live = live};
    w.acc = w.q + PA_ROWS * D;
    w.kb = w.acc + PA_ROWS * D;
    w.vb = w.kb + lds * D;
    w.kt = w.vb + lds * D;
    w.dots = w.kt + D * lds;
    w.s = w.dots + PA_ROWS * lds;
    w.pr = w.s + lds;
    ug_sim_load(q, 0, nq, qf);
    ug_sim_load(bt, 0, ntab, tab);
    ug_sim_load(cl, 0, B, ctx);
    x.kc = kc, x.vc = vc;
    long stride = x.table_stride, maxctx = 0;
    for (size_t b = 0; b < B; b++) maxctx = (long)ctx[b] > maxctx ? (long)ctx[b] : maxctx;
    if (bug == MUT_TABLE_STRIDE) stride = maxctx / x.bs; /* bug: floor(max_ctx / block_size), not the ceiling */
    for (size_t b = 0; b < B; b++)
        for (long g = 0; g < x.hkv; g++) pa_group(&x, &w, qf, tab + b * (size_t)stride, (long)ctx[b], sq, b, g, of);
    ug_sim_store(o, 0, nq, of);
    free(buf);
    free(live);
    return 0;
}

const ug_kernel_variant ug_variants_page_attention[] = {
    {"sim", "paged decode, one block per key tile, fp32 online softmax, P cast to the input dtype for P.V", pa_kernel,
     0, MUT_NONE},
    {"mut_table_stride",
     "block-table row stride floor(max_ctx/block_size) instead of its width: rows shift when max_ctx % block_size != 0",
     pa_kernel, 0, MUT_TABLE_STRIDE},
    {"mut_full_last_block", "the partial last block read as full: stale cache slots past the context join the softmax",
     pa_kernel, 0, MUT_FULL_LAST_BLOCK},
    {"mut_kv_head_map", "query head h reads kv head h % Hkv instead of h / (Hq/Hkv)", pa_kernel, 0, MUT_KV_HEAD_MAP},
    {"mut_mtp_no_offset",
     "multi-token step without the causal offset: every query row sees the whole context (shows when q_per_step > 1)",
     pa_kernel, 0, MUT_MTP_NO_OFFSET},
    {NULL, NULL, NULL},
};
