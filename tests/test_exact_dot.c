/* test_exact_dot.c — ug_exact_dot (oracles/mp/exact_dot.h), the long-accumulator dot of
 * UG_AR_EXACT's ug_dot_d, gives bit for bit what the MPFR path it replaced gives: each
 * product made exact in 128 bits (mpfr_set_d, mpfr_mul_d) and the products summed by
 * mpfr_sum, one MPFR_RNDN rounding to the working precision.
 *
 * At 64, 128, 256 and 512 bits, the two must agree as MPFR numbers (mpfr_cmp == 0), in the
 * sign bit (zeros included) and in mpfr_get_d, on: random vectors of 0, 1, 2, 63, 64, 65 and
 * 7168 terms with bf16-like and full 53-bit mantissas, strided and stride-0 inputs; huge
 * cancellation (x, -x pairs plus a tiny term, and pairs that cancel to an exact zero);
 * exponents over the whole double range (subnormal inputs, products near 2^-960 and 2^1000,
 * the smallest and largest products in one sum); zeros of both signs (all -0 products, all
 * +0, mixed, zeros with cancelling nonzero terms); results that are exact ties at the working
 * precision (to even, up, and ties broken by a term 2^-2000 below); sums that drive the carry
 * passes (every digit full, net negative sums, a carry pass after every term). The same for
 * ug_exact_dot_cols and ug_dot_d_cols (16 columns a pass, 64 a chunk). Inputs with an
 * inf or a NaN must be refused (-1) and ug_dot_d must then give the MPFR path's special value.
 * ug_dot_d in UG_AR_EXACT must give the reference too, and UG_AR_MPFR_SEQ its rounded
 * per-term sum (unchanged). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "check.h"
#include "oracles/mp/arith.h"
#include "oracles/mp/exact_dot.h"

static const mpfr_prec_t precs[] = {64, 128, 256, 512};
#define NPREC (sizeof precs / sizeof precs[0])

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A random double: sign random, mant_bits significant bits, exponent in [emin, emax]. */
static double draw(int mant_bits, int emin, int emax)
{
    uint64_t m = (rnd() >> (64 - mant_bits)) | ((uint64_t)1 << (mant_bits - 1));
    int e = emin + (int)(rnd() % (uint64_t)(emax - emin + 1));
    double x = ldexp((double)m, e - mant_bits + 1); /* rounds only when it falls subnormal */
    return rnd() & 1 ? -x : x;
}

/* The MPFR path ug_dot_d had: exact products at 128 bits, mpfr_sum into out. */
static void ref_dot(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    mpfr_t *p = malloc((n ? n : 1) * sizeof *p);
    mpfr_ptr *ptr = calloc(n ? n : 1, sizeof *ptr);
    for (size_t i = 0; i < n; i++) {
        mpfr_init2(p[i], 128);
        mpfr_set_d(p[i], a[i * sa], MPFR_RNDN);
        mpfr_mul_d(p[i], p[i], b[i * sb], MPFR_RNDN);
        ptr[i] = p[i];
    }
    mpfr_sum(out, ptr, n, MPFR_RNDN);
    for (size_t i = 0; i < n; i++) mpfr_clear(p[i]);
    free(p);
    free(ptr);
}

/* x and y the same MPFR number: NaN with NaN, else equal values, sign bits and doubles. */
static int same_mp(mpfr_srcptr x, mpfr_srcptr y)
{
    if (mpfr_nan_p(x) || mpfr_nan_p(y)) return mpfr_nan_p(x) && mpfr_nan_p(y);
    double dx = mpfr_get_d(x, MPFR_RNDN), dy = mpfr_get_d(y, MPFR_RNDN);
    return mpfr_cmp(x, y) == 0 && !mpfr_signbit(x) == !mpfr_signbit(y) && memcmp(&dx, &dy, sizeof dx) == 0;
}

static int has_special(const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i * sa]) || !isfinite(b[i * sb])) return 1;
    return 0;
}

static size_t ncompared;

/* The dot of a and b against the reference at every precision: ug_exact_dot (and with carry
 * passes every 1, 3 and 64 terms), ug_dot_d in UG_AR_EXACT, and UG_AR_MPFR_SEQ unchanged. */
static void check_dot(const char *what, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    int special = has_special(a, sa, b, sb, n);
    static const size_t blocks[] = {0, 1, 3, 64};
    for (size_t k = 0; k < NPREC; k++) {
        mpfr_prec_t prec = precs[k];
        mpfr_t ref, got;
        mpfr_inits2(prec, ref, got, (mpfr_ptr)0);
        ref_dot(ref, a, sa, b, sb, n);
        for (size_t j = 0; j < sizeof blocks / sizeof blocks[0]; j++) {
            mpfr_set_ui(got, 12345, MPFR_RNDN);
            int rc =
                blocks[j] ? ug_exact_dot_blocked(got, a, sa, b, sb, n, blocks[j]) : ug_exact_dot(got, a, sa, b, sb, n);
            CHECK(rc == (special ? -1 : 0), "%s: n %zu, %ld bits, block %zu: returned %d", what, n, (long)prec,
                  blocks[j], rc);
            if (rc == 0)
                CHECK(same_mp(got, ref), "%s: n %zu, %ld bits, block %zu: %.17g (sign %d) vs reference %.17g (sign %d)",
                      what, n, (long)prec, blocks[j], mpfr_get_d(got, MPFR_RNDN), mpfr_signbit(got),
                      mpfr_get_d(ref, MPFR_RNDN), mpfr_signbit(ref));
        }
        ug_ar *ar = ug_ar_new(UG_AR_EXACT, prec, UG_DT_BF16);
        ug_num r = ug_dot_d(ar, a, sa, b, sb, n);
        CHECK(same_mp(r.m, ref), "%s: ug_dot_d EXACT, n %zu, %ld bits: %.17g vs %.17g", what, n, (long)prec,
              mpfr_get_d(r.m, MPFR_RNDN), mpfr_get_d(ref, MPFR_RNDN));
        double rv = mpfr_get_d(ref, MPFR_RNDN);
        CHECK(memcmp(&r.v, &rv, sizeof rv) == 0 || (isnan(r.v) && isnan(rv)), "%s: ug_dot_d EXACT value", what);
        ug_ar_free(ar);
        if (prec == 128 && n <= 7168) { /* the naive MPFR baseline keeps its per-term rounding */
            ug_ar *seq = ug_ar_new(UG_AR_MPFR_SEQ, prec, UG_DT_BF16);
            mpfr_t acc, t;
            mpfr_inits2(prec, acc, t, (mpfr_ptr)0);
            mpfr_set_zero(acc, 1);
            for (size_t i = 0; i < n; i++) {
                mpfr_set_d(t, a[i * sa], MPFR_RNDN);
                mpfr_mul_d(t, t, b[i * sb], MPFR_RNDN);
                mpfr_add(acc, acc, t, MPFR_RNDN);
            }
            CHECK(same_mp(ug_dot_d(seq, a, sa, b, sb, n).m, acc), "%s: ug_dot_d MPFR_SEQ changed", what);
            mpfr_clears(acc, t, (mpfr_ptr)0);
            ug_ar_free(seq);
        }
        mpfr_clears(ref, got, (mpfr_ptr)0);
        ncompared++;
    }
}

static double *vec(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* Random vectors: bf16-like (8 bits) and full mantissas, unit-sized and spread exponents. */
static void check_random(void)
{
    static const size_t lens[] = {0, 1, 2, 63, 64, 65, 7168};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        size_t n = lens[l];
        double *a = vec(3 * n), *b = vec(2 * n);
        for (int kind = 0; kind < 4; kind++) {
            int bits = kind & 1 ? 53 : 8, wide = kind >= 2;
            for (size_t i = 0; i < 3 * n; i++) a[i] = draw(bits, wide ? -60 : -3, wide ? 60 : 3);
            for (size_t i = 0; i < 2 * n; i++) b[i] = draw(bits, wide ? -60 : -3, wide ? 60 : 3);
            check_dot(kind & 1 ? "random, 53-bit" : "random, bf16-like", a, 1, b, 1, n);
            check_dot("random, strided", a, 3, b, 2, n);
        }
        check_dot("stride 0", a, 0, b, 1, n);
        free(a);
        free(b);
    }
}

/* x, -x pairs (products cancel exactly) plus a tiny term; and pairs alone (an exact +0). */
static void check_cancel(void)
{
    size_t n = 2001;
    double *a = vec(n), *b = vec(n);
    for (size_t i = 0; i + 1 < n; i += 2) {
        a[i] = draw(53, 900, 1000), b[i] = draw(53, -10, 10);
        a[i + 1] = -a[i], b[i + 1] = b[i];
    }
    a[n - 1] = 3.0 * ldexp(1.0, -1074), b[n - 1] = -ldexp(1.0, -1074); /* 0 in double, kept exactly here */
    check_dot("cancellation plus the smallest product", a, 1, b, 1, n);
    a[n - 1] = 1e-300, b[n - 1] = 1e-300;
    check_dot("cancellation plus a tiny term", a, 1, b, 1, n);
    check_dot("pairs that cancel to +0", a, 1, b, 1, n - 1);
    /* pairs a^2 - a^2 (1 + 2^-52): each leaves a residue 2^-52 times smaller */
    for (size_t i = 0; i + 1 < n; i += 2) {
        a[i] = draw(53, -3, 3), b[i] = a[i];
        a[i + 1] = -a[i], b[i + 1] = a[i] * (1 + 0x1p-52); /* not exactly -a^2: a residue per pair */
    }
    check_dot("near-cancelling pairs", a, 1, b, 1, n - 1);
    free(a);
    free(b);
}

/* Exponents over the whole range: subnormal inputs, products near 2^-960 and 2^1000, and
 * the extreme products side by side. */
static void check_range(void)
{
    size_t n = 4096;
    double *a = vec(n), *b = vec(n);
    for (size_t i = 0; i < n; i++) a[i] = draw(53, -1074, 1023), b[i] = draw(53, -1074, 1023);
    check_dot("whole exponent range", a, 1, b, 1, n);
    for (size_t i = 0; i < n; i++) a[i] = draw(53, -1074, -1000), b[i] = draw(53, -1074, 40);
    check_dot("subnormal inputs", a, 1, b, 1, n);
    for (size_t i = 0; i < n; i++) {
        a[i] = draw(53, -482, -478), b[i] = draw(53, -482, -478);        /* products about 2^-960 */
        if (i % 2) a[i] = draw(53, 498, 502), b[i] = draw(53, 498, 502); /* about 2^1000 */
    }
    check_dot("products near 2^-960 and 2^1000", a, 1, b, 1, n);
    for (size_t i = 0; i < 64; i++) { /* hi just above 2^-960, lo subnormal: (1 + u)(1 + v) 2^-960 */
        a[i] = 1.0 + ldexp((double)(rnd() % 64 + 1), -52);
        b[i] = ldexp(1.0 + ldexp((double)(rnd() % 64 + 1), -52), -960) * (i % 3 ? 1.0 : -1.0);
    }
    check_dot("subnormal lo parts", a, 1, b, 1, 64);
    check_dot("a subnormal lo part", a, 1, b, 1, 1);
    double ext[][2] = {{DBL_MAX, DBL_MAX},
                       {-DBL_MAX, DBL_MAX},
                       {0x1p-1074, 0x1p-1074},
                       {DBL_MAX, -DBL_MAX},
                       {0x1p-1074, -0x1p-1074},
                       {0x1p-1074, 0x1p-1074},
                       {0x1p-1022, 0x1.fffffffffffffp-1023}};
    double ea[8], eb[8];
    for (size_t i = 0; i < 7; i++) ea[i] = ext[i][0], eb[i] = ext[i][1];
    for (size_t m = 1; m <= 7; m++) check_dot("the extreme products", ea, 1, eb, 1, m);
    ea[0] = DBL_MAX, eb[0] = DBL_MAX, ea[1] = 0x1p-1074, eb[1] = 0x1p-1074;
    check_dot("the largest and the smallest product", ea, 1, eb, 1, 2);
    free(a);
    free(b);
}

/* Zero products of both signs, alone and with cancelling nonzero terms. */
static void check_zeros(void)
{
    double a[6], b[6];
    for (int pattern = 0; pattern < 64; pattern++) { /* bit i: the sign of zero product i */
        for (int i = 0; i < 6; i++) {
            int neg = pattern >> i & 1;
            a[i] = i % 2 ? (neg ? -0.0 : 0.0) : (neg ? -1.5 : 2.0); /* 0 times x, or x times 0 */
            b[i] = i % 2 ? 3.0 : 0.0;
        }
        check_dot("zero products", a, 1, b, 1, 6);
        check_dot("zero products, the first three", a, 1, b, 1, 3);
    }
    double na[] = {-0.0, 0.0, 5.0, -5.0}, nb[] = {1.0, -1.0, 2.0, 2.0};
    check_dot("all -0", na, 1, nb, 1, 2); /* -0*1, 0*-1: both -0 */
    check_dot("a single -0", na, 1, nb, 1, 1);
    check_dot("-0 products and cancelling terms", na, 1, nb, 1, 4);
    check_dot("cancelling terms only", na + 2, 1, nb + 2, 1, 2);
    double za[] = {-0.0, -0.0, -0.0}, zb[] = {0x1p-1074, DBL_MAX, 7.0};
    check_dot("-0 times the extremes", za, 1, zb, 1, 3);
}

static void check_specials(void)
{
    double a[5] = {1.0, 2.0, 3.0, 4.0, 5.0}, b[5] = {1.0, -1.0, 0.5, 2.0, 1.0};
    double sp[] = {INFINITY, -INFINITY, NAN};
    for (size_t s = 0; s < 3; s++)
        for (size_t at = 0; at < 5; at++) {
            double sa[5], sb[5];
            memcpy(sa, a, sizeof a);
            memcpy(sb, b, sizeof b);
            sa[at] = sp[s];
            check_dot("an inf or NaN in a", sa, 1, b, 1, 5);
            sb[at] = sp[s];
            check_dot("inf or NaN in both", sa, 1, sb, 1, 5);
        }
    double ia[] = {INFINITY, 1.0}, ib[] = {0.0, 1.0};
    check_dot("inf times 0", ia, 1, ib, 1, 2);
    double ja[] = {INFINITY, INFINITY}, jb[] = {1.0, -1.0};
    check_dot("inf - inf", ja, 1, jb, 1, 2);
    check_dot("inf", ja, 1, jb, 1, 1);
}

/* Exact ties at the working precision p: 1 + 2^-p (to even: 1), 1 + 2^(1-p) + 2^-p (to even:
 * up), each negated, and each broken by a term 2^-2000 above or below. As products x * 1
 * and, for the tiny ones, 2^-1000 * 2^-1000 halves. */
static void check_ties(void)
{
    for (size_t k = 0; k < NPREC; k++) {
        int p = (int)precs[k];
        for (int up = 0; up < 2; up++)
            for (int sgn = -1; sgn <= 1; sgn += 2)
                for (int brk = -1; brk <= 1; brk++) {
                    double a[5] = {sgn * 1.0, sgn * ldexp(1.0, -p), up ? sgn * ldexp(1.0, 1 - p) : 0.0, brk * 0x1p-1000,
                                   0.0};
                    double b[5] = {1.0, 1.0, 1.0, 0x1p-1000, 1.0};
                    check_dot("a tie at the working precision", a, 1, b, 1, 5);
                    /* the same tie spread over random terms that sum to it exactly */
                    double c[8], d[8];
                    double r1 = ldexp((double)(rnd() >> 12), -52), r2 = ldexp((double)(rnd() >> 12), -52 - 60);
                    c[0] = a[0], c[1] = r1, c[2] = -r1, c[3] = a[1], c[4] = r2, c[5] = -r2, c[6] = a[2], c[7] = a[3];
                    for (int i = 0; i < 8; i++) d[i] = 1.0;
                    d[7] = 0x1p-1000;
                    check_dot("a tie among cancelling terms", c, 1, d, 1, 8);
                }
    }
}

/* Sums that drive the carry passes: every product the largest mantissa product (each digit
 * filled), alternating in sign with a net negative drift, over 7168 terms and stride 0. */
static void check_carries(void)
{
    double x = 0x1.fffffffffffffp+0, y = -0x1.fffffffffffffp+7;
    check_dot("largest mantissas, stride 0", &x, 0, &y, 0, 7168);
    size_t n = 7168;
    double *a = vec(n), *b = vec(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = ldexp(0x1.fffffffffffffp+0, (int)(i % 97) - 48) * (i % 3 ? -1.0 : 1.0);
        b[i] = ldexp(0x1.fffffffffffffp+0, (int)(i % 31) - 15);
    }
    check_dot("full digits, net negative", a, 1, b, 1, n);
    for (size_t i = 0; i < n; i++) b[i] = i % 2 ? -b[i] : b[i];
    check_dot("full digits, alternating", a, 1, b, 1, n);
    free(a);
    free(b);
}

/* ug_exact_dot_cols, and ug_dot_d_cols in UG_AR_EXACT, against the reference per column:
 * column counts around its 16-column passes and ug_dot_d_cols' 64-column chunks, a weight
 * wider than the columns taken, random and zero-heavy values, and columns holding an inf, a
 * NaN (refused: -1, the MPFR path's value) or only -0 products. */
static void check_cols(void)
{
    static const size_t counts[] = {1, 7, 15, 16, 17, 40, 64, 70};
    static const size_t lens[] = {0, 1, 65, 1000};
    for (size_t q = 0; q < sizeof counts / sizeof counts[0]; q++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t ncols = counts[q], n = lens[l], ldb = ncols + 3;
            double *a = vec(n), *B = vec(n * ldb);
            for (size_t i = 0; i < n; i++) a[i] = rnd() % 5 == 0 ? 0.0 : draw(q % 2 ? 53 : 8, -3, 3);
            for (size_t i = 0; i < n * ldb; i++) B[i] = rnd() % 7 == 0 ? -0.0 : draw(q % 2 ? 53 : 8, -20, 20);
            if (n > 2 && ncols > 2) B[1] = INFINITY, B[ldb + 2] = NAN;
            if (n > 0 && ncols > 3)
                for (size_t i = 0; i < n; i++) B[i * ldb + 3] = a[i] == 0.0 ? 1.0 : -0.0; /* -0 or +0 products */
            for (size_t k = 0; k < NPREC; k++) {
                mpfr_prec_t prec = precs[k];
                mpfr_t *got = malloc(ncols * sizeof *got), ref;
                mpfr_ptr *ptr = malloc(ncols * sizeof *ptr);
                int *rc = malloc(ncols * sizeof *rc);
                mpfr_init2(ref, prec);
                for (size_t c = 0; c < ncols; c++) mpfr_init2(got[c], prec), ptr[c] = got[c];
                ug_exact_dot_cols(ptr, a, B, ldb, n, ncols, rc);
                ug_ar *ar = ug_ar_new(UG_AR_EXACT, prec, UG_DT_BF16);
                ug_num *out = malloc(ncols * sizeof *out);
                ug_dot_d_cols(ar, a, B, ldb, n, ncols, out);
                for (size_t c = 0; c < ncols; c++) {
                    int special = has_special(a, 1, B + c, ldb, n);
                    ref_dot(ref, a, 1, B + c, ldb, n);
                    CHECK(rc[c] == (special ? -1 : 0), "cols: %zu of %zu, n %zu: returned %d", c, ncols, n, rc[c]);
                    if (rc[c] == 0)
                        CHECK(same_mp(got[c], ref), "cols: column %zu of %zu, n %zu, %ld bits: %.17g vs %.17g", c,
                              ncols, n, (long)prec, mpfr_get_d(got[c], MPFR_RNDN), mpfr_get_d(ref, MPFR_RNDN));
                    CHECK(same_mp(out[c].m, ref), "ug_dot_d_cols EXACT: column %zu of %zu, n %zu, %ld bits", c, ncols,
                          n, (long)prec);
                    ncompared++;
                }
                for (size_t c = 0; c < ncols; c++) mpfr_clear(got[c]);
                mpfr_clear(ref);
                free(got), free(ptr), free(rc), free(out);
                ug_ar_free(ar);
            }
            free(a);
            free(B);
        }
}

int main(void)
{
    check_random();
    check_cancel();
    check_range();
    check_zeros();
    check_specials();
    check_ties();
    check_carries();
    check_cols();
    printf("%zu dots compared\n", ncompared);
    return check_done();
}
