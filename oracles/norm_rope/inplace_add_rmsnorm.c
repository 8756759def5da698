/* inplace_add_rmsnorm.c — param checks and exact oracle of inplace_add_rmsnorm:
 *     x_add = x1 + x2,  rstd = 1/sqrt(mean(x_add^2) + eps),  y = x_add * rstd * gamma
 * eps is an fp32 attribute. x_add is exact in double (two bf16/fp16 values), and the
 * norm uses the exact x_add, not the stored rounded one: the spec rounds only at the
 * outputs. Special values follow IEEE rules through the exact formulas (the semantics
 * text below); the arithmetic propagates them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

/* Output indices: 0 y, 1 x_add, 2 rstd (order of the declaration). */
static int row_selected(const ug_selection *sel, size_t r, size_t h, size_t *pos)
{
    int any = 0;
    for (int o = 0; o < 2; o++) any |= pos[o] < sel->n[o] && sel->idx[o][pos[o]] / h == r;
    return any || (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r);
}

/* y = (xa * rstd) * gamma and x_add = x1 + x2 of one element: in CERT through the inline
 * certified arithmetic (mp/cert_inline.h: the same values and bounds, no interpreter). */
static ug_num y_value(ug_ar *ar, int fast, double xa, ug_num rstd, double gamma)
{
    if (fast) {
        ug_cv y = ug_cv_mul(ug_cv_mul(ug_cv_c(xa), ug_cv_of(rstd)), ug_cv_c(gamma));
        return (ug_num){y.v, y.e, NULL};
    }
    return ug_mul(ar, ug_mul(ar, ug_c(ar, xa), rstd), ug_c(ar, gamma));
}

static ug_num x_add_value(ug_ar *ar, int fast, double a, double b)
{
    if (fast) {
        ug_cv s = ug_cv_add(ug_cv_c(a), ug_cv_c(b));
        return (ug_num){s.v, s.e, NULL};
    }
    return ug_add(ar, ug_c(ar, a), ug_c(ar, b)); /* an input sum: exact double, rounded by the naive arithmetic too */
}

/* y and x_add of IAR_BLOCK columns of a row: y_value's and x_add_value's formulas over
 * arrays (the same values and bounds), in a loop that vectorises: the certified formulas
 * choose between values, not code paths (cert_inline.h), and this file is compiled with
 * -fno-math-errno -fno-trapping-math (CMakeLists.txt), which change no IEEE result. The
 * product errors are taken by FMA (ug_cv_mul_fma: the same bits as ug_cv_mul) in the
 * x86-64-v3/v4 clones, which have it; the default clone calls libm's fma. */
#define IAR_BLOCK 256

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
row_block(const double *restrict xa, const double *restrict gm, const double *restrict x1, const double *restrict x2,
          double rs_v, double rs_e, size_t len, double *restrict v, double *restrict e)
{
    ug_cv rs = {rs_v, rs_e};
    for (size_t i = 0; i < len; i++) {
        ug_cv y = ug_cv_mul_fma(ug_cv_mul_fma(ug_cv_c(xa[i]), rs), ug_cv_c(gm[i])); /* y_value's ug_cv_mul */
        ug_cv xs = ug_cv_add(ug_cv_c(x1[i]), ug_cv_c(x2[i])); /* an input sum: exact unless the exponents spread far */
        v[i] = y.v, e[i] = y.e, v[IAR_BLOCK + i] = xs.v, e[IAR_BLOCK + i] = xs.e;
    }
}

/* CERT, a row selected whole in y and x_add (every row at --sample all), inputs held as
 * doubles: both computed by row_block and emitted by blocks (ug_cv_put_block), and rstd;
 * 0 (nothing emitted) for any other row. */
static int fast_row(ug_ar *ar, const ug_selection *sel, size_t *pos, size_t r, size_t h, const double *xa, ug_num rstd,
                    const ug_tensor *x1, const ug_tensor *x2, const ug_tensor *gm)
{
    ug_ar_sink *s0 = ug_ar_cert_sink(ar, 0), *s1 = ug_ar_cert_sink(ar, 1);
    if (!s0 || !s1 || !x1->values || !x2->values || !gm->values || !ug_sel_is_run(sel, 0, pos[0], r * h, h) ||
        !ug_sel_is_run(sel, 1, pos[1], r * h, h))
        return 0;
    unsigned long unsure = 0;
    double v[2 * IAR_BLOCK], e[2 * IAR_BLOCK]; /* y, then x_add, of IAR_BLOCK columns */
    for (size_t i0 = 0; i0 < h; i0 += IAR_BLOCK) {
        size_t len = h - i0 < IAR_BLOCK ? h - i0 : IAR_BLOCK;
        row_block(xa + i0, gm->values + i0, x1->values + r * h + i0, x2->values + r * h + i0, rstd.v, rstd.e, len, v, e);
        unsure += ug_cv_put_block(s0, pos[0] + i0, v, e, len) + ug_cv_put_block(s1, pos[1] + i0, v + IAR_BLOCK, e + IAR_BLOCK, len);
    }
    ug_ar_tally(ar, 2 * h, unsure);
    pos[0] += h, pos[1] += h;
    if (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r) ug_ar_emit(ar, 2, pos[2]++, rstd);
    return 1;
}

/* CERT, h > 64, inputs held as doubles: x_add (exact) of the SS_ROWS rows of group g0.. into
 * xa4 (row k at xa4 + k*h; rows past the last are zeros) and ug_dot_d(xa, xa) of each into ss:
 * each row's own left-to-right sum, the rows' chains of dependent additions side by side
 * (one row's is latency-bound). ug_dot_d (ug_cv_dot_d past 64 terms, untracked) sums |p|
 * beside p; every p = x*x is >= 0 or NaN, so that is the same sum bit for bit and the bound
 * is ug_cv_dot_err(h, s), as there. */
#define SS_ROWS 4 /* group_sumsq's four chains */

static void group_sumsq(const ug_tensor *x1, const ug_tensor *x2, size_t h, size_t g0, size_t rows, double *restrict xa4,
                        ug_num *ss)
{
    const double *restrict a = x1->values + g0 * h, *restrict b = x2->values + g0 * h; /* held: no reload per element */
    size_t n = (rows - g0 < SS_ROWS ? rows - g0 : SS_ROWS) * h;
    for (size_t i = 0; i < n; i++) xa4[i] = a[i] + b[i];
    for (size_t i = n; i < SS_ROWS * h; i++) xa4[i] = 0.0;
    const double *r0 = xa4, *r1 = xa4 + h, *r2 = xa4 + 2 * h, *r3 = xa4 + 3 * h;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0; /* four chains in registers */
    for (size_t i = 0; i < h; i++) { /* rounds: as ug_dot_d, each row left to right */
        s0 += r0[i] * r0[i];
        s1 += r1[i] * r1[i];
        s2 += r2[i] * r2[i];
        s3 += r3[i] * r3[i];
    }
    const double s[SS_ROWS] = {s0, s1, s2, s3};
    for (size_t k = 0; k < SS_ROWS; k++) ss[k] = ug_cv_num(ug_cv_make(s[k], ug_cv_dot_err(h, s[k])));
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int fast = ug_ar_get_mode(ar) == UG_AR_CERT;
    const ug_inplace_add_rmsnorm_params *params = UG_P(inplace_add_rmsnorm, &c->params);
    long rows = params->rows;
    double eps = params->eps; /* the fp32 value */
    const ug_tensor *x1 = ug_case_input(c, "x1"), *x2 = ug_case_input(c, "x2"), *gm = ug_case_input(c, "gamma");
    size_t h = (size_t)params->h, pos[3] = {0, 0, 0}, group = SIZE_MAX;
    int grouped = fast && h > 64 && x1->values && x2->values;
    double *xa4 = malloc((grouped ? SS_ROWS : 1) * h * sizeof *xa4), *xa = xa4;
    ug_num ss4[SS_ROWS];
    if (!xa4) return -1;
    for (size_t r = 0; r < (size_t)rows; r++) {
        if (!row_selected(sel, r, h, pos)) continue;
        size_t mark = ug_ar_mark(ar);
        ug_num ss;
        if (grouped) {
            if (group != r / SS_ROWS) group = r / SS_ROWS, group_sumsq(x1, x2, h, group * SS_ROWS, (size_t)rows, xa4, ss4);
            xa = xa4 + (r % SS_ROWS) * h, ss = ss4[r % SS_ROWS];
        } else {
            for (size_t i = 0; i < h; i++) xa[i] = ug_tload(x1, r * h + i) + ug_tload(x2, r * h + i); /* exact */
            ss = ug_dot_d(ar, xa, 1, xa, 1, h);
        }
        ug_num rstd = ug_rsqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)h)), ug_c(ar, eps)));
        if (fast && fast_row(ar, sel, pos, r, h, xa, rstd, x1, x2, gm)) {
            ug_ar_release(ar, mark);
            continue;
        }
        for (; pos[0] < sel->n[0] && sel->idx[0][pos[0]] / h == r; pos[0]++) {
            size_t i = sel->idx[0][pos[0]] % h;
            ug_ar_emit(ar, 0, pos[0], y_value(ar, fast, xa[i], rstd, ug_tload(gm, i)));
        }
        for (; pos[1] < sel->n[1] && sel->idx[1][pos[1]] / h == r; pos[1]++) {
            size_t i = sel->idx[1][pos[1]] % h;
            ug_ar_emit(ar, 1, pos[1], x_add_value(ar, fast, ug_tload(x1, r * h + i), ug_tload(x2, r * h + i)));
        }
        if (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r) ug_ar_emit(ar, 2, pos[2]++, rstd);
        ug_ar_release(ar, mark);
    }
    free(xa4);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 64, g); /* the kernel's 64 lanes */
}

/* fp16 and bf16 only: a case of another dtype has no dtype for x1 and is refused. */

/* Scratch for the case memory estimate: one row in the sim kernel (3 fp32 arrays) and a
 * group of SS_ROWS rows in the oracle (fp64). */
static double scratch(const ug_params *P) { return (12 + 8 * SS_ROWS) * (double)UG_P(inplace_add_rmsnorm, P)->h; }

const ug_op_def ug_opdef_inplace_add_rmsnorm = {
    .op = UG_OP_INPLACE_ADD_RMSNORM, .primary = UG_STD_CERTIFIED, .oracle = oracle, .geometry = geometry,
    .scratch = scratch};
