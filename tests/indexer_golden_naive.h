/* indexer_golden_naive.h — the int8 lightning indexer's reference-test scales (its tests'
 * _indexer_compute_q / _indexer_compute_k, and the fused op's twin) written out naively for
 * the tests that check the op's goldens (oracles/prolog/indexer_prolog_golden.c): one row
 * at a time from the case's tensors, the same fp32 operations in the same order, so the two
 * agree bit for bit. Given RoPE tables [T, R] and given dense Hadamards only (the tests'
 * pipeline). Include after check.h. */
#ifndef UG_TEST_INDEXER_GOLDEN_NAIVE_H
#define UG_TEST_INDEXER_GOLDEN_NAIVE_H
#include <math.h>
#include <stdint.h>

#include "gen/case.h"
#include "oracles/oracle.h"

/* A case and the names the pipeline's sizes go by there; qn / qns: where the q rows start
 * (the q_norm codes [T, L] and their scale [T]: inputs, or a fused op's own outputs). */
typedef struct {
    const ug_case *c;
    size_t d, rope, hidden;
    float eps;
    const ug_tensor *qn, *qns;
} ign_case;

static inline float ign_bf16(float v) { return (float)ug_dtype_round(UG_DT_BF16, v); }
/* Element i of input `name`, drawn or built, as an exact double. */
static inline double ign_in(const ign_case *g, const char *name, size_t i)
{
    return ug_tload(ug_case_input(g->c, name), i);
}

/* quant_int8's scale of the bf16 row v of token t: single_rope on the first R values in fp32,
 * bf16; v.H in fp32, bf16; 1/(127/amax) in fp32, fp16. v: d floats, overwritten. */
static inline double ign_scale_of(const ign_case *g, size_t t, float *v, const char *had)
{
    size_t d = g->d, R = g->rope, h = R / 2;
    float u[128], amax = 0.0f;
    for (size_t i = 0; i < h; i++) {
        float a = v[i], b = v[i + h];
        v[i] = ign_bf16(a * (float)ign_in(g, "cos", t * R + i) - b * (float)ign_in(g, "sin", t * R + i));
        v[i + h] = ign_bf16(b * (float)ign_in(g, "cos", t * R + i + h) + a * (float)ign_in(g, "sin", t * R + i + h));
    }
    for (size_t j = 0; j < d; j++) {
        double dot = 0.0;
        for (size_t i = 0; i < d; i++) dot += (double)v[i] * ign_in(g, had, i * d + j);
        u[j] = ign_bf16((float)dot);
        amax = fmaxf(amax, fabsf(u[j]));
    }
    float r = 127.0f / amax;
    return ug_dtype_round(UG_DT_FP16, 1.0f / r);
}

/* _indexer_compute_q's scale of token t, head h: the int32 dot as fp32, times the token's
 * and the column's fp32 scales, bf16, then ign_scale_of. */
static inline double ign_q_scale(const ign_case *g, size_t t, size_t h)
{
    size_t d = g->d, L = (size_t)g->qn->shape[1], HD = (size_t)ug_case_input(g->c, "w_qb")->shape[1];
    float v[128];
    for (size_t i = 0; i < d; i++) {
        int64_t dot = 0;
        for (size_t l = 0; l < L; l++)
            dot += (int64_t)ug_tload(g->qn, t * L + l) * (int64_t)ign_in(g, "w_qb", l * HD + h * d + i);
        v[i] = ign_bf16((float)dot * (float)ug_tload(g->qns, t) * (float)ign_in(g, "w_qb_scale", h * d + i));
    }
    return ign_scale_of(g, t, v, "hadamard_q");
}

/* _indexer_compute_k's scale of token t: fp32 x.W_k, layer_norm in fp32, bf16, then
 * ign_scale_of. */
static inline double ign_k_scale(const ign_case *g, size_t t)
{
    size_t d = g->d, hid = g->hidden;
    float v[128];
    double sum = 0.0, sq = 0.0;
    for (size_t i = 0; i < d; i++) {
        double dot = 0.0;
        for (size_t j = 0; j < hid; j++) dot += ign_in(g, "x", t * hid + j) * ign_in(g, "w_k", j * d + i);
        sum += v[i] = (float)dot;
    }
    float mean = (float)(sum / (double)d);
    for (size_t i = 0; i < d; i++) sq += (double)((v[i] - mean) * (v[i] - mean));
    float den = sqrtf((float)(sq / (double)d) + g->eps);
    for (size_t i = 0; i < d; i++)
        v[i] = ign_bf16((v[i] - mean) / den * (float)ign_in(g, "ln_gamma", i) + (float)ign_in(g, "ln_beta", i));
    return ign_scale_of(g, t, v, "hadamard_k");
}

#endif
