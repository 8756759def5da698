/* rms_norm_rope.c — sim kernel and planted-bug mutants for rms_norm_rope (Qwen3 q/k
 * norm + NeoX rotary), applied to every head row x[0..D) of q and of k:
 *     n = x * gamma / sqrt(mean(x^2) + eps)
 *     y[i]       = n[i] * cos[t,i] - n[i+D/2] * sin[t,i]      (i < D/2)
 *     y[i + D/2] = n[i+D/2] * cos[t,i] + n[i] * sin[t,i]
 *
 * Device model: one head row per vector pass; x widened to fp32; the sum of squares is
 * accumulated in 64 fp32 lanes (lane l takes elements l, l+64, ...) and the lanes are
 * reduced pairwise; rstd = 1/sqrt(sum/D + eps) in fp32; the normed row stays in fp32
 * (the fused kernel never writes it out) and is rotated with fp32 products; each output
 * is rounded once to the output dtype.
 * Legal variants (other correct kernels: they must pass every case): the sum of squares in
 * one sequential fp32 accumulator with fused multiply-adds; the rotation with one fused
 * multiply-add per output (x*c -/+ y*s rounded once after the exact first product). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

/* In-place rotation of v[0..d) with one cos/sin row: NeoX pairs (i, i+D/2), or the
 * interleaved pairs (2i, 2i+1) of the UG_VAR_MUT_INTERLEAVED_PAIRING bug. */
static void rotate(float *v, const float *c, const float *s, size_t d, ug_variant_code bug, float *tmp)
{
    size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        size_t a = bug == UG_VAR_MUT_INTERLEAVED_PAIRING ? 2 * i : i,
               b = bug == UG_VAR_MUT_INTERLEAVED_PAIRING ? 2 * i + 1 : i + half;
        if (bug == UG_VAR_LEGAL_FMA_ROTATE) {
            tmp[a] = fmaf(v[a], c[i], -(v[b] * s[i])); /* rounds: fp32 mul, then one fused multiply-add */
            tmp[b] = fmaf(v[b], c[i], v[a] * s[i]);
            continue;
        }
        tmp[a] = v[a] * c[i] - v[b] * s[i]; /* rounds: fp32 mul, mul, sub */
        tmp[b] = v[b] * c[i] + v[a] * s[i]; /* rounds: fp32 mul, mul, add */
    }
    for (size_t i = 0; i < d; i++) v[i] = tmp[i];
}

/* Norm then rope of one head row v (fp32, in place). */
static void norm_rope_row(float *v, const float *g, const float *c, const float *s, size_t d, float eps,
                          ug_variant_code bug, float *tmp)
{
    if (bug == UG_VAR_MUT_ROPE_BEFORE_NORM) rotate(v, c, s, d, bug, tmp); /* bug: rotary applied to the raw row */
    float ms = (bug == UG_VAR_LEGAL_SEQ_FMA ? ug_sim_sumsq_seq_fma(v, d) : ug_sim_sumsq_lanes(v, d)) /
               (float)d;                                                                          /* rounds: fp32 */
    float rs = bug == UG_VAR_MUT_EPS_OUTSIDE ? 1.0f / (sqrtf(ms) + eps) : 1.0f / sqrtf(ms + eps); /* rounds: fp32 */
    for (size_t i = 0; i < d; i++) v[i] = v[i] * rs * g[i]; /* rounds: fp32, left to right */
    if (bug != UG_VAR_MUT_ROPE_BEFORE_NORM) rotate(v, c, s, d, bug, tmp);
}

/* Normalises and rotates every head row of x [T, H, D] into y. */
static int run_tensor(const ulpgym_tensor *x, const ulpgym_tensor *gamma, const ulpgym_tensor *ct,
                      const ulpgym_tensor *st, const ulpgym_tensor *y, float eps, ug_variant_code bug)
{
    size_t tok = (size_t)x->shape[0], heads = (size_t)x->shape[1], d = (size_t)x->shape[2], half = d / 2;
    float *v = malloc((4 * d + 2 * half) * sizeof *v);
    if (!v) return -1;
    float *tmp = v + d, *g = tmp + d, *c = g + d, *s = c + half;
    ug_sim_load(gamma, 0, d, g);
    for (size_t t = 0; t < tok; t++) {
        ug_sim_load(ct, t * half, half, c);
        ug_sim_load(st, t * half, half, s);
        for (size_t h = 0; h < heads; h++) {
            size_t off = (t * heads + h) * d;
            ug_sim_load(x, off, d, v);
            norm_rope_row(v, g, c, s, d, eps, bug, tmp);
            ug_sim_store(y, off, d, v); /* rounds: output dtype */
        }
    }
    free(v);
    return 0;
}

static int nr_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    float eps = (float)UG_P(rms_norm_rope, &p)->eps; /* exact: an fp32 value */
    ug_params_free(&p);
    const ulpgym_tensor *q, *k, *gq, *gk, *ct, *st, *qo, *ko, **slots[] = {&q, &k, &gq, &gk, &ct, &st, &qo, &ko};
    if (ug_sim_bind(call, "q k gamma_q gamma_k cos sin q_out k_out", slots, err, errlen)) return -2;
    if (run_tensor(q, gq, ct, st, qo, eps, bug) || run_tensor(k, gk, ct, st, ko, eps, bug)) return -1;
    return 0;
}

const ug_kernel_fn ug_sim_rms_norm_rope = nr_kernel;
