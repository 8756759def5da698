/* inplace_add_rmsnorm.c — param checks and exact oracle of inplace_add_rmsnorm:
 *     x_add = x1 + x2,  rstd = 1/sqrt(mean(x_add^2) + eps),  y = x_add * rstd * gamma
 * eps is an fp32 attribute. x_add is exact in double (two bf16/fp16 values), and the
 * norm uses the exact x_add, not the stored rounded one: the spec rounds only at the
 * outputs. Special values follow IEEE rules through the exact formulas (the semantics
 * text below); the arithmetic propagates them. The formula is written once, on
 * mp/arith_inline.h's ugx_* primitives, and every arithmetic runs it: the rows' sums of
 * squares by groups of rows, and a row selected whole by vectorised blocks, in the plain
 * arithmetics (certified, device bound, naive, f64); anything else row by row and element
 * by element. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/arith_inline.h"
#include "oracles/oracle.h"
#include "op_params.h"

/* Output indices: 0 y, 1 x_add, 2 rstd (order of the declaration). */
static int row_selected(const ug_selection *sel, size_t r, size_t h, size_t *pos)
{
    int any = 0;
    for (int o = 0; o < 2; o++) any |= pos[o] < sel->n[o] && sel->idx[o][pos[o]] / h == r;
    return any || (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r);
}

/* The formula, written once (mp/arith_inline.h): y = (xa * rstd) * gamma and x_add = x1 + x2
 * of one element; every arithmetic evaluates them, the engine choosing which. */
UG_AI ug_num y_value(ug_arx A, double xa, ug_num rstd, double gamma)
{
    return ugx_mul(A, ugx_mul(A, ugx_c(A, xa), rstd), ugx_c(A, gamma));
}

UG_AI ug_num x_add_value(ug_arx A, double a, double b)
{
    return ugx_add(A, ugx_c(A, a), ugx_c(A, b)); /* an input sum: exact double, rounded by the naive arithmetic too */
}

/* y and x_add of IAR_BLOCK columns of a row: y_value and x_add_value over arrays, in a loop
 * that vectorises in the plain arithmetics (UG_ARX_CLONES): the certified formulas choose
 * between values, not code paths (cert_inline.h), and this file is compiled with
 * -fno-math-errno -fno-trapping-math (CMakeLists.txt), which change no IEEE result. */
#define IAR_BLOCK 256

typedef struct {
    double v[2][IAR_BLOCK], e[2][IAR_BLOCK]; /* y, then x_add: values, bounds */
} iar_out;

UG_AI void iarn_row_block(ug_arx A, const double *restrict xa, const double *restrict gm, const double *restrict x1,
                          const double *restrict x2, const ug_num *rsp, size_t len, iar_out *restrict o)
{
    ug_num rs = *rsp;
    for (size_t i = 0; i < len; i++) {
        ug_num y = y_value(A, xa[i], rs, gm[i]), xs = x_add_value(A, x1[i], x2[i]);
        o->v[0][i] = y.v, o->e[0][i] = y.e, o->v[1][i] = xs.v, o->e[1][i] = xs.e;
    }
}
UG_ARX_CLONES(iarn_row_block,
              (const double *restrict xa, const double *restrict gm, const double *restrict x1,
               const double *restrict x2, const ug_num *rsp, size_t len, iar_out *restrict o),
              (xa, gm, x1, x2, rsp, len, o))

/* A row selected whole in y and x_add (every row at --sample all), inputs held as doubles, in
 * a plain arithmetic: both computed by iarn_row_block and emitted by blocks, and rstd; 0 (nothing
 * emitted) for any other row, and in the MPFR arithmetics. */
static int whole_row(ug_ar *ar, const ug_selection *sel, size_t *pos, size_t r, size_t h, const double *xa, ug_num rstd,
                     const ug_tensor *x1, const ug_tensor *x2, const ug_tensor *gm)
{
    if (!x1->values || !x2->values || !gm->values || !ug_sel_is_run(sel, 0, pos[0], r * h, h) ||
        !ug_sel_is_run(sel, 1, pos[1], r * h, h))
        return 0;
    iar_out o;
    for (size_t i0 = 0; i0 < h; i0 += IAR_BLOCK) {
        size_t len = h - i0 < IAR_BLOCK ? h - i0 : IAR_BLOCK;
        if (iarn_row_block_plain(ar, xa + i0, gm->values + i0, x1->values + r * h + i0, x2->values + r * h + i0, &rstd,
                                 len, &o))
            return 0;
        ug_ar_emit_block(ar, 0, pos[0] + i0, o.v[0], o.e[0], len); /* rounds: the output dtype, at the emit */
        ug_ar_emit_block(ar, 1, pos[1] + i0, o.v[1], o.e[1], len);
    }
    pos[0] += h, pos[1] += h;
    if (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r) ug_ar_emit(ar, 2, pos[2]++, rstd);
    return 1;
}

/* The case's inputs and row length. */
typedef struct {
    const ug_tensor *x1, *x2, *gm;
    size_t h;
} iar_ctx;

/* The selected elements of row r one at a time (a sample, and the MPFR arithmetics). */
UG_AI void row_elements(ug_arx A, const iar_ctx *x, const ug_selection *sel, size_t *pos, size_t r, const double *xa,
                        ug_num rstd)
{
    size_t h = x->h;
    for (; pos[0] < sel->n[0] && sel->idx[0][pos[0]] / h == r; pos[0]++) {
        size_t i = sel->idx[0][pos[0]] % h;
        ugx_emit(A, 0, pos[0], y_value(A, xa[i], rstd, ug_tload(x->gm, i)));
    }
    for (; pos[1] < sel->n[1] && sel->idx[1][pos[1]] / h == r; pos[1]++) {
        size_t i = sel->idx[1][pos[1]] % h;
        ugx_emit(A, 1, pos[1], x_add_value(A, ug_tload(x->x1, r * h + i), ug_tload(x->x2, r * h + i)));
    }
    if (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r) ugx_emit(A, 2, pos[2]++, rstd);
}

/* Inputs held as doubles: x_add (exact) of the UGX_SQ_ROWS rows of group g0.. into
 * xa4 (row k at xa4 + k*h; rows past the last are zeros) and ug_dot_d(xa, xa) of each into
 * ss, the rows' sums side by side (ugx_sumsq_rows); iarn_group_sumsq_plain declines (-1) in the
 * MPFR arithmetics. */
UG_AI void iarn_group_sumsq(ug_arx A, const double *restrict a, const double *restrict b, size_t h, size_t nrows,
                            double *restrict xa4, ug_num *ss)
{
    size_t n = nrows * h;
    for (size_t i = 0; i < n; i++) xa4[i] = a[i] + b[i];
    for (size_t i = n; i < UGX_SQ_ROWS * h; i++) xa4[i] = 0.0;
    const double *r[UGX_SQ_ROWS] = {xa4, xa4 + h, xa4 + 2 * h, xa4 + 3 * h};
    ugx_sumsq_rows(A, r, h, ss);
}
UG_ARX_CLONES(iarn_group_sumsq,
              (const double *restrict a, const double *restrict b, size_t h, size_t nrows, double *restrict xa4,
               ug_num *ss),
              (a, b, h, nrows, xa4, ss))

/* Row r's x_add (exact) in xa and its sum of squares: by groups of rows where it can
 * (*grouped; *group the group xa4 and ss4 hold), else alone. Returns the row's x_add. */
static const double *row_sumsq(ug_ar *ar, const iar_ctx *x, size_t rows, size_t r, int *grouped, size_t *group,
                               double *xa4, ug_num *ss4, ug_num *ss)
{
    size_t h = x->h, g = r / UGX_SQ_ROWS;
    if (*grouped && *group != g) {
        size_t g0 = g * UGX_SQ_ROWS, n = rows - g0 < UGX_SQ_ROWS ? rows - g0 : UGX_SQ_ROWS;
        *grouped = iarn_group_sumsq_plain(ar, x->x1->values + g0 * h, x->x2->values + g0 * h, h, n, xa4, ss4) == 0;
        *group = *grouped ? g : SIZE_MAX;
    }
    if (*grouped) {
        *ss = ss4[r % UGX_SQ_ROWS];
        return xa4 + (r % UGX_SQ_ROWS) * h;
    }
    for (size_t i = 0; i < h; i++) xa4[i] = ug_tload(x->x1, r * h + i) + ug_tload(x->x2, r * h + i); /* exact */
    *ss = ug_dot_d(ar, xa4, 1, xa4, 1, h);
    return xa4;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_inplace_add_rmsnorm_params *params = UG_P(inplace_add_rmsnorm, &c->params);
    long rows = params->rows;
    double eps = params->eps; /* the fp32 value */
    iar_ctx x = {ug_case_input(c, "x1"), ug_case_input(c, "x2"), ug_case_input(c, "gamma"), (size_t)params->h};
    size_t h = x.h, pos[3] = {0, 0, 0}, group = SIZE_MAX;
    int grouped = x.x1->values && x.x2->values;
    double *xa4 = malloc(UGX_SQ_ROWS * h * sizeof *xa4);
    ug_num ss4[UGX_SQ_ROWS];
    if (!xa4) return -1;
    for (size_t r = 0; r < (size_t)rows; r++) {
        if (!row_selected(sel, r, h, pos)) continue;
        size_t mark = ug_ar_mark(ar);
        ug_num ss;
        const double *xa = row_sumsq(ar, &x, (size_t)rows, r, &grouped, &group, xa4, ss4, &ss);
        ug_num rstd = ug_rsqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)h)), ug_c(ar, eps)));
        if (!whole_row(ar, sel, pos, r, h, xa, rstd, x.x1, x.x2, x.gm))
            UG_ARX_SPECIALISE(ar, row_elements, &x, sel, pos, r, xa, rstd);
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
 * group of UGX_SQ_ROWS rows in the oracle (fp64). */
static double scratch(const ug_params *P) { return (12 + 8 * UGX_SQ_ROWS) * (double)UG_P(inplace_add_rmsnorm, P)->h; }

const ug_op_def ug_opdef_inplace_add_rmsnorm = {.oracle = oracle, .geometry = geometry, .scratch = scratch};
