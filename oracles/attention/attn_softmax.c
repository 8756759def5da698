/* attn_softmax.c — operator definition, input builder and exact oracle of attn_softmax.
 *
 *   y[r,:] = softmax(z[r,:]),  z = cap * tanh(x * scale / cap) + mask   (cap 0: z = x*scale + mask)
 *
 * scale and cap are fp32 attributes: the oracle uses their fp32 values, as the kernel
 * does. The mask is an fp32 input built from params.mask ("none", "causal" bottom-right
 * aligned, "padding" with a per-row valid length and every third row fully masked);
 * masked entries are -inf and contribute exactly zero, so the oracle skips them. A fully
 * masked row's output is defined as zeros. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "kernels/sim/attention/attn_softmax.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long rows, cols;
    double scale, cap;
    const char *mask;
} softmax_params;

static int read_params(const ug_spec *s, softmax_params *p, char *err, size_t errlen)
{
    if (ug_param_int(s->params, "rows", 1, &p->rows, err, errlen) ||
        ug_param_int(s->params, "cols", 1, &p->cols, err, errlen) ||
        ug_param_num(s->params, "scale", 1.0, &p->scale, err, errlen) ||
        ug_param_num(s->params, "cap", 0.0, &p->cap, err, errlen) ||
        ug_param_str(s->params, "mask", "none", &p->mask, err, errlen))
        return -2;
    if (p->rows < 1 || p->cols < 1 || p->rows * p->cols > (1L << 26)) {
        snprintf(err, errlen, "attn_softmax: need rows >= 1, cols >= 1, rows*cols <= 2^26");
        return -2;
    }
    if (strcmp(p->mask, "none") && strcmp(p->mask, "causal") && strcmp(p->mask, "padding")) {
        snprintf(err, errlen, "attn_softmax: param \"mask\" must be none, causal or padding");
        return -2;
    }
    if (p->cap < 0) {
        snprintf(err, errlen, "attn_softmax: param \"cap\" must be >= 0");
        return -2;
    }
    p->scale = (float)p->scale; /* fp32 attributes */
    p->cap = (float)p->cap;
    return 0;
}

static int masked(const softmax_params *p, uint64_t seed, long r, long j)
{
    if (strcmp(p->mask, "causal") == 0) return j > r + (p->cols - p->rows);
    if (strcmp(p->mask, "padding") == 0) {
        if (r % 3 == 2) return 1;
        uint32_t w[4];
        ug_rng_words(seed, 0x6d61736bu, (uint64_t)r, 0, w);
        return j >= 1 + (long)(w[0] % (uint32_t)p->cols);
    }
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    softmax_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_FP32 && dt != UG_DT_FP16 && dt != UG_DT_BF16) {
        snprintf(err, errlen, "attn_softmax: dtype must be fp32, fp16 or bf16");
        return -2;
    }
    int64_t shape[2] = {p.rows, p.cols};
    if (!ug_case_add_input(c, "x", dt, 2, shape, 1, err, errlen)) return -2;
    ug_tensor *mask = ug_case_add_input(c, "mask", UG_DT_FP32, 2, shape, 0, err, errlen);
    if (!mask || !ug_case_add_output(c, "y", dt, 2, shape, err, errlen)) return -2;
    for (long r = 0; r < p.rows; r++)
        for (long j = 0; j < p.cols; j++)
            ug_dtype_store(UG_DT_FP32, mask->data, (size_t)(r * p.cols + j),
                           masked(&p, c->spec.seed, r, j) ? -INFINITY : 0.0);
    return 0;
}

/* z_j in the arithmetic: cap*tanh(x*scale/cap) + mask (mask finite here). */
static ug_num logit(ug_ar *ar, const softmax_params *p, double x, double mask)
{
    ug_num z = ug_mul(ar, ug_c(ar, x), ug_c(ar, p->scale));
    if (p->cap > 0) {
        ug_num capn = ug_c(ar, p->cap);
        z = ug_mul(ar, capn, ug_tanh(ar, ug_div(ar, z, capn)));
    }
    return mask == 0.0 ? z : ug_add(ar, z, ug_c(ar, mask));
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    softmax_params p;
    char err[128];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *x = ug_case_input(c, "x"), *mask = ug_case_input(c, "mask");
    size_t n = (size_t)p.cols;
    ug_num *z = malloc(n * sizeof *z), *e = malloc(n * sizeof *e);
    unsigned char *live = malloc(n);
    if (!z || !e || !live) {
        free(z);
        free(e);
        free(live);
        return -1;
    }
    for (size_t k = 0; k < sel->n[0];) {
        size_t r = sel->idx[0][k] / n, mark = ug_ar_mark(ar), n_live = 0;
        ug_num m = {0};
        for (size_t j = 0; j < n; j++) {
            double mk = ug_tload(mask, r * n + j);
            live[j] = mk != -INFINITY;
            if (!live[j]) continue;
            z[j] = logit(ar, &p, ug_tload(x, r * n + j), mk);
            m = n_live++ ? ug_max(ar, m, z[j]) : z[j];
        }
        size_t live_pos = 0;
        for (size_t j = 0; j < n; j++)
            if (live[j]) e[live_pos++] = ug_exp(ar, ug_sub(ar, z[j], m));
        ug_num total = n_live ? ug_sum(ar, e, n_live) : ug_c(ar, 0.0);
        /* e[] is packed over live entries: walk the row again to map j -> position */
        for (size_t j = 0, pos = 0; j < n && k < sel->n[0] && sel->idx[0][k] / n == r; j++) {
            if (sel->idx[0][k] % n == j)
                ug_ar_emit(ar, 0, k++, live[j] ? ug_div(ar, e[pos], total) : ug_c(ar, 0.0));
            pos += live[j];
        }
        ug_ar_release(ar, mark);
    }
    free(z);
    free(e);
    free(live);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 256, g); /* the kernel's 256-lane tiles */
}

static const ug_output_rule outputs[] = {
    {"y", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* STANDARDS.md: attn_softmax 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_attn_softmax = {
    .op = UG_OP_ATTN_SOFTMAX,
    .summary = "y = softmax(cap*tanh(x*scale/cap) + mask) over the last dim; fully masked rows give zeros",
    .dtypes = "fp32,fp16,bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_attn_softmax_variants,
    .params_doc = "{\"rows\":\"rows R (int >= 1)\",\"cols\":\"softmax length C (int >= 1)\","
                  "\"scale\":\"fp32 multiplier of x (default 1)\",\"cap\":\"fp32 soft cap, 0 = none\","
                  "\"mask\":\"none | causal | padding\","
                  "\"tensors\":\"in x[R,C] dtype, mask[R,C] fp32 (0 or -inf); out y[R,C] dtype\"}",
};
