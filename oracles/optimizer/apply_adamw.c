/* apply_adamw.c — operator definition, input builder and exact oracle of apply_adamw,
 * one AdamW step with bias correction and decoupled weight decay:
 *     m' = b1*m + (1-b1)*g,  v' = b2*v + (1-b2)*g^2,  m^ = m'/(1-b1^t),  v^ = v'/(1-b2^t)
 *     w' = w - lr*( m^/(sqrt(v^) + eps) + wd*w )
 * lr, beta1, beta2, eps, weight_decay are fp32 attributes (rounded to fp32 here, as the
 * kernel holds them); step t is an integer. The oracle evaluates the formula exactly on
 * those values (1-b and b^t, by repeated squaring, in the oracle's arithmetic), and the only
 * roundings are the outputs' (w' to w's dtype, m' and v' to fp32). A kernel that
 * factors the step differently (torch's step_size = lr/bc1, sqrt(v')/sqrt(bc2)) differs
 * from it by fp32 roundings only. v is drawn from its distribution and stored as its
 * absolute value (second moments are never negative). Primary standard pypto,
 * 1e-4 / 2^-7 on every output (STANDARDS.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/sim/optimizer/apply_adamw.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long rows, cols, step;
    double lr, beta1, beta2, eps, wd;
} adamw_params;

/* Reads one fp32 attribute and checks lo <= x < hi (hi_incl: x <= hi). */
static int attr(const ug_spec *sp, const char *key, double def, double lo, double hi, int hi_incl, double *out,
                char *err, size_t errlen)
{
    if (ug_param_num(sp->params, key, def, out, err, errlen)) return -2;
    if (!(*out >= lo && (hi_incl ? *out <= hi : *out < hi))) {
        snprintf(err, errlen, "apply_adamw: param \"%s\" must be in [%g, %g%s", key, lo, hi, hi_incl ? "]" : ")");
        return -2;
    }
    *out = (float)*out; /* fp32 attribute */
    return 0;
}

static int read_params(const ug_spec *sp, adamw_params *p, char *err, size_t errlen)
{
    if (ug_param_int(sp->params, "rows", 1, &p->rows, err, errlen) ||
        ug_param_int(sp->params, "cols", 1, &p->cols, err, errlen) ||
        ug_param_int(sp->params, "step", 1, &p->step, err, errlen))
        return -2;
    if (p->rows < 1 || p->cols < 1 || (double)p->rows * (double)p->cols > (double)(1L << 26)) {
        snprintf(err, errlen, "apply_adamw: params \"rows\" and \"cols\" must be >= 1 with rows*cols <= 2^26");
        return -2;
    }
    if (p->step < 1 || p->step > 1000000000L) {
        snprintf(err, errlen, "apply_adamw: param \"step\" must be in 1..1e9");
        return -2;
    }
    if (attr(sp, "lr", 1e-3, 0, 10, 1, &p->lr, err, errlen) ||
        attr(sp, "beta1", 0.9, 0, 1, 0, &p->beta1, err, errlen) ||
        attr(sp, "beta2", 0.999, 0, 1, 0, &p->beta2, err, errlen) ||
        attr(sp, "eps", 1e-8, 1e-30, 1, 1, &p->eps, err, errlen) ||
        attr(sp, "weight_decay", 0.01, 0, 10, 1, &p->wd, err, errlen))
        return -2;
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    adamw_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_BF16 && dt != UG_DT_FP32) {
        snprintf(err, errlen, "apply_adamw: dtype (of w and g) must be bf16 or fp32");
        return -2;
    }
    int64_t shape[2] = {p.rows, p.cols};
    ug_tensor *v;
    if (!ug_case_add_input(c, "w", dt, 2, shape, 1, err, errlen) || !ug_case_add_input(c, "g", dt, 2, shape, 1, err, errlen) ||
        !ug_case_add_input(c, "m", UG_DT_FP32, 2, shape, 1, err, errlen) ||
        !(v = ug_case_add_input(c, "v", UG_DT_FP32, 2, shape, 1, err, errlen)) ||
        !ug_case_add_output(c, "w_out", dt, 2, shape, err, errlen) ||
        !ug_case_add_output(c, "m_out", UG_DT_FP32, 2, shape, err, errlen) ||
        !ug_case_add_output(c, "v_out", UG_DT_FP32, 2, shape, err, errlen))
        return -2;
    for (size_t i = 0; i < v->numel; i++) /* exact: second moments are |draw| */
        ug_dtype_store(UG_DT_FP32, v->data, i, fabs(ug_dtype_load(UG_DT_FP32, v->data, i)));
    return 0;
}

/* b^t for an integer t >= 1 by repeated squaring. */
static ug_num pow_int(ug_ar *ar, ug_num b, long t)
{
    ug_num r = ug_c(ar, 1.0);
    for (; t > 0; t >>= 1) {
        if (t & 1) r = ug_mul(ar, r, b);
        if (t > 1) b = ug_mul(ar, b, b);
    }
    return r;
}

typedef struct {
    const ug_tensor *w, *g, *m, *v;
    ug_num omb1, omb2; /* 1 - b1, 1 - b2 */
    ug_num bc1, bc2;   /* 1 - b1^t, 1 - b2^t */
} adamw_ctx;

static ug_num moment1(ug_ar *ar, const adamw_params *p, const adamw_ctx *x, size_t i)
{
    return ug_add(ar, ug_mul(ar, ug_c(ar, p->beta1), ug_c(ar, ug_tload(x->m, i))),
                  ug_mul(ar, x->omb1, ug_c(ar, ug_tload(x->g, i))));
}

static ug_num moment2(ug_ar *ar, const adamw_params *p, const adamw_ctx *x, size_t i)
{
    double g = ug_tload(x->g, i);
    return ug_add(ar, ug_mul(ar, ug_c(ar, p->beta2), ug_c(ar, ug_tload(x->v, i))),
                  ug_mul(ar, x->omb2, ug_c(ar, g * g))); /* g*g: exact in double (<= 48 bits) */
}

static ug_num new_weight(ug_ar *ar, const adamw_params *p, const adamw_ctx *x, size_t i)
{
    ug_num mh = ug_div(ar, moment1(ar, p, x, i), x->bc1), vh = ug_div(ar, moment2(ar, p, x, i), x->bc2);
    ug_num w = ug_c(ar, ug_tload(x->w, i));
    ug_num upd = ug_add(ar, ug_div(ar, mh, ug_add(ar, ug_sqrt(ar, vh), ug_c(ar, p->eps))), ug_mul(ar, ug_c(ar, p->wd), w));
    return ug_sub(ar, w, ug_mul(ar, ug_c(ar, p->lr), upd));
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    adamw_params p;
    char err[128];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    adamw_ctx x;
    x.w = ug_case_input(c, "w");
    x.g = ug_case_input(c, "g");
    x.m = ug_case_input(c, "m");
    x.v = ug_case_input(c, "v");
    ug_num one = ug_c(ar, 1.0);
    x.omb1 = ug_sub(ar, one, ug_c(ar, p.beta1));
    x.omb2 = ug_sub(ar, one, ug_c(ar, p.beta2));
    x.bc1 = ug_sub(ar, one, pow_int(ar, ug_c(ar, p.beta1), p.step));
    x.bc2 = ug_sub(ar, one, pow_int(ar, ug_c(ar, p.beta2), p.step));
    size_t mark = ug_ar_mark(ar);
    for (int o = 0; o < 3; o++)
        for (size_t k = 0; k < sel->n[o]; k++) {
            size_t i = sel->idx[o][k];
            ug_ar_emit(ar, o, k, o == 0 ? new_weight(ar, &p, &x, i) : o == 1 ? moment1(ar, &p, &x, i) : moment2(ar, &p, &x, i));
            ug_ar_release(ar, mark);
        }
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 1024, g); /* the kernel's chunk: edges only matter for tails */
}

static const ug_output_rule outputs[] = {
    /* STANDARDS.md: apply_adamw 1e-4 / 2^-7 */
    {"w_out", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005},
    {"m_out", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005},
    {"v_out", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005},
};

const ug_op_def ug_opdef_apply_adamw = {
    .op = UG_OP_APPLY_ADAMW,
    .summary = "one AdamW step: moments, bias correction, decoupled weight decay; outputs w', m', v'",
    .dtypes = "bf16,fp32",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 3,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_apply_adamw_variants,
    .params_doc = "{\"rows\":\"rows R of the parameter tensor (int >= 1)\",\"cols\":\"cols C (int >= 1)\","
                  "\"lr\":\"fp32 learning rate in [0, 10] (default 1e-3)\","
                  "\"beta1\":\"fp32 in [0, 1) (default 0.9)\",\"beta2\":\"fp32 in [0, 1) (default 0.999)\","
                  "\"eps\":\"fp32 in [1e-30, 1], added after the square root (default 1e-8)\","
                  "\"weight_decay\":\"fp32 decoupled decay in [0, 10] (default 0.01)\","
                  "\"step\":\"step t after this update, 1..1e9 (bias corrections 1 - beta^t)\","
                  "\"tensors\":\"in w[R,C] dtype, g[R,C] dtype, m[R,C] fp32, v[R,C] fp32 (>= 0); "
                  "out w_out[R,C] dtype, m_out[R,C] fp32, v_out[R,C] fp32: m' = b1*m + (1-b1)*g, "
                  "v' = b2*v + (1-b2)*g^2, w' = w - lr*(m'/(1-b1^t) / (sqrt(v'/(1-b2^t)) + eps) + wd*w)\"}",
};
