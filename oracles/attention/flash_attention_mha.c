/* flash_attention_mha.c — param checks, input builder and exact oracle of
 * flash_attention_mha, the variable-length MHA forward in the packed TND layout:
 *
 *     s_tj = scale * q[t,h,:].k[j,h,:]     for the keys j of t's batch element that t sees
 *     o[t,h,:] = sum_j exp(s_tj - m) v[j,h,:] / sum_j exp(s_tj - m),   m = max_j s_tj
 *     lse[t,h] = m + ln sum_j exp(s_tj - m)                              (natural log)
 *     softmax_max[t,h] = m,  softmax_sum[t,h] = sum_j exp(s_tj - m)       (optional: the reference's M, L)
 *
 * Batch element b owns query tokens cu_seqlens_q[b]..cu_seqlens_q[b+1] and key tokens
 * cu_seqlens_k[b]..; with causal, local query i sees key j iff j <= i + Lk - Lq (bottom-
 * right aligned, as FlashAttention-2 defines it). A row that sees no key (causal with
 * Lk < Lq) is defined as o = 0, lse = -inf in both kernel and oracle; special values
 * follow the op's semantics text (ug_fa_row, ug_attn_weighted_v); groups with finite inputs
 * go in tiles of rows in the plain arithmetics (oracle()). scale is an fp32 attribute
 * (default 1/sqrt(D) rounded to fp32). The spec rounds nothing mid-way: the device's cast
 * of P to the input dtype is the kernel's approximation, not the math.
 *
 * Primary standard certified (docs/STANDARDS.md: the fixed atol below does not follow the
 * size of v, and failed the correct kernel at plan seed 6 where v has outliers of scale 30;
 * certified catches every mutant pypto does). The stored pypto rule: lse 2.5e-5 / 0.005 as
 * docs/STANDARDS.md lists it; o rtol 2^-7 as listed but atol 1e-3 instead of 1e-4. Why: a correct FA2 kernel casts P to the input
 * dtype before P.V, which perturbs o by about u * sqrt(sum_j p_j^2 v_j^2) / l (u the
 * dtype's unit roundoff); for fp16 (u = 2^-11) that stays inside 1e-4, for bf16
 * (u = 2^-8) it does not where o is small through cancellation. Measured on the nightly
 * plan with the correct sim kernel: atol 1e-4 fails 42 of 49 bf16 cases, 2.5e-4 fails 27,
 * 5e-4 fails 4, 1e-3 fails none (every fp16 case passes at 1e-4). So the widening is
 * per dtype (adjust_rule): fp16 cases keep the listed 1e-4, bf16 cases get 1e-3. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/flash_attention_common.h"
#include "oracles/attention/reference_golden.h"
#include "oracles/verdict.h"

/* Fills cu_seqlens_q/k. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    ug_fa_build_cu(c, &p);
    return 0;
}

/* The max of a row with a NaN or +inf score (ug_fa_row returned -1): NaN if a score is
 * NaN, else +inf. Scores are classified in double, as ug_attn_weights does. */
static double special_row_max(const ug_fa_params *p, const double *q, const double *k, long t, long h)
{
    long b = ug_fa_batch_of(p, t), n = ug_fa_visible(p, b, t - p->cu_q[b]);
    size_t d = (size_t)p->dim, hd = (size_t)p->heads * d;
    const double *qr = q + ((size_t)t * (size_t)p->heads + (size_t)h) * d;
    const double *kr = k + (size_t)p->cu_k[b] * hd + (size_t)h * d;
    for (long j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < d; i++) s += qr[i] * kr[(size_t)j * hd + i];
        if (isnan(s * p->scale)) return NAN;
    }
    return INFINITY;
}

/* The row values of the outputs indexed by row r = t*H + h: lse, and the optional softmax
 * row max m and sum l (the reference's M and L); n as ug_fa_row returned it (-1: a NaN or
 * +inf score, where l and lse are NaN and m is special_max; 0: no key seen). */
static ug_num row_value(ug_ar *ar, int out, long n, ug_num m, ug_num total, double special_max)
{
    if (n < 0) return ug_c(ar, out == 2 ? special_max : NAN);
    if (n == 0) return ug_c(ar, out == 3 ? 0.0 : -INFINITY); /* l = 0; lse = m = -inf */
    return out == 1 ? ug_add(ar, m, ug_log(ar, total)) : out == 2 ? m : total;
}

/* What the oracle reads, and its scratch. */
typedef struct {
    const ug_case *c;
    const ug_selection *sel;
    ug_fa_params p;
    const double *q, *k, *v;
    ug_num *e, *o_row;   /* a row's weights [maxk], its o [D] */
    unsigned char *live; /* [maxk] */
    double *col;         /* [maxk] */
} fwd_ctx;

/* Emits the selected elements of row r = t*H + h: o from the weights e (n keys, or the
 * whole row o_row when given), lse and the optional m and l. n as ug_fa_row returns it. */
static void emit_row(ug_ar *ar, fwd_ctx *x, size_t r, long n, const ug_num *e, const unsigned char *live, ug_num m,
                     ug_num total, const ug_num *o_row)
{
    const ug_fa_params *p = &x->p;
    const ug_selection *sel = x->sel;
    size_t D = (size_t)p->dim, H = (size_t)p->heads, b0, e0;
    long t = (long)(r / H), h = (long)(r % H), b = ug_fa_batch_of(p, t);
    const double *v0 = x->v + (size_t)p->cu_k[b] * H * D + (size_t)h * D;
    ug_selection_range(sel, 0, r * D, (r + 1) * D, &b0, &e0);
    for (size_t k = b0; k < e0; k++) {
        size_t d = sel->idx[0][k] % D;
        ug_num val = o_row   ? o_row[d]
                     : n > 0 ? ug_attn_weighted_v(ar, e, live, v0 + d, H * D, n, total, x->col)
                             : ug_c(ar, n ? NAN : 0.0);
        ug_ar_emit(ar, 0, k, val);
    }
    for (int out = 1; out < sel->n_out; out++) {
        long at = ug_selection_find(sel, out, r);
        if (at >= 0)
            ug_ar_emit(ar, out, (size_t)at,
                       row_value(ar, out, n, m, total, n < 0 && out == 2 ? special_row_max(p, x->q, x->k, t, h) : 0));
    }
}

/* Whether row r has a selected element (of o, or a row output). */
static int row_selected(const ug_selection *sel, size_t r, size_t D)
{
    size_t b, e;
    ug_selection_range(sel, 0, r * D, (r + 1) * D, &b, &e);
    for (int out = 1; b == e && out < sel->n_out; out++)
        if (ug_selection_find(sel, out, r) >= 0) return 1;
    return b < e;
}

/* Row r one at a time: its weights (ug_fa_row), then o whole (one pass over V) when most of
 * it is selected, else element by element. */
static void row_single(ug_ar *ar, fwd_ctx *x, size_t r)
{
    const ug_fa_params *p = &x->p;
    size_t D = (size_t)p->dim, H = (size_t)p->heads, b0, e0;
    long t = (long)(r / H), h = (long)(r % H), b = ug_fa_batch_of(p, t);
    ug_num m, total;
    long n = ug_fa_row(ar, p, x->q, x->k, t, h, x->c->spec.dtype, x->e, x->live, &m, &total);
    const double *v0 = x->v + (size_t)p->cu_k[b] * H * D + (size_t)h * D;
    int whole = ug_attn_row_dense(x->sel, 0, r, D, &b0, &e0) && n > 0; /* most of the row: all of it at once */
    if (whole) ug_attn_weighted_v_cols(ar, x->e, x->live, v0, H * D, n, D, total, x->col, x->o_row);
    emit_row(ar, x, r, n, x->e, x->live, m, total, whole ? x->o_row : NULL);
}

/* Group (b, h) row by row. */
static void group_single(ug_ar *ar, fwd_ctx *x, long b, long h)
{
    size_t H = (size_t)x->p.heads, D = (size_t)x->p.dim;
    for (long t = x->p.cu_q[b]; t < x->p.cu_q[b + 1]; t++) {
        size_t r = (size_t)t * H + (size_t)h, mark = ug_ar_mark(ar);
        if (row_selected(x->sel, r, D)) row_single(ar, x, r);
        ug_ar_release(ar, mark);
    }
}

#define FA_TILE 16 /* query rows whose scores and weighted sums are computed together */

/* Scratch of group_tiled: the group's keys transposed, and per tile its query rows, weights
 * (FA_TILE x maxk), o rows and key counts. */
typedef struct {
    double *kt, *qt, *vg; /* K^T (ld ug_fa_kt_ld), the tile's q rows, the group's v rows (ld D) */
    ug_num *w, *o;
    size_t n[FA_TILE];
    long rows[FA_TILE];
} fwd_tile;

/* Rows rows[0..m) (global r) of group (b, h), finite inputs: the scores of all of them at once
 * (ug_dot_d_tile over K^T), each row's weights, the o rows most of which are selected at once
 * (ug_dot_nd_cols_tile), then every emission. The numbers of row_single, bit for bit. */
static void tile_rows(ug_ar *ar, fwd_ctx *x, fwd_tile *w, long b, long h, size_t m)
{
    const ug_fa_params *p = &x->p;
    size_t D = (size_t)p->dim, H = (size_t)p->heads, lk = (size_t)p->lk[b], nmax = 0, nw = 0, b0, e0;
    size_t wr[FA_TILE], nwr[FA_TILE];
    ug_num m_[FA_TILE] = {{0}}, tot[FA_TILE] = {{0}};
    for (size_t i = 0; i < m; i++) {
        long t = w->rows[i];
        w->n[i] = (size_t)ug_fa_visible(p, b, t - p->cu_q[b]);
        nmax = w->n[i] > nmax ? w->n[i] : nmax;
        memcpy(w->qt + i * D, x->q + ((size_t)t * H + (size_t)h) * D, D * sizeof *w->qt);
    }
    ug_dot_d_tile(ar, w->qt, D, m, w->kt, ug_fa_kt_ld((long)lk), D, nmax, w->w, lk);
    for (size_t i = 0; i < m; i++) { /* weights; rows not mostly selected emitted element by element now */
        size_t r = (size_t)w->rows[i] * H + (size_t)h;
        if (w->n[i])
            ug_attn_weights_of_dots(ar, w->w + i * lk, (long)w->n[i], p->scale, x->c->spec.dtype, &m_[i], &tot[i]);
        if (w->n[i] && ug_attn_row_dense(x->sel, 0, r, D, &b0, &e0))
            wr[nw] = i, nwr[nw++] = w->n[i];
        else
            emit_row(ar, x, r, (long)w->n[i], w->w + i * lk, x->live, m_[i], tot[i], NULL);
    }
    for (size_t k = 0; k < nw; k++) /* the whole rows' weights, contiguous for the tile product */
        if (k != wr[k]) memcpy(w->w + k * lk, w->w + wr[k] * lk, nwr[k] * sizeof *w->w);
    ug_dot_nd_cols_tile(ar, w->w, lk, nwr, nw, w->vg, D, D, w->o, D);
    for (size_t k = 0; k < nw; k++) {
        size_t i = wr[k];
        for (size_t d = 0; d < D; d++) w->o[k * D + d] = ug_div(ar, w->o[k * D + d], tot[i]);
        emit_row(ar, x, (size_t)w->rows[i] * H + (size_t)h, (long)w->n[i], NULL, NULL, m_[i], tot[i], w->o + k * D);
    }
}

/* Group (b, h) in tiles of FA_TILE selected rows. 0, or -1 out of memory. */
static int group_tiled(ug_ar *ar, fwd_ctx *x, long b, long h)
{
    const ug_fa_params *p = &x->p;
    size_t D = (size_t)p->dim, H = (size_t)p->heads, lk = (size_t)p->lk[b];
    fwd_tile w = {.kt = malloc((D * ug_fa_kt_ld((long)lk) + FA_TILE * D + lk * D) * sizeof *w.kt),
                  .w = malloc(FA_TILE * lk * sizeof *w.w),
                  .o = malloc(FA_TILE * D * sizeof *w.o)};
    if (!w.kt || !w.w || !w.o) {
        free(w.kt), free(w.w), free(w.o);
        return -1;
    }
    w.qt = w.kt + D * ug_fa_kt_ld((long)lk);
    w.vg = w.qt + FA_TILE * D;
    ug_fa_group_transpose(p, x->k, b, h, w.kt);
    ug_fa_gather_rows(p, x->v, p->cu_k[b], (long)lk, h, w.vg);
    memset(x->live, 1, lk);
    size_t m = 0;
    for (long t = p->cu_q[b]; t <= p->cu_q[b + 1]; t++) {
        if (t < p->cu_q[b + 1] && row_selected(x->sel, (size_t)t * H + (size_t)h, D)) w.rows[m++] = t;
        if (m == FA_TILE || (t == p->cu_q[b + 1] && m)) {
            tile_rows(ar, x, &w, b, h, m);
            m = 0;
        }
    }
    free(w.kt), free(w.w), free(w.o);
    return 0;
}

/* Output indices: 0 o [Tq,H,D], 1 lse, 2 softmax_max, 3 softmax_sum [Tq,H]; row r = t*H + h of all.
 * Per (batch element, head) group: the plain arithmetics on finite inputs in tiles of rows,
 * the rest (MPFR, special values) row by row; the same numbers either way. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    fwd_ctx x = {.c = c, .sel = sel};
    ug_fa_read(&c->params, &x.p);
    x.q = ug_case_input(c, "q")->values, x.k = ug_case_input(c, "k")->values, x.v = ug_case_input(c, "v")->values;
    size_t D = (size_t)x.p.dim, maxk = 1;
    for (long b = 0; b < x.p.batch; b++) maxk = (size_t)x.p.lk[b] > maxk ? (size_t)x.p.lk[b] : maxk;
    x.e = malloc(maxk * sizeof *x.e);
    x.live = malloc(maxk);
    x.col = malloc(maxk * sizeof *x.col);
    x.o_row = malloc(D * sizeof *x.o_row);
    int rc = x.e && x.live && x.col && x.o_row ? 0 : -1;
    int plain = ug_fa_tiles && ug_ar_plain(ar); /* tiles hold a block of numbers: doubles only */
    for (long b = 0; !rc && b < x.p.batch; b++)
        for (long h = 0; !rc && h < x.p.heads; h++) {
            if (plain && ug_fa_group_finite(&x.p, x.q, x.k, x.v, NULL, b, h))
                rc = group_tiled(ar, &x, b, h);
            else
                group_single(ar, &x, b, h);
        }
    free(x.e), free(x.live), free(x.col), free(x.o_row);
    return rc;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[t->ndim - 1];
    g->rows = t->numel / g->cols;
    /* o rows are (token, head): a 64-token query tile spans 64*H rows */
    g->row_tile = out == 0 ? 64 * (size_t)t->shape[1] : 64;
    g->col_tile = out == 0 ? 64 : 16;
}

/* bf16 cases only: o's atol 1e-4 -> 1e-3 (see the file header). */
static void adjust_rule(const ug_case *c, int out, const double *g, size_t n, ug_output_rule *rule)
{
    (void)g;
    (void)n;
    if (out == 0 && c->spec.dtype == UG_DT_BF16) rule->pypto_atol = 1e-3;
}

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of q, k, v, o, lse, m and l;
 * the oracle's row arrays over the longest key sequence and one row of o, and its tile path's. */
static double scratch(const ug_params *P)
{
    ug_fa_params p;
    ug_fa_read(P, &p);
    double maxk = 1, HD = (double)p.heads * (double)p.dim;
    for (long b = 0; b < p.batch; b++) maxk = (double)p.lk[b] > maxk ? (double)p.lk[b] : maxk;
    double D = (double)p.dim, tile = 8 * (D * (maxk + 8) + FA_TILE * D + maxk * D) + /* K^T, q rows, v rows */
                                     FA_TILE * (maxk + D) * UG_NUM_BYTES;            /* weights, o rows */
    return 4 * (2 * (double)p.tq * HD + 2 * (double)p.tk * HD + 3 * (double)p.tq * (double)p.heads) +
           maxk * (UG_NUM_BYTES + 1 + 8) + (double)p.dim * UG_NUM_BYTES + tile + ug_fa_reference_golden_scratch(P);
}

const ug_op_def ug_opdef_flash_attention_mha = {.decl.check = ug_fa_check,
                                                .build = build,
                                                .oracle = oracle,
                                                .geometry = geometry,
                                                .adjust_rule = adjust_rule,
                                                .scratch = scratch,
                                                .reference_golden = ug_fa_reference_golden};
