/* attn_softmax.c — sim kernel and planted-bug mutants for attn_softmax:
 *     y = softmax(cap * tanh(x * scale / cap) + mask) over the last dim
 * (cap 0 = no soft-capping; a fully masked row gives zeros).
 *
 * Device model: a vector core holds one row; x is widened to fp32, scaled and capped in
 * fp32, then an online softmax walks the row in tiles of 256 lanes (running max m and
 * running sum s, s rescaled by exp(m_old - m_new) at each tile), and the output is
 * exp(z - m) * (1/s) rounded once to the output dtype.
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set):
 * the online walk on 16-lane tiles; two passes (the max, then one sequential fp32 sum) with
 * a division per element instead of the reciprocal; two passes with a pairwise sum. */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define SOFTMAX_TILE 256

/* tanh the way a hand-written vector kernel might: (e^2u - 1)/(e^2u + 1) in fp32, which
 * overflows to inf/inf = NaN once 2u > 88.7 (logits above ~44 caps). */
static float tanh_by_exp(float u)
{
    float e = expf(2.0f * u); /* rounds: fp32 */
    return (e - 1.0f) / (e + 1.0f);
}

/* exp the way a vector unit without a transcendental unit might: 2^k * p(r), k = rint(x/ln 2),
 * r = x - k ln 2 in about [-ln2/2, ln2/2], p the degree-4 Taylor polynomial of e^r: relative
 * error up to r^5/120 = 4.2e-5 at |r| = ln2/2 (up to 6e-5 near x = -88, where k times the fp32
 * ln 2 adds its own), varying with x, so it does not cancel in the normalisation as a constant
 * factor would. */
static float exp_poly4(float x)
{
    if (!(x > -104.0f && x < 89.0f)) return expf(x); /* NaN, and the ranges where exp is 0 or inf */
    float k = rintf(x * 1.44269504f);                /* rounds: fp32 product, then to an integer */
    float r = x - k * 0.693147182f;                  /* rounds: fp32 product and difference */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f + r * (1.0f / 24.0f)))); /* rounds: fp32 Horner */
    return ldexpf(p, (int)k); /* exact, but for subnormal results (rounds: to the fp32 subnormal grid) */
}

/* The softmax's exp: the fp32 library exp (within an ulp), or the polynomial of mut_exp_approx. */
static float dev_exp(float x, ug_variant_code bug)
{
    return bug == UG_VAR_MUT_EXP_APPROX ? exp_poly4(x) : expf(x); /* rounds: fp32 exp (bug: relative error 4e-5) */
}

/* The larger of a and b with NaN sticky, as a device's max propagates it: fmaxf drops a NaN,
 * which would read a row of NaN logits as fully masked and write zeros where the contract
 * says NaN. */
static float max_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); }

/* Online max/sum over the row z[0..n). Bugs change how tiles are accumulated. */
static void online_stats(const float *z, size_t n, ug_variant_code bug, float *m_out, float *s_out)
{
    float m = -INFINITY, s = 0.0f;
    size_t tile = bug == UG_VAR_LEGAL_TILE16 ? 16 : SOFTMAX_TILE;
    for (size_t t = 0; t < n; t += tile) {
        size_t len = n - t < tile ? n - t : tile;
        if (bug == UG_VAR_MUT_TAIL_TILE && t > 0 && len < tile) break; /* bug: tail tile dropped */
        float tm = -INFINITY;
        for (size_t j = 0; j < len; j++) tm = max_nan(tm, z[t + j]);
        float m_new = bug == UG_VAR_MUT_NO_MAX_SUB ? 0.0f : max_nan(m, tm);
        if (bug == UG_VAR_MUT_MAX_FIRST_TILE && t > 0)
            m_new = m; /* bug: the max of the first tile is kept for the row */
        /* bug: the running max starts at 0, not -inf, from the first live tile on (fully masked rows keep their
         * zeros): a row whose logits all lie below -88 underflows every exp(z - 0) to 0 and divides 0 by 0 */
        if (bug == UG_VAR_MUT_MAX_INIT_ZERO && tm != -INFINITY) m_new = fmaxf(m_new, 0.0f);
        if (m_new == -INFINITY) continue; /* everything so far is masked */
        float ts = 0.0f;
        for (size_t j = 0; j < len; j++) {
            ts += dev_exp(z[t + j] - m_new, bug);                       /* rounds: fp32 exp and add */
            if (bug == UG_VAR_MUT_BF16_SUM) ts = ug_sim_round_bf16(ts); /* bug: bf16 accumulator */
        }
        s = (m == -INFINITY ? 0.0f : s * dev_exp(m - m_new, bug)) + ts; /* rounds: fp32 rescale */
        if (bug == UG_VAR_MUT_BF16_SUM) s = ug_sim_round_bf16(s);
        m = m_new;
    }
    *m_out = m;
    *s_out = s;
}

/* The pairwise fp32 sum of e[0..n) (rounds: fp32 at every add). */
static float pairwise_sum(const float *e, size_t n)
{
    if (n <= 2) return n == 0 ? 0.0f : n == 1 ? e[0] : e[0] + e[1];
    return pairwise_sum(e, n / 2) + pairwise_sum(e + n / 2, n - n / 2);
}

/* Two passes over z[0..n): the row max (NaN sticky), then e[j] = exp(z - m) and their sum,
 * sequential or pairwise. */
static void two_pass_stats(const float *z, float *e, size_t n, ug_variant_code how, float *m_out, float *s_out)
{
    float m = -INFINITY, s = 0.0f;
    for (size_t j = 0; j < n; j++) m = max_nan(m, z[j]);
    for (size_t j = 0; j < n && m != -INFINITY; j++) e[j] = expf(z[j] - m); /* rounds: fp32 difference and exp */
    if (m != -INFINITY && how == UG_VAR_LEGAL_PAIRWISE)
        s = pairwise_sum(e, n);
    else
        for (size_t j = 0; j < n && m != -INFINITY; j++) s += e[j]; /* rounds: fp32 */
    *m_out = m;
    *s_out = s;
}

static int softmax_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_attn_softmax_params *params = UG_P(attn_softmax, &p);
    float scale = (float)params->scale, cap = (float)params->cap; /* exact: fp32 values */
    ug_params_free(&p);
    const ulpgym_tensor *x, *mask, *y, **slots[] = {&x, &mask, &y};
    if (ug_sim_bind(call, "x mask y", slots, err, errlen)) return -2;
    size_t rows = (size_t)x->shape[0], n = (size_t)x->shape[1];
    float *z = malloc((n ? n : 1) * 3 * sizeof *z), *mk = z + (n ? n : 1), *e = mk + (n ? n : 1);
    if (!z) return -1;
    for (size_t r = 0; r < rows; r++) {
        ug_sim_load(x, r * n, n, z);
        ug_sim_load(mask, r * n, n, mk);
        for (size_t j = 0; j < n; j++) {
            float v = z[j] * scale; /* rounds: fp32 */
            if (cap > 0.0f)
                v = cap * (bug == UG_VAR_MUT_TANH_OVERFLOW ? tanh_by_exp(v / cap) : tanhf(v / cap)); /* rounds: fp32 */
            z[j] = mk[j] == -INFINITY ? -INFINITY : v + mk[j]; /* rounds: fp32; masked stays -inf even for NaN x */
        }
        float m, s;
        if (bug == UG_VAR_LEGAL_TWO_PASS || bug == UG_VAR_LEGAL_PAIRWISE) {
            two_pass_stats(z, e, n, bug, &m, &s);
            for (size_t j = 0; j < n; j++) z[j] = m == -INFINITY ? 0.0f : e[j] / s; /* rounds: fp32 division */
        } else {
            online_stats(z, n, bug, &m, &s);
            float inv = m == -INFINITY ? 0.0f : 1.0f / s; /* rounds: fp32 reciprocal */
            for (size_t j = 0; j < n; j++)
                z[j] = m == -INFINITY ? 0.0f : dev_exp(z[j] - m, bug) * inv; /* rounds: fp32 exp and product */
        }
        if (bug == UG_VAR_MUT_STORE_TRUNC) /* bug: the bf16/fp16 store truncates toward zero (exact for fp32 outputs) */
            for (size_t j = 0; j < n; j++) z[j] = ug_sim_trunc_to(y->dtype, z[j]);
        ug_sim_store(y, r * n, n, z); /* rounds: RNE to the dtype (exact after the truncation of the bug) */
    }
    free(z);
    return 0;
}

const ug_kernel_fn ug_sim_attn_softmax = softmax_kernel;
