/* ar_check.h — equality of oracle numbers for the tests that compare a fast arithmetic path
 * with the scalar one (test_attn_row_oracle, test_dot_cols): the same value and bound bit
 * for bit in the plain arithmetics, the same MPFR number (NaN equal to NaN) in the others. */
#ifndef UG_AR_CHECK_H
#define UG_AR_CHECK_H
#include <string.h>

#include <mpfr.h>

#include "oracles/mp/arith.h"

static inline int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static inline int same_num(ug_ar_mode mode, ug_num a, ug_num b)
{
    if (mode == UG_AR_EXACT || mode == UG_AR_MPFR_SEQ)
        return mpfr_equal_p(a.m, b.m) || (mpfr_nan_p(a.m) && mpfr_nan_p(b.m));
    return same_bits(a.v, b.v) && same_bits(a.e, b.e);
}

/* How many of the m x n outputs out[r*ldo + j] differ from ug_dot_d(ar, X + r*ldx, 1, B + j,
 * ldb, terms): the fast row-by-column paths against the scalar dot, element by element. */
static inline size_t dot_d_differ(ug_ar *ar, ug_ar_mode mode, const ug_num *out, size_t ldo, size_t m, size_t n,
                                  const double *X, size_t ldx, const double *B, size_t ldb, size_t terms)
{
    size_t differ = 0;
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            size_t mark = ug_ar_mark(ar);
            differ += !same_num(mode, out[r * ldo + j], ug_dot_d(ar, X + r * ldx, 1, B + j, ldb, terms));
            ug_ar_release(ar, mark);
        }
    return differ;
}
#endif
