/* page_attention.c — param checks, input builder and exact oracle of
 * page_attention, paged decode attention with grouped-query heads (S_q = q_per_step query
 * tokens per sequence, 1 = plain decode):
 *
 *     o[b*S_q+i,h,:] = sum_t exp(s_t - m) V_b[t,g,:] / sum_t exp(s_t - m),  s_t = scale * q[b*S_q+i,h,:].K_b[t,g,:]
 *
 * over the tokens t < E = context_lens[b] - S_q + 1 + i, g = h / (Hq/Hkv): MTP query row i
 * sits at position E - 1 and sees the tokens up to and including itself (the last row the
 * whole context, each earlier row one fewer; ug_gl_attn_mtp_end, as gqa_decode_attn and
 * incre_flash_attention_mla). Token t of sequence b is slot
 * t % block_size of cache block block_tables[b, t / block_size]. scale is an fp32
 * attribute (default 1/sqrt(D)); the spec rounds nothing mid-way. Special values follow
 * the op's semantics text (the attention-forward rule of flash_attention_common.h).
 *
 * The builder makes the paging matter: the pool has the blocks the sequences need plus
 * half as many spare ones, handed out in a seeded shuffled order (so a sequence's blocks
 * are neither contiguous nor ascending); table entries past a sequence's last block are
 * 0. Every cache slot, including those past a context and the spare blocks, holds a value
 * drawn from the case's distribution, i.e. non-zero garbage that a kernel reading beyond
 * the context picks up.
 *
 * With params.quant fp8 (the reference suite's page_attention_quant_fp8) q and the caches
 * are e4m3 codes with fp32 scales (q_scale per row and head, key_scale per cache slot and
 * kv head, value_scale per sequence, kv head and channel): the oracle dequantises them
 * exactly in double (code * scale needs 28 of double's 53 bits) and evaluates the same
 * exact row; the device bound adds the fp8 device model (ug_attn_weights_fp8: fp32
 * dequantisation, P quantised to e4m3 per key tile). The builder is the same: every
 * code and scale is a drawn input.
 *
 * Primary standard certified (docs/STANDARDS.md): the pypto rule below, fitted to one plan
 * seed, fails the correct kernel at seed 3 (02eb605545018ac2: 7 elements of o over 1e-3 +
 * 2^-7|g|, the bf16 cast of P where o is small), while certified's per-element device
 * bound passes it at plan seeds 1-4.
 * The pypto rule, kept and stored: budget 0.005, atol the silent default 1e-3 but rtol 2^-7 (the
 * attention-output rtol of docs/STANDARDS.md) instead of 1e-3. Why: rtol 1e-3 is below half
 * a bf16 ulp (2^-9 relative), so a bf16 output one ulp from the correctly rounded value
 * already fails, and the device's cast of P to bf16 before P.V costs a few bf16 ulps
 * where o is small. Measured on the nightly plan with the correct sim kernel: 1e-3 / 1e-3
 * fails 29 of 43 bf16 cases (every fp16 case passes); 1e-3 / 2^-7 fails none. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/attention/flash_attention_common.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

#define OP "page_attention"
#define PA_MAX_BATCH 256

/* The params the oracle and the builder use, read from the case's parsed params. */
typedef struct {
    long batch, hkv, group, hq, dim, bs, max_blocks, num_blocks, sq;
    long p_tile;  /* quant fp8: tokens per P quantisation tile (the param, 0 resolved to bs) */
    double scale; /* fp32 value; the sentinel 0 resolved to fp32(1/sqrt(D)) */
    const long *ctx;
} pa_params;

static void read_params(const ug_case *c, pa_params *p)
{
    const ug_params *P = &c->params;
    const ug_page_attention_params *params = UG_P(page_attention, P);
    p->batch = (long)ug_plist_get(params->context_lens, &p->ctx);
    p->hkv = params->heads_kv;
    p->group = params->group;
    p->hq = params->heads_q;
    p->dim = params->head_dim;
    p->bs = params->block_size;
    p->max_blocks = params->max_blocks;
    p->num_blocks = params->num_blocks;
    p->sq = params->q_per_step;
    p->p_tile = params->p_tile ? params->p_tile : p->bs;
    p->scale = params->scale;
    if (p->scale == 0.0) p->scale = (float)(1.0 / sqrt((double)p->dim)); /* rounds: fp32 attribute */
}

static int check(const ug_params *P, char *err, size_t errlen)
{
    const ug_page_attention_params *params = UG_P(page_attention, P);
    if (params->batch > PA_MAX_BATCH) {
        snprintf(err, errlen, "%s: param \"context_lens\" has %ld entries, at most %d allowed", OP, params->batch,
                 PA_MAX_BATCH);
        return -2;
    }
    if (params->num_blocks > (1L << 24)) { /* block ids are int32; the sim kernel loads them as fp32 */
        snprintf(err, errlen, "%s: the cache needs %ld blocks, at most 2^24 allowed (block ids exact in fp32)", OP,
                 params->num_blocks);
        return -2;
    }
    const long *ctx; /* every MTP query row sees at least one token: E = L_b - S_q + 1 + i >= 1 */
    size_t n = ug_plist_get(params->context_lens, &ctx);
    long sq = params->q_per_step;
    for (size_t b = 0; b < n; b++)
        if (ctx[b] < sq) {
            snprintf(err, errlen, "%s: param context_lens[%zu] = %ld below q_per_step = %ld (each row needs a token)",
                     OP, b, ctx[b], sq);
            return -2;
        }
    long pt = params->p_tile, bs = params->block_size;
    if (pt && (params->quant != UG_PAGE_ATTENTION_QUANT_FP8 || pt % bs)) {
        snprintf(err, errlen, "%s: param p_tile = %ld must be 0 or, with quant fp8, a multiple of block_size = %ld", OP,
                 pt, bs);
        return -2;
    }
    return 0;
}

/* Block ids 0..num_blocks-1 in a seeded shuffled order (Fisher-Yates on Philox words). */
static void shuffled_blocks(uint64_t seed, long n, long *perm)
{
    for (long i = 0; i < n; i++) perm[i] = i;
    for (long i = n - 1; i > 0; i--) {
        uint32_t w[4];
        ug_rng_words(seed, 0x626c6b73u, (uint64_t)i, 0, w);
        long j = (long)(w[0] % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Fills block_tables (each sequence's blocks, shuffled over the pool, 0 past its last) and
 * context_lens. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    pa_params p;
    read_params(c, &p);
    ug_tensor *bt = ug_case_input_mut(c, "block_tables"), *cl = ug_case_input_mut(c, "context_lens");
    long *perm = malloc((size_t)p.num_blocks * sizeof *perm), next = 0;
    if (!perm) return -1;
    shuffled_blocks(c->spec.seed, p.num_blocks, perm);
    for (long b = 0; b < p.batch; b++) {
        ug_dtype_store(UG_DT_INT32, cl->data, (size_t)b, (double)p.ctx[b]);
        long n = (p.ctx[b] + p.bs - 1) / p.bs;
        for (long i = 0; i < p.max_blocks; i++) /* exact: small integers */
            ug_dtype_store(UG_DT_INT32, bt->data, (size_t)(b * p.max_blocks + i), i < n ? (double)perm[next++] : 0.0);
    }
    free(perm);
    return 0;
}

/* The operands' values: as stored (quant none), or dequantised (quant fp8: code * scale,
 * exact in double, a 4-bit by 24-bit significand product); the scales NULL with quant none. */
typedef struct {
    const ug_tensor *q, *kc, *vc, *qs, *ks, *vs, *bt;
} pa_inputs;

static void read_inputs(const ug_case *c, pa_inputs *in)
{
    int fp8 = (UG_P(page_attention, &c->params)->quant == UG_PAGE_ATTENTION_QUANT_FP8);
    in->q = ug_case_input(c, "q"), in->kc = ug_case_input(c, "key_cache"), in->vc = ug_case_input(c, "value_cache");
    in->bt = ug_case_input(c, "block_tables");
    in->qs = fp8 ? ug_case_input(c, "q_scale") : NULL;
    in->ks = fp8 ? ug_case_input(c, "key_scale") : NULL;
    in->vs = fp8 ? ug_case_input(c, "value_scale") : NULL;
}

/* Query row r (token-major, heads inner) into qd: its D values, dequantised with quant fp8. */
static void gather_query(const pa_params *p, const pa_inputs *in, size_t r, double *qd)
{
    size_t D = (size_t)p->dim;
    for (size_t d = 0; d < D; d++) qd[d] = in->q->values[r * D + d] * (in->qs ? in->qs->values[r] : 1.0); /* exact */
}

/* The first n tokens of sequence b, kv head g, token-major into kg and vg, dequantised
 * with quant fp8 (key_scale per slot and kv head, value_scale per sequence, kv head and
 * channel); with kt also the keys transposed (element d of token t at kt[d*ldt + t]).
 * Returns PA_KEYS_FINITE | PA_VALUES_FINITE where every key (value) element is. */
enum { PA_KEYS_FINITE = 1, PA_VALUES_FINITE = 2 };
static int gather_tokens(const pa_params *p, const pa_inputs *in, long b, long g, long n, double *kg, double *vg,
                         double *kt, size_t ldt)
{
    int kfin = 1, vfin = 1;
    size_t D = (size_t)p->dim;
    const double *vs = in->vs ? in->vs->values + ((size_t)b * (size_t)p->hkv + (size_t)g) * D : NULL;
    for (long t = 0; t < n; t++) {
        long phys = (long)in->bt->values[b * p->max_blocks + t / p->bs];
        size_t slot = ((size_t)phys * (size_t)p->bs + (size_t)(t % p->bs)) * (size_t)p->hkv + (size_t)g, at = slot * D;
        double ks = in->ks ? in->ks->values[slot] : 1.0;
        for (size_t d = 0; d < D; d++) { /* exact: code * fp32 scale, or the stored value times 1 */
            kg[(size_t)t * D + d] = in->kc->values[at + d] * ks;
            vg[(size_t)t * D + d] = in->vc->values[at + d] * (vs ? vs[d] : 1.0);
            kfin &= isfinite(kg[(size_t)t * D + d]);
            vfin &= isfinite(vg[(size_t)t * D + d]);
        }
    }
    for (long t0 = 0; kt && t0 < n; t0 += 8) /* transposed 8 tokens at a time: reads stay in 8 rows */
        for (size_t d = 0; d < D; d++)
            for (long t = t0; t < n && t < t0 + 8; t++) kt[d * ldt + (size_t)t] = kg[(size_t)t * D + d];
    return (kfin ? PA_KEYS_FINITE : 0) | (vfin ? PA_VALUES_FINITE : 0);
}

/* Row r's weights (ug_attn_weights over its n keys: w > 0 live keys, 0 none, -1 a NaN or
 * +inf score): with quant none, q and the keys finite (every score finite and every key
 * live: bf16/fp16 products cannot overflow a double), the scores in one pass over the keys
 * held transposed (ug_dot_d_tile is ug_dot_d per key, bit for bit) and the weights of those
 * dots; otherwise key by key. */
static long row_weights(ug_ar *ar, const ug_case *c, const pa_params *p, const double *qd, const double *kg,
                        const double *kt, size_t ldt, int finite, long n, ug_num *e, unsigned char *live, ug_num *m,
                        ug_num *total)
{
    size_t D = (size_t)p->dim;
    int fast = kt && (finite & PA_KEYS_FINITE) && n > 0 && isfinite(p->scale);
    for (size_t d = 0; d < D && fast; d++) fast = isfinite(qd[d]);
    if (!fast)
        return kt ? ug_attn_weights(ar, qd, kg, D, n, D, p->scale, c->spec.dtype, e, live, m, total)
                  : ug_attn_weights_fp8(ar, qd, kg, D, n, D, p->scale, e, live, m, total);
    ug_dot_d_tile(ar, qd, D, 1, kt, ldt, D, (size_t)n, e, (size_t)n);
    ug_attn_weights_of_dots(ar, e, n, p->scale, c->spec.dtype, m, total);
    memset(live, 1, (size_t)n);
    return n;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    pa_params p;
    read_params(c, &p);
    pa_inputs in;
    read_inputs(c, &in);
    size_t D = (size_t)p.dim, maxctx = 1;
    for (long b = 0; b < p.batch; b++) maxctx = (size_t)p.ctx[b] > maxctx ? (size_t)p.ctx[b] : maxctx;
    ug_num *e = malloc(maxctx * sizeof *e);
    unsigned char *live = malloc(maxctx);
    size_t ldt = ug_fa_kt_ld((long)maxctx); /* quant none: the keys also transposed (kt), for row_weights */
    double *kg = malloc((2 * maxctx * D + maxctx + D + (in.qs ? 0 : D * ldt)) *
                        sizeof *kg);           /* the row's keys and values gathered token-major */
    ug_num *o_row = malloc(D * sizeof *o_row); /* a whole row's outputs */
    if (!e || !live || !kg || !o_row) {
        free(e), free(live), free(kg), free(o_row);
        return -1;
    }
    double *vg = kg + maxctx * D, *col = vg + maxctx * D, *qd = col + maxctx, *kt = in.qs ? NULL : qd + D;
    size_t pos = 0, base = ug_ar_mark(ar);
    long have_b = -1, have_g = -1; /* the (sequence, kv head) gathered: rows arrive sorted, a group's heads in turn */
    int finite = 0;                /* of the gathered tokens: PA_KEYS_FINITE, PA_VALUES_FINITE */
    while (pos < sel->n[0]) {
        size_t r = sel->idx[0][pos] / D, mark = ug_ar_mark(ar), rb, re;
        long tok = (long)r / p.hq, b = tok / p.sq, g = (long)r % p.hq / p.group;
        long n = ug_gl_attn_mtp_end(p.ctx[b], p.sq, tok % p.sq); /* MTP row i: its causal prefix */
        gather_query(&p, &in, r, qd);
        if (b != have_b || g != have_g)
            finite = gather_tokens(&p, &in, b, g, p.ctx[b], kg, vg, kt, ldt), have_b = b, have_g = g;
        ug_num m, total;
        long w = row_weights(ar, c, &p, qd, kg, kt, ldt, finite, n, e, live, &m, &total);
        int whole = w > 0 && ug_attn_row_dense(sel, 0, r, D, &rb, &re); /* most of the row: one pass over V */
        if (whole && w == n && (finite & PA_VALUES_FINITE))             /* every key live, every value finite */
            ug_attn_weighted_v_cols_plain(ar, e, vg, D, n, D, total, o_row);
        else if (whole)
            ug_attn_weighted_v_cols(ar, e, live, vg, D, n, D, total, col, o_row);
        for (; pos < sel->n[0] && sel->idx[0][pos] / D == r; pos++) {
            size_t d = sel->idx[0][pos] % D;
            ug_ar_emit(ar, 0, pos,
                       whole   ? o_row[d]
                       : w > 0 ? ug_attn_weighted_v(ar, e, live, vg + d, D, n, total, col)
                               : ug_c(ar, w ? NAN : 0.0));
        }
        ug_ar_release(ar, mark);
    }
    ug_ar_release(ar, base);
    free(o_row);
    free(e);
    free(live);
    free(kg);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[2];
    g->rows = t->numel / g->cols;
    g->row_tile = (size_t)t->shape[1]; /* rows are (query token, q head): one token per tile */
    g->col_tile = 64;
}

/* The reference golden of quant fp8 (core/ops.h reference_golden): test_page_attention_quant
 * _fp8.py's pfa_flash_torch, our fp32 evaluation of what it computes for one query row over
 * its n tokens. Per key tile of p_tile tokens (the test's s2_tile: 128 = its block size,
 * but 1024 at its 8192-token lengths; the plan's cases say which): fp32 scores (the dequantised q.k, times the fp32
 * scale), the tile max mt, e = exp(s - mt), the tile sum sl of e; e quantised to e4m3 with the
 * scale 448/max e and P.V taken on the codes, times max/448; tiles combined online in fp32
 * (max, exp(m_old - m_new) rescales); o = acc / sum, rounded to bf16 by the caller. 0, or -1
 * when a value is not finite (no golden: the exact value judges). */
static int fp8_golden_row(const pa_params *p, const double *qd, const double *kg, const double *vg, long n, float *s,
                          float *acc, float *mm)
{
    size_t D = (size_t)p->dim;
    float mu = -INFINITY, su = 0.0f;
    for (long j0 = 0; j0 < n; j0 += p->p_tile) {
        long nt = n - j0 < p->p_tile ? n - j0 : p->p_tile;
        float mt = -INFINITY, sl = 0.0f, emax = 0.0f;
        for (long j = 0; j < nt; j++) {
            double dot = 0.0;
            for (size_t d = 0; d < D; d++) dot += qd[d] * kg[(size_t)(j0 + j) * D + d];
            s[j] = (float)dot * (float)p->scale; /* rounds: fp32 score, fp32 scale */
            if (!isfinite(s[j])) return -1;
            mt = fmaxf(mt, s[j]);
        }
        for (long j = 0; j < nt; j++) {
            sl += s[j] = expf(s[j] - mt); /* rounds: fp32 */
            emax = fmaxf(emax, s[j]);
        }
        float qs = 448.0f / emax, dq = 1.0f / qs; /* rounds: fp32 (emax is 1: exp(0)) */
        for (long j = 0; j < nt; j++) s[j] = (float)ug_dtype_round(UG_DT_E4M3, s[j] * qs); /* rounds: fp32, e4m3 */
        for (size_t d = 0; d < D; d++) {
            double pv = 0.0;
            for (long j = 0; j < nt; j++) pv += (double)s[j] * vg[(size_t)(j0 + j) * D + d];
            mm[d] = (float)pv * dq; /* rounds: fp32 P.V on the codes, times max/448 */
        }
        float mn = fmaxf(mu, mt), t2 = j0 ? expf(mu - mn) : 0.0f, t4 = j0 ? expf(mt - mn) : 1.0f; /* rounds: fp32 */
        su = t2 * su + t4 * sl;                                                                   /* rounds: fp32 */
        for (size_t d = 0; d < D; d++) acc[d] = j0 ? acc[d] * t2 + mm[d] * t4 : mm[d];            /* rounds: fp32 */
        mu = mn;
    }
    for (size_t d = 0; d < D; d++) acc[d] /= su; /* rounds: fp32 */
    for (size_t d = 0; d < D; d++)
        if (!isfinite(acc[d])) return -1;
    return n > 0 ? 0 : -1;
}

static int reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    pa_params p;
    read_params(c, &p);
    pa_inputs in;
    read_inputs(c, &in);
    size_t D = (size_t)p.dim, maxctx = 1, pos = 0;
    if (!out[0]) return 0;
    for (size_t i = 0; i < sel->n[0]; i++) out[0][i] = NAN; /* quant none: the test's golden is the exact value */
    if (!in.qs) return 0;
    for (long b = 0; b < p.batch; b++) maxctx = (size_t)p.ctx[b] > maxctx ? (size_t)p.ctx[b] : maxctx;
    double *kg = malloc((2 * maxctx * D + D) * sizeof *kg);
    float *s = malloc((maxctx + 2 * D) * sizeof *s); /* a tile's scores (at most maxctx), the row's acc and P.V */
    if (!kg || !s) {
        free(kg), free(s);
        snprintf(err, errlen, "out of memory for the reference golden");
        return -1;
    }
    double *vg = kg + maxctx * D, *qd = vg + maxctx * D;
    while (pos < sel->n[0]) {
        size_t r = sel->idx[0][pos] / D;
        long tok = (long)r / p.hq, b = tok / p.sq, g = (long)r % p.hq / p.group;
        long n = ug_gl_attn_mtp_end(p.ctx[b], p.sq, tok % p.sq);
        gather_query(&p, &in, r, qd);
        gather_tokens(&p, &in, b, g, n, kg, vg, NULL, 0);
        int ok = fp8_golden_row(&p, qd, kg, vg, n, s, s + maxctx, s + maxctx + D) == 0;
        for (; pos < sel->n[0] && sel->idx[0][pos] / D == r; pos++)
            out[0][pos] =
                ok ? ug_dtype_round(c->out[0].dtype, s[maxctx + sel->idx[0][pos] % D]) : NAN; /* rounds: bf16 */
    }
    free(kg);
    free(s);
    return 0;
}

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of q, o, both caches
 * and the block table; the builder's block permutation; the oracle's keys and values of the
 * longest row gathered in fp64, with its row arrays. */
static double scratch(const ug_params *P)
{
    const long *ctx;
    const ug_page_attention_params *params = UG_P(page_attention, P);
    size_t n = ug_plist_get(params->context_lens, &ctx);
    double maxctx = 1, D = (double)params->head_dim, nb = (double)params->num_blocks;
    for (size_t b = 0; b < n; b++) maxctx = (double)ctx[b] > maxctx ? (double)ctx[b] : maxctx;
    double nq = (double)n * (double)params->q_per_step * (double)params->heads_q * D,
           ncache = nb * (double)params->block_size * (double)params->heads_kv * D;
    return 4 * (2 * nq + 2 * ncache + (double)n * (double)params->max_blocks) + 8 * nb +
           8 * (2 * maxctx * D + maxctx + D) + maxctx * (UG_NUM_BYTES + 1) + 8 * (2 * maxctx * D + D) +
           4 * (maxctx + 2 * D); /* the reference golden's */
}

const ug_op_def ug_opdef_page_attention = {.decl.check = check,
                                           .build = build,
                                           .oracle = oracle,
                                           .geometry = geometry,
                                           .scratch = scratch,
                                           .reference_golden = reference_golden};
