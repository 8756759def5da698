/* test_dtype.c — exact conversions of core/dtype.c: every 8- and 16-bit pattern round-trips,
 * random doubles round exactly as MPFR rounds them to the same format (emulated exponent
 * range + subnormals), and the overflow/saturation rules of dtype.h hold. */
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "core/philox.h"
#include "oracles/mp/arith.h"

static void round_trip_all(ug_dtype dt, unsigned nbits)
{
    unsigned bad = 0;
    for (uint32_t b = 0; b < (1u << nbits); b++) {
        double v = ug_dtype_decode(dt, b);
        uint32_t back = ug_dtype_encode(dt, v);
        if (isnan(v)) {
            if (!isnan(ug_dtype_decode(dt, back))) bad++;
        } else if (back != b) {
            bad++;
        }
    }
    CHECK(bad == 0, "%s: %u bit patterns do not round-trip", ug_dtype_name(dt), bad);
}

/* MPFR's rounding of x to the format of dt (finite range only), as a double. */
static double mpfr_reference(ug_dtype dt, double x)
{
    const ug_dtype_info *in = ug_dtype_get_info(dt);
    mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
    mpfr_t m;
    mpfr_init2(m, in->mant_bits + 1);
    /* MPFR exponents: x = 0.1b... * 2^e, so a normal with binade E has e = E + 1. */
    mpfr_set_emin(in->emin - in->mant_bits + 1);
    mpfr_set_emax(1024);
    int t = mpfr_set_d(m, x, MPFR_RNDN);
    t = mpfr_subnormalize(m, t, MPFR_RNDN);
    double r = mpfr_get_d(m, MPFR_RNDN);
    mpfr_set_emin(old_min);
    mpfr_set_emax(old_max);
    mpfr_clear(m);
    return r;
}

static void random_vs_mpfr(ug_dtype dt)
{
    const ug_dtype_info *in = ug_dtype_get_info(dt);
    unsigned bad = 0, n = 200000;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w[4];
        ug_rng_words(12345, (uint32_t)dt, i, 0, w);
        /* magnitudes spanning subnormals to overflow of the format, many near ties */
        int e = (int)(w[0] % (unsigned)(in->mant_bits + 40 - in->emin)) + in->emin - in->mant_bits - 8;
        double m = 1.0 + ug_rng_unit(w[1], w[2]);
        if (w[3] & 2u) m = 1.0 + ldexp((double)(w[1] % (1u << in->mant_bits)) + 0.5, -in->mant_bits); /* exact tie */
        double x = ldexp(w[3] & 1u ? -m : m, e);
        double ref = mpfr_reference(dt, x), got = ug_dtype_round(dt, x);
        if (fabs(ref) > in->max_finite) ref = dt == UG_DT_E4M3 ? copysign(in->max_finite, x) : copysign(INFINITY, x);
        if (!(got == ref && signbit(got) == signbit(ref))) {
            if (bad++ < 3) fprintf(stderr, "%s: x=%a ours %a mpfr %a\n", ug_dtype_name(dt), x, got, ref);
        }
        /* the oracle's MPFR rounding must agree too */
        mpfr_t xm;
        mpfr_init2(xm, 64);
        mpfr_set_d(xm, x, MPFR_RNDN);
        double viamp = ug_mp_round(xm, dt);
        mpfr_clear(xm);
        if (!(viamp == got)) bad++;
    }
    CHECK(bad == 0, "%s: %u of %u random doubles round differently from MPFR", ug_dtype_name(dt), bad, n);
}

static void known_values(void)
{
    CHECK(ug_dtype_round(UG_DT_BF16, 1.0 + 0x1p-8) == 1.0, "bf16 tie rounds to even");
    CHECK(ug_dtype_round(UG_DT_BF16, 1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6, "bf16 tie rounds to even (up)");
    CHECK(ug_dtype_round(UG_DT_FP16, 65520.0) == INFINITY, "fp16 overflow at max + half ulp");
    CHECK(ug_dtype_round(UG_DT_FP16, 65519.99) == 65504.0, "fp16 below the overflow tie");
    CHECK(ug_dtype_round(UG_DT_FP16, 0x1p-25) == 0.0, "fp16 half of the smallest subnormal ties to 0");
    CHECK(ug_dtype_round(UG_DT_FP16, 0x1.8p-25) == 0x1p-24, "fp16 rounds up to the smallest subnormal");
    CHECK(ug_dtype_round(UG_DT_E4M3, 1e6) == 448.0, "e4m3 saturates");
    CHECK(ug_dtype_round(UG_DT_E4M3, -INFINITY) == -448.0, "e4m3 saturates -inf");
    CHECK(ug_dtype_encode(UG_DT_E4M3, 448.0) == 0x7E, "e4m3 max is S.1111.110");
    CHECK(isnan(ug_dtype_decode(UG_DT_E4M3, 0x7F)), "e4m3 NaN is S.1111.111");
    CHECK(ug_dtype_decode(UG_DT_E4M3, 0x01) == 0x1p-9, "e4m3 smallest subnormal 2^-9");
    CHECK(ug_dtype_round(UG_DT_E5M2, 1e6) == INFINITY, "e5m2 overflows to inf");
    CHECK(ug_dtype_decode(UG_DT_E5M2, 0x7B) == 57344.0, "e5m2 max 57344");
    CHECK(ug_dtype_round(UG_DT_INT8, 127.5) == 127.0 && ug_dtype_round(UG_DT_INT8, -300) == -128.0, "int8 saturates");
    CHECK(ug_dtype_round(UG_DT_INT8, 2.5) == 2.0 && ug_dtype_round(UG_DT_INT8, 3.5) == 4.0, "int8 RNE");
    CHECK(ug_dtype_round(UG_DT_E8M0, 3.0) == 2.0 && ug_dtype_encode(UG_DT_E8M0, 1.0) == 127, "e8m0 floor of log2");
    CHECK(isnan(ug_dtype_decode(UG_DT_E8M0, 0xFF)), "e8m0 0xFF is NaN");
    CHECK(ug_dtype_ulp(UG_DT_BF16, 1.0) == 0x1p-7 && ug_dtype_ulp(UG_DT_FP16, 0.0) == 0x1p-24, "ulp");
    CHECK(ug_dtype_parse("bf16") == UG_DT_BF16 && ug_dtype_parse("bfloat") == -1, "parse");
    unsigned char buf[4];
    ug_dtype_store(UG_DT_BF16, buf, 1, 3.140625);
    CHECK(ug_dtype_load(UG_DT_BF16, buf, 1) == 3.140625, "bf16 store/load");
}

int main(void)
{
    round_trip_all(UG_DT_FP16, 16);
    round_trip_all(UG_DT_BF16, 16);
    round_trip_all(UG_DT_E4M3, 8);
    round_trip_all(UG_DT_E5M2, 8);
    round_trip_all(UG_DT_E8M0, 8);
    round_trip_all(UG_DT_INT8, 8);
    random_vs_mpfr(UG_DT_FP16);
    random_vs_mpfr(UG_DT_BF16);
    random_vs_mpfr(UG_DT_E4M3);
    random_vs_mpfr(UG_DT_E5M2);
    random_vs_mpfr(UG_DT_FP32);
    known_values();
    return check_done();
}
