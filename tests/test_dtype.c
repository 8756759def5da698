/* test_dtype.c — exact conversions of core/dtype.c: every 8- and 16-bit pattern round-trips,
 * random doubles round exactly as MPFR rounds them to the same format (emulated exponent
 * range + subnormals), int8 and E8M0 match MPFR references on every deciding input class,
 * and the overflow/saturation rules of dtype.h hold. */
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
        /* the inline fast path of the oracles' hot loops must agree bit for bit */
        double fast = ug_dtype_round_fast(dt, x);
        if (!(fast == got && signbit(fast) == signbit(got)) && !(isnan(fast) && isnan(got))) {
            if (bad++ < 3)
                fprintf(stderr, "%s: x=%a ug_dtype_round_fast %a, ug_dtype_round %a\n", ug_dtype_name(dt), x, fast,
                        got);
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

/* The two non-IEEE formats against references written in MPFR, on every input class that
 * decides a rounding: int8 on every quarter in [-140, 140] (integers, ties, between) and
 * the doubles next to each, plus random reals; E8M0 on every power of two of its range and
 * beyond (2^-140 .. 2^140), the doubles next to each, and random mantissas. Both
 * ug_dtype_round and the oracle's ug_mp_round must give the reference, bit for bit. */
static double int8_reference(double x)
{
    if (isnan(x)) return 0.0;
    mpfr_t m;
    mpfr_init2(m, 64);
    mpfr_set_d(m, x, MPFR_RNDN); /* exact */
    mpfr_rint(m, m, MPFR_RNDN);  /* rounds: to the nearest integer, ties to even */
    if (mpfr_cmp_si(m, 127) > 0) mpfr_set_si(m, 127, MPFR_RNDN);
    if (mpfr_cmp_si(m, -128) < 0) mpfr_set_si(m, -128, MPFR_RNDN);
    double r = mpfr_get_d(m, MPFR_RNDN);
    mpfr_clear(m);
    return r;
}

static double e8m0_reference(double x)
{
    if (!(x > 0.0) || isinf(x)) return NAN; /* no sign, zero or infinity: NaN (dtype.h) */
    mpfr_t m;
    mpfr_init2(m, 64);
    mpfr_set_d(m, x, MPFR_RNDN);
    long e = mpfr_get_exp(m) - 1; /* x = 0.1b.. * 2^exp: floor(log2 x) = exp - 1 */
    mpfr_clear(m);
    return ldexp(1.0, e < -127 ? -127 : e > 127 ? 127 : (int)e);
}

static unsigned compare_nonieee(ug_dtype dt, double x, double (*ref)(double))
{
    double want = ref(x), got = ug_dtype_round(dt, x);
    mpfr_t xm;
    mpfr_init2(xm, 64);
    mpfr_set_d(xm, x, MPFR_RNDN);
    double viamp = ug_mp_round(xm, dt);
    mpfr_clear(xm);
    int ok =
        (isnan(want) ? isnan(got) && isnan(viamp) : got == want && viamp == want && !signbit(got) == !signbit(want));
    if (!ok) fprintf(stderr, "%s: x=%a reference %a ours %a oracle %a\n", ug_dtype_name(dt), x, want, got, viamp);
    return !ok;
}

static void nonieee_vs_mpfr(void)
{
    unsigned bad = 0, n = 0;
    for (int q = -4 * 140; q <= 4 * 140; q++) {
        double x = q / 4.0;
        double near[3] = {x, nextafter(x, -INFINITY), nextafter(x, INFINITY)};
        for (int i = 0; i < 3; i++, n++) bad += compare_nonieee(UG_DT_INT8, near[i], int8_reference);
    }
    for (int e = -140; e <= 140; e++) {
        double x = ldexp(1.0, e);
        double near[3] = {x, nextafter(x, 0.0), nextafter(x, INFINITY)};
        for (int i = 0; i < 3; i++, n++) bad += compare_nonieee(UG_DT_E8M0, near[i], e8m0_reference);
    }
    for (uint32_t i = 0; i < 100000; i++, n += 2) {
        uint32_t w[4];
        ug_rng_words(777, 0, i, 0, w);
        bad += compare_nonieee(UG_DT_INT8, (ug_rng_unit(w[0], w[1]) - 0.5) * 400.0, int8_reference);
        bad +=
            compare_nonieee(UG_DT_E8M0, ldexp(1.0 + ug_rng_unit(w[2], w[3]), (int)(w[0] % 300) - 150), e8m0_reference);
    }
    double specials[] = {0.0, -0.0, -1.0, INFINITY, -INFINITY, NAN, 0x1p-1074, 0x1.fffffffffffffp1023};
    for (int i = 0; i < 8; i++, n += 2)
        bad += compare_nonieee(UG_DT_INT8, specials[i], int8_reference) +
               compare_nonieee(UG_DT_E8M0, specials[i], e8m0_reference);
    CHECK(bad == 0, "int8/e8m0: %u of %u inputs round differently from the MPFR reference", bad, n);
}

static void known_values(void)
{
    CHECK(ug_dtype_round(UG_DT_BF16, 1.0 + 0x1p-8) == 1.0, "bf16 tie rounds to even");
    CHECK(ug_dtype_round(UG_DT_BF16, 1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6, "bf16 tie rounds to even (up)");
    CHECK(ug_dtype_round(UG_DT_FP16, 65520.0) == INFINITY, "fp16 overflow at max + half ulp");
    CHECK(ug_dtype_round(UG_DT_FP16, 65519.99) == 65504.0, "fp16 below the overflow tie");
    CHECK(ug_dtype_round_fast(UG_DT_FP16, 65520.0) == INFINITY &&
              ug_dtype_round_fast(UG_DT_BF16, -0x1.ffp127) == -INFINITY,
          "the fast rounding overflows as ug_dtype_round does");
    CHECK(ug_dtype_round_fast(UG_DT_FP16, 0x1.8p-25) == 0x1p-24 &&
              ug_dtype_round_fast(UG_DT_BF16, 1.0 + 0x1p-8) == 1.0 && isnan(ug_dtype_round_fast(UG_DT_BF16, NAN)) &&
              ug_dtype_round_fast(UG_DT_FP32, 1.0 + 0x1p-24) == 1.0,
          "the fast rounding: subnormal, tie to even, NaN, fp32");
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

/* ug_dtype_ulp against frexp and ldexp (what it computed before it read the bits) for every
 * dtype: random doubles of every exponent, double subnormals, zeros, infinities, NaN. */
static void ulp_vs_frexp(void)
{
    int bad = 0, n = 0;
    uint64_t r = 0x243f6a8885a308d3ULL;
    for (int dt = 0; dt < UG_DT_COUNT; dt++)
        for (int i = 0; i < 20000; i++, n++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            uint64_t u = r;
            if (i % 5 == 0) u &= 0x800fffffffffffffULL; /* double subnormal or zero */
            if (i % 7 == 0) u = (u & ~(0x7ffULL << 52)) | ((uint64_t)(1023 - 40 + i % 80) << 52); /* near 1 */
            double x;
            memcpy(&x, &u, sizeof x);
            if (i == 1) x = INFINITY;
            if (i == 2) x = NAN;
            if (i == 3) x = -0.0;
            int e = ug_dtype_get_info((ug_dtype)dt)->emin, fe;
            if (x != 0.0 && isfinite(x)) frexp(x, &fe), e = fe - 1 > e ? fe - 1 : e;
            double want = ug_dtype_get_info((ug_dtype)dt)->is_float
                              ? ldexp(1.0, e - ug_dtype_get_info((ug_dtype)dt)->mant_bits)
                              : 1.0;
            bad += ug_dtype_ulp((ug_dtype)dt, x) != want;
        }
    CHECK(bad == 0, "ug_dtype_ulp differs from frexp/ldexp on %d of %d values", bad, n);
}

/* ug_dtype_decode_block against ug_dtype_decode, bit for bit, on every code of dt (bits
 * wide): one block of all of them, and a block that starts at an odd element. */
static void decode_block_all(ug_dtype dt, int bits)
{
    size_t n = (size_t)1 << bits, sz = (size_t)ug_dtype_size(dt), differ = 0;
    unsigned char *src = malloc(n * sz);
    double *out = malloc(n * sizeof *out);
    for (size_t k = 0; k < n; k++) memcpy(src + k * sz, &(uint32_t){(uint32_t)k}, sz); /* little-endian */
    ug_dtype_decode_block(dt, src, n, out);
    for (size_t k = 0; k < n; k++) {
        double want = ug_dtype_decode(dt, (uint32_t)k);
        differ += memcmp(&want, &out[k], sizeof want) != 0;
    }
    ug_dtype_decode_block(dt, src + sz, n - 1, out);
    for (size_t k = 1; k < n; k++) {
        double want = ug_dtype_decode(dt, (uint32_t)k);
        differ += memcmp(&want, &out[k - 1], sizeof want) != 0;
    }
    CHECK(differ == 0, "%s: ug_dtype_decode_block differs from ug_dtype_decode on %zu codes", ug_dtype_name(dt),
          differ);
    free(src), free(out);
}

int main(void)
{
    ulp_vs_frexp();
    decode_block_all(UG_DT_FP16, 16);
    decode_block_all(UG_DT_BF16, 16);
    decode_block_all(UG_DT_E4M3, 8);
    decode_block_all(UG_DT_E5M2, 8);
    decode_block_all(UG_DT_E8M0, 8);
    decode_block_all(UG_DT_INT8, 8);
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
    nonieee_vs_mpfr();
    known_values();
    return check_done();
}
