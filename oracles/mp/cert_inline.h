/* cert_inline.h — the certified double arithmetic (UG_AR_CERT of arith.h) as inline
 * functions on a plain {value, bound} pair, for an op's fast path over whole arrays.
 *
 * Why: the engine's CERT numbers go through arith.c one call at a time (a mode switch, an
 * MPFR pointer and a struct per operation); an elementwise or row oracle spends most of
 * its time there. An op evaluates its formula with these functions instead, element by
 * element in a loop the compiler can inline, and hands each result to the engine's own
 * rule (ug_ar_emit: ug_cert_round; an undecided element is marked unsure, and the engine
 * re-evaluates it through the op's scalar path in EXACT).
 *
 * Each function is the arith.c CERT primitive of the same name, formula for formula: the
 * same value (one IEEE operation, same order) and the same error bound (TwoSum and the
 * Veltkamp TwoProduct error, the same TINY/INFLATE normalisation). So an op that writes
 * its formula in the same order gets bit-identical values and bounds, and the same
 * elements go to MPFR (tests/test_oracle_fast.c checks every element of adversarial cases
 * against MPFR, and against the scalar CERT path). arith.c takes its CERT constants from
 * here, so the two cannot drift apart. */
#ifndef UG_CERT_INLINE_H
#define UG_CERT_INLINE_H
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "oracles/mp/arith_num.h"

#define UG_CV_U52 0x1p-52
#define UG_CV_U51 0x1p-51 /* a libm function's result: within 1 ulp (2^-52 |v|), charged twice that */
#define UG_CV_TINY 0x1p-1074
#define UG_CV_INFLATE (1.0 + 0x1p-45)

typedef struct {
    double v; /* the value, as UG_AR_CERT computes it */
    double e; /* a rigorous bound on |v - exact|; 0 when v is exact */
} ug_cv;

/* The functions below choose between computed values (a ? x : y), never between code
 * paths, so that a loop of them over arrays vectorises (apply_adamw's block pass): both
 * sides are always evaluated, and the chosen one is the value the branch gave. */

/* isfinite(x) as one comparison (a NaN compares false). */
static inline int ug_cv_finite(double x) { return fabs(x) <= DBL_MAX; }

/* x, or 1.0 where x is +-0. Written so that the compiler keeps it: the zero test is on the
 * bits (a test it cannot relate to the caller's x == 0.0, which would let it put x itself
 * back on the lanes the caller drops) and the stand-in is x + 1.0, not the constant 1.0
 * (which it would fold into the caller's next operation, evaluating that on x as well). */
static inline double ug_cv_nonzero(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u << 1) == 0 ? x + 1.0 : x;
}

/* The engine's CERT number: a nonzero bound is padded for its own rounding (a NaN bound:
 * infinite). Where e is 0 the padding is computed on 1.0 instead (and dropped: the bound is
 * 0). Why: in a vectorised loop both sides of a choice are evaluated, and e = 0 (an exact
 * product or sum) made 0 + TINY, a subnormal result, and TINY * INFLATE, on every lane: a
 * microcode assist per vector instruction (perf: most of apply_adamw's block on this AVX-512
 * machine). Where e is not 0 it is the same formula on the same e, so the same bound bit for
 * bit. */
static inline ug_cv ug_cv_make(double v, double e)
{
    double p = (ug_cv_nonzero(e) + UG_CV_TINY) * UG_CV_INFLATE; /* rounds: the padding, upward by INFLATE */
    ug_cv r = {v, e == 0.0 ? 0.0 : p != p ? INFINITY : p};
    return r;
}

/* An exact input value or constant; and a CERT ug_num of the engine as a pair. */
static inline ug_cv ug_cv_c(double x) { return (ug_cv){x, 0.0}; }
static inline ug_cv ug_cv_of(ug_num x) { return (ug_cv){x.v, x.e}; }

static inline double ug_cv_two_sum_err(double a, double b, double s)
{
    double bb = s - a;
    return (a - (s - bb)) + (b - bb);
}

/* The error bound of p = a*b given |exact|, the product's exact error where no step can
 * under- or overflow, else |p| u + TINY. Where |p| u is 0 its sum with TINY is TINY itself,
 * taken as a constant: as in ug_cv_make, no subnormal result on the lanes that do not need
 * one (the same value bit for bit). */
static inline double ug_cv_prod_err_of(double a, double b, double p, double exact)
{
    int in_range = (fabs(p) > 0x1p-960) & (fabs(p) < 0x1p960) & (fabs(a) < 0x1p995) & (fabs(b) < 0x1p995);
    double f = fabs(p) * UG_CV_U52, fb = ug_cv_nonzero(f) + UG_CV_TINY; /* rounds: |p| u + TINY */
    return in_range ? exact : f == 0.0 ? UG_CV_TINY : fb;
}

/* Veltkamp's exact product error (ug_cv_prod_err_of). */
static inline double ug_cv_two_prod_err(double a, double b, double p)
{
    const double split = 134217729.0; /* 2^27 + 1 */
    double ca = split * a, ah = ca - (ca - a), al = a - ah;
    double cb = split * b, bh = cb - (cb - b), bl = b - bh;
    return ug_cv_prod_err_of(a, b, p, fabs(((ah * bh - p) + ah * bl + al * bh) + al * bl));
}

/* The same error by one fused multiply-add: in range both are the product's exact error, so
 * the same value bit for bit. For code compiled with FMA (a target_clones clone for
 * arch=x86-64-v3 or v4); elsewhere __builtin_fma is libm's fma, exact but slow. */
static inline double ug_cv_two_prod_err_fma(double a, double b, double p)
{
    return ug_cv_prod_err_of(a, b, p, fabs(__builtin_fma(a, b, -p)));
}

static inline ug_cv ug_cv_add(ug_cv a, ug_cv b)
{
    double v = a.v + b.v, err = fabs(ug_cv_two_sum_err(a.v, b.v, v));
    return ug_cv_make(v, a.e + b.e + (ug_cv_finite(v) ? err : INFINITY));
}

static inline ug_cv ug_cv_sub(ug_cv a, ug_cv b)
{
    double v = a.v - b.v, err = fabs(ug_cv_two_sum_err(a.v, -b.v, v));
    return ug_cv_make(v, a.e + b.e + (ug_cv_finite(v) ? err : INFINITY));
}

/* a*b with the product error err of v = a.v*b.v. */
static inline ug_cv ug_cv_mul_err(ug_cv a, ug_cv b, double v, double err)
{
    return ug_cv_make(v, fabs(a.v) * b.e + fabs(b.v) * a.e + a.e * b.e + (ug_cv_finite(v) ? err : INFINITY));
}

static inline ug_cv ug_cv_mul(ug_cv a, ug_cv b)
{
    double v = a.v * b.v;
    return ug_cv_mul_err(a, b, v, ug_cv_two_prod_err(a.v, b.v, v));
}

/* ug_cv_mul, bit for bit, with the product error by FMA (ug_cv_two_prod_err_fma). */
static inline ug_cv ug_cv_mul_fma(ug_cv a, ug_cv b)
{
    double v = a.v * b.v;
    return ug_cv_mul_err(a, b, v, ug_cv_two_prod_err_fma(a.v, b.v, v));
}

static inline ug_cv ug_cv_div(ug_cv a, ug_cv b)
{
    double v = a.v / b.v, ab = fabs(b.v);
    double q = (fabs(a.v) * b.e + ab * a.e) / (ab * (ab - b.e));
    return ug_cv_make(v, (ab > b.e ? q : INFINITY) + fabs(v) * UG_CV_U52);
}

/* Above a's bound, |d sqrt| <= a.e / sqrt(a.v); else sqrt(max(a.v, 0) + a.e) (a zero's
 * sign there cannot matter: adding a.e >= 0 gives +0 or a.e). */
static inline ug_cv ug_cv_sqrt(ug_cv a)
{
    double v = sqrt(a.v);
    double near = a.e / v, wide = sqrt((a.v > 0.0 ? a.v : 0.0) + a.e);
    return ug_cv_make(v, (a.v > a.e ? near : wide) + fabs(v) * UG_CV_U52);
}

/* max is 1-Lipschitz in each operand: the larger value, the larger bound. */
static inline ug_cv ug_cv_max(ug_cv a, ug_cv b)
{
    ug_cv r = a.v >= b.v ? a : b;
    r.e = fmax(a.e, b.e);
    return r;
}

/* 1/sqrt(a): |d/da a^-1/2| <= 1/(2 lo^1.5) over [lo, a.v]; the libm sqrt and the
 * division charged as one libm result. */
static inline ug_cv ug_cv_rsqrt(ug_cv a)
{
    double s = sqrt(a.v), v = 1.0 / s, lo = a.v - a.e;
    double e = lo > 0 ? 0.5 * a.e / (lo * sqrt(lo)) : INFINITY;
    return ug_cv_make(v, e + fabs(v) * UG_CV_U51);
}

/* The error exp(a.v) carries from a's bound ae: |exp(x) - exp(a.v)| <= exp(a.v) expm1(ae)
 * for |x - a.v| <= ae, padded for the libm value v and expm1 (the DEVICE bound uses it too). */
static inline double ug_cv_exp_spread(double v, double ae)
{
    return ae > 0 ? fabs(v) * (1.0 + UG_CV_U51) * expm1(ae) : 0.0;
}

static inline ug_cv ug_cv_exp(ug_cv a)
{
    double v = exp(a.v);
    return ug_cv_make(v, ug_cv_exp_spread(v, a.e) + fabs(v) * UG_CV_U51);
}

/* tanh, sin, cos are 1-Lipschitz: a's bound carries over, plus the libm value's. */
static inline ug_cv ug_cv_tanh(ug_cv a)
{
    double v = tanh(a.v);
    return ug_cv_make(v, a.e + fabs(v) * UG_CV_U51);
}

static inline ug_cv ug_cv_sin(ug_cv a)
{
    double v = sin(a.v);
    return ug_cv_make(v, a.e + fabs(v) * UG_CV_U51);
}

static inline ug_cv ug_cv_cos(ug_cv a)
{
    double v = cos(a.v);
    return ug_cv_make(v, a.e + fabs(v) * UG_CV_U51);
}

/* gamma_n = n u / (1 - n u), u = 2^-53: the classic bound on n roundings. */
static inline double ug_cv_gamma_n(size_t n) { return (double)n * 0x1p-53 / (1.0 - (double)n * 0x1p-53); }

/* The bound on the rounding error of an n-term dot product summed left to right (products
 * of exact doubles), abs_sum the sum of its products' magnitudes: gamma_{n+2} abs_sum, plus
 * n TINY for underflow. The CERT dots past 64 terms and their row and column forms use it. */
static inline double ug_cv_dot_err(size_t n, double abs_sum)
{
    return ug_cv_gamma_n(n + 2) * abs_sum + (double)n * UG_CV_TINY;
}

/* x has at most 26 significant bits, so a product of two such values is exact. */
static inline int ug_cv_narrow(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u & ((1u << 27) - 1u)) == 0;
}

/* One term of a dot product: s += x*y and abs_sum += |x*y|; *exact stays 1 while every
 * product (inputs of <= 26 bits, no under/overflow) and every addition (TwoSum error 0)
 * was exact (ug_cv_term_exact). The step of ug_cv_dot_d and arith.c's CERT ug_dot_nd;
 * cert_block.c's column forms apply the same test to every term. */
static inline int ug_cv_term_exact(double x, double y, double s, double p, double t)
{
    return ug_cv_narrow(x) & ug_cv_narrow(y) &
           ((x == 0.0) | (y == 0.0) | ((fabs(p) >= 0x1p-960) & (fabs(p) <= 0x1p960))) & ug_cv_finite(t) &
           (ug_cv_two_sum_err(s, p, t) == 0.0);
}

static inline void ug_cv_dot_step(double x, double y, double *s, double *abs_sum, int *exact)
{
    double p = x * y, t = *s + p;
    if (*exact) *exact = ug_cv_term_exact(x, y, *s, p, t); /* checked only while it holds */
    *s = t;
    *abs_sum += fabs(p);
}

/* Dot product of exact doubles (arith.c's ug_dot_d and ug_dot_d_tracked in CERT, which
 * call it). While every product and addition is exact (ug_cv_dot_step) the result is
 * exact: short bf16 dot products often land exactly on a rounding tie of the output dtype,
 * and an exact value needs no MPFR to round. Otherwise the gamma bound. Long sums (n > 64)
 * rarely land on a tie, so they skip the tracking and its cost unless track_long. The sum
 * is the same operations in the same order either way. */
static inline ug_cv ug_cv_dot_d(const double *a, size_t sa, const double *b, size_t sb, size_t n, int track_long)
{
    double s = 0.0, abs_sum = 0.0;
    int exact = n <= 64 || track_long;
    for (size_t i = 0; i < n; i++) ug_cv_dot_step(a[i * sa], b[i * sb], &s, &abs_sum, &exact);
    return ug_cv_make(s, exact ? 0.0 : ug_cv_dot_err(n, abs_sum));
}

/* A dot product's running sums (arith.c's CERT ug_dot_nd). */
typedef struct {
    double s, abs_sum, e;
    int exact;
} ug_cv_acc;

/* One term of arith.c's CERT ug_dot_nd (x with a bound, y exact): the dot step, exactness
 * also needing x exact, and the carried input error e += x.e |y|. */
static inline void ug_cv_dot_nd_step(ug_cv x, double y, ug_cv_acc *acc)
{
    if (x.e != 0.0) acc->exact = 0;
    ug_cv_dot_step(x.v, y, &acc->s, &acc->abs_sum, &acc->exact);
    acc->e += x.e * fabs(y);
}

/* ug_dot_nd's CERT result from its sums: exact zero products and exact inputs give an exact zero. */
static inline ug_cv ug_cv_dot_nd_end(const ug_cv_acc *acc, size_t n)
{
    return ug_cv_make(acc->s, acc->exact || (acc->abs_sum == 0.0 && acc->e == 0.0)
                                  ? 0.0
                                  : acc->e + ug_cv_gamma_n(n + 2) * acc->abs_sum + (double)n * UG_CV_TINY);
}

/* CERT sum of n pairs, pair i at v[i*stride], e[i*stride]: the plain left-to-right sum s,
 * bounded by its own rounding errors rather than the worst case gamma_n * sum|x_i|. Each
 * addition's error is exact (TwoSum), so exact - s = sum err_i, which c computes to within
 * gamma_n * sum|err_i|; the bound |c| + gamma_n * sum|err_i| is the actual error plus a
 * second-order term: about sqrt(n) ulps of s for a long softmax denominator instead of n,
 * which keeps rows of thousands of terms from sending elements near an fp32 rounding
 * boundary to MPFR. arith_inline.h's CERT ugx_sum (stride: a ug_num) and attn_softmax's row pass
 * (plain arrays) call it. */
static inline ug_cv ug_cv_sum(const double *v, const double *e, size_t stride, size_t n)
{
    double s = 0.0, c = 0.0, abs_err = 0.0, ea = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = v[i * stride], t = s + x, err = ug_cv_two_sum_err(s, x, t);
        c += err;
        abs_err += fabs(err);
        ea += e[i * stride];
        s = t;
    }
    if (!isfinite(s)) return ug_cv_make(s, INFINITY);
    return ug_cv_make(s, ea + fabs(c) + ug_cv_gamma_n(n + 1) * abs_err);
}

/* A pair as the engine's CERT number (for ug_sum and the scalar path's functions). */
static inline ug_num ug_cv_num(ug_cv x) { return (ug_num){x.v, x.e, NULL}; }

/* nextafter(x, -inf) and nextafter(x, +inf) on the bits, without libm's call. NaN and the
 * infinities in the direction of the step come back unchanged, as from nextafter. */
static inline double ug_cv_next_down(double x)
{
    if (isnan(x) || x == -INFINITY) return x;
    if (x == 0.0) return -0x1p-1074;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u += x > 0.0 ? (uint64_t)-1 : 1u; /* toward -inf: smaller magnitude if positive, larger if negative */
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline double ug_cv_next_up(double x) { return -ug_cv_next_down(-x); }

/* The CERT rule of arith.h's ug_cert_round (which calls this): *g = v rounded to dt;
 * 1 when every value within e of v rounds to *g. Inline, so that an op's loop over one
 * output (dt fixed) pays no call per element. */
static inline int ug_cv_round(ug_dtype dt, double v, double e, double *g)
{
    if (e == 0.0) {                      /* exact */
        *g = ug_dtype_round_fast(dt, v); /* rounds: the output's dtype */
        return !isnan(v);
    }
    /* outward: the computed endpoints must contain the true interval */
    double lo = ug_dtype_round_fast(dt, ug_cv_next_down(v - e)); /* rounds: interval end */
    double hi = ug_dtype_round_fast(dt, ug_cv_next_up(v + e));   /* rounds: interval end */
    /* lo == hi also holds for -0 == +0: the sign of a zero result is not judged */
    int sure = isfinite(v) && isfinite(e) && lo == hi;
    /* rounding is monotone, so a sure element rounds to lo (a zero keeps v's sign) */
    *g = sure && lo != 0.0 ? lo : ug_dtype_round_fast(dt, v); /* rounds: the output's dtype */
    return sure;
}

/* ug_ar_emit's CERT rule on output sink s: element k gets x's rounding and value; returns
 * 1 when k is left unsure (ug_cv_put_block's elements outside its vector lanes). */
static inline int ug_cv_put(const ug_ar_sink *s, size_t k, ug_cv x)
{
    int sure = ug_cv_round(s->dt, x.v, x.e, &s->g[k]);
    s->gstar[k] = x.v;
    if (s->unsure) s->unsure[k] = (unsigned char)!sure;
    return !sure;
}

#endif
