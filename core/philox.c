/* philox.c — Philox4x32-10 and deterministic helpers for the input generator.
 * Known-answer vectors from the Random123 distribution are checked in tests/test_core.c. */
#include "core/philox.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void ug_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

void ug_rng_words(uint64_t seed, uint32_t tensor, uint64_t elem, uint32_t draw, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)elem, (uint32_t)(elem >> 32), tensor, draw};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    ug_philox4x32_10(ctr, key, out);
}

double ug_rng_unit(uint32_t hi, uint32_t lo)
{
    uint64_t bits = ((uint64_t)hi << 21) ^ (uint64_t)(lo >> 11); /* 53 bits */
    return ((double)bits + 0.5) * 0x1p-53; /* exact: (0,1), never an endpoint */
}

double ug_det_log(double x)
{
    /* x = f * 2^k with f in [sqrt(1/2), sqrt(2)); log f = 2 atanh(z), z = (f-1)/(f+1). */
    int k;
    double f = frexp(x, &k); /* exact */
    if (f < 0.70710678118654752440) {
        f *= 2.0;
        k -= 1;
    }
    double z = (f - 1.0) / (f + 1.0), z2 = z * z, term = z, sum = 0.0;
    for (int n = 1; n < 40; n += 2) {
        sum += term / n;
        term *= z2;
    }
    return 2.0 * sum + k * 0.69314718055994530942;
}

void ug_det_sincos2pi(double u, double *s, double *c)
{
    /* angle in [-pi, pi]: Taylor series to degree 29 is accurate to ~1e-16 there. */
    double a = (u - 0.5) * 6.28318530717958647692;
    double a2 = a * a, ts = a, tc = 1.0, ss = 0.0, cc = 0.0;
    for (int n = 1; n < 30; n += 2) {
        ss += ts;
        cc += tc;
        ts *= -a2 / ((n + 1) * (n + 2));
        tc *= -a2 / (n * (n + 1));
    }
    *s = -ss; /* sin(2*pi*u) = -sin(a) since a = 2*pi*u - pi */
    *c = -cc;
}
