/* exact_dot.c — the exact dot product of two double vectors, rounded once with MPFR.
 *
 * Why: UG_AR_EXACT's ug_dot_d made every product an MPFR number and summed them with
 * mpfr_sum, about 200 ns a term; here a term costs a few ns, and the result is the same bits.
 *
 * How: every product is split exactly into doubles or integers, added without rounding into
 * a fixed-point long accumulator ("superaccumulator") that spans every product of two finite
 * doubles, and the exact sum is rounded ONCE, to the caller's precision with MPFR_RNDN
 * (mpfr_set_z_2exp). mpfr_sum of the exact products (the MPFR path) rounds the same exact sum
 * once with MPFR_RNDN, so the two agree bit for bit; an exact zero sum takes mpfr_sum's sign
 * (round_out). An inf or a NaN input is not handled: the caller's MPFR path gives its IEEE
 * special values.
 *  - Products: hi = a*b rounded and lo = fma(a, b, -hi), exact (hi + lo = a*b) when nothing
 *    underflows or overflows: taken when 2^-960 <= |hi| < 2^1000 (then the exact product's
 *    lowest bit, >= |hi| 2^-107, is above 2^-1074, so lo is a double). Any other finite
 *    product (a zero, a tiny or a huge one) takes the exact integer product of the two 53-bit
 *    mantissas (< 2^106, in 128 bits) instead. Both assume IEEE doubles without flush-to-zero
 *    (the CPU's default, as the CERT arithmetic does).
 *  - The accumulator: 32-bit digits, each held in an int64 chunk, the lowest bit weighing
 *    2^-2148 (the lowest bit of a product of two subnormals) and the top past 2^2048 times the
 *    term count. A term adds at most two signed pieces below 2^32 to a chunk, so a chunk
 *    absorbs 2^29 terms before carries are propagated (a carry pass every 2^29 terms).
 *  - fma is an instruction where the CPU has one (the loop is compiled for it too and picked
 *    at run time); otherwise libm's fma, exact on every machine, just slower. */
#include "oracles/mp/exact_dot.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gmp.h>

#define XD_LSB 2148                /* bit 0 of digit 0 weighs 2^-XD_LSB */
#define XD_DIGITS 140              /* see carry_balanced for why this is enough */
#define XD_BLOCK ((size_t)1 << 29) /* terms between carry passes: 2^29 * 2 * 2^32 + 2^31 < 2^63 */
#define XD_RADIX ((int64_t)1 << 32)
#define XD_HALF ((int64_t)1 << 31)
#define XD_MASK 0xffffffffu
#define XD_FRAC ((((uint64_t)1) << 52) - 1)
#define XD_HOT_LO 63u   /* biased exponent of 2^-960 */
#define XD_HOT_HI 2022u /* biased exponent of [2^999, 2^1000) */
#define XD_AHEAD 8      /* rows ug_exact_dot_cols prefetches ahead */
#define XD_COLS 16      /* columns per pass of ug_exact_dot_cols: 16 accumulators, 18 KiB */

_Static_assert(((int64_t)-5 >> 1) == -3, "the carries need an arithmetic (flooring) right shift");

#if GMP_NAIL_BITS == 0 && (GMP_NUMB_BITS == 64 || GMP_NUMB_BITS == 32)
#define XD_PER_LIMB (GMP_NUMB_BITS / 32) /* 32-bit digits per GMP limb */
#endif

/* The hot loop is also compiled with FMA and picked at run time, as arith_tile.c's column loop is
 * with AVX2; not under the sanitizers, whose set-up an ifunc resolver would precede. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define XD_CLONES __attribute__((target_clones("fma", "default")))
#endif
#endif
#ifndef XD_CLONES
#define XD_CLONES
#endif

#if defined(__SIZEOF_INT128__) && defined(XD_PER_LIMB)
typedef unsigned __int128 xd_u128;
typedef __int128 xd_i128;

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Digits [lo, hi] may be nonzero, the rest are 0 (empty: lo > hi). */
typedef struct {
    int lo, hi;
} xd_range;

/* Adds the finite double with bits u exactly: u = m * 2^(be - 1075), |m| < 2^53, its lowest
 * bit at accumulator bit be - 1 + 1074 (be = 1 for a subnormal); three pieces, the top one
 * signed (two's complement: low digits unsigned, the rest an arithmetic shift), into digits
 * k, k+1, k+2. Returns k. */
static inline int add_double(int64_t *d, uint64_t u)
{
    unsigned be = (unsigned)(u >> 52) & 0x7ffu;
    int64_t m = (int64_t)((u & XD_FRAC) | ((uint64_t)(be != 0) << 52));
    int64_t neg = -(int64_t)(u >> 63);
    m = (m ^ neg) - neg;
    unsigned e = be + (be == 0) + 1073;
    int k = (int)(e >> 5);
    xd_i128 v = (xd_i128)((xd_u128)(xd_i128)m << (e & 31u)); /* m * 2^s, |.| < 2^84 (GCC: modular) */
    uint64_t v0 = (uint64_t)v;
    d[k] += (int64_t)(v0 & XD_MASK);
    d[k + 1] += (int64_t)(v0 >> 32);
    d[k + 2] += (int64_t)(v >> 64); /* floor(v / 2^64): |.| < 2^20 */
    return k;
}

/* The mantissa (hidden bit included) of the double with bits u, its biased exponent in *e
 * (1 for a subnormal: u = m * 2^(e - 1075)); 1 in *special for an inf or a NaN. */
static uint64_t split(uint64_t u, unsigned *e, unsigned *special)
{
    unsigned be = (unsigned)(u >> 52) & 0x7ffu;
    *special |= be == 0x7ffu;
    *e = be + (be == 0);
    return (u & XD_FRAC) | ((uint64_t)(be != 0) << 52);
}

/* d += v if neg == 0, d -= v if neg == -1 (v < 2^32). */
static inline void add_digit(int64_t *d, uint64_t v, int64_t neg) { *d += ((int64_t)v ^ neg) - neg; }

/* Adds the product of the doubles with bits ua, ub exactly, as the integer product of their
 * mantissas (< 2^106) at bit ea + eb - 2 (>= 0), into digits k..k+4: any pair of finite
 * doubles. Widens [*kmin - 2, *kmax + 2] over those digits. Returns 1 (and adds nothing) for
 * an inf or a NaN. */
static unsigned add_product(int64_t *d, uint64_t ua, uint64_t ub, int *kmin, int *kmax)
{
    unsigned ea, eb, special = 0;
    xd_u128 p = (xd_u128)split(ua, &ea, &special) * split(ub, &eb, &special); /* exact */
    if (special || p == 0) return special;
    unsigned e = ea + eb - 2, s = e & 31u;
    int k = (int)(e >> 5);
    xd_u128 q = p << s; /* bits 0..127 of p * 2^s */
    uint64_t q0 = (uint64_t)q, q1 = (uint64_t)(q >> 64);
    uint64_t q2 = (uint64_t)((p >> 1) >> (127 - s)); /* bits 128..136 */
    int64_t neg = -(int64_t)((ua ^ ub) >> 63);
    add_digit(&d[k], q0 & XD_MASK, neg);
    add_digit(&d[k + 1], q0 >> 32, neg);
    add_digit(&d[k + 2], q1 & XD_MASK, neg);
    add_digit(&d[k + 3], q1 >> 32, neg);
    add_digit(&d[k + 4], q2, neg);
    if (*kmin > k + 2) *kmin = k + 2;
    if (*kmax < k + 2) *kmax = k + 2;
    return 0;
}

/* Adds the exact product x*y to d: hi + lo where that pair is exact, the integer product
 * otherwise. No rounding. Widens [*kmin - 2, *kmax + 2] over the digits it makes nonzero:
 * hi's pieces go to digits k..k+2, lo's nonzero ones within k-2..k+2 (lo's bits lie between
 * 2^-54 ulp(hi) and ulp(hi)/2, and a negative lo's sign bits reach at most its top piece).
 * Returns 1 for an inf or a NaN input, which adds nothing (d stays a valid sum). */
static inline unsigned add_term(int64_t *d, double x, double y, int *kmin, int *kmax)
{
    double hi = x * y; /* rounded; lo below is its exact error */
    uint64_t uh = bits_of(hi);
    if (((unsigned)(uh >> 52) & 0x7ffu) - XD_HOT_LO > XD_HOT_HI - XD_HOT_LO) /* not 2^-960 <= |hi| < 2^1000 */
        return add_product(d, bits_of(x), bits_of(y), kmin, kmax);           /* a zero, tiny, huge, inf, NaN */
    double lo = fma(x, y, -hi);                                              /* exact: x*y - hi is a double here */
    int k = add_double(d, uh);
    if (lo != 0.0) add_double(d, bits_of(lo));
    *kmin = k < *kmin ? k : *kmin;
    *kmax = k > *kmax ? k : *kmax;
    return 0;
}

/* The sum so far of one dot: digits (value = sum_k d[k] 2^(32k - XD_LSB)), the digits that may
 * be nonzero, and whether an inf or a NaN was met (then the dot is the caller's). */
typedef struct {
    int64_t d[XD_DIGITS];
    xd_range r;
    unsigned special;
} xd_acc;

static void acc_init(xd_acc *x)
{
    memset(x->d, 0, sizeof x->d);
    x->r.lo = XD_DIGITS;
    x->r.hi = -1;
    x->special = 0;
}

/* Adds the n exact products a[i*sa] * b[i*sb] to x (n <= XD_BLOCK). */
XD_CLONES static void add_terms(xd_acc *x, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    unsigned special = 0;
    int kmin = x->r.lo + 2, kmax = x->r.hi - 2; /* [kmin - 2, kmax + 2] holds every nonzero digit */
    for (size_t i = 0; i < n; i++) special |= add_term(x->d, a[i * sa], b[i * sb], &kmin, &kmax);
    x->r.lo = kmin - 2;
    x->r.hi = kmax + 2;
    x->special |= special;
}

/* Adds to x[c] the n exact products a[i] * B[i*ldb + c], c < w (n <= XD_BLOCK): rows
 * outermost, one contiguous pass over B's rows. */
XD_CLONES static void add_rows(xd_acc *x, const double *a, const double *B, size_t ldb, size_t n, size_t w)
{
    int kmin[XD_COLS], kmax[XD_COLS];
    for (size_t c = 0; c < w; c++) kmin[c] = x[c].r.lo + 2, kmax[c] = x[c].r.hi - 2;
    for (size_t i = 0; i < n; i++) {
        const double *row = B + i * ldb;
        if (i + XD_AHEAD < n) { /* strided rows, which the hardware does not prefetch: every line of w doubles */
            const double *ahead = row + XD_AHEAD * ldb;
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + w / 2);
            __builtin_prefetch(ahead + w - 1);
        }
        for (size_t c = 0; c < w; c++) x[c].special |= add_term(x[c].d, a[i], row[c], &kmin[c], &kmax[c]);
    }
    for (size_t c = 0; c < w; c++) x[c].r.lo = kmin[c] - 2, x[c].r.hi = kmax[c] + 2;
}

/* Propagates carries so that every digit lies in [-2^31, 2^31) (the value unchanged) and
 * narrows *r to the lowest and highest nonzero digit (none: lo > hi). In this balanced
 * form the highest nonzero digit h gives the sign and |value| > 2^(32h - 2 - XD_LSB); |value|
 * < 2^64 * 2^2048 (at most 2^64 terms, each < 2^2048), so 32h - 2 - 2148 < 2112, h <= 133:
 * digits and carries stay below XD_DIGITS (a product's pieces reach digit 131, and a carry
 * pass one past the highest nonzero digit). Before a pass |d[k]| < 2^62 + 2^31. */
static void carry_balanced(int64_t *d, xd_range *r)
{
    int64_t c = 0;
    int k = r->lo;
    for (; (k <= r->hi || c != 0) && k < XD_DIGITS; k++) {
        int64_t v = d[k] + c;
        c = (v + XD_HALF) >> 32; /* floor((v + 2^31) / 2^32) */
        d[k] = v - c * XD_RADIX; /* in [-2^31, 2^31) */
    }
    int lo = r->lo, hi = k - 1;
    while (hi >= lo && d[hi] == 0) hi--;
    while (lo <= hi && d[lo] == 0) lo++;
    r->lo = lo <= hi ? lo : XD_DIGITS;
    r->hi = lo <= hi ? hi : -1;
}

/* The sign mpfr_sum gives an exact zero sum of the products: +0 when n = 0, when some
 * product is nonzero (they cancel), or when the zero products have both signs; -0 when every
 * product is -0 (a zero times a finite double has the IEEE sign, as mpfr_mul_d gives it). */
static int zero_sign(const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    int pos = 0, neg = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ua = bits_of(a[i * sa]), ub = bits_of(b[i * sb]);
        if ((ua << 1) != 0 && (ub << 1) != 0) return 1; /* a nonzero product */
        if ((ua ^ ub) >> 63)
            neg = 1;
        else
            pos = 1;
    }
    return neg && !pos ? -1 : 1;
}

/* out = the value of the balanced digits d[lo..hi] (d[hi] != 0), rounded once with MPFR_RNDN. */
static void round_digits(mpfr_ptr out, int64_t *d, int lo, int hi)
{
    int neg = d[hi] < 0;
    /* |value| in plain base 2^32: digits in [0, 2^32). The balanced top digit's magnitude is
     * >= 1 and every digit's <= 2^31, so the borrows stop there (no digit past hi). */
    uint32_t dig[XD_DIGITS + 1];
    int nd = hi - lo + 1;
    int64_t c = 0;
    for (int j = 0; j < nd; j++) {
        int64_t v = (neg ? -d[lo + j] : d[lo + j]) + c;
        c = v >> 32; /* floor: a borrow of 1 or none */
        dig[j] = (uint32_t)(v & XD_MASK);
    }
    dig[nd] = 0;
    mp_limb_t limbs[XD_DIGITS];
    mp_size_t nl = (nd + XD_PER_LIMB - 1) / XD_PER_LIMB;
    for (mp_size_t j = 0; j < nl; j++) {
        limbs[j] = dig[XD_PER_LIMB * j];
#if XD_PER_LIMB == 2
        limbs[j] |= (mp_limb_t)dig[2 * j + 1] << 32;
#endif
    }
    while (nl > 0 && limbs[nl - 1] == 0) nl--;
    mpz_t z;
    mpz_roinit_n(z, limbs, neg ? -nl : nl);                           /* no allocation: a read-only view of limbs */
    mpfr_set_z_2exp(out, z, (mpfr_exp_t)32 * lo - XD_LSB, MPFR_RNDN); /* the one rounding */
}

/* out = x's exact sum rounded once (x holds no inf or NaN); zero_sign's arguments: the dot. */
static void acc_round(xd_acc *x, mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    carry_balanced(x->d, &x->r);
    if (x->r.lo > x->r.hi)
        mpfr_set_zero(out, zero_sign(a, sa, b, sb, n)); /* the exact sum is 0 */
    else
        round_digits(out, x->d, x->r.lo, x->r.hi);
}

int ug_exact_dot_blocked(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n, size_t block)
{
    if (block == 0 || block > XD_BLOCK) block = XD_BLOCK;
    xd_acc x;
    acc_init(&x);
    for (size_t i = 0; i < n; i += block) {
        size_t m = n - i < block ? n - i : block;
        add_terms(&x, a + i * sa, sa, b + i * sb, sb, m);
        if (x.special) return -1;                 /* an inf or a NaN */
        if (i + m < n) carry_balanced(x.d, &x.r); /* the chunks' headroom: XD_BLOCK terms */
    }
    acc_round(&x, out, a, sa, b, sb, n);
    return 0;
}

void ug_exact_dot_cols(mpfr_ptr const *out, const double *a, const double *B, size_t ldb, size_t n, size_t ncols,
                       int *rc)
{
    xd_acc x[XD_COLS];
    for (size_t c0 = 0; c0 < ncols; c0 += XD_COLS) {
        size_t w = ncols - c0 < XD_COLS ? ncols - c0 : XD_COLS;
        for (size_t c = 0; c < w; c++) acc_init(&x[c]);
        for (size_t i = 0; i < n; i += XD_BLOCK) {
            size_t m = n - i < XD_BLOCK ? n - i : XD_BLOCK;
            add_rows(x, a + i, B + i * ldb + c0, ldb, m, w);
            if (i + m < n)
                for (size_t c = 0; c < w; c++) carry_balanced(x[c].d, &x[c].r);
        }
        for (size_t c = 0; c < w; c++) {
            rc[c0 + c] = x[c].special ? -1 : 0;
            if (!x[c].special) acc_round(&x[c], out[c0 + c], a, 1, B + c0 + c, ldb, n);
        }
    }
}
#else
/* No 128-bit integer or an unusual GMP limb: every dot takes the caller's MPFR path. */
int ug_exact_dot_blocked(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n, size_t block)
{
    (void)out, (void)a, (void)sa, (void)b, (void)sb, (void)n, (void)block;
    return -1;
}

void ug_exact_dot_cols(mpfr_ptr const *out, const double *a, const double *B, size_t ldb, size_t n, size_t ncols,
                       int *rc)
{
    (void)out, (void)a, (void)B, (void)ldb, (void)n;
    for (size_t c = 0; c < ncols; c++) rc[c] = -1;
}
#endif

int ug_exact_dot(mpfr_ptr out, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    return ug_exact_dot_blocked(out, a, sa, b, sb, n, XD_BLOCK);
}
