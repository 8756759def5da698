/* inplace_add_rmsnorm.c — operator definition, input builder and exact oracle of
 * inplace_add_rmsnorm:
 *     x_add = x1 + x2,  rstd = 1/sqrt(mean(x_add^2) + eps),  y = x_add * rstd * gamma
 * eps is an fp32 attribute. x_add is exact in double (two bf16/fp16 values), and the
 * norm uses the exact x_add: the spec rounds only at the outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/sim/norm_rope/inplace_add_rmsnorm.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long rows, h;
    double eps;
} rms_params;

static int read_params(const ug_spec *s, rms_params *p, char *err, size_t errlen)
{
    if (ug_param_int(s->params, "rows", 1, &p->rows, err, errlen) ||
        ug_param_int(s->params, "h", 1, &p->h, err, errlen) ||
        ug_param_num(s->params, "eps", 1e-6, &p->eps, err, errlen))
        return -2;
    if (p->rows < 1 || p->h < 1 || p->rows * p->h > (1L << 26) || !(p->eps >= 0)) {
        snprintf(err, errlen, "inplace_add_rmsnorm: need rows >= 1, h >= 1, rows*h <= 2^26, eps >= 0");
        return -2;
    }
    p->eps = (float)p->eps; /* fp32 attribute */
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    rms_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_FP16 && dt != UG_DT_BF16) {
        snprintf(err, errlen, "inplace_add_rmsnorm: dtype must be fp16 or bf16");
        return -2;
    }
    int64_t shape[2] = {p.rows, p.h}, hs[1] = {p.h}, rs[1] = {p.rows};
    if (!ug_case_add_input(c, "x1", dt, 2, shape, 1, err, errlen) ||
        !ug_case_add_input(c, "x2", dt, 2, shape, 1, err, errlen) ||
        !ug_case_add_input(c, "gamma", dt, 1, hs, 1, err, errlen) ||
        !ug_case_add_output(c, "y", dt, 2, shape, err, errlen) ||
        !ug_case_add_output(c, "x_add", dt, 2, shape, err, errlen) ||
        !ug_case_add_output(c, "rstd", UG_DT_FP32, 1, rs, err, errlen))
        return -2;
    return 0;
}

/* Output indices: 0 y, 1 x_add, 2 rstd (order of build()). */
static int row_selected(const ug_selection *sel, size_t r, size_t h, size_t *pos)
{
    int any = 0;
    for (int o = 0; o < 2; o++) any |= pos[o] < sel->n[o] && sel->idx[o][pos[o]] / h == r;
    return any || (pos[2] < sel->n[2] && sel->idx[2][pos[2]] == r);
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    rms_params p;
    char err[128];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *x1 = ug_case_input(c, "x1"), *x2 = ug_case_input(c, "x2"), *gm = ug_case_input(c, "gamma");
    size_t h = (size_t)p.h, pos[3] = {0, 0, 0};
    double *xa = malloc(h * sizeof *xa);
    if (!xa) return -1;
    for (size_t r = 0; r < (size_t)p.rows; r++) {
        if (!row_selected(sel, r, h, pos)) continue;
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < h; i++) xa[i] = ug_tload(x1, r * h + i) + ug_tload(x2, r * h + i); /* exact */
        ug_num ss = ug_dot_d(ar, xa, 1, xa, 1, h);
        ug_num rstd = ug_rsqrt(ar, ug_add(ar, ug_div(ar, ss, ug_c(ar, (double)h)), ug_c(ar, p.eps)));
        for (; pos[0] < sel->n[0] && sel->idx[0][pos[0]] / h == r; pos[0]++) {
            size_t i = sel->idx[0][pos[0]] % h;
            ug_num y = ug_mul(ar, ug_mul(ar, ug_c(ar, xa[i]), rstd), ug_c(ar, ug_tload(gm, i)));
            ug_ar_emit(ar, 0, pos[0], y);
        }
        for (; pos[1] < sel->n[1] && sel->idx[1][pos[1]] / h == r; pos[1]++) {
            size_t i = sel->idx[1][pos[1]] % h;
            /* x_add is an input sum: exact double, rounded by the naive arithmetic too */
            ug_ar_emit(ar, 1, pos[1], ug_add(ar, ug_c(ar, ug_tload(x1, r * h + i)), ug_c(ar, ug_tload(x2, r * h + i))));
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

static const ug_output_rule outputs[] = {
    /* STANDARDS.md: inplace_add_rmsnorm 0.01 / 0.01 */
    {"y", UG_CMP_NUMERIC, 0.01, 0.01, 0.005},
    {"x_add", UG_CMP_NUMERIC, 0.01, 0.01, 0.005},
    {"rstd", UG_CMP_NUMERIC, 0.01, 0.01, 0.005},
};

const ug_op_def ug_opdef_inplace_add_rmsnorm = {
    .op = UG_OP_INPLACE_ADD_RMSNORM,
    .summary = "x_add = x1 + x2; y = x_add * gamma / sqrt(mean(x_add^2) + eps); outputs y, x_add, rstd",
    .dtypes = "fp16,bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 3,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_inplace_add_rmsnorm_variants,
    .params_doc = "{\"rows\":\"rows (int >= 1)\",\"h\":\"hidden size H (int >= 1, up to 7168 in production)\","
                  "\"eps\":\"fp32 epsilon (default 1e-6)\","
                  "\"tensors\":\"in x1[rows,H], x2[rows,H], gamma[H] dtype; out y[rows,H] (written to x1), "
                  "x_add[rows,H] (written to x2) dtype, rstd[rows] fp32\"}",
};
