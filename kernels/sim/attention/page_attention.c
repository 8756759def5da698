/* page_attention.c — sim kernel and planted-bug mutants for page_attention, paged decode
 * attention with grouped-query heads and S_q = q_per_step query tokens per sequence:
 *     o[b*S_q+i,h,:] = softmax_t(scale * q[b*S_q+i,h,:].K_b[t, h/G, :]) . V_b[t, h/G, :],
 *     t < context_lens[b] - S_q + 1 + i  (MTP row i sees the tokens up to itself; S_q = 1: all)
 * where token t of sequence b lives in cache block block_tables[b, t / block_size] at slot
 * t % block_size, and G = Hq / Hkv query heads share one kv head.
 *
 * Device model: one (sequence, kv head) per core; the G query heads of the group are the
 * rows of a small tile; the kernel walks the sequence's blocks in order (one block = one
 * key tile, the last one partial; quant fp8 with p_tile: p_tile tokens, several blocks, a
 * tile), with fp32 scores times the fp32 scale, an online
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
 * row-at-a-time loops, bit for bit (tests/test_kernel_digests.sh).
 *
 * quant fp8 (the reference's page_attention_quant_fp8): scores as the reference's kernel
 * forms them, the fp32 dot product of the q and key codes times q_scale, times the slot's
 * key_scale, times scale (where a code or scale of the chunk's rows or the block's keys is
 * not finite, the dot product of the dequantised operands, code * scale in fp32, instead:
 * the contract's per-element products decide the special values); values dequantised as
 * the block is read (code * value_scale of the sequence's channel, fp32); and the rest is
 * the same walk except P: each row's e = exp(s - tile max) over a block (one key tile) is
 * quantised to e4m3 with the dynamic scale 448/max e and dequantised, then carried to the
 * running max, before P.V, as the reference's kernel does (its codes bit for bit where the
 * scores are, which its test's golden also makes).
 *
 * Legal variants (other correct devices, the false-alarm set):
 *   legal_two_pass  the key tiles scored once first for each row's max, then walked with the
 *                   running max starting there (every weight against the row's max)
 *   legal_reversed  each row's keys last to first, the key tiles counted from its last key
 *                   (the rows of a chunk then come from one MTP step: they see as many keys)
 *   legal_fn_ulps   every exp (the weights', alpha, quant fp8's tile exps) UG_SIM_FN_ULPS
 *                   fp32 ulps off libm's (ug_sim_fn_ulps) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

typedef struct {
    long hq, hkv, dim, bs, table_stride;
    long tile; /* tokens per key tile: one block (bs), or p_tile with quant fp8 */
    float scale;
    int dt;
    const ulpgym_tensor *kc, *vc; /* the caches, widened a block at a time */
    const ulpgym_tensor *ks, *vs; /* quant fp8: key_scale, value_scale (else NULL) */
    ug_variant_code bug;
    int fn; /* ulps every exp is moved by (ug_sim_fn_ulps): 0, or legal_fn_ulps' */
} pa_ctx;

#define PA_ROWS 64 /* query rows of one kv head scored together */

/* Per-kernel scratch: one chunk of query rows that share a sequence and a kv head. */
typedef struct {
    long n;              /* rows in the chunk */
    long len[PA_ROWS];   /* keys each row sees */
    size_t out[PA_ROWS]; /* each row's offset in q and o */
    float m[PA_ROWS], l[PA_ROWS];
    float *q, *acc;          /* [PA_ROWS, D] the rows' q (gathered; quant fp8 dequantised) and fp32 accumulators */
    float *qc;               /* [PA_ROWS, D] quant fp8: the rows' q codes */
    float qsc[PA_ROWS];      /* quant fp8: each row's q scale as applied to its code dot products */
    int q_finite;            /* quant fp8: every code and scale of the chunk's rows is finite */
    float *ksc;              /* [BS] quant fp8: the block's key scales */
    float *kb, *vb;          /* [BS, D] a block's keys and values of one kv head, in fp32 */
    float *kt, *dots;        /* [D, cols(BS)] a block's keys transposed; [PA_ROWS, cols(BS)] q.k */
    float *s, *pr;           /* [BS] one row's scores and rounded P */
    int *live;               /* [BS] one row's keys with a weight */
    float *vscale;           /* [D] quant fp8: value_scale of the chunk's sequence and kv head */
    float qscale_o[PA_ROWS]; /* mut_fp8_qscale_on_o: each row's q scale, applied to o */
} pa_work;

/* quant fp8: P of one row over one key tile as the reference kernel forms it: e = exp(s -
 * tm) against the tile's own max tm, quantised to e4m3 with the dynamic scale 448/max e (its
 * symmetric per-token quantisation) and dequantised, then carried to the running max m by
 * exp(tm - m): pr[c] = e4m3(e[c] * 448/max) * (max/448) * exp(tm - m). The codes are those
 * of the reference's kernel and golden bit for bit when the scores are. Live entries only. */
static void pa_p_fp8(float *pr, const float *s, const int *live, size_t nl, float tm, float m, int fn)
{
    float amax = 0.0f, z4 = tm - m, t4 = ug_sim_fn_ulps(expf(z4), z4, fn); /* rounds: fp32 sub, exp */
    for (size_t i = 0; i < nl; i++) {
        float z = s[live[i]] - tm;                                        /* rounds: fp32 */
        amax = fmaxf(amax, pr[live[i]] = ug_sim_fn_ulps(expf(z), z, fn)); /* rounds: fp32 exp */
    }
    if (amax == 0.0f) return;
    float qs = 448.0f / amax, dq = 1.0f / qs; /* rounds: fp32 */
    for (size_t i = 0; i < nl; i++)
        pr[live[i]] = ug_sim_round_to(ULPGYM_E4M3, pr[live[i]] * qs) * dq * t4; /* rounds: fp32, e4m3, fp32, fp32 */
}

/* A row's n scores s of a key tile from its q.k dots (with ksc, the code dot products'), and
 * their max (NaN if one is NaN). */
static float pa_scores(const pa_ctx *x, const float *dots, long n, float qsc, const float *ksc, float *s)
{
    float tm = -INFINITY;
    for (long c = 0; c < n; c++) {
        /* rounds: fp32; codes (ksc set): the code dot times q's scale, times the key's, times scale */
        s[c] = ksc ? dots[c] * qsc * ksc[c] * x->scale : dots[c] * x->scale;
        tm = isnan(tm) || isnan(s[c]) ? NAN : fmaxf(tm, s[c]); /* NaN propagates */
    }
    return tm;
}

/* Online-softmax step of one row over the n keys of a block: dots its q.k, v the block's
 * first value row (rows slot apart), m, l, acc its running max, sum and accumulator. */
static void pa_step(const pa_ctx *x, pa_work *w, const float *dots, long n, const float *v, size_t slot, float qsc,
                    const float *ksc, float *m, float *l, float *acc)
{
    float *s = w->s, *pr = w->pr, tm = pa_scores(x, dots, n, qsc, ksc, s);
    float m_new = isnan(*m) || isnan(tm) ? NAN : fmaxf(*m, tm);
    if (m_new == -INFINITY) return;                                             /* no weighted token yet */
    float za = *m - m_new;                                                      /* rounds: fp32 */
    float alpha = *m == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(za), za, x->fn); /* rounds: fp32 exp */
    float ts = 0.0f;
    size_t nl = 0;
    for (long c = 0; c < n; c++) {
        float z = s[c] - m_new;                                                 /* rounds: fp32 */
        float p = s[c] == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(z), z, x->fn); /* rounds: fp32 exp */
        ts += p;                                                                /* rounds: fp32 */
        pr[c] = x->ks ? p : ug_av_round_to(x->dt, p);  /* rounds: P cast to the input dtype for P.V */
        if (s[c] != -INFINITY) w->live[nl++] = (int)c; /* P.V skips tokens scored -inf */
    }
    if (x->ks) pa_p_fp8(pr, s, w->live, nl, tm, m_new, x->fn); /* quant fp8: P as e4m3 codes for P.V */
    *l = *l * alpha + ts;                                      /* rounds: fp32 */
    ug_av_pv(acc, alpha, pr, w->live, nl, v, slot,
             (size_t)x->dim); /* rounds: fp32 P.V in token order, acc*alpha + P.V */
    *m = m_new;
}

/* Slot c of the block at base (kv head g's first slot) widened to fp32: D codes or values
 * into dst; with quant fp8 (fp8) the codes, and with a scale dequantised, dst[d] = code *
 * scale (key_scale of the slot, or the sequence's value_scale of channel d). */
static void pa_load_slot(const pa_ctx *x, const ulpgym_tensor *t, size_t at, int fp8, const float *scale,
                         size_t sstride, float *dst)
{
    size_t D = (size_t)x->dim;
    ug_sim_load(t, at, D, dst);                     /* exact: a widening */
    if (fp8 && x->bug == UG_VAR_MUT_FP8_CODES_INT8) /* bug: the e4m3 bytes read as int8 integers */
        for (size_t d = 0; d < D; d++) dst[d] = (float)((const int8_t *)t->data)[at + d];
    for (size_t d = 0; scale && d < D; d++) dst[d] *= scale[d * sstride]; /* rounds: fp32 */
}

/* quant fp8: whether the n values at v are all finite (a NaN code, an inf or NaN scale). */
static int pa_all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* Tokens of key tile i (x->tile: one block, or p_tile blocks' worth with quant fp8) that a
 * row seeing len tokens scores (0: the row has no tile i). */
static long pa_tile_len(const pa_ctx *x, long len, long i)
{
    long T = x->tile;
    if (i >= (len + T - 1) / T) return 0;
    long n = len - i * T < T ? len - i * T : T;
    if (x->bug == UG_VAR_MUT_FULL_LAST_BLOCK)
        n = (n + x->bs - 1) / x->bs * x->bs; /* bug: the partial last block read as full */
    return n;
}

/* Key tile i of the chunk's rows (kv head g, block table row table): its nmax keys (read
 * block by block through the table; legal_reversed: the rows' keys counted from their last,
 * every row of the chunk seeing the same len) widened to fp32, transposed once and q.k of
 * every row into w->dots (attn_vec.h). Returns whether the dots are of the codes (quant fp8). */
static int pa_tile_dots(const pa_ctx *x, pa_work *w, const float *table, long g, long i, long nmax)
{
    size_t D = (size_t)x->dim, slot = (size_t)x->hkv * D; /* slot: distance between slots of one kv head */
    size_t lds = ug_av_cols((size_t)x->tile);
    for (long c = 0; c < nmax; c++) { /* the tile's slots of kv head g widened (values dequantised) to fp32 */
        long t = i * x->tile + c;
        if (x->bug == UG_VAR_LEGAL_REVERSED) t = w->len[0] - 1 - t; /* legal: keys last to first */
        long phys = (long)table[t / x->bs];
        size_t at = ((size_t)phys * (size_t)x->bs + (size_t)(t % x->bs)) * slot + (size_t)g * D;
        w->ksc[c] = 1.0f;
        if (x->ks)
            ug_sim_load(x->ks, x->bug == UG_VAR_MUT_FP8_KSCALE_PER_TENSOR ? 0 : at / D, 1, &w->ksc[c]); /* bug: [0] */
        pa_load_slot(x, x->kc, at, x->ks != NULL, NULL, 0, w->kb + (size_t)c * D);
        pa_load_slot(x, x->vc, at, x->ks != NULL, x->vs ? w->vscale : NULL, 1, w->vb + (size_t)c * D);
    }
    /* quant fp8 as the reference's kernel scores: code dot products, then the scales; where a
     * code or scale is not finite, dequantised operands (the contract's per-element products
     * decide the special values there) */
    int codes = x->ks && w->q_finite && pa_all_finite(w->kb, (size_t)nmax * D) && pa_all_finite(w->ksc, (size_t)nmax);
    for (long c = 0; x->ks && !codes && c < nmax; c++)
        for (size_t d = 0; d < D; d++) w->kb[(size_t)c * D + d] *= w->ksc[c]; /* rounds: fp32 */
    ug_av_stage_kt(w->kb, D, (size_t)nmax, D, w->kt, lds);
    ug_av_scores(codes ? w->qc : w->q, D, (size_t)w->n, w->kt, lds, ug_av_cols((size_t)nmax), D, w->dots,
                 lds); /* rounds: fp32 acc */
    return codes;
}

/* The keys of tile i that the chunk's longest row scores. */
static long pa_tile_nmax(const pa_ctx *x, const pa_work *w, long i)
{
    long nmax = 0;
    for (long r = 0; r < w->n; r++) nmax = pa_tile_len(x, w->len[r], i) > nmax ? pa_tile_len(x, w->len[r], i) : nmax;
    return nmax;
}

/* The chunk's rows (kv head g, block table row table) over their sequence's key tiles, in
 * order: per tile its keys scored for every row (pa_tile_dots), then each row's
 * online-softmax step; at the end o = acc * (1/l). legal_two_pass scores the tiles once
 * before, for each row's max over all its keys, and starts the running max there (every
 * alpha is then exp(0) = 1: nothing is rescaled). */
static void pa_chunk(const pa_ctx *x, pa_work *w, const float *table, long g, float *of)
{
    size_t D = (size_t)x->dim;
    long maxlen = 0;
    for (long r = 0; r < w->n; r++) {
        w->m[r] = -INFINITY, w->l[r] = 0.0f, maxlen = w->len[r] > maxlen ? w->len[r] : maxlen;
        for (size_t d = 0; d < D; d++) w->acc[(size_t)r * D + d] = 0.0f;
    }
    size_t lds = ug_av_cols((size_t)x->tile);
    long ntiles = (maxlen + x->tile - 1) / x->tile;
    for (long i = 0; x->bug == UG_VAR_LEGAL_TWO_PASS && i < ntiles; i++) { /* legal: pass 1, the rows' max */
        int codes = pa_tile_dots(x, w, table, g, i, pa_tile_nmax(x, w, i));
        for (long r = 0; r < w->n; r++) {
            long n = pa_tile_len(x, w->len[r], i);
            float tm =
                n ? pa_scores(x, w->dots + (size_t)r * lds, n, w->qsc[r], codes ? w->ksc : NULL, w->s) : -INFINITY;
            w->m[r] = isnan(w->m[r]) || isnan(tm) ? NAN : fmaxf(w->m[r], tm); /* NaN propagates */
        }
    }
    for (long r = 0; r < w->n; r++)
        if (!isfinite(w->m[r])) w->m[r] = -INFINITY; /* NaN, +inf or no weighted key: the one-pass walk */
    for (long i = 0; i < ntiles; i++) {
        int codes = pa_tile_dots(x, w, table, g, i, pa_tile_nmax(x, w, i));
        for (long r = 0; r < w->n; r++) {
            long n = pa_tile_len(x, w->len[r], i);
            if (n)
                pa_step(x, w, w->dots + (size_t)r * lds, n, w->vb, D, w->qsc[r], codes ? w->ksc : NULL, &w->m[r],
                        &w->l[r], w->acc + (size_t)r * D);
        }
    }
    for (long r = 0; r < w->n; r++) {
        float inv = w->l[r] == 0.0f ? 0.0f : 1.0f / w->l[r]; /* rounds: fp32 reciprocal */
        if (x->bug == UG_VAR_MUT_FP8_QSCALE_ON_O)
            inv *= w->qscale_o[r]; /* bug: q's scale applied to o, not the scores */
        for (size_t d = 0; d < D; d++) of[w->out[r] + d] = w->acc[(size_t)r * D + d] * inv; /* rounds: fp32 */
    }
}

/* Sequence b, kv head g: its query rows (MTP row i of query head h, for the heads mapped to
 * g) in chunks of PA_ROWS. */
static void pa_group(const pa_ctx *x, pa_work *w, const float *qf, const float *qsf, const float *table, long ctx,
                     long sq, size_t b, long g, float *of)
{
    size_t D = (size_t)x->dim;
    long group = x->hq / x->hkv;
    w->n = 0;
    w->q_finite = 1;
    if (x->vs) { /* value_scale [B, Hkv, D]: this sequence's and kv head's channels */
        size_t vb = x->bug == UG_VAR_MUT_FP8_VSCALE_SEQ0 ? 0 : b; /* bug: sequence 0's scales for every sequence */
        ug_sim_load(x->vs, (vb * (size_t)x->hkv + (size_t)g) * D, D, w->vscale);
    }
    for (long i = 0; i < sq; i++) {
        for (long h = 0; h < x->hq; h++) {
            long gh =
                x->bug == UG_VAR_MUT_KV_HEAD_MAP ? h % x->hkv : h / group; /* bug: heads interleaved over kv heads */
            if (gh != g) continue;
            long len = ug_gl_mtp_end(ctx, sq, i);              /* MTP row i: the tokens up to itself */
            if (x->bug == UG_VAR_MUT_MTP_NO_OFFSET) len = ctx; /* bug: no causal offset, the whole context */
            size_t row = ((b * (size_t)sq + (size_t)i) * (size_t)x->hq + (size_t)h) * D;
            w->len[w->n] = len, w->out[w->n] = row;
            memcpy(w->q + (size_t)w->n * D, qf + row, D * sizeof *qf);
            float qs = qsf ? qsf[row / D] : 1.0f;
            if (x->bug == UG_VAR_MUT_FP8_QSCALE_ON_O) w->qscale_o[w->n] = qs, qs = 1.0f;
            if (qsf) { /* quant fp8: the row's codes kept, and dequantised */
                memcpy(w->qc + (size_t)w->n * D, qf + row, D * sizeof *qf);
                w->qsc[w->n] = qs;
                w->q_finite &= isfinite(qs) && pa_all_finite(qf + row, D);
                for (size_t d = 0; d < D; d++) w->q[(size_t)w->n * D + d] *= qs; /* rounds: fp32 */
            }
            if (++w->n == PA_ROWS) pa_chunk(x, w, table, g, of), w->n = 0, w->q_finite = 1;
        }
        if (x->bug == UG_VAR_LEGAL_REVERSED && w->n) /* a chunk's rows share their keys' count: reversed alike */
            pa_chunk(x, w, table, g, of), w->n = 0, w->q_finite = 1;
    }
    if (w->n) pa_chunk(x, w, table, g, of);
}

static int pa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *q, *kc, *vc, *bt, *cl, *o, *qs, *ks, *vs;
    const ulpgym_tensor **slots[] = {&q, &kc, &vc, &bt, &cl, &o, &qs, &ks, &vs};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables context_lens o q_scale? key_scale? value_scale?", slots,
                    err, errlen))
        return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    pa_ctx x = {.hq = q->shape[1],
                .dim = q->shape[2],
                .bs = kc->shape[1],
                .hkv = kc->shape[2],
                .table_stride = bt->shape[1],
                .dt = q->dtype,
                .ks = ks,
                .vs = vs,
                .bug = bug,
                .fn = bug == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0};
    if (!qs != !ks || !qs != !vs) return snprintf(err, errlen, "q_scale, key_scale and value_scale come together"), -2;
    const ug_page_attention_params *params = UG_P(page_attention, &p);
    double scale = params->scale; /* exact: an fp32 value; 0 is the 1/sqrt(D) sentinel */
    x.scale = scale == 0.0 ? (float)(1.0 / sqrt((double)x.dim)) : (float)scale; /* rounds: fp32 */
    long sq = params->q_per_step, p_tile = params->p_tile;
    x.tile = ks && p_tile > 0 ? p_tile : x.bs; /* the op's check: a multiple of bs */
    ug_params_free(&p);
    size_t B = (size_t)cl->shape[0], D = (size_t)x.dim, nq = (size_t)q->shape[0] * (size_t)x.hq * D;
    size_t ntab = B * (size_t)x.table_stride;
    size_t lds = ug_av_cols((size_t)x.tile);
    size_t nqs = qs ? (size_t)q->shape[0] * (size_t)x.hq : 0;
    float *buf = malloc((2 * nq + ntab + B + 3 * PA_ROWS * D + 2 * lds * D + (D + PA_ROWS) * lds + 3 * lds + D + nqs) *
                        sizeof *buf);
    int *live = malloc((size_t)x.tile * sizeof *live);
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
    w.vscale = w.pr + lds;
    w.qc = w.vscale + D;
    w.ksc = w.qc + PA_ROWS * D;
    float *qsf = qs ? w.ksc + lds : NULL;
    if (qs) ug_sim_load(qs, 0, nqs, qsf);
    ug_sim_load(q, 0, nq, qf);
    ug_sim_load(bt, 0, ntab, tab);
    ug_sim_load(cl, 0, B, ctx);
    x.kc = kc, x.vc = vc;
    long stride = x.table_stride, maxctx = 0;
    for (size_t b = 0; b < B; b++) maxctx = (long)ctx[b] > maxctx ? (long)ctx[b] : maxctx;
    if (bug == UG_VAR_MUT_TABLE_STRIDE) stride = maxctx / x.bs; /* bug: floor(max_ctx / block_size), not the ceiling */
    for (size_t b = 0; b < B; b++)
        for (long g = 0; g < x.hkv; g++)
            pa_group(&x, &w, qf, qsf, tab + b * (size_t)stride, (long)ctx[b], sq, b, g, of);
    ug_sim_store(o, 0, nq, of);
    free(buf);
    free(live);
    return 0;
}

const ug_kernel_fn ug_sim_page_attention = pa_kernel;
