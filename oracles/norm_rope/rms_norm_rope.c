/* rms_norm_rope.c — param checks, table builder and exact oracle of rms_norm_rope
 * (Qwen3): per-head RMSNorm of q and k, then NeoX rotary on pairs (i, i+D/2):
 *     n = x * gamma / sqrt(mean(x^2) + eps)          per head row x[0..D), D = 128
 *     y[i] = n[i]*cos[t,i] - n[i+D/2]*sin[t,i],  y[i+D/2] = n[i+D/2]*cos[t,i] + n[i]*sin[t,i]
 * eps is an fp32 attribute. cos/sin are inputs [T, D/2] in the case dtype, built for one
 * position per token (random in [0, max_pos), as in a batch of decode tokens from
 * different sequences) with theta = pos * base^(-2i/D) (rope_table.h). The spec rounds
 * only at the outputs: the oracle rotates the exact normed row. x*gamma*cos is exact in
 * double (at most 33 significant bits), so each output is rstd times an exact two-term
 * dot product (in CERT through the inline certified arithmetic, mp/cert_inline.h: the same
 * values and bounds as ug_mul and ug_dot_d, no interpreter call per element; the row's
 * rstd stays one engine evaluation). Special values follow IEEE rules through these formulas (the semantics text).
 *
 * Primary standard: certified (docs/STANDARDS.md "Which rule carries each op's precision claim").
 * Stored beside it: pypto 1e-3 / 1e-3 (docs/STANDARDS.md "rms_norm_rope (fp16)") for both dtypes,
 * with the default failure budget 0.005. For fp16 one output ulp (<= 2^-10 |g|) is always
 * within rtol, so a correct kernel fails no element; for bf16 one ulp is up to 2^-7 |g|,
 * so an element whose rounding a correct fp32 kernel legitimately flips fails the element
 * rule once |g| exceeds about 0.14 — the 0.005 budget absorbs those rare flips (about
 * 1e-4 of elements), while every mutant fails far more. */
#include <stdio.h>
#include <stdlib.h>

#include "core/philox.h"
#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/norm_rope/rope_table.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

/* What ranges cannot say: d even, base strictly inside (1, 1e12). */
static int check(const ug_params *P, char *err, size_t errlen)
{
    return ug_rope_check(P, "rms_norm_rope", err, errlen) ? -2 : 0;
}

/* Fills cos/sin [T, D/2], one seeded position per token in [0, max_pos). */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    const ug_rms_norm_rope_params *params = UG_P(rms_norm_rope, &c->params);
    long tok = params->t, max_pos = params->max_pos;
    long *pos = malloc((size_t)tok * sizeof *pos);
    if (!pos) return -1;
    for (long i = 0; i < tok; i++) {
        uint32_t w[4];
        ug_rng_words(c->spec.seed, 0x706f73u /* "pos" */, (uint64_t)i, 0, w);
        pos[i] = (long)(w[0] % (uint32_t)max_pos);
    }
    ug_rope_fill_table(ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"), pos, (size_t)tok,
                       (size_t)params->d / 2, params->base);
    free(pos);
    return 0;
}

/* CERT, a row selected whole, tables held as doubles: every y_j of the row at once, into yv, ye
 * (the element loop's values and bounds: ug_cv_dot2 is its two-term ug_cv_dot_d, lane by lane,
 * and ug_cv_scale_row its ug_cv_mul by rstd). w: half + 2*d doubles of scratch. */
static void whole_row(const double *xg, size_t half, const double *cs, const double *sn, ug_num rstd, double *w,
                      double *yv, double *ye)
{
    double *nsn = w, *dv = w + half, *de = dv + 2 * half;
    for (size_t i = 0; i < half; i++) nsn[i] = -sn[i]; /* exact */
    ug_cv_dot2(xg, xg + half, cs, nsn, half, dv, de);               /* j < D/2: xg_i*c - xg_{i+h}*s */
    ug_cv_dot2(xg, xg + half, sn, cs, half, dv + half, de + half); /* j >= D/2: xg_i*s + xg_{i+h}*c */
    ug_cv_scale_row(ug_cv_of(rstd), dv, de, 2 * half, yv, ye);
}

/* Emits the selected elements of output o (x [T,H,D], its gamma) row by row. */
static int oracle_tensor(const ug_case *c, ug_ar *ar, const ug_selection *sel, int o, const ug_tensor *x,
                         const ug_tensor *gm)
{
    const ug_tensor *ct = ug_case_input(c, "cos"), *st = ug_case_input(c, "sin");
    const ug_rms_norm_rope_params *params = UG_P(rms_norm_rope, &c->params);
    double eps = params->eps; /* the fp32 value */
    ug_ar_sink *sink = ug_ar_cert_sink(ar, o); /* CERT: the inline path */
    unsigned long unsure = 0;
    size_t d = (size_t)params->d, half = d / 2, heads = (size_t)x->shape[1];
    double *xr = malloc((d * 6 + half) * sizeof *xr), *xg = xr + d, *yv = xg + d, *ye = yv + d; /* yv, ye: a whole row's values, bounds */
    double *w = ye + d; /* whole_row's scratch */
    int tables = ct->values && st->values;
    if (!xr) return -1;
    for (size_t k = 0; k < sel->n[o];) {
        size_t row = sel->idx[o][k] / d, tok = row / heads, mark = ug_ar_mark(ar);
        for (size_t i = 0; i < d; i++) {
            xr[i] = ug_tload(x, row * d + i);
            xg[i] = xr[i] * ug_tload(gm, i); /* exact: <= 22 significant bits */
        }
        ug_num ms = ug_div(ar, ug_dot_d(ar, xr, 1, xr, 1, d), ug_c(ar, (double)d));
        ug_num rstd = ug_rsqrt(ar, ug_add(ar, ms, ug_c(ar, eps)));
        size_t end = sink && ug_sel_is_run(sel, o, k, row * d, d) ? k + d : 0; /* a whole row: no division per element */
        if (end && tables) {
            whole_row(xg, half, ct->values + tok * half, st->values + tok * half, rstd, w, yv, ye);
            k = end;
        }
        ug_cv y;
        for (; end ? k < end : k < sel->n[o] && sel->idx[o][k] / d == row; k++) {
            size_t j = end ? k + d - end : sel->idx[o][k] % d, i = j < half ? j : j - half;
            double cs = ug_tload(ct, tok * half + i), sn = ug_tload(st, tok * half + i);
            /* j < D/2: xg_i*c - xg_{i+h}*s;  j >= D/2: xg_i*s + xg_{i+h}*c (negation exact) */
            double w[2] = {j < half ? cs : sn, j < half ? -sn : cs};
            if (sink) y = ug_cv_mul(ug_cv_of(rstd), ug_cv_dot_d(xg + i, half, w, 1, 2, 0));
            if (end) yv[j] = y.v, ye[j] = y.e; /* emitted with the row below */
            else if (sink)
                unsure += ug_cv_put(sink, k, y);
            else
                ug_ar_emit(ar, o, k, ug_mul(ar, rstd, ug_dot_d(ar, xg + i, half, w, 1, 2)));
        }
        if (end) unsure += ug_cv_put_block(sink, end - d, yv, ye, d);
        ug_ar_release(ar, mark);
    }
    free(xr);
    if (sink) ug_ar_tally(ar, sel->n[o], unsure);
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    if (oracle_tensor(c, ar, sel, 0, ug_case_input(c, "q"), ug_case_input(c, "gamma_q")) ||
        oracle_tensor(c, ar, sel, 1, ug_case_input(c, "k"), ug_case_input(c, "gamma_k")))
        return -1;
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[2];
    g->rows = t->numel / g->cols;
    g->row_tile = (size_t)t->shape[1]; /* one token's heads */
    g->col_tile = g->cols / 2;         /* the rotary half boundary */
}

const ug_op_def ug_opdef_rms_norm_rope = {
    .op = UG_OP_RMS_NORM_ROPE, .primary = UG_STD_CERTIFIED, .decl.check = check, .build = build, .oracle = oracle,
    .geometry = geometry};
