/* lightning_indexer_quant.c — param checks, builder and exact oracle of
 * lightning_indexer_quant, the DeepSeek-V3.2 lightning indexer over an int8 paged key
 * cache (hicann/pypto-gym tests/ops/deepseek_v32_exp/test_lightning_indexer_quant.py):
 *
 *     score[r,s] = sum_h w[r,h] q_scale[r,h] k_scale[s] relu(q_i8[r,h,:].k_i8[s,:]),
 *     topk_idx[r] = the min(k, E_r) best s < E_r as a set, -1 after them,
 *
 * E_r = actual_seqs[b] - S + 1 + i for row r = b*S + i (MTP causal, ug_gl_attn_mtp_end),
 * position s read through the block table; the paged params, their checks and the
 * builder are glm_attention's (attn_rows.h).
 *
 * Exact scores. The integer dots are exact in fp32 (|products| <= 2^14, |partial sums| <=
 * head_dim 2^14 <= 2^24, all integers), computed with lanes across heads; then
 * A = sum_h (w q_scale)_h relu(D_h) in double (each product exact: 22 + 21 bits; the sum
 * within 2^-46 sum|T|) and score = k_scale A. That error is part of the bound below, 2^30
 * times smaller than the device's, so one decision serves every arithmetic: the oracle
 * decides in double before any ug_ arithmetic and emits integers.
 *
 * The bound (semantics): d_s = 1.01 (rel sum|T_h| + 2^-14 (1 + |ks|) sum_{D_h>0} (1 +
 * |w_h|) + 2^-25 |ks| sum relu(D_h)) + 2^-45 sum|T_h|, rel = 4.01 2^-11 + (H + 6) 2^-24. Why
 * four fp16 roundings: the reference kernel (lightning_indexer_quant_impl) casts
 * dot*2^-11 to fp16 and multiplies it by q_scale, k_scale (then relu) and w in fp16 before
 * the fp32 head sum; the reference golden casts dot*2^-11 and w*q_scale to fp16. Both are the
 * reference's own numerics, so a kernel doing either must pass; a bound of fp32 roundings
 * alone (gamma_H sum|T|) would fail them on near-ties. Each fp16 rounding costs 2^-11 of
 * the term relatively, plus 2^-25 absolute where the intermediate is subnormal in fp16,
 * scaled back by the remaining factors and the 2^11 prescale (2^-14 |ks w|, 2^-14 |w|,
 * 2^-14 for the kernel's chain, 2^-25 relu(D) |ks| for the golden's w*q_scale). Each score
 * carries its own bound, and a kernel's set is legal exactly when some device scores, each
 * within its d_s, rank it a top-n: min over its ids of (s + d_s) >= max over the other
 * positions of (s - d_s) (row_legal).
 *
 * Set rule and staging (docs/STANDARDS.md, glm_select_experts): the oracle reads the
 * kernel's topk_idx row. Positions 0..n-1 (n = min(k, E)) must hold distinct ids in
 * [0, E) forming a legal top-n, positions n..k-1 exactly -1. Where the row is legal the
 * kernel's id is emitted at each position (the topk_set compare passes); where not, the
 * exact top-n (a kernel id in it keeps its position, the others take the remaining exact
 * ids best first) and -1 after it. Ids in any order: the reference sorts (torch.topk
 * sorted=True) but judges with topk_idx_compare, a per-row set compare (one miss free),
 * and the indexer's consumer (sparse attention) reads the ids as a set of keys; the order
 * of near-tied scores is not a property a device can promise anyway.
 *
 * check_all: a wrong row may differ at two positions out of 2048 (an extra position at
 * the padding edge, one swapped id) which the 64-column sample misses, so every case is
 * judged on every element; the oracle's cost is per row (all causal scores), not per
 * element, so that only doubles the rows' work. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "op_params.h"

#define OP "lightning_indexer_quant"

typedef ug_lightning_indexer_quant_params li_params; /* the typed params (op_params.h) */

/* The paged checks (pool, table, lengths >= q_per_step); the ranges do the rest (topk >= 1,
 * head_dim <= 1024 keeps the fp32 dot exact). */
static int check(const ug_params *P, char *err, size_t errlen) { return ug_gl_attn_check_paged(P, OP, err, errlen); }

/* One row's work arrays, sized for the longest context of the case. */
typedef struct {
    float *qt;           /* [Dh][Hp] query codes transposed, heads padded to a multiple of 8 */
    float *acc;          /* [Hp] dots of one position */
    double *c, *w1;      /* [H] w*q_scale (exact), 1 + |w| */
    double *score;       /* [maxE] exact score (a ranking key in a non-finite row) */
    double *dev;         /* [maxE] d_s: how far a device's score may be from it (0 in a non-finite row) */
    long *order;         /* [maxE] positions best first */
    unsigned char *mark; /* [maxE] */
    int *kid, *oid;      /* [k] kernel ids, exact ids */
    long Hp;
} li_work;

static void work_free(li_work *w)
{
    free(w->qt), free(w->acc), free(w->c), free(w->score), free(w->dev), free(w->order), free(w->mark), free(w->kid);
}

static int work_alloc(const li_params *p, long maxE, li_work *w)
{
    memset(w, 0, sizeof *w);
    w->Hp = (p->heads + 7) / 8 * 8;
    w->qt = malloc((size_t)(p->head_dim * w->Hp) * sizeof *w->qt);
    w->acc = malloc((size_t)w->Hp * sizeof *w->acc);
    w->c = malloc((size_t)(2 * p->heads) * sizeof *w->c);
    w->score = malloc((size_t)maxE * sizeof *w->score);
    w->dev = malloc((size_t)maxE * sizeof *w->dev);
    w->order = malloc((size_t)maxE * sizeof *w->order);
    w->mark = malloc((size_t)maxE);
    w->kid = malloc((size_t)(2 * p->topk) * sizeof *w->kid); /* kid, then oid */
    if (!w->qt || !w->acc || !w->c || !w->score || !w->dev || !w->order || !w->mark || !w->kid) {
        work_free(w);
        return -1;
    }
    w->w1 = w->c + p->heads, w->oid = w->kid + p->topk;
    return 0;
}

/* acc[h] = sum_d qt[d][h] k[d] for the Hp heads: exact (file header). Lanes across heads,
 * 32 heads (four vectors) at a time, so each sum runs in d order. */
/* 8-float vectors are loaded by memcpy into locals, never passed or returned by value:
 * clang refuses (and GCC warns about) such values crossing a function without AVX. */
typedef float li_v8 __attribute__((vector_size(32)));
#define LI_LD8(v, p) memcpy(&(v), (p), sizeof(v))

/* The dots dominate a long row (1e9 MACs at 128K x 64 heads x 128, in each of the oracle's
 * arithmetics): on x86-64 also compiled for AVX2 and picked at run time, as the attention
 * kernels' attn_vec.c does (integers: every instruction set gives the same exact sums). No
 * clones under the sanitizers, whose set-up an ifunc resolver would precede. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define LI_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef LI_CLONES
#define LI_CLONES
#endif
LI_CLONES static void head_dots(const float *qt, long Hp, const int8_t *k, long Dh, float *acc)
{
    long h = 0;
    for (; h + 32 <= Hp; h += 32) {
        li_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (long d = 0; d < Dh; d++) {
            const float *q = qt + d * Hp + h;
            float kd = (float)k[d];
            li_v8 v0, v1, v2, v3;
            LI_LD8(v0, q), LI_LD8(v1, q + 8), LI_LD8(v2, q + 16), LI_LD8(v3, q + 24);
            a0 += v0 * kd, a1 += v1 * kd, a2 += v2 * kd, a3 += v3 * kd; /* exact */
        }
        memcpy(acc + h, &a0, sizeof a0), memcpy(acc + h + 8, &a1, sizeof a1);
        memcpy(acc + h + 16, &a2, sizeof a2), memcpy(acc + h + 24, &a3, sizeof a3);
    }
    for (; h < Hp; h += 8) {
        li_v8 a = {0};
        for (long d = 0; d < Dh; d++) {
            li_v8 v;
            LI_LD8(v, qt + d * Hp + h);
            a += v * (float)k[d]; /* exact: integers below 2^24 */
        }
        memcpy(acc + h, &a, sizeof a);
    }
}

/* Exact scores of row r (sequence b) over its E causal positions into w->score and each
 * score's device bound d_s into w->dev. A score that is not finite holds a ranking key
 * instead (NaN -> +inf, +inf -> DBL_MAX, -inf -> -DBL_MAX) with d_s 0, so it ranks
 * exactly (equal keys tie); the row's finite scores keep their bounds. */
static void row_scores(const li_params *p, const ug_case *c, long r, long b, long E, li_work *w)
{
    const ug_tensor *q = ug_case_input(c, "query"), *qs = ug_case_input(c, "q_scale");
    const ug_tensor *wt = ug_case_input(c, "weights"), *kc = ug_case_input(c, "key_cache");
    const ug_tensor *ks = ug_case_input(c, "k_scale"), *bt = ug_case_input(c, "block_tables");
    const int8_t *codes = kc->data; /* int8 storage: the exact codes */
    memset(w->qt, 0, (size_t)(p->head_dim * w->Hp) * sizeof *w->qt);
    for (long h = 0; h < p->heads; h++) {
        for (long d = 0; d < p->head_dim; d++)
            w->qt[d * w->Hp + h] = (float)q->values[(r * p->heads + h) * p->head_dim + d];
        double wv = wt->values[r * p->heads + h];
        w->c[h] = wv * qs->values[r * p->heads + h]; /* exact: two 11-bit significands */
        w->w1[h] = 1 + fabs(wv);
    }
    double rel = 4.01 * 0x1p-11 + (double)(p->heads + 6) * 0x1p-24;
    int finite = 1;
    for (long s = 0; s < E; s++) {
        long slot = (long)bt->values[b * p->max_blocks_per_seq + s / p->block_size] * p->block_size + s % p->block_size;
        head_dots(w->qt, w->Hp, codes + slot * p->head_dim, p->head_dim, w->acc);
        double A = 0, sabs = 0, sw = 0, sd = 0, kv = ks->values[slot];
        for (long h = 0; h < p->heads; h++) {
            double D = w->acc[h] > 0 ? w->acc[h] : 0; /* relu on the exact integer dot */
            A += w->c[h] * D;
            sabs += fabs(w->c[h]) * D;
            sw += D > 0 ? w->w1[h] : 0;
            sd += D;
        }
        w->score[s] = kv * A;
        finite &= isfinite(w->score[s]);
        double as = fabs(kv) * sabs;
        w->dev[s] = 1.01 * (rel * as + 0x1p-14 * (1 + fabs(kv)) * sw + 0x1p-25 * fabs(kv) * sd) + 0x1p-45 * as;
    }
    if (finite) return;
    for (long s = 0; s < E; s++) {
        double v = w->score[s];
        if (isfinite(v)) continue; /* a finite score keeps its bound: fp16 head terms still round */
        w->score[s] = isnan(v) ? INFINITY : copysign(1.7976931348623157e308, v);
        w->dev[s] = 0;
    }
}

/* qsort context: the row's scores (one oracle call at a time per thread). */
static _Thread_local const double *li_sort_scores;

/* a ranks before b: larger score, ties to the lower position. */
static int before(const double *s, long a, long b) { return s[a] > s[b] || (s[a] == s[b] && a < b); }

static int by_score(const void *x, const void *y)
{
    long a = *(const long *)x, b = *(const long *)y;
    return before(li_sort_scores, a, b) ? -1 : before(li_sort_scores, b, a);
}

/* Partially orders o[0..n) so that its first m entries are the m best (quickselect with a
 * median-of-three pivot; the order is total, so the result is unique as a set). */
static void select_best(const double *s, long *o, long n, long m)
{
    long lo = 0, hi = n - 1;
    while (lo < hi && m > lo && m <= hi) {
        long mid = lo + (hi - lo) / 2, t;
        if (before(s, o[hi], o[lo])) t = o[hi], o[hi] = o[lo], o[lo] = t;
        if (before(s, o[mid], o[lo])) t = o[mid], o[mid] = o[lo], o[lo] = t;
        if (before(s, o[hi], o[mid])) t = o[hi], o[hi] = o[mid], o[mid] = t;
        long pv = o[mid], i = lo, j = hi;
        while (i <= j) { /* Hoare partition around pv */
            while (before(s, o[i], pv)) i++;
            while (before(s, pv, o[j])) j--;
            if (i <= j) t = o[i], o[i] = o[j], o[j] = t, i++, j--;
        }
        if (m <= j + 1)
            hi = j;
        else if (m >= i)
            lo = i;
        else
            return; /* o[j+1..i) equal the pivot: the boundary falls inside them */
    }
}

/* The n exact best positions of the row into w->oid, best first (w->oid[n-1] holds the
 * n-th score). */
static void exact_top(long E, long n, li_work *w)
{
    for (long s = 0; s < E; s++) w->order[s] = s;
    select_best(w->score, w->order, E, n);
    li_sort_scores = w->score;
    qsort(w->order, (size_t)n, sizeof *w->order, by_score);
    for (long j = 0; j < n; j++) w->oid[j] = (int)w->order[j];
}

/* 1 when the kernel's row w->kid is legal: padding exact, ids distinct in [0, E), and the
 * set a top-n of some device scores, each within its d_s of the exact score (file
 * header): min over the kernel's ids of (s + d_s) >= max over the row's other positions of
 * (s - d_s). Marks: 1 exact, 2 kernel. */
static int row_legal(const li_params *p, long E, long n, li_work *w)
{
    for (long j = n; j < p->topk; j++)
        if (w->kid[j] != -1) return 0;
    memset(w->mark, 0, (size_t)E);
    for (long j = 0; j < n; j++) {
        int id = w->kid[j];
        if (id < 0 || id >= E || w->mark[id]) return 0; /* out of range or a duplicate */
        w->mark[id] = 2;
    }
    double in_low = INFINITY, out_high = -INFINITY;
    for (long s = 0; s < E; s++) {
        if (w->mark[s])
            in_low = fmin(in_low, w->score[s] + w->dev[s]);
        else
            out_high = fmax(out_high, w->score[s] - w->dev[s]);
    }
    return in_low >= out_high;
}

/* The ids the oracle emits for a row (file header): the kernel's where legal, else the
 * exact top-n with the kernel's members kept in place. Into w->kid. */
static void row_emit(const li_params *p, long E, long n, li_work *w)
{
    if (row_legal(p, E, n, w)) return;
    memset(w->mark, 0, (size_t)E);
    for (long j = 0; j < n; j++) w->mark[w->oid[j]] = 1; /* 1: exact, not yet placed */
    int *out = malloc((size_t)p->topk * sizeof *out);
    if (!out) { /* unreachable in practice; the exact order is still a correct emission */
        for (long j = 0; j < p->topk; j++) w->kid[j] = j < n ? w->oid[j] : -1;
        return;
    }
    for (long j = 0; j < p->topk; j++) {
        int id = w->kid[j];
        out[j] = -1;
        if (j < n && id >= 0 && id < E && w->mark[id] == 1) out[j] = id, w->mark[id] = 2;
    }
    for (long j = 0, i = 0; j < n; j++) {
        if (out[j] >= 0) continue;
        while (w->mark[w->oid[i]] == 2) i++;
        out[j] = w->oid[i], w->mark[w->oid[i]] = 2;
    }
    memcpy(w->kid, out, (size_t)p->topk * sizeof *out);
    free(out);
}

/* The case's typed params, and work arrays sized for its longest context: 0, or -1 out of memory. */
static int open_rows(const ug_case *c, const li_params **pp, li_work *w)
{
    const li_params *p = *pp = UG_P(lightning_indexer_quant, &c->params);
    long maxE = 1;
    for (long b = 0; b < p->batch; b++) maxE = p->actual_seqs.v[b] > maxE ? p->actual_seqs.v[b] : maxE;
    return work_alloc(p, maxE, w);
}

/* Query row r: its context *E, *n = min(topk, E), its exact scores and exact top-n (w->oid). */
static void exact_row(const ug_case *c, const li_params *p, long r, long *E, long *n, li_work *w)
{
    long b = r / p->q_per_step;
    *E = ug_gl_attn_mtp_end(p->actual_seqs.v[b], p->q_per_step, r % p->q_per_step);
    *n = *E < p->topk ? *E : p->topk;
    row_scores(p, c, r, b, *E, w);
    exact_top(*E, *n, w);
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const li_params *p;
    li_work w;
    if (open_rows(c, &p, &w)) return -1;
    const ug_tensor *ko = ug_case_output(c, "topk_idx");
    size_t pos = 0, K = (size_t)p->topk;
    while (pos < sel->n[0]) {
        long r = (long)(sel->idx[0][pos] / K), E, n;
        exact_row(c, p, r, &E, &n, &w);
        for (long j = 0; j < p->topk; j++) w.kid[j] = (int)ug_tload(ko, (size_t)(r * p->topk + j));
        row_emit(p, E, n, &w);
        size_t mark = ug_ar_mark(ar);
        for (; pos < sel->n[0] && sel->idx[0][pos] / K == (size_t)r; pos++)
            ug_ar_emit(ar, 0, pos, ug_c(ar, (double)w.kid[sel->idx[0][pos] % K]));
        ug_ar_release(ar, mark);
    }
    work_free(&w);
    return 0;
}

/* The reference test's golden ids (reference_golden, core/ops.h): torch.topk of its scores,
 * sorted largest first; here the exact top-n, best first (ties to the lower position, an
 * order torch does not promise), -1 past n, for each selected element. */
static int reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    const li_params *p;
    li_work w;
    if (open_rows(c, &p, &w)) return snprintf(err, errlen, "out of memory for the reference golden"), -1;
    size_t pos = 0, K = (size_t)p->topk;
    while (pos < sel->n[0]) {
        long r = (long)(sel->idx[0][pos] / K), E, n;
        exact_row(c, p, r, &E, &n, &w);
        for (; pos < sel->n[0] && sel->idx[0][pos] / K == (size_t)r; pos++) {
            long j = (long)(sel->idx[0][pos] % K);
            out[0][pos] = j < n ? (double)w.oid[j] : -1.0;
        }
    }
    work_free(&w);
    return 0;
}

/* rows x topk, 128-column tiles (the kernel's write granularity). */
static void geometry(const ug_case *c, int out, ug_geom *g) { ug_geom_last_dim(&c->out[out], 1, 128, g); }

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of the step's query
 * rows, one block of keys (staged twice), its scores and the step's score rows with its
 * top-k heap; the builder's permutation; the oracle's row arrays (score, order, mark). */
static double scratch(const ug_params *P)
{
    const li_params *p = UG_P(lightning_indexer_quant, P);
    double maxE = 1, nb = (double)p->num_blocks;
    for (long b = 0; b < p->batch; b++) maxE = (double)p->actual_seqs.v[b] > maxE ? (double)p->actual_seqs.v[b] : maxE;
    double HD = (double)(p->heads + 8) * (double)p->head_dim, S = (double)p->q_per_step,
           bs = (double)p->block_size + 16;
    double kernel =
        4 * (S * HD + 3 * bs * (double)p->head_dim + S * (double)p->heads * bs + S * maxE + 4 * S * (double)p->heads) +
        12 * (double)p->topk;
    return kernel + 8 * nb + 17 * maxE + 8 * HD + 8 * (double)p->topk;
}

const ug_op_def ug_opdef_lightning_indexer_quant = {.decl.check = check,
                                                    .build = ug_gl_attn_build_paged,
                                                    .oracle = oracle,
                                                    .reference_golden = reference_golden,
                                                    .geometry = geometry,
                                                    .scratch = scratch};
