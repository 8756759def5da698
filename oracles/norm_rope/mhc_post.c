/* mhc_post.c — param checks and exact oracle of mhc_post, the post
 * step of manifold-constrained hyper-connections (mHC): per token t and stream n,
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 * x, h_out and out are bf16; h_res [T,N,N] (source stream k first) and h_post [T,N] are
 * fp32 (per-token mixing coefficients, as mHC computes them from the token). Every product
 * of an fp32 coefficient and a bf16 value is exact in double, so each output is an exact
 * (N+1)-term dot product (ug_dot_d) rounded once to bf16; special values follow IEEE rules
 * through it (the semantics text); in CERT it goes through the inline certified arithmetic
 * (mp/cert_inline.h: ug_dot_d's value and bound, no interpreter call per element). Primary standard pypto, 1e-4 / 2^-7 (docs/STANDARDS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/cert_inline.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define MHC_MAX_STREAMS 16

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int fast = ug_ar_get_mode(ar) == UG_AR_CERT;
    const ug_tensor *x = ug_case_input(c, "x"), *ho = ug_case_input(c, "h_out");
    const ug_tensor *hr = ug_case_input(c, "h_res"), *hp = ug_case_input(c, "h_post");
    size_t nst = (size_t)ug_p_int(&c->params, "n"), d = (size_t)ug_p_int(&c->params, "d");
    for (size_t k = 0; k < sel->n[0];) {
        size_t row = sel->idx[0][k] / d, t = row / nst, n = row % nst, mark = ug_ar_mark(ar);
        double coef[MHC_MAX_STREAMS + 1], val[MHC_MAX_STREAMS + 1];
        coef[0] = ug_tload(hp, t * nst + n);
        for (size_t s = 0; s < nst; s++) coef[1 + s] = ug_tload(hr, (t * nst + s) * nst + n);
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

const ug_op_def ug_opdef_mhc_post = {.op = UG_OP_MHC_POST, .oracle = oracle, .geometry = geometry};
