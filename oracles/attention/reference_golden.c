/* reference_golden.c — the reference tests' own goldens of flash_attention_mha and
 * flash_attention_mha_grad (reference_golden.h says what each test computes and why).
 *
 * Both work a (batch element, head) block at a time, the elements of the selection grouped
 * by block: the block's keys (and values) are staged in fp32 once, transposed for the score
 * rows, and every query row the selection needs is evaluated in fp32 with vector loops
 * (lanes = keys for dot products against the staged keys, = d for P.V and the outer
 * products). Every value is rounded where the tests' torch code rounds: fp32 after each
 * operation (float arithmetic), the case dtype at the tests' bf16 casts (ug_dtype_round),
 * the output dtype at the end. */
#include "oracles/attention/reference_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/flash_attention_common.h"
#include "oracles/mp/tile_simd.h"

typedef float v8f __attribute__((vector_size(32)));

/* out[j] = sum_d x[d] * T[d*ld + j] for j < n: fp32 dot products in d order, lanes = keys. */
static UG_TILE_CLONES void dots_t(const float *x, const float *T, size_t ld, size_t D, size_t n, float *out)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v8f acc = {0}, t;
        for (size_t d = 0; d < D; d++) {
            UG_VLD(t, T + d * ld + j);
            acc += x[d] * t; /* rounds: fp32 product, fp32 sum */
        }
        UG_VST(out + j, acc);
    }
    for (; j < n; j++) {
        float a = 0.0f;
        for (size_t d = 0; d < D; d++) a += x[d] * T[d * ld + j]; /* rounds: fp32 */
        out[j] = a;
    }
}

/* y[d] = sum_j w[j] * V[j*D + d] for d < D over j < n: fp32, j in order, lanes = d. */
static UG_TILE_CLONES void pv_row(float *y, const float *w, const float *V, size_t n, size_t D)
{
    memset(y, 0, D * sizeof *y);
    for (size_t j = 0; j < n; j++) {
        size_t d = 0;
        for (; d + 8 <= D; d += 8) {
            v8f a, x;
            UG_VLD(a, y + d);
            UG_VLD(x, V + j * D + d);
            a += w[j] * x; /* rounds: fp32 */
            UG_VST(y + d, a);
        }
        for (; d < D; d++) y[d] += w[j] * V[j * D + d]; /* rounds: fp32 */
    }
}

/* acc[j*D + d] += w[j] * x[d] for j < n, d < D: the rank-one update of dK or dV, fp32. */
static UG_TILE_CLONES void outer_acc(float *acc, const float *w, const float *x, size_t n, size_t D)
{
    for (size_t j = 0; j < n; j++) {
        float *a = acc + j * D;
        size_t d = 0;
        for (; d + 8 <= D; d += 8) {
            v8f s, v;
            UG_VLD(s, a + d);
            UG_VLD(v, x + d);
            s += w[j] * v; /* rounds: fp32 */
            UG_VST(a + d, s);
        }
        for (; d < D; d++) a[d] += w[j] * x[d]; /* rounds: fp32 */
    }
}

/* The n dots s[j] into the softmax weights exp(scale*s - m) / l in fp32, as torch.softmax
 * of the scaled scores. 0, or -1 when a score or the sum is not finite (no golden). */
static int softmax_row(float *s, size_t n, float scale)
{
    float m = -INFINITY, l = 0.0f;
    for (size_t j = 0; j < n; j++) {
        s[j] *= scale; /* rounds: fp32 */
        if (!isfinite(s[j])) return -1;
        m = fmaxf(m, s[j]);
    }
    for (size_t j = 0; j < n; j++) l += s[j] = expf(s[j] - m); /* rounds: fp32 each */
    if (!isfinite(l) || l == 0.0f) return -1;
    for (size_t j = 0; j < n; j++) s[j] /= l; /* rounds: fp32 */
    return 0;
}

/* Batch element of token t given the prefix sums cu[0..batch]. */
static long batch_of(const long *cu, long batch, long t)
{
    long lo = 0, hi = batch - 1;
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (cu[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Positions of output k's selection grouped by (batch element, head) block (batch*heads
 * blocks, the token's batch from cu), each group in selection order: order[start[g] ..
 * start[g+1]). An output the op does not ask for (k < 0 or out[k] NULL) has empty groups. */
typedef struct {
    size_t *order, *start;
} block_groups;

static int group_by_block(const ug_fa_params *p, const ug_selection *sel, int k, const long *cu, block_groups *g)
{
    size_t nb = (size_t)(p->batch * p->heads), n = k >= 0 ? sel->n[k] : 0, HD = (size_t)(p->heads * p->dim);
    g->start = calloc(nb + 2, sizeof *g->start);
    g->order = malloc((n ? n : 1) * sizeof *g->order);
    size_t *bid = malloc((n ? n : 1) * sizeof *bid);
    if (!g->start || !g->order || !bid) return free(bid), -1;
    for (size_t i = 0; i < n; i++) {
        size_t idx = sel->idx[k][i], h = idx / (size_t)p->dim % (size_t)p->heads;
        bid[i] = (size_t)batch_of(cu, p->batch, (long)(idx / HD)) * (size_t)p->heads + h;
        g->start[bid[i] + 2]++;
    }
    for (size_t b = 2; b < nb + 2; b++) g->start[b] += g->start[b - 1];
    for (size_t i = 0; i < n; i++) g->order[g->start[bid[i] + 1]++] = i; /* counting sort, stable */
    free(bid);
    return 0;
}

static void groups_free(block_groups *g) { free(g->order), free(g->start); }

/* rows x D values of tensor t (token-major, heads * D wide) from token row0, head h, in fp32:
 * row-major into R (ld D) and/or transposed into T (ld rows); either may be NULL. */
static void stage(const ug_tensor *t, const ug_fa_params *p, long row0, long rows, long h, float *R, float *T)
{
    size_t D = (size_t)p->dim, HD = (size_t)(p->heads * p->dim);
    for (size_t j = 0; j < (size_t)rows; j++)
        for (size_t d = 0; d < D; d++) {
            float x = (float)t->values[((size_t)row0 + j) * HD + (size_t)h * D + d]; /* exact: a bf16/fp16 value */
            if (R) R[j * D + d] = x;
            if (T) T[d * (size_t)rows + j] = x;
        }
}

static long longest(const long *l, long n)
{
    long m = 1;
    for (long b = 0; b < n; b++) m = l[b] > m ? l[b] : m;
    return m;
}

double ug_fa_reference_golden_scratch(const ug_params *P)
{
    ug_fa_params p;
    ug_fa_read(P, &p);
    double mk = (double)longest(p.lk, p.batch), mq = (double)longest(p.lq, p.batch), D = (double)p.dim;
    /* staged K, K^T, V^T, Q, dO, O, dK and dV accumulators, rows; the groups of 3 outputs */
    return 4 * (5 * mk * D + 3 * mq * D + 4 * mk + 2 * D) +
           3 * 16 * ((double)p.tq + 2 * (double)p.tk) * (double)p.heads * D + 16 * (double)p.batch * (double)p.heads;
}

int ug_golden_attn_row(const double *q, const double *k, size_t ldk, size_t dk, const double *v, size_t ldv, size_t dv,
                       size_t n, float scale, ug_dtype p_dt, float *w, float *o)
{
    for (size_t j = 0; j < n; j++) {
        double dot = 0.0; /* products of bf16 values are exact; the sum is an fp32 matmul's, near enough */
        for (size_t d = 0; d < dk; d++) dot += q[d] * k[j * ldk + d];
        w[j] = (float)dot; /* rounds: fp32 */
    }
    if (!n || softmax_row(w, n, scale)) return -1;
    for (size_t j = 0; j < n; j++) w[j] = (float)ug_dtype_round(p_dt, w[j]); /* rounds: the test's cast of P/l */
    for (size_t d = 0; d < dv; d++) o[d] = 0.0f;
    for (size_t j = 0; j < n; j++)
        for (size_t d = 0; d < dv; d++) o[d] += w[j] * (float)v[j * ldv + d]; /* rounds: fp32 (v exact in fp32) */
    return 0;
}

/* ---- the forward: o ---- */

int ug_fa_reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    size_t D = (size_t)p.dim, HD = (size_t)(p.heads * p.dim), mk = (size_t)longest(p.lk, p.batch);
    ug_dtype dt = c->spec.dtype, odt = c->out[0].dtype;
    block_groups g = {0};
    float *kt = malloc((2 * mk * D + mk + 2 * D) * sizeof *kt);
    if (!kt || group_by_block(&p, sel, out[0] ? 0 : -1, p.cu_q, &g)) {
        free(kt), groups_free(&g);
        snprintf(err, errlen, "out of memory for the reference golden");
        return -1;
    }
    float *vr = kt + mk * D, *s = vr + mk * D, *qr = s + mk, *orow = qr + D;
    for (long blk = 0; blk < p.batch * p.heads; blk++) {
        if (g.start[blk] == g.start[blk + 1]) continue;
        long b = blk / p.heads, h = blk % p.heads, row = -1;
        int ok = 0;
        stage(k, &p, p.cu_k[b], p.lk[b], h, NULL, kt);
        stage(v, &p, p.cu_k[b], p.lk[b], h, vr, NULL);
        for (size_t i = g.start[blk]; i < g.start[blk + 1]; i++) {
            size_t pos = g.order[i], idx = sel->idx[0][pos];
            long t = (long)(idx / HD);
            if (t != row) { /* a new query row: its weights bf16(p/l), then o = P.V */
                row = t;
                size_t n = (size_t)ug_fa_visible(&p, b, t - p.cu_q[b]);
                stage(q, &p, t, 1, h, qr, NULL);
                dots_t(qr, kt, (size_t)p.lk[b], D, n, s);
                ok = n > 0 && softmax_row(s, n, (float)p.scale) == 0;
                for (size_t j = 0; ok && j < n; j++) s[j] = (float)ug_dtype_round(dt, s[j]); /* rounds: the bf16 cast */
                if (ok) pv_row(orow, s, vr, n, D);
            }
            out[0][pos] = ok ? ug_dtype_round(odt, orow[idx % D]) : NAN; /* rounds: the output dtype */
        }
    }
    free(kt);
    groups_free(&g);
    return 0;
}

/* ---- the backward: dq, dk, dv ---- */

typedef struct {
    float *kt, *vt, *kr, *qr, *dor, *or_, *dk, *dv, *s, *dp, *ds, *dq;
} grad_work;

/* One block's rows: P, dP, dS of each query row; dq of the rows the selection asks for,
 * dk and dv accumulated over every row. Returns 0, or -1 when a row has no golden (a
 * non-finite score), which leaves the block's dk and dv without one too. */
static int grad_block(const ug_fa_params *p, long b, ug_dtype dt, grad_work *w, const block_groups *gq,
                      const ug_selection *sel, int kq, long blk, double **out, ug_dtype odt)
{
    size_t D = (size_t)p->dim, HD = (size_t)(p->heads * p->dim), lk = (size_t)p->lk[b], qi = gq->start[blk];
    int bad = 0;
    memset(w->dk, 0, lk * D * sizeof *w->dk);
    memset(w->dv, 0, lk * D * sizeof *w->dv);
    for (long i = 0; i < p->lq[b]; i++) {
        size_t n = (size_t)ug_fa_visible(p, b, i);
        const float *qi_row = w->qr + (size_t)i * D, *do_row = w->dor + (size_t)i * D, *o_row = w->or_ + (size_t)i * D;
        int ok = n > 0;
        if (ok) {
            dots_t(qi_row, w->kt, lk, D, n, w->s);
            ok = softmax_row(w->s, n, (float)p->scale) == 0;
        }
        if (ok) {
            float delta = 0.0f;
            for (size_t d = 0; d < D; d++) delta += o_row[d] * do_row[d]; /* rounds: fp32 */
            dots_t(do_row, w->vt, lk, D, n, w->dp);
            for (size_t j = 0; j < n; j++) {
                w->ds[j] =
                    (float)ug_dtype_round(dt, w->s[j] * (w->dp[j] - delta)); /* rounds: fp32, then the bf16 cast */
                w->s[j] = (float)ug_dtype_round(dt, w->s[j]);                /* rounds: P's bf16 cast */
            }
            outer_acc(w->dk, w->ds, qi_row, n, D);
            outer_acc(w->dv, w->s, do_row, n, D);
            pv_row(w->dq, w->ds, w->kr, n, D);
        }
        bad |= n > 0 && !ok;
        for (; kq >= 0 && qi < gq->start[blk + 1]; qi++) { /* this row's dq elements */
            size_t pos = gq->order[qi], idx = sel->idx[kq][pos];
            if ((long)(idx / HD) != p->cu_q[b] + i) break;
            out[kq][pos] = ok ? ug_dtype_round(odt, w->dq[idx % D] * (float)p->scale) : NAN; /* rounds: fp32, dtype */
        }
    }
    return bad ? -1 : 0;
}

int ug_fa_grad_reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    int kq = ug_case_judged_find(c, "dq"), kk = ug_case_judged_find(c, "dk"), kv = ug_case_judged_find(c, "dv");
    kq = kq >= 0 && out[kq] ? kq : -1, kk = kk >= 0 && out[kk] ? kk : -1, kv = kv >= 0 && out[kv] ? kv : -1;
    size_t D = (size_t)p.dim, HD = (size_t)(p.heads * p.dim), mk = (size_t)longest(p.lk, p.batch),
           mq = (size_t)longest(p.lq, p.batch);
    ug_dtype dt = c->spec.dtype, odt = c->out[0].dtype;
    block_groups gq = {0}, gk = {0}, gv = {0};
    float *buf = malloc((5 * mk * D + 3 * mq * D + 3 * mk + D) * sizeof *buf);
    if (!buf || group_by_block(&p, sel, kq, p.cu_q, &gq) || group_by_block(&p, sel, kk, p.cu_k, &gk) ||
        group_by_block(&p, sel, kv, p.cu_k, &gv)) {
        free(buf), groups_free(&gq), groups_free(&gk), groups_free(&gv);
        snprintf(err, errlen, "out of memory for the reference golden");
        return -1;
    }
    grad_work w = {.kt = buf};
    w.vt = w.kt + mk * D, w.kr = w.vt + mk * D, w.dk = w.kr + mk * D, w.dv = w.dk + mk * D;
    w.qr = w.dv + mk * D, w.dor = w.qr + mq * D, w.or_ = w.dor + mq * D;
    w.s = w.or_ + mq * D, w.dp = w.s + mk, w.ds = w.dp + mk, w.dq = w.ds + mk;
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v"),
                    *dout = ug_case_input(c, "do"), *o = ug_case_input(c, "o");
    for (long blk = 0; blk < p.batch * p.heads; blk++) {
        if (gq.start[blk] == gq.start[blk + 1] && gk.start[blk] == gk.start[blk + 1] &&
            gv.start[blk] == gv.start[blk + 1])
            continue;
        long b = blk / p.heads, h = blk % p.heads;
        stage(k, &p, p.cu_k[b], p.lk[b], h, w.kr, w.kt);
        stage(v, &p, p.cu_k[b], p.lk[b], h, NULL, w.vt);
        stage(q, &p, p.cu_q[b], p.lq[b], h, w.qr, NULL);
        stage(dout, &p, p.cu_q[b], p.lq[b], h, w.dor, NULL);
        stage(o, &p, p.cu_q[b], p.lq[b], h, w.or_, NULL);
        int ok = grad_block(&p, b, dt, &w, &gq, sel, kq, blk, out, odt) == 0;
        for (size_t i = gk.start[blk]; i < gk.start[blk + 1]; i++) { /* rounds: fp32 scale, then the dtype */
            size_t pos = gk.order[i], idx = sel->idx[kk][pos], at = (idx / HD - (size_t)p.cu_k[b]) * D + idx % D;
            out[kk][pos] = ok ? ug_dtype_round(odt, w.dk[at] * (float)p.scale) : NAN;
        }
        for (size_t i = gv.start[blk]; i < gv.start[blk + 1]; i++) {
            size_t pos = gv.order[i], idx = sel->idx[kv][pos], at = (idx / HD - (size_t)p.cu_k[b]) * D + idx % D;
            out[kv][pos] = ok ? ug_dtype_round(odt, w.dv[at]) : NAN; /* rounds: the dtype */
        }
    }
    free(buf);
    groups_free(&gq), groups_free(&gk), groups_free(&gv);
    return 0;
}
