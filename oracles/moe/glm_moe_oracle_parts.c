/* glm_moe_oracle_parts.c — the exact GLM-4.5 MoE parts (glm_moe_oracle_parts.h): the router's staged
 * id/weight rule (moved here from glm_select_experts.c unchanged), the int8 shared
 * expert's four staged stages (moved from glm_ffn_shared_expert_quant.c unchanged, with
 * its outputs found by name so that a fused op can carry them among its own) and the
 * routed SwiGLU activation (moe_grouped_gemm's), the gate's dot (glm_gate's) and the fused
 * ops' front and scratch (moved from glm_moe_fusion.c and glm_moe_fusion_mix.c). Rules: see
 * those ops' oracle headers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/moe/glm_moe_oracle_parts.h"
#include "oracles/mp/int8_dot.h"
#include "oracles/verdict.h"

/* The gate's logits a block of GATE_TOKENS tokens at a time against every expert: one
 * ug_dot_d_rows on W^T (transposed once), whose numbers are ug_dot_d's per logit bit for bit
 * in every arithmetic, but as vector loops over 64 experts with each chunk of W^T serving
 * the block's tokens from cache, where one dot per logit is a latency-bound chain (the
 * naive bf16 sums most: 4.5x the certified pass; fewer than 64 experts or 65 terms take
 * ug_dot_d_rows' column forms, still vector loops). Only where the numbers are doubles and
 * the selection is dense (--sample all); -1 when not taken (or out of memory). */
#define GATE_TOKENS 32
static int gate_blocked(ug_ar *ar, const ug_selection *sel, int o, const double *x, const double *w, size_t h, size_t E)
{
    size_t n = sel->n[o], T = n ? sel->idx[o][n - 1] / E + 1 : 0;
    if (!ug_ar_plain(ar) || n == 0 || n * 2 < T * E) return -1;
    double *wt = malloc(h * E * sizeof *wt);
    ug_num *out = malloc(GATE_TOKENS * E * sizeof *out);
    if (!wt || !out) {
        free(wt), free(out);
        return -1;
    }
    for (size_t e = 0; e < E; e++)
        for (size_t i = 0; i < h; i++) wt[i * E + e] = w[e * h + i];
    for (size_t k = 0, t0 = 0; t0 < T; t0 += GATE_TOKENS) {
        size_t m = T - t0 < GATE_TOKENS ? T - t0 : GATE_TOKENS;
        ug_dot_d_rows(ar, x + t0 * h, h, m, wt, E, h, E, out, E);
        for (; k < n && sel->idx[o][k] / E < t0 + m; k++) ug_ar_emit(ar, o, k, out[sel->idx[o][k] - t0 * E]);
    }
    free(wt), free(out);
    return 0;
}

void gmoe_gate_emit(ug_ar *ar, const ug_selection *sel, int o, const double *x, const double *w, size_t h, size_t E)
{
    if (!gate_blocked(ar, sel, o, x, w, h, E)) return;
    for (size_t k = 0; k < sel->n[o];) {
        size_t t = sel->idx[o][k] / E, mark = ug_ar_mark(ar);
        for (; k < sel->n[o] && sel->idx[o][k] / E == t; k++)
            ug_ar_emit(ar, o, k, ug_dot_d(ar, x + t * h, 1, w + (sel->idx[o][k] % E) * h, 1, h));
        ug_ar_release(ar, mark);
    }
}

void gmoe_router_read(const ug_params *P, gmoe_router *p)
{
    p->T = ug_p_int(P, "tokens");
    p->E = ug_p_int(P, "experts");
    p->k = ug_p_int(P, "top_k");
    p->ng = ug_p_int(P, "num_expert_group");
    p->tg = ug_p_int(P, "topk_group");
    p->per = p->E / p->ng;
    p->top2 = ug_p_is(P, "group_score", "top2_sum");
    p->renorm = (int)ug_p_int(P, "renormalize");
    p->rsf = ug_p_num(P, "routed_scaling_factor");
}

int gmoe_router_check(const ug_params *P, const char *op, char *err, size_t errlen)
{
    gmoe_router p;
    gmoe_router_read(P, &p);
    const char *why = NULL, *name = NULL;
    if (p.E % p.ng)
        name = "num_expert_group", why = "does not divide experts into equal groups";
    else if (p.tg > p.ng)
        name = "topk_group", why = "exceeds num_expert_group";
    else if (p.k > p.E)
        name = "top_k", why = "exceeds experts";
    else if (p.k > p.tg * p.per)
        name = "top_k", why = "exceeds the experts of topk_group groups";
    if (!name) return 0;
    snprintf(err, errlen, "%s: param %s %s (experts %ld, top_k %ld, num_expert_group %ld, topk_group %ld)", op, name,
             why, p.E, p.k, p.ng, p.tg);
    return -2;
}

/* a ranks before b (index ia, ib): NaN first (as torch.topk), then larger, ties to the
 * lower index. */
static int before(double a, long ia, double b, long ib)
{
    if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ia < ib);
    return a > b || (a == b && ia < ib);
}

/* The n best of v over the candidates cand[0..nc), in rank order, into out. */
static void top_n(const double *v, const long *cand, long nc, long n, long *out)
{
    unsigned char used[GMOE_MAX_E] = {0};
    for (long r = 0; r < n; r++) {
        long best = -1;
        for (long i = 0; i < nc; i++)
            if (!used[i] && (best < 0 || before(v[cand[i]], cand[i], v[cand[best]], cand[best]))) best = i;
        used[best] = 1;
        out[r] = cand[best];
    }
}

/* A token's scores (logits lg) in double (the decision only): s, b, group scores G; returns d. */
static double token_scores(const gmoe_router *p, const double *lg, const double *bias, double *s, double *b, double *G)
{
    double amax = 0;
    for (long e = 0; e < p->E; e++) {
        s[e] = 1.0 / (1.0 + exp(-lg[e]));
        b[e] = s[e] + bias[e];
        if (isfinite(b[e])) amax = fmax(amax, fabs(b[e]));
    }
    long all[GMOE_MAX_E], two[2];
    for (long e = 0; e < p->E; e++) all[e] = e;
    for (long g = 0; g < p->ng; g++) {
        long n = p->top2 && p->per > 1 ? 2 : 1;
        top_n(b, all + g * p->per, p->per, n, two);
        G[g] = n == 2 ? b[two[0]] + b[two[1]] : b[two[0]];
    }
    return ldexp(1.0 + amax, -20);
}

/* The exact choice: topk_group groups by G, then top_k of b over their experts. */
static void exact_choice(const gmoe_router *p, const double *b, const double *G, const unsigned char *keep_in,
                         long *ids)
{
    long groups[GMOE_MAX_G] = {0}, kept[GMOE_MAX_G] = {0}, cand[GMOE_MAX_E], nc = 0;
    unsigned char keep[GMOE_MAX_G] = {0};
    if (keep_in)
        memcpy(keep, keep_in, (size_t)p->ng);
    else {
        for (long g = 0; g < p->ng; g++) groups[g] = g;
        top_n(G, groups, p->ng, p->tg, kept);
        for (long i = 0; i < p->tg; i++) keep[kept[i]] = 1;
    }
    for (long e = 0; e < p->E; e++)
        if (keep[e / p->per]) cand[nc++] = e;
    top_n(b, cand, nc, p->k, ids);
}

static int has_nan(const double *v, long n)
{
    for (long i = 0; i < n; i++)
        if (isnan(v[i])) return 1;
    return 0;
}

/* A score's finite stand-in beside a NaN (legal_ids): NaN 2^1000, +-inf +-2^999. */
static double stand_in(double x) { return isnan(x) ? 0x1p1000 : isinf(x) ? copysign(0x1p999, x) : x; }

/* 1 when the kernel's ids kid are a legal top-k under the tie rule (file header). */
static int legal_ids(const gmoe_router *p, const double *b, const double *G, double d, const int *kid, const long *ex)
{
    for (long j = 0; j < p->k; j++) {
        if (kid[j] < 0 || kid[j] >= p->E) return 0;
        for (long i = 0; i < j; i++)
            if (kid[i] == kid[j]) return 0;
    }
    if (has_nan(b, p->E) || has_nan(G, p->ng)) {
        /* NaN ranks above every number and NaNs tie with each other: NaN stands in as 2^1000,
         * +-inf as +-2^999, far beyond any finite score and its bound d, so the order is
         * torch.topk's (NaN > +inf > finite > -inf), equal infinities tie, and the tie rule
         * still decides among the finite scores (sigmoid rounds many to one fp32 value). */
        double bn[GMOE_MAX_E], Gn[GMOE_MAX_G];
        for (long e = 0; e < p->E; e++) bn[e] = stand_in(b[e]);
        for (long g = 0; g < p->ng; g++) Gn[g] = stand_in(G[g]);
        return legal_ids(p, bn, Gn, d, kid, ex);
    }
    long groups[GMOE_MAX_G] = {0}, kept[GMOE_MAX_G] = {0}, ns = 0, os[GMOE_MAX_K];
    for (long g = 0; g < p->ng; g++) groups[g] = g;
    top_n(G, groups, p->ng, p->tg, kept);
    double gk = G[kept[p->tg - 1]], dg = 3 * d;
    unsigned char in[GMOE_MAX_G] = {0};
    for (long g = 0; g < p->ng; g++) /* groups clearly above the deciding one are kept by every kernel */
        if (G[g] > gk + dg) in[g] = 1, ns++;
    for (long j = 0; j < p->k; j++) {
        long g = kid[j] / p->per;
        if (in[g]) continue;
        if (G[g] < gk - dg) return 0; /* a group no correct kernel keeps */
        in[g] = 1, ns++;
    }
    if (ns > p->tg) return 0;
    while (ns < p->tg) { /* the other kept groups: the borderline ones with the weakest experts */
        long pick = -1;
        double pick_max = INFINITY;
        for (long g = 0; g < p->ng; g++) {
            if (in[g] || G[g] < gk - dg) continue;
            double m = -INFINITY;
            for (long e = g * p->per; e < (g + 1) * p->per; e++) m = fmax(m, b[e]);
            if (pick < 0 || m < pick_max) pick = g, pick_max = m;
        }
        in[pick] = 1, ns++;
    }
    exact_choice(p, b, G, in, os);
    double sc[GMOE_MAX_E];
    int oi[GMOE_MAX_K];
    for (long e = 0; e < p->E; e++) sc[e] = b[e];
    for (long j = 0; j < p->k; j++) oi[j] = (int)os[j];
    return ug_topk_set_ok(kid, oi, (int)p->k, sc, (int)p->E, d);
}

/* The ids the oracle emits for token t (file header, staged rule). */
static void token_ids(const gmoe_router *p, const double *lg, const double *bias, const ug_tensor *ko, long t,
                      long *emit)
{
    double s[GMOE_MAX_E], b[GMOE_MAX_E], G[GMOE_MAX_G];
    double d = token_scores(p, lg, bias, s, b, G);
    long ex[GMOE_MAX_K];
    int kid[GMOE_MAX_K];
    exact_choice(p, b, G, NULL, ex);
    for (long j = 0; j < p->k; j++) kid[j] = (int)ug_tload(ko, (size_t)(t * p->k + j));
    if (legal_ids(p, b, G, d, kid, ex)) {
        for (long j = 0; j < p->k; j++) emit[j] = kid[j];
        return;
    }
    unsigned char taken[GMOE_MAX_K] = {0};
    for (long j = 0; j < p->k; j++) { /* a kernel id in the exact set keeps its place */
        emit[j] = -1;
        for (long i = 0; i < p->k; i++)
            if (!taken[i] && ex[i] == kid[j]) emit[j] = ex[i], taken[i] = 1, i = p->k;
    }
    for (long j = 0, i = 0; j < p->k; j++) {
        if (emit[j] >= 0) continue;
        while (taken[i]) i++;
        emit[j] = ex[i], taken[i] = 1;
    }
}

/* 1 when every chosen expert's s = sigmoid(logit) is below fp32's smallest normal 2^-126
 * (every chosen logit below -126 ln 2; sigmoid(x) < e^x), -inf included: a device's fp32 s
 * may then be subnormal or flushed to 0 for each, so its renormalised weights may be 0/0
 * (the semantics). A NaN logit is not below it. */
static int chosen_s_subnormal(const gmoe_router *p, const double *lg, const long *emit)
{
    for (long i = 0; i < p->k; i++)
        if (!(lg[emit[i]] < -87.336544750553102)) return 0; /* -126 ln 2: no fp32 logit lies between */
    return p->k > 0;
}

/* Token t's logits row as exact doubles. */
static void logits_row(const gmoe_router *p, const ug_tensor *logits, long t, double *lg)
{
    for (long e = 0; e < p->E; e++) lg[e] = ug_tload(logits, (size_t)(t * p->E + e));
}

void gmoe_router_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, const gmoe_router *p,
                      const ug_tensor *logits, int o_w, int o_ids)
{
    const double *bias = ug_case_input(c, "e_score_correction_bias")->values;
    const ug_tensor *ko = &c->out[o_ids];
    long emit[GMOE_MAX_K];
    ug_num w[GMOE_MAX_K];
    double lg[GMOE_MAX_E];
    int outs[2] = {o_w, o_ids};
    for (int q = 0; q < 2; q++) { /* 0 topk_weights, 1 topk_ids */
        int o = outs[q];
        if (o < 0) continue;
        long have = -1;
        size_t mark = ug_ar_mark(ar);
        for (size_t pos = 0; pos < sel->n[o]; pos++) {
            long t = (long)(sel->idx[o][pos] / (size_t)p->k), j = (long)(sel->idx[o][pos] % (size_t)p->k);
            if (t != have) {
                ug_ar_release(ar, mark);
                logits_row(p, logits, t, lg);
                token_ids(p, lg, bias, ko, t, emit);
                if (q == 0) {
                    for (long i = 0; i < p->k; i++) w[i] = ug_sigmoid(ar, ug_c(ar, lg[emit[i]]));
                    ug_num total = ug_sum(ar, w, (size_t)p->k), rsf = ug_c(ar, p->rsf);
                    int may_be_0_over_0 = p->renorm && chosen_s_subnormal(p, lg, emit);
                    for (long i = 0; i < p->k; i++) /* a kernel's NaN there is its 0/0: legal (the semantics) */
                        w[i] = may_be_0_over_0 && o_w >= 0 && isnan(ug_tload(&c->out[o_w], (size_t)(t * p->k + i)))
                                   ? ug_c(ar, NAN)
                                   : ug_mul(ar, p->renorm ? ug_div(ar, w[i], total) : w[i], rsf);
                }
                have = t;
            }
            ug_ar_emit(ar, o, pos, q == 0 ? w[j] : ug_c(ar, (double)emit[j]));
        }
        ug_ar_release(ar, mark);
    }
}

static int any_selected(const ug_selection *sel, int o, size_t lo, size_t hi)
{
    size_t b, e;
    ug_selection_range(sel, o, lo, hi, &b, &e);
    return b < e;
}

/* The value code v/s is judged against: v/s itself, or where v/s is exactly halfway between two
 * integers (sd, s's value, exact: a tie is representable in fp32, so a correct device's one
 * division forms it exactly), the code RNE gives (the even one, saturated): a flip there is not
 * legal (docs/STANDARDS.md "exact ties"). sd NaN: no tie is decided (s is the exact amax/127). */
static ug_num code_value(ug_ar *ar, double v, ug_num s, double sd)
{
    double code;
    return ug_int8_exact_tie(v, sd, &code) ? ug_c(ar, code) : ug_div(ar, ug_c(ar, v), s);
}

/* Emits the selected codes of row `row` (n values v): v/s (code_value), 0 in a zero or non-finite row. */
static void codes_emit(ug_ar *ar, const ug_selection *sel, int o, size_t row, const double *v, size_t n, int zero,
                       ug_num s, double sd)
{
    size_t b, e;
    ug_selection_range(sel, o, row * n, (row + 1) * n, &b, &e);
    for (; b < e; b++) ug_ar_emit(ar, o, b, zero ? ug_c(ar, 0.0) : code_value(ar, v[sel->idx[o][b] - row * n], s, sd));
}

/* DynQuant of one row v[0..n) (exact values: an input row or the kernel's exported a). The
 * scale is judged against the exact amax/127; the codes against v/scale_kernel and (view)
 * v/fp32(amax/127). A kernel scale that is not positive and finite is replaced by the exact
 * one for its codes (the scale compare reports it). */
static void quant_row(const ug_case *c, ug_ar *ar, const ug_selection *sel, const gmoe_quant_outs *q, const double *v,
                      size_t n, size_t row)
{
    double amax = 0.0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            finite = 0;
        else if (fabs(v[i]) > amax)
            amax = fabs(v[i]); /* exact */
    }
    size_t b, e;
    ug_selection_range(sel, q->scales, row, row + 1, &b, &e);
    ug_num exact = finite ? ug_div(ar, ug_c(ar, amax), ug_c(ar, 127.0)) : ug_c(ar, NAN);
    if (b < e) ug_ar_emit(ar, q->scales, b, exact);
    int zero = !finite || amax == 0.0;                           /* the semantics: codes 0 */
    double sk = ug_tload(&c->out[q->scales], row);               /* staged: the kernel's scale */
    ug_num own = zero ? exact : ug_round(ar, exact, UG_DT_FP32); /* rounds: the scale as exported */
    int sk_ok = sk > 0 && isfinite(sk);
    codes_emit(ar, sel, q->codes, row, v, n, zero, sk_ok ? ug_c(ar, sk) : exact, sk_ok ? sk : NAN);
    codes_emit(ar, sel, q->view, row, v, n, zero, own,
               zero ? NAN : ug_v(own)); /* own: an fp32 value, exact in double */
}

/* Column col of the [rows, cols] int8 weight t as a contiguous reduction (the strided walk
 * was 40 % of a production case's time): transposed into dst [cols][rows] on first use,
 * with the 64 columns of its block (ready[b]: block b done), read from t's int8 storage, so
 * a case pays for the columns its selection reaches, not for the whole weight. */
#define GMOE_TBLOCK 64
static size_t gmoe_blocks(size_t cols) { return (cols + GMOE_TBLOCK - 1) / GMOE_TBLOCK; }

static const int8_t *col_t(const ug_tensor *t, int8_t *dst, unsigned char *ready, size_t col)
{
    size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1], b = col / GMOE_TBLOCK;
    if (!ready[b]) {
        size_t c0 = b * GMOE_TBLOCK, w = cols - c0 < GMOE_TBLOCK ? cols - c0 : GMOE_TBLOCK;
        const int8_t *src = t->data;
        int8_t tile[GMOE_TBLOCK][GMOE_TBLOCK]; /* 64 rows at a time: each column written 64 bytes at once */
        for (size_t r0 = 0; r0 < rows; r0 += GMOE_TBLOCK) {
            size_t hr = rows - r0 < GMOE_TBLOCK ? rows - r0 : GMOE_TBLOCK;
            for (size_t r = 0; r < hr; r++)
                for (size_t c = 0; c < w; c++) tile[c][r] = src[(r0 + r) * cols + c0 + c];
            for (size_t c = 0; c < w; c++) memcpy(dst + (c0 + c) * rows + r0, tile[c], hr);
        }
        ready[b] = 1;
    }
    return dst + col * rows;
}

/* Row `row` (n codes) of the kernel's int8 output o. */
static void codes_row(const ug_case *c, int o, size_t row, size_t n, int8_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = (int8_t)ug_tload(&c->out[o], row * n + i);
}

/* Whether a token's selected elements (sel of a row of cols) are many enough that one
 * row-order pass over the whole weight (cols int dots, vectorised, no transpose) is cheaper
 * than a dot per element down the transposed columns. */
static int whole_row(size_t sel, size_t cols) { return 16 * sel >= cols; }

/* k->dots[col] = k->codes[0..n) . t[:, col] for every column of the [n, cols] int8 weight t,
 * in one pass over its rows (exact; int8_dot.h). */
static void row_dots(const gmoe_shared *k, const ug_tensor *t, size_t n, size_t cols)
{
    size_t col0 = 0;
    for (size_t j = 0; j < n; j++) k->row[j] = k->codes[j];
    ug_int8_col_dots(k->row, t->data, cols, n, &col0, 1, cols, k->acc, k->dots);
}

/* gu[t,col] from the int dot of the kernel's codes of token t with w13's column col and its
 * scale sx, rounded to bf16. The int32 sum the specification makes exact (|sum| < 2^31 by
 * the hidden bound) is an exact constant in every arithmetic, so no bound is charged for it
 * (the same for down_of's). */
static ug_num gu_of(const gmoe_shared *k, ug_ar *ar, int64_t dot, ug_num sx, size_t col)
{
    ug_num v = ug_mul(ar, ug_mul(ar, ug_c(ar, (double)dot), ug_c(ar, ug_tload(k->s13, col))), sx);
    return ug_round(ar, v, UG_DT_BF16); /* rounds: the golden's bf16 matmul output */
}

/* The int dot of k->codes (h of them) with w13's column col, down its transpose. */
static int64_t w13_dot(const gmoe_shared *k, size_t col)
{
    return ug_int8_dot(k->codes, col_t(k->w13, k->w13t, k->ready, col), k->h);
}

/* Stage 2: the selected elements of a in row t, from the kernel's x_i8 and x_scale. */
static void a_emit(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t b, e, I = k->I;
    ug_selection_range(sel, k->o_a, t * I, (t + 1) * I, &b, &e);
    if (b == e) return;
    codes_row(c, k->xq.codes, t, k->h, k->codes);
    ug_num sx = ug_c(ar, ug_tload(&c->out[k->xq.scales], t));
    int whole = whole_row(e - b, 2 * I);
    if (whole) row_dots(k, k->w13, k->h, 2 * I);
    for (; b < e; b++) {
        size_t i = sel->idx[k->o_a][b] - t * I, mark = ug_ar_mark(ar);
        ug_num g = gu_of(k, ar, whole ? k->dots[i] : w13_dot(k, i), sx, i);
        ug_num u = gu_of(k, ar, whole ? k->dots[I + i] : w13_dot(k, I + i), sx, I + i);
        ug_ar_emit(ar, k->o_a, b, ug_round(ar, ug_mul(ar, ug_silu(ar, g), u), UG_DT_BF16)); /* rounds: bf16 a */
        ug_ar_release(ar, mark);
    }
}

ug_num gmoe_shared_down_row(const gmoe_shared *k, const ug_case *c, ug_ar *ar, size_t t)
{
    codes_row(c, k->aq.codes, t, k->I, k->codes);
    return ug_c(ar, ug_tload(&c->out[k->aq.scales], t));
}

/* (int dot) * w2_scale[j] * sa. */
static ug_num down_of(const gmoe_shared *k, ug_ar *ar, ug_num sa, size_t j, int64_t dot)
{
    return ug_mul(ar, ug_mul(ar, ug_c(ar, (double)dot), ug_c(ar, ug_tload(k->s2, j))), sa);
}

ug_num gmoe_shared_down(const gmoe_shared *k, ug_ar *ar, ug_num sa, size_t j)
{
    return down_of(k, ar, sa, j,
                   ug_int8_dot(k->codes, col_t(k->w2, k->w2t, k->ready + gmoe_blocks(2 * k->I), j), k->I));
}

void gmoe_shared_out_emit(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, int o, size_t t)
{
    size_t b, e, h = k->h;
    ug_selection_range(sel, o, t * h, (t + 1) * h, &b, &e);
    if (b == e) return;
    ug_num sa = gmoe_shared_down_row(k, c, ar, t);
    int whole = whole_row(e - b, h);
    if (whole) row_dots(k, k->w2, k->I, h);
    for (; b < e; b++) {
        size_t j = sel->idx[o][b] - t * h, mark = ug_ar_mark(ar);
        ug_ar_emit(ar, o, b, whole ? down_of(k, ar, sa, j, k->dots[j]) : gmoe_shared_down(k, ar, sa, j));
        ug_ar_release(ar, mark);
    }
}

/* Stages 1 and 3 of token t: DynQuant of the input row and of the kernel's exported a. */
static void quant_stages(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    double *row = k->row;
    const gmoe_quant_outs *q[2] = {&k->xq, &k->aq};
    for (int s = 0; s < 2; s++) {
        size_t n = s ? k->I : k->h;
        if (!any_selected(sel, q[s]->codes, t * n, (t + 1) * n) && !any_selected(sel, q[s]->scales, t, t + 1) &&
            !any_selected(sel, q[s]->view, t * n, (t + 1) * n))
            continue;
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < n; i++) row[i] = s ? ug_tload(&c->out[k->o_a], t * n + i) : k->x->values[t * n + i];
        quant_row(c, ar, sel, q[s], row, n, t);
        ug_ar_release(ar, mark);
    }
}

void gmoe_shared_front(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    quant_stages(k, c, ar, sel, t);
    a_emit(k, c, ar, sel, t);
}

int gmoe_shared_open(gmoe_shared *k, const ug_case *c)
{
    const ug_params *P = &c->params;
    *k = (gmoe_shared){(size_t)ug_p_int(P, "tokens"),
                       (size_t)ug_p_int(P, "hidden"),
                       (size_t)ug_p_int(P, "intermediate"),
                       ug_case_input(c, "x"),
                       ug_case_input(c, "w13"),
                       ug_case_input(c, "w13_scale"),
                       ug_case_input(c, "w2"),
                       ug_case_input(c, "w2_scale"),
                       {ug_case_judged_find(c, "x_i8"), ug_case_judged_find(c, "x_scale"),
                        ug_case_judged_find(c, "x_i8@oracle_scale")},
                       {ug_case_judged_find(c, "a_i8"), ug_case_judged_find(c, "a_scale"),
                        ug_case_judged_find(c, "a_i8@oracle_scale")},
                       ug_case_judged_find(c, "a")};
    size_t h = k->h, I = k->I;
    k->row = malloc((h > I ? h : I) * sizeof *k->row);
    k->w13t = malloc(3 * I * h + (h > I ? h : I));
    k->ready = calloc(gmoe_blocks(2 * I) + gmoe_blocks(h), 1); /* w13's column blocks, then w2's */
    size_t nd = 2 * I > h ? 2 * I : h;
    k->acc = malloc(nd * sizeof *k->acc), k->dots = malloc(nd * sizeof *k->dots);
    if (!k->row || !k->w13t || !k->ready || !k->acc || !k->dots) {
        gmoe_shared_close(k);
        return -1;
    }
    k->w2t = k->w13t + 2 * I * h, k->codes = k->w2t + I * h;
    return 0;
}

void gmoe_shared_close(gmoe_shared *k)
{
    free(k->row), free(k->w13t), free(k->ready), free(k->acc), free(k->dots);
    k->row = NULL, k->w13t = NULL, k->ready = NULL, k->acc = NULL, k->dots = NULL;
}

ug_num gmoe_swiglu_bf16(ug_ar *ar, const double *x, const double *w1, const double *w3, size_t stride, size_t h)
{
    ug_num g = ug_dot_d(ar, x, 1, w1, stride, h), u = ug_dot_d(ar, x, 1, w3, stride, h);
    ug_num a = ug_round(ar, ug_mul(ar, ug_silu(ar, g), u), UG_DT_BF16); /* rounds: the spec's bf16 activation */
    if (!isinf(a.e)) return a;
    /* The bound left the rounding ambiguous (certified arithmetic), which would send the
     * token's whole output row to MPFR: mostly g or u cancelling (|g| far below the bound of
     * a long sum). Bf16 products usually sum exactly in double, and then the tracked sums
     * settle it (in the other arithmetics the tracked dot is the same dot: the same number). */
    g = ug_dot_d_tracked(ar, x, 1, w1, stride, h), u = ug_dot_d_tracked(ar, x, 1, w3, stride, h);
    return ug_round(ar, ug_mul(ar, ug_silu(ar, g), u), UG_DT_BF16); /* rounds: the spec's bf16 activation */
}

void gmoe_act_row(ug_ar *ar, const double *x, const double *w1, const double *w3, size_t h, size_t I, ug_num *g,
                  ug_num *u, ug_num *a)
{
    ug_dot_d_rows(ar, x, h, 1, w1, I, h, I, g, I);
    ug_dot_d_rows(ar, x, h, 1, w3, I, h, I, u, I);
    for (size_t i = 0; i < I; i++) {
        a[i] = ug_round(ar, ug_mul(ar, ug_silu(ar, g[i]), u[i]), UG_DT_BF16); /* rounds: the spec's bf16 a */
        if (isinf(a[i].e)) a[i] = gmoe_swiglu_bf16(ar, x, w1 + i, w3 + i, I, h);
    }
}

/* ---- routed experts ---- */

int gmoe_routed_open(gmoe_routed *r, const ug_case *c)
{
    const ug_params *P = &c->params;
    *r = (gmoe_routed){.T = (size_t)ug_p_int(P, "tokens"),
                       .h = (size_t)ug_p_int(P, "hidden"),
                       .E = (size_t)ug_p_int(P, "experts"),
                       .k = (size_t)ug_p_int(P, "top_k"),
                       .I = (size_t)ug_p_int(P, "intermediate"),
                       .x = ug_case_input(c, "x")->values,
                       .w1 = ug_case_input(c, "expert_w1")->values,
                       .w3 = ug_case_input(c, "expert_w3")->values,
                       .w2 = ug_case_input(c, "expert_w2")->values,
                       .o_act = ug_case_judged_find(c, "act"),
                       .o_w = ug_case_judged_find(c, "topk_weights"),
                       .o_ids = ug_case_judged_find(c, "topk_ids")};
    r->act = malloc(r->k * r->I * sizeof *r->act);
    r->dots = malloc((3 * r->I + (r->k + 1) * r->h) * sizeof *r->dots);
    r->row = r->dots ? r->dots + 3 * r->I + r->k * r->h : NULL;
    if (r->act && r->dots) return 0;
    gmoe_routed_close(r);
    return -1;
}

void gmoe_routed_close(gmoe_routed *r)
{
    free(r->act), free(r->dots);
    r->act = NULL, r->dots = NULL, r->row = NULL;
}

/* The kernel's id of token t, slot j; -1 outside [0, E). */
static long kernel_id(const gmoe_routed *r, const ug_case *c, size_t t, size_t j)
{
    double v = ug_tload(&c->out[r->o_ids], t * r->k + j);
    return v >= 0 && v < (double)r->E ? (long)v : -1;
}

/* Slot j's act row of token t whole (elements b .. b+I-1 of o_act's selection), expert id. */
static void act_row_emit(const gmoe_routed *r, ug_ar *ar, size_t t, long id, size_t b)
{
    size_t h = r->h, I = r->I;
    ug_num *g = r->dots, *u = g + I, *a = u + I;
    gmoe_act_row(ar, r->x + t * h, r->w1 + (size_t)id * h * I, r->w3 + (size_t)id * h * I, h, I, g, u, a);
    for (size_t i = 0; i < I; i++) ug_ar_emit(ar, r->o_act, b + i, a[i]);
}

void gmoe_routed_act_emit(const gmoe_routed *r, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t b, e, kI = r->k * r->I, hI = r->h * r->I;
    ug_selection_range(sel, r->o_act, t * kI, (t + 1) * kI, &b, &e);
    if (ug_ar_plain(ar) && e - b == kI) { /* the token's act whole: a row per slot */
        for (size_t j = 0; j < r->k; j++) {
            long id = kernel_id(r, c, t, j);
            for (size_t i = 0; id < 0 && i < r->I; i++) ug_ar_emit(ar, r->o_act, b + j * r->I + i, ug_c(ar, NAN));
            if (id >= 0) act_row_emit(r, ar, t, id, b + j * r->I);
        }
        return;
    }
    for (; b < e; b++) {
        size_t f = sel->idx[r->o_act][b] - t * kI, j = f / r->I, i = f % r->I, mark = ug_ar_mark(ar);
        long id = kernel_id(r, c, t, j);
        ug_ar_emit(ar, r->o_act, b,
                   id < 0 ? ug_c(ar, NAN)
                          : gmoe_swiglu_bf16(ar, r->x + t * r->h, r->w1 + (size_t)id * hI + i,
                                             r->w3 + (size_t)id * hI + i, r->I, r->h));
        ug_ar_release(ar, mark);
    }
}

void gmoe_routed_token(gmoe_routed *r, const ug_case *c, size_t t)
{
    for (size_t j = 0; j < r->k; j++) {
        r->ids[j] = kernel_id(r, c, t, j);
        r->wt[j] = ug_tload(&c->out[r->o_w], t * r->k + j);
        for (size_t i = 0; i < r->I; i++) r->act[j * r->I + i] = ug_tload(&c->out[r->o_act], (t * r->k + j) * r->I + i);
    }
}

ug_num gmoe_routed_out(const gmoe_routed *r, ug_ar *ar, size_t n)
{
    ug_num terms[GMOE_MAX_K];
    for (size_t j = 0; j < r->k; j++) {
        if (r->ids[j] < 0) return ug_c(ar, NAN);
        const double *w2 = r->w2 + (size_t)r->ids[j] * r->I * r->h + n;
        terms[j] = ug_mul(ar, ug_c(ar, r->wt[j]), ug_dot_d(ar, r->act + j * r->I, 1, w2, r->h, r->I));
    }
    return ug_sum(ar, terms, r->k);
}

int gmoe_routed_out_row(gmoe_routed *r, ug_ar *ar)
{
    if (!ug_ar_plain(ar)) return 0;
    size_t h = r->h, I = r->I;
    ug_num *dots = r->dots + 3 * I, terms[GMOE_MAX_K];
    for (size_t j = 0; j < r->k; j++)
        if (r->ids[j] >= 0) ug_dot_d_cols(ar, r->act + j * I, r->w2 + (size_t)r->ids[j] * I * h, h, I, h, dots + j * h);
    for (size_t n = 0; n < h; n++) {
        size_t j = 0;
        for (; j < r->k && r->ids[j] >= 0; j++) terms[j] = ug_mul(ar, ug_c(ar, r->wt[j]), dots[j * h + n]);
        r->row[n] = j < r->k ? ug_c(ar, NAN) : ug_sum(ar, terms, r->k); /* gmoe_routed_out's numbers */
    }
    return 1;
}

/* ---- the fused ops' front and scratch ---- */

void gmoe_fused_route_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gmoe_router p;
    gmoe_router_read(&c->params, &p);
    int o_lg = ug_case_judged_find(c, "router_logits");
    gmoe_gate_emit(ar, sel, o_lg, ug_case_input(c, "x")->values, ug_case_input(c, "gate_w")->values,
                   (size_t)ug_p_int(&c->params, "hidden"), (size_t)p.E);
    gmoe_router_emit(c, ar, sel, &p, &c->out[o_lg], ug_case_judged_find(c, "topk_weights"),
                     ug_case_judged_find(c, "topk_ids")); /* staged: the kernel's logits */
}

double gmoe_fused_scratch(const ug_params *P, int routed, int shared)
{
    double T = (double)ug_p_int(P, "tokens"), h = (double)ug_p_int(P, "hidden"), E = (double)ug_p_int(P, "experts"),
           k = (double)ug_p_int(P, "top_k"), I = (double)ug_p_int(P, "intermediate");
    double bytes = 4 * (E * h + 2 * h + 4 * E) + 8 * E + 4 * T * h; /* the gate, the fp32 accumulator */
    if (routed) /* ... and the row forms' numbers (gmoe_routed.dots) */
        bytes += 16 * h * I + 4 * (T * k * (h + I) + 2 * h + I) + 8 * k * I + UG_NUM_BYTES * (3 * I + (k + 1) * h);
    if (shared) bytes += 17 * h * I + 4 * (6 * I + 4 * h) + 2 * (h + I) + 8 * (h + I);
    return bytes;
}
