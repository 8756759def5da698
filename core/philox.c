/* philox.c — Philox4x32-10 and deterministic helpers for the input generator.
 * Known-answer vectors from the Random123 distribution are checked in tests/test_core.c. */
#include "core/philox.h"

#include <math.h>

void ug_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        UG_PHILOX_ROUND(c0, c1, c2, c3, k0, k1);
        k0 += UG_PHILOX_W0;
        k1 += UG_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void ug_rng_words(uint64_t seed, uint32_t tensor, uint64_t elem, uint32_t draw, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)elem, (uint32_t)(elem >> 32), tensor, draw};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    ug_philox4x32_10(ctr, key, out);
}

double ug_rng_unit(uint32_t hi, uint32_t lo) { return ug_rng_unit_inline(hi, lo); }

double ug_det_log(double x)
{
    int k;
    double f = frexp(x, &k);          /* exact; f in [1/2, 1) */
    if (f < 0.70710678118654752440) { /* into [sqrt(1/2), sqrt(2)): exact */
        f *= 2.0;
        k -= 1;
    }
    return ug_det_log_reduced(f, k);
}

void ug_det_sincos2pi(double u, double *s, double *c) { ug_det_sincos2pi_inline(u, s, c); }
