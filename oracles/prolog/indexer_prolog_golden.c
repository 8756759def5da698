/* indexer_prolog_golden.c — the reference test's own goldens of the int8 lightning indexer
 * prolog (core/ops.h reference_golden; indexer_prolog_fp8.h declares them): our fp32
 * evaluations of test_lightning_indexer_prolog_quant.py's _indexer_compute_weights,
 * _indexer_compute_q and _indexer_compute_k, which cast to bf16 where the test's torch code
 * casts (x's dtype) and round in fp32 after each operation. The contract keeps those
 * stages exact; a kernel that makes the test's casts (its kernel does: bf16 matmul and
 * vector outputs between the stages) moves the scales by a few fp16 ulps and the weights by
 * one bf16 ulp of x.W_proj, where the test's rules allow less than one fp16 ulp. Dot
 * products are summed in double and rounded once to fp32 (the test's fp32 matmuls fix no
 * order). */
#include <math.h>
#include <stdlib.h>

#include "oracles/prolog/indexer_prolog_fp8.h"

static float bf16(float v) { return (float)ug_dtype_round(UG_DT_BF16, v); }

void ug_lip_weights_golden(const ug_case *c, const ug_selection *sel, double **out, const char *hidden,
                           const char *heads, const char *d)
{
    int k = ug_case_judged_find(c, "weights");
    if (k < 0 || !out[k]) return;
    const ug_tensor *x = ug_case_input(c, "x"), *w = ug_case_input(c, "w_proj");
    size_t hid = (size_t)ug_p_int(&c->params, hidden), H = (size_t)ug_p_int(&c->params, heads);
    float sh = (float)(1.0 / sqrt((double)H)), sd = (float)(1.0 / sqrt((double)ug_p_int(&c->params, d)));
    for (size_t i = 0; i < sel->n[k]; i++) {
        size_t t = sel->idx[k][i] / H, h = sel->idx[k][i] % H;
        double dot = 0.0; /* products of bf16 values are exact; the sum is the fp32 matmul's, near enough */
        for (size_t j = 0; j < hid; j++) dot += x->values[t * hid + j] * w->values[j * H + h];
        float b = bf16((float)dot);                          /* rounds: fp32, then the test's bf16 cast */
        out[k][i] = ug_dtype_round(UG_DT_FP16, b * sh * sd); /* rounds: fp32 twice, then fp16 */
    }
}

/* What a row's golden reads: the rope tables (given [T, R], or built [T, R/2] serving both
 * halves) and the dense transform. */
typedef struct {
    const ug_tensor *cs, *sn, *had;
    size_t d, half, width;
} golden_row;

/* single_rope on v[0..R) of token t (fp32: v*cos + rotate_half(v)*sin), cast to bf16; then
 * the dense transform u = v.H in fp32, cast to bf16; then quant_int8's scale: amax of the
 * bf16 row, r = 127/amax, 1/r in fp32, fp16. Returns NaN where the test's arithmetic does
 * not give a finite scale (no golden there). v: d floats (the bf16 row), u: d of scratch. */
static double row_scale(const golden_row *g, size_t t, float *v, float *u)
{
    size_t h = g->half;
    for (size_t i = 0; i < h; i++) {
        size_t lo = t * g->width + i, hi = g->width == 2 * h ? lo + h : lo;
        float a = v[i], b = v[i + h];
        float c = (float)ug_tload(g->cs, lo), s = (float)ug_tload(g->sn, lo);
        float ch = (float)ug_tload(g->cs, hi), sh = (float)ug_tload(g->sn, hi);
        v[i] = bf16(a * c + -b * s);      /* rounds: fp32 products and sum, then bf16 */
        v[i + h] = bf16(b * ch + a * sh); /* rounds: fp32, then bf16 */
    }
    float amax = 0.0f;
    for (size_t j = 0; j < g->d; j++) {
        double dot = 0.0;
        for (size_t i = 0; i < g->d; i++) dot += (double)v[i] * g->had->values[i * g->d + j];
        u[j] = bf16((float)dot); /* rounds: fp32 matmul, then bf16 */
        amax = fmaxf(amax, fabsf(u[j]));
    }
    float r = 127.0f / amax, scale = 1.0f / r;                                       /* rounds: fp32 */
    return isfinite(r) && isfinite(scale) ? ug_dtype_round(UG_DT_FP16, scale) : NAN; /* rounds: fp16 */
}

/* _indexer_compute_q's bf16 row of token t, head h: the int32 dot of the q_norm codes (qn
 * [T, L]) with w_qb as fp32, times the token's scale (qns) then the column's, cast to bf16. */
static void q_row(const ug_case *c, const ug_tensor *qn, const ug_tensor *qns, size_t t, size_t h, size_t d, float *v)
{
    const ug_tensor *w = ug_case_input(c, "w_qb"), *ws = ug_case_input(c, "w_qb_scale");
    size_t hd = (size_t)w->shape[1], lora = (size_t)qn->shape[1];
    for (size_t i = 0; i < d; i++) {
        int64_t dot = 0; /* exact: the test's int32 matmul */
        for (size_t l = 0; l < lora; l++)
            dot += (int64_t)ug_tload(qn, t * lora + l) * (int64_t)w->values[l * hd + h * d + i];
        float q = (float)dot * (float)ug_tload(qns, t) * (float)ws->values[h * d + i]; /* rounds: fp32 each */
        v[i] = bf16(q);
    }
}

/* _indexer_compute_k's bf16 row of token t: x.W_k in fp32, layer_norm in fp32 (mean, the
 * biased variance, (v - mean)/sqrt(var + eps)*gamma + beta), cast to bf16. */
static void k_row(const ug_case *c, size_t t, size_t d, size_t hid, float eps, float *v)
{
    const ug_tensor *x = ug_case_input(c, "x"), *w = ug_case_input(c, "w_k");
    const ug_tensor *gm = ug_case_input(c, "ln_gamma"), *bt = ug_case_input(c, "ln_beta");
    double sum = 0.0, sq = 0.0;
    for (size_t i = 0; i < d; i++) {
        double dot = 0.0;
        for (size_t j = 0; j < hid; j++) dot += x->values[t * hid + j] * w->values[j * d + i];
        v[i] = (float)dot; /* rounds: fp32 matmul */
        sum += v[i];
    }
    float mean = (float)(sum / (double)d); /* rounds: fp32 mean */
    for (size_t i = 0; i < d; i++) {
        float df = v[i] - mean; /* rounds: fp32 */
        sq += (double)(df * df);
    }
    float var = (float)(sq / (double)d), den = sqrtf(var + eps); /* rounds: fp32 */
    for (size_t i = 0; i < d; i++)
        v[i] = bf16((v[i] - mean) / den * (float)gm->values[i] + (float)bt->values[i]); /* rounds: fp32, bf16 */
}

/* The token that writes slot s, or -1 (none: its 0 is exact). */
static long writer_of(const ug_case *c, size_t tokens, size_t s)
{
    const ug_tensor *slots = ug_case_input(c, "slot_mapping");
    for (size_t t = 0; t < tokens; t++)
        if ((long)ug_tload(slots, t) == (long)s) return (long)t;
    return -1;
}

/* NaN (no golden) for every selected element of judged output k, when the case asks for it. */
static int clear_golden(const ug_selection *sel, double **out, int k)
{
    if (k < 0 || !out[k]) return 0;
    for (size_t i = 0; i < sel->n[k]; i++) out[k][i] = NAN;
    return 1;
}

void ug_lip_scales_golden(const ug_case *c, const ug_selection *sel, double **out, const ug_lip_params *p,
                          const ug_tensor *q_norm, const ug_tensor *q_norm_scale)
{
    ug_lip_params own;
    if (!p) ug_lip_params_read(c, &own), p = &own;
    int kq = ug_case_judged_find(c, "q_scale"), kk = ug_case_judged_find(c, "k_scale");
    int want_q = clear_golden(sel, out, kq), want_k = clear_golden(sel, out, kk);
    size_t d = (size_t)p->d, H = (size_t)p->heads;
    float *v = malloc(2 * d * sizeof *v);
    if (!v || !p->given_hadamard || p->rms) return free(v); /* the tests' pipeline only */
    golden_row g = {ug_case_input(c, "cos"), ug_case_input(c, "sin"), NULL, d, (size_t)p->rope / 2, 0};
    g.width = (size_t)g.cs->shape[1];
    g.had = ug_case_input(c, "hadamard_q");
    const ug_tensor *qn = q_norm ? q_norm : ug_case_input(c, "q_norm");
    const ug_tensor *qns = q_norm_scale ? q_norm_scale : ug_case_input(c, "q_norm_scale");
    for (size_t i = 0; want_q && i < sel->n[kq]; i++) {
        size_t t = sel->idx[kq][i] / H, h = sel->idx[kq][i] % H;
        q_row(c, qn, qns, t, h, d, v);
        out[kq][i] = row_scale(&g, t, v, v + d);
    }
    g.had = ug_case_input(c, "hadamard_k");
    for (size_t i = 0; want_k && i < sel->n[kk]; i++) {
        long t = writer_of(c, (size_t)p->tokens, sel->idx[kk][i]);
        if (t < 0) continue;
        k_row(c, (size_t)t, d, (size_t)p->hidden, (float)p->eps, v);
        out[kk][i] = row_scale(&g, (size_t)t, v, v + d);
    }
    free(v);
}
