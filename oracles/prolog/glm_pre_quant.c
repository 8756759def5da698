/* glm_pre_quant.c — the exact per-token math of glm_attention_pre_quant (see
 * glm_pre_quant.h for the chain, the staged rule and how another oracle calls it), and
 * the whole staged oracle of its eight outputs (ug_gpq_oracle), shared by
 * glm_attention_pre_quant and glm_attention_fusion. */
#include "oracles/prolog/glm_pre_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "oracles/mp/int8_dot.h"

ug_gpq_dims ug_gpq_dims_read(const ug_params *P)
{
    ug_gpq_dims d = {(size_t)ug_p_int(P, "hidden"),     (size_t)ug_p_int(P, "q_heads"),
                     (size_t)ug_p_int(P, "kv_heads"),   (size_t)ug_p_int(P, "head_dim"),
                     (size_t)ug_p_int(P, "rotary_dim"), ug_p_num(P, "eps")};
    return d;
}

size_t ug_gpq_cols(const ug_gpq_dims *d) { return (d->Nq + 2 * d->Nk) * d->D; }

int ug_gpq_check(const ug_params *P, const char *op, char *err, size_t errlen)
{
    long D = ug_p_int(P, "head_dim"), R = ug_p_int(P, "rotary_dim");
    if (R % 2) return snprintf(err, errlen, "%s: param \"rotary_dim\" = %ld must be even", op, R), -2;
    if (R > D) return snprintf(err, errlen, "%s: param \"rotary_dim\" = %ld must be <= head_dim = %ld", op, R, D), -2;
    return 0;
}

ug_num ug_gpq_norm_den(ug_ar *ar, const double *v, size_t n, double eps)
{
    ug_num ss = ug_dot_d(ar, v, 1, v, 1, n);
    return ug_sqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)n)), ug_c(ar, eps)));
}

ug_num ug_gpq_norm_at(ug_ar *ar, ug_num v, ug_num den, double gamma, double beta)
{
    return ug_add(ar, ug_mul(ar, ug_div(ar, v, den), ug_c(ar, gamma)), ug_c(ar, beta));
}

/* Whether p + o is exact in double (TwoSum's error term is zero), with the sum in *sum. */
static int exact_sum(double p, double o, double *sum)
{
    double s = p + o, bb = s - p, e = (p - (s - bb)) + (o - bb);
    *sum = s;
    return e == 0.0 || !isfinite(s);
}

ug_num ug_gpq_add_norm_den(ug_ar *ar, const double *a, const double *b, double *r, size_t n, double eps)
{
    int exact = 1, finite = 1;
    for (size_t i = 0; i < n; i++) {
        exact &= exact_sum(a[i], b[i], &r[i]);
        finite &= isfinite(r[i]) != 0;
    }
    /* an inf or NaN in r decides the sum of squares by IEEE on r itself (the semantics: inf
     * makes it inf); the expansion below would meet inf*b + -inf as NaN */
    if (exact || !finite) return ug_gpq_norm_den(ar, r, n, eps);
    /* bf16 exponents more than 53 binades apart: sum a^2 + 2 a.b + b^2 of exact terms */
    ug_num ss =
        ug_add(ar, ug_add(ar, ug_dot_d(ar, a, 1, a, 1, n), ug_mul(ar, ug_c(ar, 2.0), ug_dot_d(ar, a, 1, b, 1, n))),
               ug_dot_d(ar, b, 1, b, 1, n));
    return ug_sqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)n)), ug_c(ar, eps)));
}

ug_num ug_gpq_code_value(ug_ar *ar, double n, double s, double o)
{
    double p = n * s, v; /* exact: two bf16 significands, the double range holds the product */
    int exact = exact_sum(p, o, &v);
    if (!isfinite(v)) return ug_c(ar, ug_dtype_round(UG_DT_INT8, v));                 /* saturates; NaN -> 0 */
    if (exact && v - floor(v) == 0.5) return ug_c(ar, ug_dtype_round(UG_DT_INT8, v)); /* a tie: RNE to even */
    return ug_add(ar, ug_mul(ar, ug_c(ar, n), ug_c(ar, s)), ug_c(ar, o));
}

ug_num ug_gpq_gemm_value(ug_ar *ar, int32_t acc, double bias, double deq)
{
    /* a device converts the int32 sum to fp32, which rounds once |sum| > 2^24 */
    ug_num sum = ug_dev_round(ar, ug_c(ar, (double)acc + bias), UG_DT_FP32);
    return ug_mul(ar, sum, ug_c(ar, deq));
}

ug_num ug_gpq_rope_at(ug_ar *ar, const double *x, const double *cs, const double *sn, size_t i, size_t R)
{
    size_t half = R / 2, j = i < half ? i : i - half;
    double a[2] = {x[i], i < half ? x[i + half] : x[i - half]};
    double w[2] = {cs[j], i < half ? -sn[j] : sn[j]}; /* exact: negation */
    return ug_dot_d(ar, a, 1, w, 1, 2);
}

const int8_t *ug_gpq_weight_i8(const ug_tensor *w) { return w->dtype == UG_DT_INT8 ? w->data : NULL; }

/* ---- the staged oracle of the prolog's outputs (ug_gpq_oracle) ---- */

#define PQ_TOKEN_TILE 8 /* the reference kernel's bs_tile */
#define PQ_DENSE_COLS 64

enum { O_Q, O_K, O_V, O_RES, O_N, O_N8, O_QKMM, O_QKN };

typedef struct {
    ug_gpq_dims d;
    size_t T, cols, qk; /* GEMM columns; q and k columns */
    const ug_tensor *x, *res, *nw, *nb, *sr, *off, *qb, *deq, *cos, *sin, *hw[2], *hb[2];
    const int8_t *w8; /* W [H, cols], the case's int8 codes */
    double *codes;    /* one token's kernel codes (integers, exact) */
    int32_t *acc;     /* ug_int8_col_dots' scratch */
    int64_t *sums;    /* one token's integer sums, every column (dense selections) */
    double *r, *head; /* one row of r (H); one head (D) */
} pq_ctx;

/* residual_res and n of token t. */
static void norm_stage(const pq_ctx *k, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t H = k->d.H, b, e, rb, re;
    const double *xr = k->x->values + t * H, *rr = k->res->values + t * H;
    ug_selection_range(sel, O_RES, t * H, (t + 1) * H, &rb, &re);
    for (; rb < re; rb++) {
        size_t i = sel->idx[O_RES][rb] - t * H;
        ug_ar_emit(ar, O_RES, rb, ug_add(ar, ug_c(ar, xr[i]), ug_c(ar, rr[i])));
    }
    ug_selection_range(sel, O_N, t * H, (t + 1) * H, &b, &e);
    if (b == e) return;
    ug_num den = ug_gpq_add_norm_den(ar, xr, rr, k->r, H, k->d.eps);
    for (; b < e; b++) {
        size_t i = sel->idx[O_N][b] - t * H, mark = ug_ar_mark(ar);
        ug_num r = ug_add(ar, ug_c(ar, xr[i]), ug_c(ar, rr[i]));
        ug_ar_emit(ar, O_N, b, ug_gpq_norm_at(ar, r, den, ug_tload(k->nw, i), ug_tload(k->nb, i)));
        ug_ar_release(ar, mark);
    }
}

/* n_i8 of token t from the kernel's n. */
static void code_stage(const pq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t H = k->d.H, b, e;
    ug_selection_range(sel, O_N8, t * H, (t + 1) * H, &b, &e);
    for (; b < e; b++) {
        size_t i = sel->idx[O_N8][b] - t * H;
        double n = ug_tload(&c->out[O_N], t * H + i);
        ug_ar_emit(ar, O_N8, b, ug_gpq_code_value(ar, n, ug_tload(k->sr, i), ug_tload(k->off, i)));
    }
}

/* Output o's selected elements of token t, row width w, GEMM column base + j; the integer
 * sums from k->sums when full, else column by column (exact: |sum| < 2^30 for H < 2^16). */
static void gemm_emit(const pq_ctx *k, ug_ar *ar, const ug_selection *sel, int o, size_t t, size_t w, size_t base,
                      int full)
{
    size_t b, e;
    ug_selection_range(sel, o, t * w, (t + 1) * w, &b, &e);
    for (; b < e; b++) {
        size_t col = base + sel->idx[o][b] - t * w, mark = ug_ar_mark(ar);
        int64_t sum;
        if (!full) ug_int8_col_dots(k->codes, k->w8, k->cols, k->d.H, &col, 1, 1, k->acc, &sum);
        ug_ar_emit(
            ar, o, b,
            ug_gpq_gemm_value(ar, (int32_t)(full ? k->sums[col] : sum), ug_tload(k->qb, col), ug_tload(k->deq, col)));
        ug_ar_release(ar, mark);
    }
}

/* qk_mm and v of token t from the kernel's codes. */
static void gemm_stage(const pq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t H = k->d.H, kv = k->d.Nk * k->d.D, b1, e1, b2, e2;
    ug_selection_range(sel, O_QKMM, t * k->qk, (t + 1) * k->qk, &b1, &e1);
    ug_selection_range(sel, O_V, t * kv, (t + 1) * kv, &b2, &e2);
    if (b1 == e1 && b2 == e2) return;
    for (size_t i = 0; i < H; i++) k->codes[i] = ug_tload(&c->out[O_N8], t * H + i);
    int full = (e1 - b1) + (e2 - b2) > PQ_DENSE_COLS; /* one pass over W beats that many strided columns */
    if (full) ug_int8_col_dots(k->codes, k->w8, k->cols, H, (const size_t[]){0}, 1, k->cols, k->acc, k->sums);
    gemm_emit(k, ar, sel, O_QKMM, t, k->qk, 0, full);
    gemm_emit(k, ar, sel, O_V, t, kv, k->qk, full);
}

/* Head h (q heads first, then k) of token t of the kernel's output o, into k->head. */
static void load_head(const pq_ctx *k, const ug_case *c, int o, size_t t, size_t h)
{
    for (size_t i = 0; i < k->d.D; i++) k->head[i] = ug_tload(&c->out[o], t * k->qk + h * k->d.D + i);
}

/* qk_norm of token t from the kernel's qk_mm, head by head. */
static void head_norm_stage(const pq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t D = k->d.D;
    for (size_t h = 0; h < k->d.Nq + k->d.Nk; h++) {
        size_t lo = t * k->qk + h * D, b, e, mark = ug_ar_mark(ar);
        ug_selection_range(sel, O_QKN, lo, lo + D, &b, &e);
        if (b == e) continue;
        int kh = h >= k->d.Nq;
        load_head(k, c, O_QKMM, t, h);
        ug_num den = ug_gpq_norm_den(ar, k->head, D, k->d.eps);
        for (; b < e; b++) {
            size_t i = sel->idx[O_QKN][b] - lo;
            ug_ar_emit(ar, O_QKN, b,
                       ug_gpq_norm_at(ar, ug_c(ar, k->head[i]), den, ug_tload(k->hw[kh], i), ug_tload(k->hb[kh], i)));
        }
        ug_ar_release(ar, mark);
    }
}

/* q and k of token t from the kernel's qk_norm: RoPE on [0, R), a copy after. */
static void rope_stage(const pq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t D = k->d.D, R = k->d.R, hr = R / 2;
    double cs[256], sn[256]; /* R <= 512 */
    for (size_t j = 0; j < hr; j++) cs[j] = ug_tload(k->cos, t * hr + j), sn[j] = ug_tload(k->sin, t * hr + j);
    for (size_t h = 0; h < k->d.Nq + k->d.Nk; h++) {
        int kh = h >= k->d.Nq, o = kh ? O_K : O_Q;
        size_t w = (kh ? k->d.Nk : k->d.Nq) * D, lo = t * w + (kh ? h - k->d.Nq : h) * D, b, e;
        ug_selection_range(sel, o, lo, lo + D, &b, &e);
        if (b == e) continue;
        load_head(k, c, O_QKN, t, h);
        for (; b < e; b++) {
            size_t i = sel->idx[o][b] - lo, mark = ug_ar_mark(ar);
            ug_ar_emit(ar, o, b, i < R ? ug_gpq_rope_at(ar, k->head, cs, sn, i, R) : ug_c(ar, k->head[i]));
            ug_ar_release(ar, mark);
        }
    }
}

static int ctx_open(pq_ctx *k, const ug_case *c)
{
    k->d = ug_gpq_dims_read(&c->params);
    k->T = (size_t)ug_p_int(&c->params, "tokens");
    k->cols = ug_gpq_cols(&k->d), k->qk = (k->d.Nq + k->d.Nk) * k->d.D;
    k->x = ug_case_input(c, "x"), k->res = ug_case_input(c, "residual");
    k->nw = ug_case_input(c, "norm_weight"), k->nb = ug_case_input(c, "norm_bias");
    k->sr = ug_case_input(c, "scale_reciprocal"), k->off = ug_case_input(c, "offset");
    k->qb = ug_case_input(c, "quant_bias"), k->deq = ug_case_input(c, "deq_scale");
    k->hw[0] = ug_case_input(c, "q_norm_weight"), k->hb[0] = ug_case_input(c, "q_norm_bias");
    k->hw[1] = ug_case_input(c, "k_norm_weight"), k->hb[1] = ug_case_input(c, "k_norm_bias");
    k->cos = ug_case_input(c, "cos"), k->sin = ug_case_input(c, "sin");
    k->w8 = ug_gpq_weight_i8(ug_case_input(c, "qkv_weight"));
    k->acc = malloc(k->cols * sizeof *k->acc);
    k->sums = malloc(k->cols * sizeof *k->sums);
    k->r = malloc((2 * k->d.H + k->d.D) * sizeof *k->r);
    k->head = k->r ? k->r + k->d.H : NULL;
    k->codes = k->r ? k->head + k->d.D : NULL;
    return k->w8 && k->acc && k->sums && k->r ? 0 : -1;
}

int ug_gpq_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    pq_ctx k = {0};
    int rc = ctx_open(&k, c);
    for (size_t t = 0; t < k.T && !rc; t++) {
        size_t mark = ug_ar_mark(ar);
        norm_stage(&k, ar, sel, t);
        code_stage(&k, c, ar, sel, t);
        gemm_stage(&k, c, ar, sel, t);
        head_norm_stage(&k, c, ar, sel, t);
        rope_stage(&k, c, ar, sel, t);
        ug_ar_release(ar, mark);
    }
    free(k.acc), free(k.sums), free(k.r);
    return rc;
}

/* Token rows in the kernel's 8-token tiles; q/k/qk outputs by head (column tile D, and the
 * rotary half R/2 inside it for q and k); hidden-wide rows by 64 lanes. */
void ug_gpq_geometry(const ug_case *c, int out, ug_geom *g)
{
    size_t D = (size_t)ug_p_int(&c->params, "head_dim"), R = (size_t)ug_p_int(&c->params, "rotary_dim");
    size_t col_tile = out == O_RES || out == O_N || out == O_N8 ? 64 : out == O_Q || out == O_K ? R / 2 : D;
    ug_geom_last_dim(&c->out[out], PQ_TOKEN_TILE, col_tile, g);
}

/* Scratch for the case memory estimate: the kernel's fp32 rows and vectors (x, residual, r, n, codes and the four per-channel
 * vectors: 9 H floats), its GEMM row, accumulators, bias, scale and heads (5 cols
 * floats); the oracle's r row, head, codes and sums (int32 and int64). */
double ug_gpq_scratch(const ug_params *P)
{
    ug_gpq_dims d = ug_gpq_dims_read(P);
    double H = (double)d.H, cols = (double)ug_gpq_cols(&d);
    return 4 * (9 * H + 5 * cols) + 8 * (2 * H + d.D) + 12 * cols;
}
