/* interleave_rope.c — operator definition, input builder and exact oracle of
 * interleave_rope: RoPE on interleaved (GPT-J) pairs of x[B,N,S,D], results written in
 * split-half layout:
 *     y[b,n,s,i]       = x[b,n,s,2i]   * cos[s,i] - x[b,n,s,2i+1] * sin[s,i]
 *     y[b,n,s,D/2 + i] = x[b,n,s,2i+1] * cos[s,i] + x[b,n,s,2i]   * sin[s,i]
 * cos/sin are inputs [S, D/2] in the case dtype (as torch_npu's npu_interleave_rope takes
 * them in x's dtype), filled deterministically for positions pos0..pos0+S-1 with
 * theta = pos * base^(-2i/D) (rope_table.h); the oracle reads their stored values. Each
 * output is a two-term dot product of exact values: ug_dot_d sums it exactly and the
 * only rounding is the output's. Primary standard pypto, 1e-4 / 2^-7 (STANDARDS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/sim/norm_rope/interleave_rope.h"
#include "oracles/norm_rope/rope_table.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long b, n, s, d, pos0;
    double base;
} rope_params;

static int read_params(const ug_spec *sp, rope_params *p, char *err, size_t errlen)
{
    if (ug_param_int(sp->params, "b", 1, &p->b, err, errlen) || ug_param_int(sp->params, "n", 1, &p->n, err, errlen) ||
        ug_param_int(sp->params, "s", 1, &p->s, err, errlen) || ug_param_int(sp->params, "d", 64, &p->d, err, errlen) ||
        ug_param_int(sp->params, "pos0", 0, &p->pos0, err, errlen) ||
        ug_param_num(sp->params, "base", 10000.0, &p->base, err, errlen))
        return -2;
    const char *bad = p->b < 1 ? "b" : p->n < 1 ? "n" : p->s < 1 ? "s" : NULL;
    if (bad) {
        snprintf(err, errlen, "interleave_rope: param \"%s\" must be >= 1", bad);
        return -2;
    }
    if (p->d < 2 || p->d % 2 || p->d > 4096) {
        snprintf(err, errlen, "interleave_rope: param \"d\" must be even, 2..4096 (production 64)");
        return -2;
    }
    if (p->pos0 < 0 || p->pos0 > (1L << 24)) {
        snprintf(err, errlen, "interleave_rope: param \"pos0\" must be in 0..2^24");
        return -2;
    }
    if (!(p->base > 1.0 && p->base < 1e12)) {
        snprintf(err, errlen, "interleave_rope: param \"base\" must be > 1 (and < 1e12)");
        return -2;
    }
    if ((double)p->b * (double)p->n * (double)p->s * (double)p->d > (double)(1L << 26)) {
        snprintf(err, errlen, "interleave_rope: b*n*s*d must be <= 2^26");
        return -2;
    }
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    rope_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_FP16 && dt != UG_DT_BF16) {
        snprintf(err, errlen, "interleave_rope: dtype must be fp16 or bf16");
        return -2;
    }
    int64_t shape[4] = {p.b, p.n, p.s, p.d}, tshape[2] = {p.s, p.d / 2};
    ug_tensor *ct, *st;
    if (!ug_case_add_input(c, "x", dt, 4, shape, 1, err, errlen) ||
        !(ct = ug_case_add_input(c, "cos", dt, 2, tshape, 0, err, errlen)) ||
        !(st = ug_case_add_input(c, "sin", dt, 2, tshape, 0, err, errlen)) ||
        !ug_case_add_output(c, "y", dt, 4, shape, err, errlen))
        return -2;
    long *pos = malloc((size_t)p.s * sizeof *pos);
    if (!pos) return -1;
    for (long i = 0; i < p.s; i++) pos[i] = p.pos0 + i;
    ug_rope_fill_table(ct, st, pos, (size_t)p.s, (size_t)p.d / 2, p.base);
    free(pos);
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    rope_params p;
    char err[128];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *x = ug_case_input(c, "x"), *ct = ug_case_input(c, "cos"), *st = ug_case_input(c, "sin");
    size_t d = (size_t)p.d, half = d / 2, seq = (size_t)p.s;
    for (size_t k = 0; k < sel->n[0]; k++) {
        size_t idx = sel->idx[0][k], row = idx / d, j = idx % d, s = row % seq;
        size_t i = j < half ? j : j - half, mark = ug_ar_mark(ar);
        double e = ug_tload(x, row * d + 2 * i), o = ug_tload(x, row * d + 2 * i + 1);
        double cs = ug_tload(ct, s * half + i), sn = ug_tload(st, s * half + i);
        /* first half: e*c + o*(-s); second half: o*c + e*s (negation exact) */
        double a[2] = {j < half ? e : o, j < half ? o : e}, w[2] = {cs, j < half ? -sn : sn};
        ug_ar_emit(ar, 0, k, ug_dot_d(ar, a, 1, w, 1, 2));
        ug_ar_release(ar, mark);
    }
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[3];
    g->rows = t->numel / g->cols;
    g->row_tile = 16;         /* the kernel's tile of positions */
    g->col_tile = g->cols / 2; /* the even/odd half boundary */
}

static const ug_output_rule outputs[] = {
    {"y", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* STANDARDS.md: interleave_rope 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_interleave_rope = {
    .op = UG_OP_INTERLEAVE_ROPE,
    .summary = "RoPE on interleaved pairs (x_2i, x_2i+1) of x[B,N,S,D], output in split-half layout",
    .dtypes = "fp16,bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_interleave_rope_variants,
    .params_doc = "{\"b\":\"batch B (int >= 1)\",\"n\":\"heads N (int >= 1)\",\"s\":\"sequence S (int >= 1)\","
                  "\"d\":\"head dim D (even, 2..4096, default and production 64)\","
                  "\"pos0\":\"position of s = 0 (int >= 0, default 0); row s has position pos0+s\","
                  "\"base\":\"rope base (default 10000): theta[s,i] = (pos0+s) * base^(-2i/D)\","
                  "\"tensors\":\"in x[B,N,S,D] dtype (contiguous, pairs (2i,2i+1) interleaved), "
                  "cos[S,D/2] dtype, sin[S,D/2] dtype (cos/sin of theta[s,i]); "
                  "out y[B,N,S,D] dtype, split-half: y[..,i] = x[..,2i]*cos - x[..,2i+1]*sin, "
                  "y[..,D/2+i] = x[..,2i+1]*cos + x[..,2i]*sin\"}",
};
