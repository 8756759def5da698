/* mhc_post.c — param checks and exact oracle of mhc_post, the post
 * step of manifold-constrained hyper-connections (mHC): per token t and stream n,
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 * x, h_out and out are bf16; h_res [T,N,N] (source stream k first) and h_post [T,N] are
 * fp32 (per-token mixing coefficients, as mHC computes them from the token). Every product
 * of an fp32 coefficient and a bf16 value is exact in double, so each output is an exact
 * (N+1)-term dot product (ug_dot_d) rounded once to bf16; special values follow IEEE rules
 * through it (the semantics text). The formula is written once, on mp/arith_inline.h's
 * ugx_dot_d and its steps, and every arithmetic runs it: a row selected whole (every row at
 * --sample all) through the column form of it (ug_dot_d's value and bound per element,
 * vectorised over the row) and the block emit in the plain arithmetics (certified, device
 * bound, naive, f64), anything else element by element. Primary standard: certified
 * (docs/STANDARDS.md); pypto's 1e-4 / 2^-7 stays stored. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/arith_inline.h"
#include "oracles/oracle.h"
#include "op_params.h"

#define MHC_MAX_STREAMS 16

/* The formula, written once (mp/arith_inline.h): out[t,n,j] is the (N+1)-term dot product
 * of the coefficients coef (h_post[t,n], then h_res[t,k,n]) with the values (h_out[t,j],
 * then x[t,k,j]); every arithmetic evaluates it, the engine choosing which. */
UG_AI ug_num out_elem(ug_arx A, const double *coef, const double *val, size_t n)
{
    return ugx_dot_d(A, coef, 1, val, 1, n); /* exact, one rounding at the emit */
}

/* The case's value tensors and sizes. */
typedef struct {
    const ug_tensor *x, *ho;
    size_t nst, d;
} mhc_ctx;

/* Scratch for whole rows: token tok's terms (row 0 h_out[t,:], rows 1.. x[t,k,:]), a row's
 * running sums (ugx_dot_step: the sum, the sum of magnitudes, CERT's exactness) per column,
 * and its values and bounds. */
typedef struct {
    size_t tok; /* the token whose terms B holds; SIZE_MAX: none yet */
    double *B, *s, *abs_sum, *v, *e;
    int64_t *exact;
} mhc_rows;

static int rows_open(mhc_rows *w, size_t nst, size_t d)
{
    _Static_assert(sizeof(int64_t) == sizeof(double), "8-byte slots");
    w->tok = SIZE_MAX;
    w->B = malloc((nst + 6) * d * sizeof *w->B); /* the terms, then s, abs_sum, exact, v and e */
    double *p = w->B ? w->B + (nst + 1) * d : NULL;
    w->s = p, w->abs_sum = p ? p + d : NULL, w->exact = p ? (int64_t *)(void *)(p + 2 * d) : NULL;
    w->v = p ? p + 3 * d : NULL, w->e = p ? p + 4 * d : NULL;
    return w->B ? 0 : -1;
}

/* out_elem of every column j < d of a row at once (B's column j its values), into w's v and
 * e: ugx_dot_d's steps in its order per column, rows of B outermost, so the columns are the
 * lanes of a loop the compiler vectorises in the plain arithmetics (UG_ARX_CLONES): the
 * certified steps choose between values, not code paths (cert_inline.h), and this file is
 * compiled with -fno-math-errno -fno-trapping-math (CMakeLists.txt), which change no IEEE
 * result. */
UG_AI void mhcp_row_values(ug_arx A, const double *coef, size_t n, const mhc_rows *wp, size_t d)
{
    const mhc_rows w = *wp; /* a local copy: no store below can change it */
    double *restrict s = w.s, *restrict abs_sum = w.abs_sum;
    int64_t *restrict exact = w.exact;
    int64_t tracked = ugx_dot_tracked(n);
    for (size_t j = 0; j < d; j++) s[j] = 0.0, abs_sum[j] = 0.0, exact[j] = tracked;
    for (size_t i = 0; i < n; i++) {
        const double *restrict row = w.B + i * d;
        double x = coef[i];
        for (size_t j = 0; j < d; j++) ugx_dot_step(A, x, row[j], &s[j], &abs_sum[j], &exact[j]);
    }
    for (size_t j = 0; j < d; j++) {
        ug_num y = ugx_dot_end(A, s[j], abs_sum[j], n, exact[j]);
        w.v[j] = y.v, w.e[j] = y.e;
    }
}
UG_ARX_CLONES(mhcp_row_values, (const double *coef, size_t n, const mhc_rows *wp, size_t d), (coef, n, wp, d))

/* Token t's terms into w->B (once per token). */
static void load_terms(const mhc_ctx *m, mhc_rows *w, size_t t)
{
    size_t nst = m->nst, d = m->d;
    if (w->tok == t) return;
    for (size_t j = 0; j < d; j++) w->B[j] = ug_tload(m->ho, t * d + j);
    for (size_t s = 0; s < nst; s++)
        for (size_t j = 0; j < d; j++) w->B[(1 + s) * d + j] = ug_tload(m->x, (t * nst + s) * d + j);
    w->tok = t;
}

/* Positions *k .. of the selection in row `row` (token t), one element at a time (a sample,
 * and the MPFR arithmetics); *k moves past them. */
UG_AI void row_elements(ug_arx A, const mhc_ctx *m, const double *coef, const ug_selection *sel, size_t row, size_t t,
                        size_t *k)
{
    size_t mark = ugx_mark(A), nst = m->nst, d = m->d;
    double val[MHC_MAX_STREAMS + 1];
    for (; *k < sel->n[0] && sel->idx[0][*k] / d == row; ++*k) {
        size_t j = sel->idx[0][*k] % d;
        val[0] = ug_tload(m->ho, t * d + j);
        for (size_t s = 0; s < nst; s++) val[1 + s] = ug_tload(m->x, (t * nst + s) * d + j);
        ugx_emit(A, 0, *k, out_elem(A, coef, val, nst + 1));
    }
    ugx_release(A, mark);
}

/* Row by row: a row selected whole (every row at --sample all) by mhcp_row_values and one block
 * emit, any other row (and every row in the MPFR arithmetics, where mhcp_row_values_plain
 * declines) element by element. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_tensor *hr = ug_case_input(c, "h_res"), *hp = ug_case_input(c, "h_post");
    const ug_mhc_post_params *params = UG_P(mhc_post, &c->params);
    mhc_ctx m = {ug_case_input(c, "x"), ug_case_input(c, "h_out"), (size_t)params->n, (size_t)params->d};
    size_t nst = m.nst, d = m.d;
    mhc_rows w;
    int rows = rows_open(&w, nst, d) == 0;
    for (size_t k = 0; k < sel->n[0];) {
        size_t row = sel->idx[0][k] / d, t = row / nst, n = row % nst;
        double coef[MHC_MAX_STREAMS + 1];
        coef[0] = ug_tload(hp, t * nst + n);
        for (size_t s = 0; s < nst; s++) coef[1 + s] = ug_tload(hr, (t * nst + s) * nst + n);
        if (rows && ug_sel_is_run(sel, 0, k, row * d, d)) {
            load_terms(&m, &w, t);
            rows = mhcp_row_values_plain(ar, coef, nst + 1, &w, d) == 0;
            if (rows) {
                ug_ar_emit_block(ar, 0, k, w.v, w.e, d); /* rounds: bf16, at the emit */
                k += d;
                continue;
            }
        }
        UG_ARX_SPECIALISE(ar, row_elements, &m, coef, sel, row, t, &k);
    }
    free(w.B);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[2];
    g->rows = t->numel / g->cols;
    g->row_tile = (size_t)t->shape[1]; /* one token's streams */
    g->col_tile = 256;                 /* the kernel's lane tile */
}

/* bf16 only: a case of another dtype has no dtype for x and is refused. */

const ug_op_def ug_opdef_mhc_post = {.oracle = oracle, .geometry = geometry};
