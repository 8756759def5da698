/* mhc_post.c — operator declaration and exact oracle of mhc_post, the post
 * step of manifold-constrained hyper-connections (mHC): per token t and stream n,
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 * x, h_out and out are bf16; h_res [T,N,N] (source stream k first) and h_post [T,N] are
 * fp32 (per-token mixing coefficients, as mHC computes them from the token). Every product
 * of an fp32 coefficient and a bf16 value is exact in double, so each output is an exact
 * (N+1)-term dot product (ug_dot_d) rounded once to bf16; special values follow IEEE rules
 * through it (the semantics text). Primary standard pypto, 1e-4 / 2^-7 (docs/STANDARDS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define MHC_MAX_STREAMS 16

static int check(const ug_params *P, char *err, size_t errlen)
{
    if ((double)ug_p_int(P, "t") * (double)ug_p_int(P, "n") * (double)ug_p_int(P, "d") > (double)(1L << 26)) {
        snprintf(err, errlen, "mhc_post: t*n*d must be <= 2^26");
        return -2;
    }
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
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
            ug_ar_emit(ar, 0, k, ug_dot_d(ar, coef, 1, val, 1, nst + 1)); /* exact, one rounding at emit */
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

static const ug_param_decl params[] = {
    {"t", UG_PARAM_INT, "1", 1, 1 << 26, NULL, "tokens T"},
    {"n", UG_PARAM_INT, "4", 1, MHC_MAX_STREAMS, NULL, "residual streams N (production 4)"},
    {"d", UG_PARAM_INT, "2560", 1, 1 << 26, NULL, "hidden size D (production 2560 or 5120)"},
    {NULL},
};

/* bf16 only: a case of another dtype has no dtype for x and is refused. */
static const ug_tensor_decl tensors[] = {
    {"x", UG_TENSOR_INPUT, "bf16:bf16", "t, n, d", "the N residual streams of each token"},
    {"h_out", UG_TENSOR_INPUT, "bf16:bf16", "t, d", "the layer output"},
    {"h_res", UG_TENSOR_INPUT, "bf16:fp32", "t, n, n", "h_res[t,k,n]: weight of source stream k in output stream n"},
    {"h_post", UG_TENSOR_INPUT, "bf16:fp32", "t, n", "weight of the layer output in stream n"},
    {"out", UG_TENSOR_OUTPUT, "bf16:bf16", "t, n, d", "h_post[t,n]*h_out[t] + sum_k h_res[t,k,n]*x[t,k]"},
    {NULL},
};

static const ug_output_rule outputs[] = {
    {"out", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* docs/STANDARDS.md: mhc_post 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_mhc_post = {
    .op = UG_OP_MHC_POST,
    .summary = "mHC post: out[n] = h_post[n]*h_out + sum_k h_res[k,n]*x[k] over N residual streams",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .decl = {"mhc_post", params, NULL, tensors, check},
    .semantics = "out[t,n,:] = h_post[t,n]*h_out[t,:] + sum_k h_res[t,k,n]*x[t,k,:] in exact arithmetic, rounded once "
                 "to bf16; a finite result beyond the bf16 range has no representable value, the reference stays the "
                 "exact value and a kernel's +-inf there is a non-finite mismatch. Special values follow IEEE rules "
                 "through that sum: a NaN term, inf*0 or +inf + -inf gives NaN, otherwise an infinite term gives "
                 "+-inf; a NaN or inf coefficient reaches every column of its stream, a NaN or inf value of x or "
                 "h_out every stream of its column. Products of fp32 coefficients near the fp32 maximum with bf16 "
                 "values can overflow an fp32 accumulator for finite inputs; the oracle still expects the exact "
                 "rounded sum (finite where such terms cancel).",
    .build = NULL,
    .oracle = oracle,
    .geometry = geometry,
};
