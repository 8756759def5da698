/* glm_ffn_shared_expert_quant.c — exact oracle of glm_ffn_shared_expert_quant, the GLM-4.5
 * int8 shared expert (declaration: glm_ffn_shared_expert_quant.json):
 *     x_i8, s_x = DynQuant(x)                               per token, scale amax/127 (fp32)
 *     gu = bf16((x_i8 . W13_i8) * s_w13 * s_x)              exact int32 dot, one bf16 rounding
 *     a  = bf16(silu(g) * u)                                g = gu[:, :I], u = gu[:, I:]
 *     a_i8, s_a = DynQuant(a)
 *     out = bf16((a_i8 . W2_i8) * s_w2 * s_a)
 * The bf16 roundings of gu and a are the reference golden's (npu_quant_matmul with
 * output_dtype bf16, npu_swiglu on bf16): the specification's own, so they appear here as
 * ug_round. Staged rule (docs/STANDARDS.md): every stage starts from the kernel's exported
 * values of the stage before (x_i8/x_scale for a, a for a_i8/a_scale, a_i8/a_scale for
 * out), so a legitimate flip cannot cascade; each exported value is judged against what the
 * oracle derives from those stage inputs. Scales: the exact amax/127 (numeric, relative
 * 2^-12); codes: v/scale_kernel (consistency, 1 quantum) and, in the views, v/scale_oracle
 * with the oracle's scale rounded to fp32 (accuracy, 1/16 quantum + 2^-11 |g*|).
 *
 * Reference suite: hicann/pypto-gym tests/ops/glm_v4_5/test_glm_ffn_shared_expert_quant.py:
 * hidden 5120, intermediate 192, b 1 and 2 tokens, x = randn*0.02 - 0.01 (bf16), weights
 * quantised per channel to int8 with bf16 scales; out judged by assert_allclose
 * rtol 2^-7 atol 1e-4 on every element (our rule for out and for a). Primary: pypto. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "oracles/oracle.h"
#include "oracles/verdict.h"

enum { O_OUT, O_X8, O_XS, O_A, O_A8, O_AS };

/* One DynQuant: its codes, scales and the view of the codes (-1: the case judges none). */
typedef struct {
    int codes, scales, view;
} quant_outs;

typedef struct {
    size_t T, h, I;
    const ug_tensor *x, *w13, *s13, *w2, *s2;
    quant_outs xq, aq;
    int8_t *w13t, *w2t, *codes; /* [2I][h], [h][I], one row of the kernel's codes */
} ffn_ctx;

/* Positions [*b, *e) of output o's selected elements with flat index in [lo, hi). */
static void sel_range(const ug_selection *sel, int o, size_t lo, size_t hi, size_t *b, size_t *e)
{
    *b = *e = 0;
    if (o < 0 || o >= sel->n_out) return;
    size_t l = 0, r = sel->n[o];
    while (l < r) {
        size_t m = (l + r) / 2;
        if (sel->idx[o][m] < lo) l = m + 1;
        else r = m;
    }
    *b = *e = l;
    while (*e < sel->n[o] && sel->idx[o][*e] < hi) (*e)++;
}

static int any_selected(const ug_selection *sel, int o, size_t lo, size_t hi)
{
    size_t b, e;
    sel_range(sel, o, lo, hi, &b, &e);
    return b < e;
}

/* Emits the selected codes of row `row` (n values v): v/s, 0 in a zero or non-finite row. */
static void codes_emit(ug_ar *ar, const ug_selection *sel, int o, size_t row, const double *v, size_t n,
                       int zero, ug_num s)
{
    size_t b, e;
    sel_range(sel, o, row * n, (row + 1) * n, &b, &e);
    for (; b < e; b++)
        ug_ar_emit(ar, o, b, zero ? ug_c(ar, 0.0) : ug_div(ar, ug_c(ar, v[sel->idx[o][b] - row * n]), s));
}

/* DynQuant of one row v[0..n) (exact values: an input row or the kernel's exported a). The
 * scale is judged against the exact amax/127; the codes against v/scale_kernel and (view)
 * v/fp32(amax/127). A kernel scale that is not positive and finite is replaced by the exact
 * one for its codes (the scale compare reports it). */
static void quant_row(const ug_case *c, ug_ar *ar, const ug_selection *sel, const quant_outs *q, const double *v,
                      size_t n, size_t row)
{
    double amax = 0.0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) finite = 0;
        else if (fabs(v[i]) > amax) amax = fabs(v[i]); /* exact */
    }
    size_t b, e;
    sel_range(sel, q->scales, row, row + 1, &b, &e);
    ug_num exact = finite ? ug_div(ar, ug_c(ar, amax), ug_c(ar, 127.0)) : ug_c(ar, NAN);
    if (b < e) ug_ar_emit(ar, q->scales, b, exact);
    int zero = !finite || amax == 0.0; /* the semantics: codes 0 */
    double sk = ug_tload(&c->out[q->scales], row); /* staged: the kernel's scale */
    ug_num own = zero ? exact : ug_round(ar, exact, UG_DT_FP32); /* rounds: the scale as exported */
    codes_emit(ar, sel, q->codes, row, v, n, zero, sk > 0 && isfinite(sk) ? ug_c(ar, sk) : exact);
    codes_emit(ar, sel, q->view, row, v, n, zero, own);
}

/* sum_k a[k]*b[k] over int8 codes, in int64: the int32 sum the specification makes exact
 * (|sum| < 2^31 by the hidden bound) is an exact constant in every arithmetic, so no
 * bound is charged for it. */
static ug_num int_dot(ug_ar *ar, const int8_t *a, const int8_t *b, size_t n)
{
    int64_t acc = 0;
    for (size_t k = 0; k < n; k++) acc += (int64_t)a[k] * b[k];
    return ug_c(ar, (double)acc);
}

/* The [rows, cols] int8 tensor t transposed into dst [cols][rows] (each column a
 * contiguous reduction: the strided walk was 40 % of a production case's time). */
static void codes_t(const ug_tensor *t, size_t rows, size_t cols, int8_t *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = (int8_t)t->values[r * cols + c];
}

/* Row `row` (n codes) of the kernel's int8 output o. */
static void codes_row(const ug_case *c, int o, size_t row, size_t n, int8_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = (int8_t)ug_tload(&c->out[o], row * n + i);
}

/* gu[t,col] from the kernel's codes xq of token t and its scale sx, rounded to bf16. */
static ug_num gu_at(const ffn_ctx *k, ug_ar *ar, const int8_t *xq, ug_num sx, size_t col)
{
    ug_num v = ug_mul(ar, ug_mul(ar, int_dot(ar, xq, k->w13t + col * k->h, k->h), ug_c(ar, ug_tload(k->s13, col))), sx);
    return ug_round(ar, v, UG_DT_BF16); /* rounds: the golden's bf16 matmul output */
}

/* Stage 2: the selected elements of a in row t, from the kernel's x_i8 and x_scale. */
static void a_emit(const ffn_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t b, e, I = k->I;
    sel_range(sel, O_A, t * I, (t + 1) * I, &b, &e);
    if (b == e) return;
    codes_row(c, O_X8, t, k->h, k->codes);
    ug_num sx = ug_c(ar, ug_tload(&c->out[O_XS], t));
    for (; b < e; b++) {
        size_t i = sel->idx[O_A][b] - t * I, mark = ug_ar_mark(ar);
        ug_num g = gu_at(k, ar, k->codes, sx, i), u = gu_at(k, ar, k->codes, sx, I + i);
        ug_ar_emit(ar, O_A, b, ug_round(ar, ug_mul(ar, ug_silu(ar, g), u), UG_DT_BF16)); /* rounds: bf16 a */
        ug_ar_release(ar, mark);
    }
}

/* Stage 4: the selected elements of out in row t, from the kernel's a_i8 and a_scale. */
static void out_emit(const ffn_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t b, e, h = k->h;
    sel_range(sel, O_OUT, t * h, (t + 1) * h, &b, &e);
    if (b == e) return;
    codes_row(c, O_A8, t, k->I, k->codes);
    ug_num sa = ug_c(ar, ug_tload(&c->out[O_AS], t));
    for (; b < e; b++) {
        size_t j = sel->idx[O_OUT][b] - t * h, mark = ug_ar_mark(ar);
        ug_num dot = int_dot(ar, k->codes, k->w2t + j * k->I, k->I);
        ug_ar_emit(ar, O_OUT, b, ug_mul(ar, ug_mul(ar, dot, ug_c(ar, ug_tload(k->s2, j))), sa));
        ug_ar_release(ar, mark);
    }
}

/* Stages 1 and 3 of token t: DynQuant of the input row and of the kernel's exported a. */
static void quant_stages(const ffn_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t,
                         double *row)
{
    const quant_outs *q[2] = {&k->xq, &k->aq};
    for (int s = 0; s < 2; s++) {
        size_t n = s ? k->I : k->h;
        if (!any_selected(sel, q[s]->codes, t * n, (t + 1) * n) && !any_selected(sel, q[s]->scales, t, t + 1) &&
            !any_selected(sel, q[s]->view, t * n, (t + 1) * n))
            continue;
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < n; i++) row[i] = s ? ug_tload(&c->out[O_A], t * n + i) : k->x->values[t * n + i];
        quant_row(c, ar, sel, q[s], row, n, t);
        ug_ar_release(ar, mark);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_params *P = &c->params;
    ffn_ctx k = {(size_t)ug_p_int(P, "tokens"), (size_t)ug_p_int(P, "hidden"), (size_t)ug_p_int(P, "intermediate"),
                 ug_case_input(c, "x"), ug_case_input(c, "w13"), ug_case_input(c, "w13_scale"),
                 ug_case_input(c, "w2"), ug_case_input(c, "w2_scale"),
                 {O_X8, O_XS, ug_case_judged_find(c, "x_i8@oracle_scale")},
                 {O_A8, O_AS, ug_case_judged_find(c, "a_i8@oracle_scale")}};
    size_t h = k.h, I = k.I;
    double *row = malloc((h > I ? h : I) * sizeof *row);
    k.w13t = malloc(3 * I * h + (h > I ? h : I));
    if (!row || !k.w13t) {
        free(row), free(k.w13t);
        return -1;
    }
    k.w2t = k.w13t + 2 * I * h, k.codes = k.w2t + I * h;
    codes_t(k.w13, h, 2 * I, k.w13t);
    codes_t(k.w2, I, h, k.w2t);
    for (size_t t = 0; t < k.T; t++) {
        quant_stages(&k, c, ar, sel, t, row);
        a_emit(&k, c, ar, sel, t);
        out_emit(&k, c, ar, sel, t);
    }
    free(row), free(k.w13t);
    return 0;
}

/* Scratch for the case memory estimate: the sim kernel's int8 transposes of both weights
 * (3Ih bytes), its fp32 staging of W13 while transposing (8Ih), its fp32 scales and rows;
 * the oracle's int8 transposes (3Ih) and one row of doubles. */
static double scratch(const ug_params *P)
{
    double h = (double)ug_p_int(P, "hidden"), I = (double)ug_p_int(P, "intermediate");
    return 14 * h * I + 4 * (6 * I + 4 * h) + 2 * (h + I) + 8 * (h + I);
}

const ug_op_def ug_opdef_glm_ffn_shared_expert_quant = {
    .op = UG_OP_GLM_FFN_SHARED_EXPERT_QUANT, .oracle = oracle, .scratch = scratch};
