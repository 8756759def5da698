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
#endif
