/* inplace_add_rmsnorm.c — param checks and exact oracle of inplace_add_rmsnorm:
 *     x_add = x1 + x2,  rstd = 1/sqrt(mean(x_add^2) + eps),  y = x_add * rstd * gamma
 * eps is an fp32 attribute. x_add is exact in double (two bf16/fp16 values), and the
 * norm uses the exact x_add, not the stored rounded one: the spec rounds only at the
 * outputs. Special values follow IEEE rules through the exact formulas (the semantics
 * text below); the arithmetic propagates them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

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

/* CERT, a row selected whole in y and x_add (every row at --sample all): both computed by
 * plain loops (the values of y_value and x_add_value) and emitted by blocks
 * (ug_cv_put_block), and rstd;
 * 0 (nothing emitted) for any other row. */
static int fast_row(ug_ar *ar, const ug_selection *sel, size_t *pos, size_t r, size_t h, const double *xa, ug_num rstd,
                    const ug_tensor *x1, const ug_tensor *x2, const ug_tensor *gm)
{
    ug_ar_sink *s0 = ug_ar_cert_sink(ar, 0), *s1 = ug_ar_cert_sink(ar, 1);
    if (!s0 || !s1 || !ug_sel_is_run(sel, 0, pos[0], r * h, h) || !ug_sel_is_run(sel, 1, pos[1], r * h, h)) return 0;
    unsigned long unsure = 0;
    ug_cv rs = ug_cv_of(rstd);
    double v[2][256], e[2][256]; /* y and x_add of 256 columns, emitted a block at a time */
    for (size_t i0 = 0; i0 < h; i0 += 256) {
        size_t len = h - i0 < 256 ? h - i0 : 256;
        for (size_t i = i0; i < i0 + len; i++) {
            ug_cv y = ug_cv_mul(ug_cv_mul(ug_cv_c(xa[i]), rs), ug_cv_c(ug_tload(gm, i)));
            ug_cv xs = ug_cv_add(ug_cv_c(ug_tload(x1, r * h + i)), ug_cv_c(ug_tload(x2, r * h + i)));
            v[0][i - i0] = y.v, e[0][i - i0] = y.e, v[1][i - i0] = xs.v, e[1][i - i0] = xs.e;
        }
        unsure += ug_cv_put_block(s0, pos[0] + i0, v[0], e[0], len) + ug_cv_put_block(s1, pos[1] + i0, v[1], e[1], len);
    }
    ug_ar_tally(ar, 2 * h, unsure);
    pos[0] += h, pos[1] += h;
    if (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r) ug_ar_emit(ar, 2, pos[2]++, rstd);
    return 1;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int fast = ug_ar_get_mode(ar) == UG_AR_CERT;
    long rows = ug_p_int(&c->params, "rows");
    double eps = ug_p_num(&c->params, "eps"); /* the fp32 value */
    const ug_tensor *x1 = ug_case_input(c, "x1"), *x2 = ug_case_input(c, "x2"), *gm = ug_case_input(c, "gamma");
    size_t h = (size_t)ug_p_int(&c->params, "h"), pos[3] = {0, 0, 0};
    double *xa = malloc(h * sizeof *xa);
    if (!xa) return -1;
    for (size_t r = 0; r < (size_t)rows; r++) {
        if (!row_selected(sel, r, h, pos)) continue;
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < h; i++) xa[i] = ug_tload(x1, r * h + i) + ug_tload(x2, r * h + i); /* exact */
        ug_num ss = ug_dot_d(ar, xa, 1, xa, 1, h);
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
    free(xa);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 64, g); /* the kernel's 64 lanes */
}

/* fp16 and bf16 only: a case of another dtype has no dtype for x1 and is refused. */

/* Scratch for the case memory estimate: one row in the sim kernel (3 fp32 arrays) and in the
 * oracle (fp64). */
static double scratch(const ug_params *P) { return 20 * (double)ug_p_int(P, "h"); }

const ug_op_def ug_opdef_inplace_add_rmsnorm = {
    .op = UG_OP_INPLACE_ADD_RMSNORM, .oracle = oracle, .geometry = geometry, .scratch = scratch};
