/* exact_dot.h — the exact dot product of two double vectors, rounded once with MPFR.
 *
 * Why: UG_AR_EXACT's ug_dot_d made each product an MPFR number (mpfr_set_d, mpfr_mul_d
 * into 128 bits) and summed them with mpfr_sum, about 200 ns a term: most of the exact
 * fallback of the big prolog cases. ug_exact_dot forms each product of two finite doubles
 * as an exact 106-bit integer, adds it into a fixed-point long accumulator that spans every
 * such product ("superaccumulator"), and rounds the exact sum once with MPFR: the same
 * value, bit for bit, as mpfr_sum of the exact products (exact_dot.c says why). */
#ifndef UG_MP_EXACT_DOT_H
#define UG_MP_EXACT_DOT_H
#include <stddef.h>

#include <mpfr.h>

/* out = sum_{i<n} a[i*sa] * b[i*sb], the exact sum rounded once to out's precision with
 * MPFR_RNDN; an exact zero is signed as mpfr_sum signs it. Returns 0 when it computed the
 * dot, -1 (out untouched) when an input is an inf or a NaN (or the build has no 128-bit
 * integer type): the caller then takes its MPFR path. No allocation. */
int ug_exact_dot(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n);

/* out[c] = ug_exact_dot(out[c], a, 1, B + c, ldb, n) for c < ncols, rc[c] its return value
 * (-1: out[c] untouched, the caller's MPFR path takes that column): the same numbers, the
 * columns taken 16 at a time in one pass over B's rows instead of a strided walk each. */
void ug_exact_dot_cols(mpfr_ptr const *out, const double *a, const double *B, size_t ldb, size_t n, size_t ncols,
                       int *rc);

/* ug_exact_dot with a carry pass every `block` terms instead of every 2^30 (the most the
 * accumulator's chunks absorb): for tests of the carry passes. block >= 1. */
int ug_exact_dot_blocked(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n, size_t block);
#endif
