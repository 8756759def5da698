/* mhc_post.c — param checks and exact oracle of mhc_post, the post
 * step of manifold-constrained hyper-connections (mHC): per token t and stream n,
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 * x, h_out and out are bf16; h_res [T,N,N] (source stream k first) and h_post [T,N] are
 * fp32 (per-token mixing coefficients, as mHC computes them from the token). Every product
 * of an fp32 coefficient and a bf16 value is exact in double, so each output is an exact
 * (N+1)-term dot product (ug_dot_d) rounded once to bf16; special values follow IEEE rules
 * through it (the semantics text); in CERT it goes through the inline certified arithmetic
 * (mp/cert_inline.h: ug_dot_d's value and bound, no interpreter call per element), and a
 * row selected whole (every row at --sample all) goes through the column form of it
 * (cert_block.h's ug_cv_dot_d_cols: the same value and bound per element, vectorised over the
 * row) and the block emit. Primary standard: certified (docs/STANDARDS.md); pypto's 1e-4 / 2^-7
 * stays stored. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

#define MHC_MAX_STREAMS 16

/* CERT scratch for whole rows: token tok's terms (row 0 h_out[t,:], rows 1.. x[t,k,:]), a
 * row's values and bounds, and the column sums. */
typedef struct {
    size_t tok; /* the token whose terms B holds; SIZE_MAX: none yet */
    double *B, *v, *e;
    ug_cv_cols_work cols;
} mhc_rows;

static int rows_open(mhc_rows *w, size_t nst, size_t d)
{
    w->tok = SIZE_MAX;
    w->B = malloc((nst + 3) * d * sizeof *w->B); /* the terms, then v and e */
    w->v = w->B ? w->B + (nst + 1) * d : NULL, w->e = w->v ? w->v + d : NULL;
    return ug_cv_cols_open(&w->cols, d) || !w->B ? -1 : 0;
}

static void rows_close(mhc_rows *w)
{
    free(w->B);
    ug_cv_cols_close(&w->cols);
}

/* Row (t, n) selected whole from position k, in CERT: out[t,n,j] = ug_cv_dot_d(coef, val_j)
 * for every j by columns, emitted as a block. */
static void fast_row(ug_ar *ar, const ug_case *c, mhc_rows *w, size_t t, size_t nst, size_t d, const double *coef,
                     size_t k)
{
    const ug_tensor *x = ug_case_input(c, "x"), *ho = ug_case_input(c, "h_out");
    if (w->tok != t) {
        for (size_t j = 0; j < d; j++) w->B[j] = ug_tload(ho, t * d + j);
        for (size_t s = 0; s < nst; s++)
            for (size_t j = 0; j < d; j++) w->B[(1 + s) * d + j] = ug_tload(x, (t * nst + s) * d + j);
        w->tok = t;
    }
    ug_cv_dot_d_cols(coef, 1, w->B, d, nst + 1, d, &w->cols.acc, w->cols.out);
    for (size_t j = 0; j < d; j++) w->v[j] = w->cols.out[j].v, w->e[j] = w->cols.out[j].e;
    ug_ar_tally(ar, d, ug_cv_put_block(ug_ar_cert_sink(ar, 0), k, w->v, w->e, d)); /* rounds: bf16, at the emit */
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int fast = ug_ar_get_mode(ar) == UG_AR_CERT && ug_ar_cert_sink(ar, 0);
    const ug_tensor *x = ug_case_input(c, "x"), *ho = ug_case_input(c, "h_out");
    const ug_tensor *hr = ug_case_input(c, "h_res"), *hp = ug_case_input(c, "h_post");
    const ug_mhc_post_params *params = UG_P(mhc_post, &c->params);
    size_t nst = (size_t)params->n, d = (size_t)params->d;
    mhc_rows w = {0};
    if (fast && rows_open(&w, nst, d)) {
        rows_close(&w);
        return -1;
    }
    for (size_t k = 0; k < sel->n[0];) {
        size_t row = sel->idx[0][k] / d, t = row / nst, n = row % nst;
        double coef[MHC_MAX_STREAMS + 1], val[MHC_MAX_STREAMS + 1];
        coef[0] = ug_tload(hp, t * nst + n);
        for (size_t s = 0; s < nst; s++) coef[1 + s] = ug_tload(hr, (t * nst + s) * nst + n);
        if (fast && ug_sel_is_run(sel, 0, k, row * d, d)) {
            fast_row(ar, c, &w, t, nst, d, coef, k);
            k += d;
            continue;
        }
        size_t mark = ug_ar_mark(ar);
        for (; k < sel->n[0] && sel->idx[0][k] / d == row; k++) {
            size_t j = sel->idx[0][k] % d;
            val[0] = ug_tload(ho, t * d + j);
            for (size_t s = 0; s < nst; s++) val[1 + s] = ug_tload(x, (t * nst + s) * d + j);
            if (fast) /* exact, one rounding at emit */
                ug_cv_emit(ar, 0, k, ug_cv_dot_d(coef, 1, val, 1, nst + 1, 0));
            else
                ug_ar_emit(ar, 0, k, ug_dot_d(ar, coef, 1, val, 1, nst + 1));
        }
        ug_ar_release(ar, mark);
    }
    rows_close(&w);
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

const ug_op_def ug_opdef_mhc_post = {
    .op = UG_OP_MHC_POST, .primary = UG_STD_CERTIFIED, .oracle = oracle, .geometry = geometry};
