/* philox.h — Philox4x32-10 counter-based RNG (Salmon et al., SC'11) and the input-value
 * generator built on it.
 *
 * Counter-based means there is no state to carry: element i of input tensor t of a case
 * with seed s is a pure function of (s, t, i). Shards, threads and triage regenerate any
 * element alone and always get the same bits. Only IEEE +,-,*,/ and sqrt (all correctly
 * rounded, no FMA contraction: the build uses -ffp-contract=off) touch the values, plus
 * ug_det_log/ug_det_sincos below, which avoid libm so that inputs are bit-identical on
 * every machine. */
#ifndef UG_PHILOX_H
#define UG_PHILOX_H
#include <stdint.h>

void ug_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#define UG_PHILOX_M0 0xD2511F53u
#define UG_PHILOX_M1 0xCD9E8D57u
#define UG_PHILOX_W0 0x9E3779B9u
#define UG_PHILOX_W1 0xBB67AE85u
/* One Philox4x32 round on the counter words c0..c3 (lvalues) under the round's key k0, k1:
 * ug_philox4x32_10 and the blocked generator of gen/dist.c share it. */
#define UG_PHILOX_ROUND(c0, c1, c2, c3, k0, k1)                                                                        \
    do {                                                                                                               \
        uint64_t p0_ = (uint64_t)UG_PHILOX_M0 * (c0), p1_ = (uint64_t)UG_PHILOX_M1 * (c2);                             \
        uint32_t n0_ = (uint32_t)(p1_ >> 32) ^ (c1) ^ (k0), n2_ = (uint32_t)(p0_ >> 32) ^ (c3) ^ (k1);                 \
        (c1) = (uint32_t)p1_;                                                                                          \
        (c3) = (uint32_t)p0_;                                                                                          \
        (c0) = n0_;                                                                                                    \
        (c2) = n2_;                                                                                                    \
    } while (0)

/* Four independent uniform 32-bit words for (seed, tensor, element, draw). */
void ug_rng_words(uint64_t seed, uint32_t tensor, uint64_t elem, uint32_t draw, uint32_t out[4]);
/* Uniform double in (0,1) from two words: 53 random bits, never 0 or 1. */
double ug_rng_unit(uint32_t hi, uint32_t lo);

/* Deterministic log and sin/cos(2*pi*u) from basic arithmetic only (about 1e-15 relative
 * accuracy): used by the distributions, never by oracles. */
double ug_det_log(double x);
void ug_det_sincos2pi(double u, double *s, double *c);

/* The definitions of the three above, inline so that gen/dist.c's blocked generator
 * evaluates them on a block of elements at once (the series unrolled: straight-line code
 * the compiler vectorises across elements, each element's operations in the same order,
 * so bit for bit the functions' values). */
static inline double ug_rng_unit_inline(uint32_t hi, uint32_t lo)
{
    /* (hi << 21) ^ (lo >> 11), 53 bits, as the exact sum of its two halves (no 64-bit
     * integer conversion): then + 0.5 (rounds: RNE at 2^52 and above), exact * 2^-53. */
    double bits = (double)hi * 0x1p21 + (double)(int32_t)(lo >> 11);
    return (bits + 0.5) * 0x1p-53; /* (0,1), never an endpoint */
}

/* log(f * 2^k) for f in [sqrt(1/2), sqrt(2)): log f = 2 atanh(z), z = (f-1)/(f+1), twenty
 * terms. rounds: every step, in this order. */
static inline double ug_det_log_reduced(double f, int k)
{
    double z = (f - 1.0) / (f + 1.0), z2 = z * z, term = z, sum = 0.0;
#pragma GCC unroll 20
    for (int n = 1; n < 40; n += 2) {
        sum += term / n;
        term *= z2;
    }
    return 2.0 * sum + k * 0.69314718055994530942;
}

/* sin and cos of 2*pi*u, u in [0,1]: the angle a = 2*pi*u - pi in [-pi, pi], Taylor series
 * to degree 29 (~1e-16 there). rounds: every step, in this order. */
static inline void ug_det_sincos2pi_inline(double u, double *s, double *c)
{
    double a = (u - 0.5) * 6.28318530717958647692;
    double a2 = a * a, ts = a, tc = 1.0, ss = 0.0, cc = 0.0;
#pragma GCC unroll 15
    for (int n = 1; n < 30; n += 2) {
        ss += ts;
        cc += tc;
        ts *= -a2 / ((n + 1) * (n + 2));
        tc *= -a2 / (n * (n + 1));
    }
    *s = -ss; /* sin(2*pi*u) = -sin(a) since a = 2*pi*u - pi */
    *c = -cc;
}

#endif
