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

/* Four independent uniform 32-bit words for (seed, tensor, element, draw). */
void ug_rng_words(uint64_t seed, uint32_t tensor, uint64_t elem, uint32_t draw, uint32_t out[4]);
/* Uniform double in (0,1) from two words: 53 random bits, never 0 or 1. */
double ug_rng_unit(uint32_t hi, uint32_t lo);

/* Deterministic log and sin/cos(2*pi*u) from basic arithmetic only (about 1e-15 relative
 * accuracy): used by the distributions, never by oracles. */
double ug_det_log(double x);
void ug_det_sincos2pi(double u, double *s, double *c);

#endif
