/* mhc_post.c — operator definition, input builder and exact oracle of mhc_post, the post
 * step of manifold-constrained hyper-connections (mHC): per token t and stream n,
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 * x, h_out and out are bf16; h_res [T,N,N] (source stream k first) and h_post [T,N] are
 * fp32 (per-token mixing coefficients, as mHC computes them from the token). Every product
 * of an fp32 coefficient and a bf16 value is exact in double, so each output is an exact
 * (N+1)-term dot product (ug_dot_d) rounded once to bf16. Primary standard pypto,
 * 1e-4 / 2^-7 (STANDARDS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/sim/norm_rope/mhc_post.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define MHC_MAX_STREAMS 16

typedef struct {
    long t, n, d;
} mhc_params;

static int read_params(const ug_spec *sp, mhc_params *p, char *err, size_t errlen)
{
    if (ug_param_int(sp->params, "t", 1, &p->t, err, errlen) || ug_param_int(sp->params, "n", 4, &p->n, err, errlen) ||
        ug_param_int(sp->params, "d", 2560, &p->d, err, errlen))
        return -2;
    if (p->t < 1 || p->d < 1) {
        snprintf(err, errlen, "mhc_post: param \"%s\" must be >= 1", p->t < 1 ? "t" : "d");
        return -2;
    }
    if (p->n < 1 || p->n > MHC_MAX_STREAMS) {
        snprintf(err, errlen, "mhc_post: param \"n\" (streams) must be in 1..%d (production 4)", MHC_MAX_STREAMS);
        return -2;
    }
    if ((double)p->t * (double)p->n * (double)p->d > (double)(1L << 26)) {
        snprintf(err, errlen, "mhc_post: t*n*d must be <= 2^26");
        return -2;
    }
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    mhc_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_BF16) {
        snprintf(err, errlen, "mhc_post: dtype must be bf16 (x, h_out, out; h_res and h_post are fp32)");
        return -2;
    }
    int64_t xs[3] = {p.t, p.n, p.d}, hos[2] = {p.t, p.d}, hrs[3] = {p.t, p.n, p.n}, hps[2] = {p.t, p.n};
    if (!ug_case_add_input(c, "x", UG_DT_BF16, 3, xs, 1, err, errlen) ||
        !ug_case_add_input(c, "h_out", UG_DT_BF16, 2, hos, 1, err, errlen) ||
        !ug_case_add_input(c, "h_res", UG_DT_FP32, 3, hrs, 1, err, errlen) ||
        !ug_case_add_input(c, "h_post", UG_DT_FP32, 2, hps, 1, err, errlen) ||
        !ug_case_add_output(c, "out", UG_DT_BF16, 3, xs, err, errlen))
        return -2;
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    mhc_params p;
    char err[128];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *x = ug_case_input(c, "x"), *ho = ug_case_input(c, "h_out");
    const ug_tensor *hr = ug_case_input(c, "h_res"), *hp = ug_case_input(c, "h_post");
    size_t nst = (size_t)p.n, d = (size_t)p.d;
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

static const ug_output_rule outputs[] = {
    {"out", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* STANDARDS.md: mhc_post 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_mhc_post = {
    .op = UG_OP_MHC_POST,
    .summary = "mHC post: out[n] = h_post[n]*h_out + sum_k h_res[k,n]*x[k] over N residual streams",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_mhc_post_variants,
    .params_doc = "{\"t\":\"tokens T (int >= 1)\",\"n\":\"residual streams N (1..16, default and production 4)\","
                  "\"d\":\"hidden size D (int >= 1, default 2560; production 2560 or 5120)\","
                  "\"tensors\":\"in x[T,N,D] bf16 (the N streams of each token), h_out[T,D] bf16 (the layer output), "
                  "h_res[T,N,N] fp32 (h_res[t,k,n]: weight of source stream k in output stream n), "
                  "h_post[T,N] fp32; out out[T,N,D] bf16 = h_post[t,n]*h_out[t] + sum_k h_res[t,k,n]*x[t,k]\"}",
};
