/* rope_table.c — deterministic RoPE cos/sin tables for the builders of RoPE operators, and
 * the param checks those operators share.
 *
 * inv_freq_i = base^(-2i/D) = exp(-(2i/D) * ln base) with ug_det_log and a Taylor exp
 * after reduction by ln 2; the angle is reduced to a fraction of a turn and handed to
 * ug_det_sincos2pi. About 1e-15 relative everywhere, identical bits on every IEEE
 * machine (the build uses -ffp-contract=off), which is all an input table needs. */
#include "oracles/norm_rope/rope_table.h"

#include <math.h>
#include <stdio.h>

#include "core/philox.h"

double ug_rope_det_exp(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10; /* fdlibm split */
    double k = floor(x / 0.69314718055994530942 + 0.5);                                    /* exact: an integer */
    double r = (x - k * ln2_hi) - k * ln2_lo;                                              /* |r| <= ln2/2 (+tiny) */
    double term = 1.0, sum = 1.0;
    for (int n = 1; n < 24; n++) {
        term *= r / n;
        sum += term;
    }
    return ldexp(sum, (int)k); /* exact scaling */
}

void ug_rope_fill_table(ug_tensor *cos_t, ug_tensor *sin_t, const long *pos, size_t rows, size_t half, double base)
{
    double ln_base = ug_det_log(base);
    for (size_t i = 0; i < half; i++) {
        double inv_freq = ug_rope_det_exp(-(double)(2 * i) / (double)(2 * half) * ln_base);
        for (size_t r = 0; r < rows; r++) {
            double turns = (double)pos[r] * inv_freq / 6.28318530717958647692;
            double u = turns - floor(turns), s, c; /* fraction of a turn in [0,1) */
            ug_det_sincos2pi(u, &s, &c);
            ug_dtype_store(cos_t->dtype, cos_t->data, r * half + i, c); /* rounds to the table dtype */
            ug_dtype_store(sin_t->dtype, sin_t->data, r * half + i, s);
        }
    }
}

int ug_rope_check(const ug_params *p, const char *op, char *err, size_t errlen)
{
    double base = ug_p_num(p, "base");
    if (ug_p_int(p, "d") % 2) {
        snprintf(err, errlen, "%s: param \"d\" must be even, 2..4096", op);
        return -2;
    }
    if (!(base > 1.0 && base < 1e12)) {
        snprintf(err, errlen, "%s: param \"base\" must be > 1 (and < 1e12)", op);
        return -2;
    }
    return 0;
}
