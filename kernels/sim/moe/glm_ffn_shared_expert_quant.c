/* glm_ffn_shared_expert_quant.c — sim kernel and planted-bug mutants of
 * glm_ffn_shared_expert_quant, the GLM-4.5 int8 shared expert:
 *     x_i8, s_x = DynQuant(x); gu = bf16((x_i8.W13)*s_w13*s_x); a = bf16(silu(g)*u);
 *     a_i8, s_a = DynQuant(a); out = bf16((a_i8.W2)*s_w2*s_a)
 *
 * Device model: the vector unit finds each row's amax (exact), forms scale = amax/127 in
 * fp32 and the codes as rne(v/scale) in fp32, saturated to int8; the cube multiplies int8
 * by int8 into an exact int32 accumulator (|sum| < 2^31 by the declared hidden bound);
 * the fixpipe converts the sum to fp32 and multiplies by the per-channel scale, the vector
 * unit by the per-token scale, and gu is written as bf16 (the golden's quant_matmul
 * output); SwiGLU runs in fp32 on the bf16 g/u and writes a as bf16, which is quantised
 * again. Each exported value is what the next stage reads.
 *
 * Mutants, the bug classes of a hand-written int8 pipeline: the wrong divisor (amax/128),
 * truncation instead of RNE, an int16 accumulator that wraps, silu on the up half, a
 * static-calibration clip ratio (0.982) left on the dynamic scale (scales 1.8 % small, the
 * largest codes saturate: consistent with the kernel's own scale, so only the scale rule
 * and the @oracle_scale views see it), and a quantiser that forms v*127 before dividing by
 * amax (overflows fp32 for |v| > 2.7e36: only the near-overflow inputs see it). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_SCALE_128, MUT_TRUNC, MUT_INT16_ACC, MUT_SILU_UP, MUT_X127, MUT_CLIP } ffn_bug;

/* DynQuant of v[0..n): codes into q (integers as fp32), returns the scale (0 for a zero
 * row, NaN for a row holding NaN or inf, whose codes are 0). */
static float dynquant_row(const float *v, size_t n, float *q, ffn_bug bug)
{
    float amax = 0.0f;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) finite = 0;
        else amax = fmaxf(amax, fabsf(v[i])); /* exact */
    }
    for (size_t i = 0; i < n; i++) q[i] = 0.0f;
    if (!finite) return NAN;
    if (amax == 0.0f) return 0.0f;
    float scale = amax / (bug == MUT_SCALE_128 ? 128.0f : 127.0f); /* rounds: fp32 (bug: 128 is not int8's max) */
    if (bug == MUT_CLIP) scale *= 0.982f; /* bug: a static calibration's clip ratio on a dynamic scale */
    for (size_t i = 0; i < n; i++) {
        float y = bug == MUT_X127 ? v[i] * 127.0f / amax /* bug: v*127 overflows fp32 first */
                                  : v[i] / scale;          /* rounds: fp32 */
        y = bug == MUT_TRUNC ? truncf(y) : rintf(y);       /* rounds: RNE to an integer (bug: toward zero) */
        q[i] = fminf(fmaxf(y, -128.0f), 127.0f);            /* saturating int8 */
    }
    return scale;
}

/* sum_k a[k]*b[k] over int8 codes, as the cube accumulates it (bug: in int16, wrapping). */
static int32_t int_dot(const int8_t *a, const int8_t *b, size_t n, ffn_bug bug)
{
    int32_t acc = 0;
    int16_t acc16 = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t p = (int32_t)a[k] * b[k]; /* exact */
        acc += p;
        acc16 = (int16_t)(uint16_t)((uint16_t)acc16 + (uint16_t)p); /* the bug's two's-complement wrap */
    }
    return bug == MUT_INT16_ACC ? acc16 : acc;
}

/* An int8 [rows, cols] tensor transposed into [cols][rows] int8 codes (each output
 * column a contiguous reduction); stage is scratch of rows*cols floats. */
static void load_codes_t(const ulpgym_tensor *w, size_t rows, size_t cols, int8_t *dst, float *stage)
{
    ug_sim_load(w, 0, rows * cols, stage); /* exact */
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = (int8_t)stage[r * cols + c];
}

static void to_codes(const float *q, size_t n, int8_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = (int8_t)q[i];
}

typedef struct {
    size_t T, h, I;
    const ulpgym_tensor *x, *w13, *s13, *w2, *s2, *out, *x8, *xs, *a, *a8, *as;
    int8_t *w13t, *w2t, *xq8, *aq8; /* [2I][h], [h][I], one row of codes each */
    float *sw13, *sw2, *xr, *q, *gu, *ar, *o;
} ffn_ctx;

/* One token: both quantisations, both GEMMs, SwiGLU, every exported value stored. */
static void ffn_token(ffn_ctx *k, size_t t, ffn_bug bug)
{
    size_t h = k->h, I = k->I;
    ug_sim_load(k->x, t * h, h, k->xr);
    float sx = dynquant_row(k->xr, h, k->q, bug);
    ug_sim_store(k->x8, t * h, h, k->q);
    ug_sim_store(k->xs, t, 1, &sx);
    to_codes(k->q, h, k->xq8);
    for (size_t c = 0; c < 2 * I; c++) { /* rounds: int32 -> fp32, two fp32 products, bf16 */
        float v = (float)int_dot(k->xq8, k->w13t + c * h, h, bug) * k->sw13[c];
        k->gu[c] = ug_sim_round_bf16(v * sx);
    }
    for (size_t i = 0; i < I; i++) {
        float g = k->gu[i], u = k->gu[I + i];
        if (bug == MUT_SILU_UP) g = k->gu[I + i], u = k->gu[i]; /* bug: silu on the up half */
        k->ar[i] = ug_sim_round_bf16(g / (1.0f + expf(-g)) * u); /* rounds: fp32 silu and product, bf16 */
    }
    ug_sim_store(k->a, t * I, I, k->ar); /* exact: already bf16 */
    float sa = dynquant_row(k->ar, I, k->q, bug);
    ug_sim_store(k->a8, t * I, I, k->q);
    ug_sim_store(k->as, t, 1, &sa);
    to_codes(k->q, I, k->aq8);
    for (size_t j = 0; j < h; j++) /* rounds: int32 -> fp32, two fp32 products */
        k->o[j] = (float)int_dot(k->aq8, k->w2t + j * I, I, bug) * k->sw2[j] * sa;
    ug_sim_store(k->out, t * h, h, k->o); /* rounds: bf16 */
}

/* k's buffers: int8 weights and code rows, fp32 scales and rows (freed by ffn_free). */
static int ffn_alloc(ffn_ctx *k)
{
    size_t h = k->h, I = k->I;
    k->w13t = malloc(3 * I * h + h + I);
    k->sw13 = malloc((6 * I + 4 * h) * sizeof *k->sw13);
    if (!k->w13t || !k->sw13) return -1;
    k->w2t = k->w13t + 2 * I * h, k->xq8 = k->w2t + I * h, k->aq8 = k->xq8 + h;
    k->sw2 = k->sw13 + 2 * I, k->xr = k->sw2 + h, k->q = k->xr + h, k->o = k->q + (h > I ? h : I);
    k->gu = k->o + h, k->ar = k->gu + 2 * I;
    return 0;
}

static int ffn_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ffn_ctx k = {0};
    const ulpgym_tensor **slots[] = {&k.x, &k.w13, &k.s13, &k.w2, &k.s2, &k.out, &k.x8, &k.xs, &k.a, &k.a8, &k.as};
    if (ug_sim_bind(call, "x w13 w13_scale w2 w2_scale out x_i8 x_scale a a_i8 a_scale", slots, err, errlen))
        return -2;
    k.T = (size_t)k.x->shape[0], k.h = (size_t)k.x->shape[1], k.I = (size_t)k.w2->shape[0];
    float *stage = malloc(2 * k.I * k.h * sizeof *stage);
    if (!stage || ffn_alloc(&k)) {
        free(stage), free(k.w13t), free(k.sw13);
        return -1;
    }
    load_codes_t(k.w13, k.h, 2 * k.I, k.w13t, stage);
    load_codes_t(k.w2, k.I, k.h, k.w2t, stage);
    free(stage);
    ug_sim_load(k.s13, 0, 2 * k.I, k.sw13);
    ug_sim_load(k.s2, 0, k.h, k.sw2);
    for (size_t t = 0; t < k.T; t++) ffn_token(&k, t, (ffn_bug)bug);
    free(k.w13t), free(k.sw13);
    return 0;
}

const ug_kernel_variant ug_variants_glm_ffn_shared_expert_quant[] = {
    {"sim", "exact int32 GEMMs, fp32 dequant and SwiGLU, gu and a written as bf16, fp32 amax/127 quantisers",
     ffn_kernel, 0, MUT_NONE},
    {"mut_scale_128", "DynQuant divides amax by 128 instead of 127 (scales 0.8 % small, codes rescaled)", ffn_kernel,
     0, MUT_SCALE_128},
    {"mut_trunc", "the quantiser truncates v/scale toward zero instead of rounding to nearest even", ffn_kernel, 0,
     MUT_TRUNC},
    {"mut_int16_acc", "the int8 GEMMs accumulate in a wrapping int16 register instead of int32", ffn_kernel, 0,
     MUT_INT16_ACC},
    {"mut_silu_up", "SwiGLU applies silu to the up half and multiplies by the gate half", ffn_kernel, 0,
     MUT_SILU_UP},
    {"mut_clip_982",
     "DynQuant keeps a static calibration's clip ratio: scale = 0.982*amax/127 (1.8 % small), the top codes saturate",
     ffn_kernel, 0, MUT_CLIP},
    {"mut_x127", "the quantiser forms v*127/amax: v*127 overflows fp32 for |v| > 2.7e36 (near-overflow inputs only)",
     ffn_kernel, 0, MUT_X127},
    {NULL, NULL, NULL},
};
