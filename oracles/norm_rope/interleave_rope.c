/* interleave_rope.c — operator declaration, table builder and exact oracle of
 * interleave_rope: RoPE on interleaved (GPT-J) pairs of x[B,N,S,D], results written in
 * split-half layout:
 *     y[b,n,s,i]       = x[b,n,s,2i]   * cos[s,i] - x[b,n,s,2i+1] * sin[s,i]
 *     y[b,n,s,D/2 + i] = x[b,n,s,2i+1] * cos[s,i] + x[b,n,s,2i]   * sin[s,i]
 * cos/sin are inputs [S, D/2] in the case dtype (as torch_npu's npu_interleave_rope takes
 * them in x's dtype), filled deterministically for positions pos0..pos0+S-1 with
 * theta = pos * base^(-2i/D) (rope_table.h); the oracle reads their stored values. Each
 * output is a two-term dot product of exact values: ug_dot_d sums it exactly and the
 * only rounding is the output's; special values follow IEEE rules through it (the semantics
 * text). Primary standard pypto, 1e-4 / 2^-7 (docs/STANDARDS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "oracles/norm_rope/rope_table.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

/* What ranges cannot say: d even, base strictly inside (1, 1e12), the size cap. */
static int check(const ug_params *P, char *err, size_t errlen)
{
    if (ug_rope_check(P, "interleave_rope", err, errlen)) return -2;
    if ((double)ug_p_int(P, "b") * (double)ug_p_int(P, "n") * (double)ug_p_int(P, "s") * (double)ug_p_int(P, "d") >
        (double)(1L << 26)) {
        snprintf(err, errlen, "interleave_rope: b*n*s*d must be <= 2^26");
        return -2;
    }
    return 0;
}

/* Fills cos/sin [S, D/2] for positions pos0 .. pos0+S-1. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    long seq = ug_p_int(&c->params, "s"), pos0 = ug_p_int(&c->params, "pos0");
    long *pos = malloc((size_t)seq * sizeof *pos);
    if (!pos) return -1;
    for (long i = 0; i < seq; i++) pos[i] = pos0 + i;
    ug_rope_fill_table(ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"), pos, (size_t)seq,
                       (size_t)ug_p_int(&c->params, "d") / 2, ug_p_num(&c->params, "base"));
    free(pos);
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_tensor *x = ug_case_input(c, "x"), *ct = ug_case_input(c, "cos"), *st = ug_case_input(c, "sin");
    size_t d = (size_t)ug_p_int(&c->params, "d"), half = d / 2, seq = (size_t)ug_p_int(&c->params, "s");
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

static const ug_param_decl params[] = {
    {"b", UG_PARAM_INT, "1", 1, 1 << 26, NULL, "batch B"},
    {"n", UG_PARAM_INT, "1", 1, 1 << 26, NULL, "heads N"},
    {"s", UG_PARAM_INT, "1", 1, 1 << 26, NULL, "sequence length S"},
    {"d", UG_PARAM_INT, "64", 2, 4096, NULL, "head dim D (even; production 64)"},
    {"pos0", UG_PARAM_INT, "0", 0, 1 << 24, NULL, "position of s = 0; row s has position pos0+s"},
    {"base", UG_PARAM_NUM, "10000", 1, 1e12, NULL,
     "rope base, > 1 (used in double): theta[s,i] = (pos0+s) * base^(-2i/D)"},
    {NULL},
};

/* fp16 and bf16 only: a case of another dtype has no dtype for x and is refused. */
static const ug_tensor_decl tensors[] = {
    {"x", UG_TENSOR_INPUT, "fp16:fp16,bf16:bf16", "b, n, s, d", "contiguous, pairs (2i, 2i+1) interleaved"},
    {"cos", UG_TENSOR_BUILT, "fp16:fp16,bf16:bf16", "s, d/2", "cos(theta[s,i]), rounded once to the dtype"},
    {"sin", UG_TENSOR_BUILT, "fp16:fp16,bf16:bf16", "s, d/2", "sin(theta[s,i]), rounded once to the dtype"},
    {"y", UG_TENSOR_OUTPUT, "fp16:fp16,bf16:bf16", "b, n, s, d",
     "split-half: y[..,i] = x[..,2i]*cos - x[..,2i+1]*sin, y[..,D/2+i] = x[..,2i+1]*cos + x[..,2i]*sin"},
    {NULL},
};

static const ug_output_rule outputs[] = {
    {"y", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* docs/STANDARDS.md: interleave_rope 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_interleave_rope = {
    .op = UG_OP_INTERLEAVE_ROPE,
    .summary = "RoPE on interleaved pairs (x_2i, x_2i+1) of x[B,N,S,D], output in split-half layout",
    .dtypes = "fp16,bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .decl = {"interleave_rope", params, NULL, tensors, check},
    .semantics = "Each output is the exact two-term sum x[2i]*cos - x[2i+1]*sin (first half) or x[2i+1]*cos + "
                 "x[2i]*sin (second half) of the stored values, rounded once to the case dtype. The cos/sin tables "
                 "are finite inputs built from the params. Special values of x follow IEEE rules through that sum and "
                 "reach only the two outputs of their pair: NaN stays NaN, inf*0 (a zero cos or sin, e.g. sin at "
                 "position 0) and +inf - inf give NaN, otherwise +-inf. For finite inputs each product is exact in "
                 "fp32 (|cos|, |sin| <= 1), so an fp32 sum overflows only where the exact result is beyond the dtype "
                 "range anyway; there (a finite result beyond the dtype's range) the reference stays the exact finite "
                 "value, and a kernel's +-inf is a non-finite mismatch.",
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
};
