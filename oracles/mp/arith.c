/* arith.c — the arithmetics behind arith.h.
 *
 * CERT bounds: every primitive returns v and e with |v - exact| <= e, where exact is the
 * primitive applied to the exact operands (which lie within their own e). Rounding of a
 * double result costs at most ulp(v)/2 <= 2^-53|v| (+2^-1075 when subnormal); we charge
 * 2^-52|v| + 2^-1074, libm functions 2^-51|v|, and inflate every bound by 2^-45 relative
 * to cover the rounding of the bound arithmetic itself.
 *
 * DEVICE bounds (first order, see arith.h): e bounds |device - exact| for a device that
 * rounds every primitive to fp32 and sums in any order; each primitive adds its own
 * rounding (UG_DEV_U |v|, functions DEV_FN |v|, plus UG_DEV_ETA for a result in fp32's
 * subnormal range) to the propagated operand bounds. */
#include "oracles/mp/arith.h"
#include "oracles/mp/arith_inline.h"
#include "oracles/mp/arith_private.h"
#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/mp/exact_dot.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_BLOCK 512
/* The CERT constants are cert_inline.h's, so the inline fast path and this file cannot drift apart. */
#define U52 UG_CV_U52
#define U51 UG_CV_U51
#define TINY UG_CV_TINY
#define INFLATE UG_CV_INFLATE
#define IS_MP(ar) ((ar)->mode == UG_AR_EXACT || (ar)->mode == UG_AR_MPFR_SEQ)
#define IS_DEV(ar) ((ar)->mode == UG_AR_DEVICE)
/* ugx_of inside this file, inline: the arithmetic as arith_inline.h's primitives take it. */
#define ARX(ar) ((ug_arx){(ar), (ar)->mode, (ar)->naive_dt})

ug_ar *ug_ar_new(ug_ar_mode mode, mpfr_prec_t prec, ug_dtype naive_dt)
{
    ug_ar *ar = calloc(1, sizeof *ar);
    if (!ar) return NULL;
    ar->mode = mode;
    ar->prec = prec < 64 ? 64 : prec;
    ar->naive_dt = naive_dt;
    return ar;
}

void ug_ar_free(ug_ar *ar)
{
    if (!ar) return;
    for (size_t i = 0; i < ar->inited; i++) mpfr_clear(ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK]);
    for (size_t i = 0; i < ar->nblocks; i++) free(ar->blocks[i]);
    for (size_t i = 0; i < ar->prods_inited; i++) mpfr_clear(ar->prods[i]);
    free(ar->blocks);
    free(ar->ptrs);
    free(ar->prods);
    free(ar);
}

ug_arx ugx_of(ug_ar *ar) { return ARX(ar); }
mpfr_prec_t ug_ar_get_prec(const ug_ar *ar) { return ar->prec; }
void ug_ar_set_sink(ug_ar *ar, ug_ar_sink *sinks, int n)
{
    ar->sinks = sinks;
    ar->nsinks = n;
}
size_t ug_ar_mark(const ug_ar *ar) { return ar->used; }
void ug_ar_release(ug_ar *ar, size_t mark)
{
    if (mark <= ar->used) ar->used = mark;
}
void ug_ar_counts(const ug_ar *ar, unsigned long *emitted, unsigned long *unsure)
{
    *emitted = ar->emitted;
    *unsure = ar->unsure;
}

static mpfr_ptr pool_get(ug_ar *ar)
{
    if (ar->used == ar->nblocks * POOL_BLOCK) {
        mpfr_t **nb = realloc(ar->blocks, (ar->nblocks + 1) * sizeof *nb);
        if (!nb) abort(); /* the oracle cannot continue without memory */
        ar->blocks = nb;
        ar->blocks[ar->nblocks] = malloc(POOL_BLOCK * sizeof(mpfr_t));
        if (!ar->blocks[ar->nblocks]) abort();
        ar->nblocks++;
    }
    size_t i = ar->used++;
    if (i == ar->inited) {
        mpfr_init2(ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK], ar->prec);
        ar->inited++;
    }
    return ar->blocks[i / POOL_BLOCK][i % POOL_BLOCK];
}

static void scratch_reserve(ug_ar *ar, size_t n)
{
    if (n <= ar->scratch_cap) return;
    size_t cap = ar->scratch_cap ? ar->scratch_cap : 256;
    while (cap < n) cap *= 2;
    mpfr_ptr *p = realloc(ar->ptrs, cap * sizeof *p);
    mpfr_t *q = p ? realloc(ar->prods, cap * sizeof *q) : NULL;
    if (!p || !q) abort();
    ar->ptrs = p;
    ar->prods = q;
    ar->scratch_cap = cap;
}

static void prods_init(ug_ar *ar, size_t n)
{
    scratch_reserve(ar, n);
    while (ar->prods_inited < n) mpfr_init2(ar->prods[ar->prods_inited++], 128);
}

/* Result constructors per mode. */
static ug_num num_exact(mpfr_ptr m)
{
    ug_num r = {mpfr_get_d(m, MPFR_RNDN), 0.0, m};
    return r;
}

/* e == 0 means v is exact (an error-free transformation proved it): kept exact, so that
 * exact values at a rounding tie of the output dtype need no MPFR fallback. */
static ug_num num_cert(double v, double e) { return ug_cv_num(ug_cv_make(v, e)); }

static ug_num num_plain(const ug_ar *ar, double v)
{
    ug_num r = {ar->mode == UG_AR_NAIVE ? ug_dtype_round_fast(ar->naive_dt, v) : v, 0.0, NULL};
    return r;
}

ug_num ug_c(ug_ar *ar, double x)
{
    if (IS_MP(ar)) {
        mpfr_ptr m = pool_get(ar);
        mpfr_set_d(m, x, MPFR_RNDN); /* exact: prec >= 64 > 53 */
        return num_exact(m);
    }
    if (ar->mode == UG_AR_CERT) return num_cert(x, 0.0);
    if (IS_DEV(ar)) return ugx_num_dev(x, 0.0); /* inputs are exact */
    return num_plain(ar, x);
}

double ug_v(ug_num x) { return x.v; }

typedef int (*mpfr_fn1)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
typedef int (*mpfr_fn2)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);

static ug_num exact1(ug_ar *ar, mpfr_fn1 f, ug_num a)
{
    mpfr_ptr m = pool_get(ar);
    f(m, a.m, MPFR_RNDN); /* rounds: to the working precision */
    return num_exact(m);
}

static ug_num exact2(ug_ar *ar, mpfr_fn2 f, ug_num a, ug_num b)
{
    mpfr_ptr m = pool_get(ar);
    f(m, a.m, b.m, MPFR_RNDN); /* rounds: to the working precision */
    return num_exact(m);
}

/* The plain arithmetics' primitives are arith_inline.h's bodies (one copy, which an op's
 * formula inlines with a constant mode); MPFR's are here. */
ug_num ug_add(ug_ar *ar, ug_num a, ug_num b) { return IS_MP(ar) ? exact2(ar, mpfr_add, a, b) : ugx_add(ARX(ar), a, b); }

ug_num ug_sub(ug_ar *ar, ug_num a, ug_num b) { return IS_MP(ar) ? exact2(ar, mpfr_sub, a, b) : ugx_sub(ARX(ar), a, b); }

ug_num ug_mul(ug_ar *ar, ug_num a, ug_num b) { return IS_MP(ar) ? exact2(ar, mpfr_mul, a, b) : ugx_mul(ARX(ar), a, b); }

ug_num ug_div(ug_ar *ar, ug_num a, ug_num b) { return IS_MP(ar) ? exact2(ar, mpfr_div, a, b) : ugx_div(ARX(ar), a, b); }

/* ug_div_row and ug_mul_diff_row's loop: diff: out[j] = (x[j] * (a[j] - b)), else out[j] =
 * x[j] / b; then dt's device rounding. */
UG_AI void row_op_x(ug_arx A, int diff, const ug_num *x, const ug_num *a, ug_num b, size_t n, ug_dtype dt, ug_num *out)
{
    for (size_t j = 0; j < n; j++)
        out[j] = ugx_dev_round(A, diff ? ugx_mul(A, x[j], ugx_sub(A, a[j], b)) : ugx_div(A, x[j], b), dt);
}

void ug_div_row(ug_ar *ar, const ug_num *x, ug_num d, size_t n, ug_dtype dt, ug_num *out)
{
    UG_ARX_SPECIALISE(ar, row_op_x, 0, x, NULL, d, n, dt, out);
}

void ug_mul_diff_row(ug_ar *ar, const ug_num *x, const ug_num *a, ug_num b, size_t n, ug_dtype dt, ug_num *out)
{
    UG_ARX_SPECIALISE(ar, row_op_x, 1, x, a, b, n, dt, out);
}

ug_num ug_neg(ug_ar *ar, ug_num a) { return IS_MP(ar) ? exact1(ar, mpfr_neg, a) : ugx_neg(ARX(ar), a); }

ug_num ug_max(ug_ar *ar, ug_num a, ug_num b)
{
    if (IS_MP(ar)) return mpfr_greaterequal_p(a.m, b.m) ? a : b;
    return ugx_max(ARX(ar), a, b);
}

ug_num ug_sqrt(ug_ar *ar, ug_num a) { return IS_MP(ar) ? exact1(ar, mpfr_sqrt, a) : ugx_sqrt(ARX(ar), a); }

ug_num ug_rsqrt(ug_ar *ar, ug_num a) { return IS_MP(ar) ? exact1(ar, mpfr_rec_sqrt, a) : ugx_rsqrt(ARX(ar), a); }

ug_num ug_recip(ug_ar *ar, ug_num a) { return ug_div(ar, ug_c(ar, 1.0), a); }

ug_num ug_exp(ug_ar *ar, ug_num a) { return IS_MP(ar) ? exact1(ar, mpfr_exp, a) : ugx_exp(ARX(ar), a); }

/* ug_softmax_row's loop, in every arithmetic (a constant mode where specialised). */
UG_AI void softmax_row_x(ug_arx A, ug_num *e, size_t n, ug_num sc, ug_dtype p_dt, ug_num *m, ug_num *total)
{
    for (size_t j = 0; j < n; j++) {
        e[j] = ugx_mul(A, e[j], sc);
        *m = j ? ugx_max(A, *m, e[j]) : e[0];
    }
    for (size_t j = 0; j < n; j++) e[j] = ugx_exp(A, ugx_sub(A, e[j], *m));
    *total = ug_sum(A.ar, e, n);
    for (size_t j = 0; A.mode == UG_AR_DEVICE && j < n; j++) e[j] = ugx_dev_round(A, e[j], p_dt);
}

void ug_softmax_row(ug_ar *ar, ug_num *e, size_t n, double scale, ug_dtype p_dt, ug_num *m, ug_num *total)
{
    UG_ARX_SPECIALISE(ar, softmax_row_x, e, n, ug_c(ar, scale), p_dt, m, total);
}

ug_num ug_log(ug_ar *ar, ug_num a)
{
    if (IS_MP(ar)) return exact1(ar, mpfr_log, a);
    double v = log(a.v);
    if (ar->mode == UG_AR_CERT || IS_DEV(ar)) {
        double lo = a.v - a.e;
        double e = lo > 0 ? a.e / lo : INFINITY;
        return IS_DEV(ar) ? ugx_num_dev(v, e + (UG_DEV_FN * fabs(v) + UG_DEV_ETA)) : num_cert(v, e + fabs(v) * U51);
    }
    return num_plain(ar, v);
}

static int mpfr_sigmoid(mpfr_ptr r, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    /* 1/(1+exp(-x)) with 16 guard bits; the self-check at twice the precision covers
     * the few ulps these roundings cost. */
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(r) + 16);
    mpfr_neg(t, x, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_ui_div(r, 1, t, rnd);
    mpfr_clear(t);
    return 0;
}

static int mpfr_silu(mpfr_ptr r, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(r) + 16);
    mpfr_sigmoid(t, x, MPFR_RNDN);
    mpfr_mul(r, t, x, rnd);
    mpfr_clear(t);
    return 0;
}

/* The device bound's allowance where a device forms sigmoid or silu as x/(1 + exp(-x)) in
 * fp32 and exp(-x) overflows (x below -ln(FLT_MAX) = -88.72): it then gives 0 where the
 * exact value v (below 3e-39 for sigmoid, 2.6e-37 for silu) is not. */
static double exp_overflow_zero(ug_num a, double v) { return a.v - a.e < -88.72283905206835 ? fabs(v) + a.e : 0.0; }

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static double silu_d(double x) { return x / (1.0 + exp(-x)); }

/* The elementwise functions past exp and log, one row each: MPFR's function, libm's (or
 * the formula in double), a Lipschitz constant of the function (CERT and DEVICE carry an
 * operand's bound e over as lip * e), CERT's charge for the double value (relative: 1 ulp
 * of libm charged twice, 2^-51; 2^-49 for the three operations of the sigmoid forms), and
 * whether a device's exp(-x) can overflow to a 0 result (exp_overflow_zero). */
typedef struct {
    mpfr_fn1 mp;
    double (*d)(double);
    double lip, cert_rel;
    int overflow_zero;
} special_fn;

enum { FN_TANH, FN_SIGMOID, FN_SILU, FN_SIN, FN_COS };
static const special_fn special[] = {
    [FN_TANH] = {mpfr_tanh, tanh, 1.0, U51, 0},                 /* |tanh'| <= 1 */
    [FN_SIGMOID] = {mpfr_sigmoid, sigmoid_d, 0.25, 0x1p-49, 1}, /* |s'| <= 1/4 */
    [FN_SILU] = {mpfr_silu, silu_d, 1.1, 0x1p-49, 1},           /* |silu'| < 1.1 */
    [FN_SIN] = {mpfr_sin, sin, 1.0, U51, 0},
    [FN_COS] = {mpfr_cos, cos, 1.0, U51, 0},
};

/* NAIVE's sigmoid: exp, the addition and the division each rounded to the naive dtype. */
static double naive_sigmoid(const ug_ar *ar, double x)
{
    double t = ug_dtype_round_fast(ar->naive_dt, exp(-x)); /* rounds: naive exp */
    t = ug_dtype_round_fast(ar->naive_dt, 1.0 + t);        /* rounds: naive add */
    return 1.0 / t;                                        /* rounded by num_plain */
}

static ug_num apply_special(ug_ar *ar, int which, ug_num a)
{
    const special_fn *f = &special[which];
    if (IS_MP(ar)) return exact1(ar, f->mp, a);
    if (ar->mode == UG_AR_NAIVE && which == FN_SILU) return ug_mul(ar, a, ug_sigmoid(ar, a));
    if (ar->mode == UG_AR_NAIVE && which == FN_SIGMOID) return num_plain(ar, naive_sigmoid(ar, a.v));
    double v = f->d(a.v);
    if (ar->mode == UG_AR_CERT) return num_cert(v, f->lip * a.e + fabs(v) * f->cert_rel);
    if (IS_DEV(ar))
        return ugx_num_dev(v, f->lip * a.e + (UG_DEV_FN * fabs(v) + UG_DEV_ETA) +
                                  (f->overflow_zero ? exp_overflow_zero(a, v) : 0.0));
    return num_plain(ar, v);
}

ug_num ug_tanh(ug_ar *ar, ug_num a) { return apply_special(ar, FN_TANH, a); }
ug_num ug_sigmoid(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SIGMOID, a); }
ug_num ug_silu(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SILU, a); }
ug_num ug_sin(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SIN, a); }
ug_num ug_cos(ug_ar *ar, ug_num a) { return apply_special(ar, FN_COS, a); }

ug_num ug_round(ug_ar *ar, ug_num x, ug_dtype dt)
{
    if (IS_MP(ar)) {
        mpfr_ptr m = pool_get(ar);
        mpfr_set_d(m, ug_mp_round(x.m, dt), MPFR_RNDN); /* exact: a dtype value is a double */
        return num_exact(m);
    }
    double r = ug_dtype_round_fast(dt, x.v); /* rounds: as the spec mandates */
    if (ar->mode == UG_AR_CERT && x.e != 0.0) {
        double lo = ug_dtype_round_fast(dt, nextafter(x.v - x.e, -INFINITY));
        double hi = ug_dtype_round_fast(dt, nextafter(x.v + x.e, INFINITY));
        ug_num u = {r, (lo == hi && isfinite(x.e)) ? 0.0 : INFINITY, NULL};
        return u;
    }
    if (IS_DEV(ar)) { /* the device rounds its own value: a code away at most across a boundary */
        double lo = ug_dtype_round_fast(dt, x.v - x.e), hi = ug_dtype_round_fast(dt, x.v + x.e);
        return ugx_num_dev(r, isfinite(x.e) ? fmax(hi - r, r - lo) : INFINITY);
    }
    ug_num u = {r, 0.0, NULL};
    return u;
}

ug_num ug_dev_round(ug_ar *ar, ug_num x, ug_dtype dt) { return ugx_dev_round(ARX(ar), x, dt); }

ug_num ug_dev_err(ug_ar *ar, ug_num x, double rel, double abs)
{
    if (IS_DEV(ar)) x.e += (rel != 0.0 ? rel * (fabs(x.v) + x.e) : 0.0) + abs;
    return x;
}

ug_num ug_dev_err_dot(ug_ar *ar, ug_num x, const double *a, const double *b, size_t n, double rel)
{
    if (!IS_DEV(ar)) return x;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += fabs(a[i] * b[i]);
    x.e += rel * s;
    return x;
}

int ug_ar_plain(const ug_ar *ar) { return !IS_MP(ar); }

/* UG_AR_MPFR_SEQ reductions: one rounded MPFR operation per term. */
static ug_num seq_sum(ug_ar *ar, const ug_num *xs, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    mpfr_ptr acc = pool_get(ar), t = pool_get(ar);
    mpfr_set_zero(acc, 1);
    for (size_t i = 0; i < n; i++) {
        if (xs)
            mpfr_set(t, xs[i].m, MPFR_RNDN);
        else
            mpfr_set_d(t, a[i * sa], MPFR_RNDN);
        if (b) mpfr_mul_d(t, t, b[i * sb], MPFR_RNDN); /* rounds: working precision */
        mpfr_add(acc, acc, t, MPFR_RNDN);              /* rounds: working precision */
    }
    return num_exact(acc);
}

/* CERT sum: cert_inline.h's ug_cv_sum over the numbers' values and bounds (why its bound is
 * its own TwoSum errors, not gamma_n * sum|x_i|: there). */
static ug_num cert_sum(const ug_num *xs, size_t n)
{
    _Static_assert(sizeof(ug_num) % sizeof(double) == 0, "a ug_num is a whole number of doubles");
    if (!n) return num_cert(0.0, 0.0); /* the empty sum (xs may be NULL) */
    return ug_cv_num(ug_cv_sum(&xs->v, &xs->e, sizeof *xs / sizeof(double), n));
}

ug_num ug_sum(ug_ar *ar, const ug_num *xs, size_t n)
{
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, xs, NULL, 0, NULL, 0, n);
    if (IS_MP(ar)) {
        scratch_reserve(ar, n ? n : 1);
        for (size_t i = 0; i < n; i++) ar->ptrs[i] = xs[i].m;
        mpfr_ptr m = pool_get(ar);
        mpfr_sum(m, ar->ptrs, n, MPFR_RNDN); /* exact sum, one rounding */
        return num_exact(m);
    }
    if (ar->mode == UG_AR_CERT) return cert_sum(xs, n);
    double s = 0.0, abs_sum = 0.0, e = 0.0;
    for (size_t i = 0; i < n; i++) {
        s += xs[i].v;
        if (ar->mode == UG_AR_NAIVE) s = ug_dtype_round_fast(ar->naive_dt, s); /* rounds: naive add */
        abs_sum += fabs(xs[i].v);
        e += xs[i].e;
    }
    if (IS_DEV(ar)) return ugx_num_dev(s, e + ugx_gamma32(n > 0 ? n - 1 : 0) * abs_sum + (double)n * UG_DEV_ETA);
    ug_num r = {s, 0.0, NULL};
    return r;
}

/* CERT dot product of numbers with exact doubles. The usual bound, except that while every
 * x is exact (e == 0) and every product and addition is (as in cert_dot) the result is
 * exact: a bf16 activation (moe_grouped_gemm's a, rounded as its spec mandates) times bf16
 * weights often sums exactly onto a rounding tie of the output dtype, which the bound alone
 * would send to MPFR. The sum itself is the same operations in the same order as without
 * the tracking. */
static ug_num cert_dot_nd(const ug_num *x, const double *b, size_t sb, size_t n)
{
    ug_cv_acc acc = {0.0, 0.0, 0.0, 1};
    for (size_t i = 0; i < n; i++) ug_cv_dot_nd_step((ug_cv){x[i].v, x[i].e}, b[i * sb], &acc);
    return ug_cv_num(ug_cv_dot_nd_end(&acc, n)); /* exact zero products and exact inputs: an exact zero */
}

/* UG_AR_EXACT's dot through MPFR: the exact products summed by mpfr_sum, one rounding into m.
 * ug_exact_dot (exact_dot.h) gives the same bits faster; this path is kept for the inputs it
 * leaves alone (an inf or a NaN), whose special values MPFR's IEEE rules give. */
static void dot_d_mpfr(ug_ar *ar, mpfr_ptr m, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    prods_init(ar, n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(ar->prods[i], a[i * sa], MPFR_RNDN);               /* exact */
        mpfr_mul_d(ar->prods[i], ar->prods[i], b[i * sb], MPFR_RNDN); /* exact: 106 <= 128 bits */
        ar->ptrs[i] = ar->prods[i];
    }
    mpfr_sum(m, ar->ptrs, n, MPFR_RNDN); /* exact sum, one rounding */
}

ug_num ug_dot_d(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    if (ar->mode == UG_AR_CERT) return ug_cv_num(ug_cv_dot_d(a, sa, b, sb, n, 0));
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, NULL, a, sa, b, sb, n);
    if (ar->mode == UG_AR_EXACT) {
        mpfr_ptr m = pool_get(ar);
        if (ug_exact_dot(m, a, sa, b, sb, n) != 0) dot_d_mpfr(ar, m, a, sa, b, sb, n); /* an inf or a NaN */
        return num_exact(m);
    }
    /* the plain arithmetics: arith_inline.h's loop, its mode a constant (no test per term) */
    if (ar->mode == UG_AR_NAIVE) return ugx_dot_d((ug_arx){ar, UG_AR_NAIVE, ar->naive_dt}, a, sa, b, sb, n);
    if (IS_DEV(ar)) return ugx_dot_d((ug_arx){ar, UG_AR_DEVICE, ar->naive_dt}, a, sa, b, sb, n);
    return ugx_dot_d((ug_arx){ar, UG_AR_F64, ar->naive_dt}, a, sa, b, sb, n);
}

ug_num ug_dot_d_tracked(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    return ar->mode == UG_AR_CERT ? ug_cv_num(ug_cv_dot_d(a, sa, b, sb, n, 1)) : ug_dot_d(ar, a, sa, b, sb, n);
}

ug_num ug_dot_nd(ug_ar *ar, const ug_num *x, const double *b, size_t sb, size_t n)
{
    if (ar->mode == UG_AR_MPFR_SEQ) return seq_sum(ar, x, NULL, 0, b, sb, n);
    if (IS_MP(ar)) {
        prods_init(ar, n ? n : 1);
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < n; i++) {
            mpfr_ptr t = pool_get(ar);
            mpfr_mul_d(t, x[i].m, b[i * sb], MPFR_RNDN); /* rounds: to the working precision */
            ar->ptrs[i] = t;
        }
        mpfr_ptr m = pool_get(ar);
        mpfr_sum(m, ar->ptrs, n, MPFR_RNDN);
        /* keep m, drop the products: move the result into the first released slot */
        ug_ar_release(ar, mark);
        mpfr_ptr r = pool_get(ar);
        if (r != m) mpfr_set(r, m, MPFR_RNDN); /* exact: same precision */
        return num_exact(r);
    }
    if (ar->mode == UG_AR_CERT) return cert_dot_nd(x, b, sb, n);
    double s = 0.0, abs_sum = 0.0, e = 0.0;
    for (size_t i = 0; i < n; i++) {
        double p = x[i].v * b[i * sb];
        if (ar->mode == UG_AR_NAIVE) {
            p = ug_dtype_round_fast(ar->naive_dt, p);     /* rounds: naive mul */
            s = ug_dtype_round_fast(ar->naive_dt, s + p); /* rounds: naive add */
        } else {
            s += p;
        }
        abs_sum += fabs(p);
        e += x[i].e * fabs(b[i * sb]);
    }
    if (IS_DEV(ar)) return ugx_num_dev(s, e + ugx_gamma32(n) * abs_sum + 2.0 * (double)n * UG_DEV_ETA);
    ug_num r = {s, 0.0, NULL};
    return r;
}

ug_num ug_l2norm_d(ug_ar *ar, const double *a, size_t sa, size_t n)
{
    return ug_sqrt(ar, ug_dot_d(ar, a, sa, a, sa, n));
}

double ug_mp_round(mpfr_srcptr x, ug_dtype dt)
{
    const ug_dtype_info *in = ug_dtype_get_info(dt);
    /* NaN, infinities and zeros follow dtype.h's rules exactly (int8: NaN -> 0; e8m0: NaN) */
    if (mpfr_nan_p(x)) return ug_dtype_round_fast(dt, NAN);
    if (mpfr_inf_p(x)) return ug_dtype_round_fast(dt, mpfr_sgn(x) > 0 ? INFINITY : -INFINITY);
    if (mpfr_zero_p(x)) return ug_dtype_round_fast(dt, mpfr_signbit(x) ? -0.0 : 0.0);
    if (!in->is_float) {
        if (dt == UG_DT_E8M0) return ug_dtype_round_fast(dt, mpfr_get_d(x, MPFR_RNDZ)); /* floor log2 kept */
        mpfr_t t;
        mpfr_init2(t, mpfr_get_prec(x) > 64 ? mpfr_get_prec(x) : 64);
        mpfr_rint(t, x, MPFR_RNDN);                                   /* rounds: RNE to an integer */
        double r = ug_dtype_round_fast(dt, mpfr_get_d(t, MPFR_RNDN)); /* saturates */
        mpfr_clear(t);
        return r;
    }
    long binade = mpfr_get_exp(x) - 1; /* floor(log2|x|) */
    if (binade < in->emin) binade = in->emin;
    if (binade > 1100) return ug_dtype_round_fast(dt, mpfr_sgn(x) > 0 ? INFINITY : -INFINITY);
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(x));
    mpfr_mul_2si(t, x, in->mant_bits - binade, MPFR_RNDN);                   /* exact: power of two */
    mpfr_rint(t, t, MPFR_RNDN);                                              /* rounds: RNE to the dtype's grid */
    double r = ldexp(mpfr_get_d(t, MPFR_RNDN), (int)binade - in->mant_bits); /* exact */
    mpfr_clear(t);
    if (fabs(r) > in->max_finite) r = dt == UG_DT_E4M3 ? copysign(in->max_finite, r) : copysign(INFINITY, r);
    return r;
}

int ug_cert_round(ug_dtype dt, double v, double e, double *g) { return ug_cv_round(dt, v, e, g); }

void ug_ar_emit(ug_ar *ar, int out, size_t k, ug_num x)
{
    if (out < 0 || out >= ar->nsinks) return;
    ug_ar_sink *s = &ar->sinks[out];
    ar->emitted++;
    switch (ar->mode) {
    case UG_AR_EXACT:
    case UG_AR_MPFR_SEQ:
        s->gstar[k] = mpfr_get_d(x.m, MPFR_RNDN);
        s->g[k] = ug_mp_round(x.m, s->dt);
        break;
    case UG_AR_CERT: {
        int sure = ug_cert_round(s->dt, x.v, x.e, &s->g[k]);
        s->gstar[k] = x.v;
        if (s->unsure) s->unsure[k] = (unsigned char)!sure;
        if (!sure) ar->unsure++;
        break;
    }
    case UG_AR_DEVICE:
        s->bound[k] = x.e; /* only the bound: the values are CERT's and EXACT's */
        break;
    default:
        s->gstar[k] = x.v;
        s->g[k] = ug_dtype_round_fast(s->dt, x.v);
        break;
    }
}

void ug_ar_emit_block(ug_ar *ar, int out, size_t k0, const double *v, const double *e, size_t n)
{
    if (out < 0 || out >= ar->nsinks) return;
    ug_ar_sink *s = &ar->sinks[out];
    switch (ar->mode) {
    case UG_AR_CERT: ar->unsure += ug_cv_put_block(s, k0, v, e, n); break;
    case UG_AR_DEVICE: memcpy(s->bound + k0, e, n * sizeof *e); break;
    case UG_AR_NAIVE:
    case UG_AR_F64:
        for (size_t i = 0; i < n; i++) {
            s->gstar[k0 + i] = v[i];
            s->g[k0 + i] = ug_dtype_round_fast(s->dt, v[i]); /* rounds: the output's dtype */
        }
        break;
    default: abort(); /* the MPFR arithmetics emit one number at a time */
    }
    ar->emitted += n;
}

/* The 64-column loop below (dot_d_cols64) is also compiled for AVX2 and picked at run time, as
 * lightning_indexer_quant's head dots are: lanes are columns, each column's own IEEE
 * operations in its own order (no contraction: -ffp-contract=off), so every instruction
 * set gives the same bits. No clones under the sanitizers, whose set-up an ifunc resolver
 * would precede. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define AR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef AR_CLONES
#define AR_CLONES
#endif

/* The sums of dot_d_cols_chunk for 64 columns, unrounded: a constant trip count and no
 * aliasing, so GCC's -O2 vectoriser takes it (lanes are columns: each column's own IEEE
 * operations in its own order, bit for bit those of the scalar loop). */
AR_CLONES static void dot_d_cols64(const double *restrict a, const double *restrict B, size_t ldb, size_t n,
                                   double *restrict s, double *restrict abs_sum)
{
    for (size_t i = 0; i < n; i++) {
        const double *restrict row = B + i * ldb;
        double av = a[i];
        for (size_t c = 0; c < 64; c++) {
            double p = av * row[c];
            s[c] += p;
            abs_sum[c] += fabs(p);
        }
    }
}

/* NAIVE fp32's sums for 64 columns: every product and partial sum rounded to fp32 by the
 * hardware conversion (ug_dtype_round_fast's fp32 case, bit for bit), vectorised as above. */
AR_CLONES static void dot_d_cols64_naive_f32(const double *restrict a, const double *restrict B, size_t ldb, size_t n,
                                             double *restrict s)
{
    for (size_t i = 0; i < n; i++) {
        const double *restrict row = B + i * ldb;
        double av = a[i];
        for (size_t c = 0; c < 64; c++) s[c] = (double)(float)(s[c] + (double)(float)(av * row[c])); /* rounds: naive */
    }
}

/* ug_dot_d_cols, plain arithmetics (CERT past 64 terms, F64, NAIVE, DEVICE), for columns
 * [c0, c0 + w) of B, w <= 64: ug_dot_d's loop with its two running sums kept per column,
 * rows outermost (one contiguous pass over B's rows); each column sees the operations of
 * ug_dot_d in its order, and the same bound. */
static void dot_d_cols_chunk(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t c0, size_t w,
                             ug_num *out)
{
    double s[64] = {0}, abs_sum[64] = {0};
    if (ar->mode == UG_AR_NAIVE && ar->naive_dt == UG_DT_FP32 && w == 64) {
        dot_d_cols64_naive_f32(a, B + c0, ldb, n, s);                   /* its number ignores abs_sum */
    } else if (ar->mode == UG_AR_NAIVE && ar->naive_dt == UG_DT_FP32) { /* fewer columns: 8 at a time, as below */
        for (size_t i = 0; i < n; i++) {
            const double *row = B + i * ldb + c0;
            size_t c = 0;
            for (; c + 8 <= w; c += 8)
                for (size_t k = c; k < c + 8; k++)
                    s[k] = (double)(float)(s[k] + (double)(float)(a[i] * row[k])); /* rounds: naive, as above */
            for (; c < w; c++) s[c] = (double)(float)(s[c] + (double)(float)(a[i] * row[c]));
        }
    } else if (ar->mode == UG_AR_NAIVE) {
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < w; c++) {
                double p = ug_dtype_round_fast(ar->naive_dt, a[i] * B[i * ldb + c0 + c]); /* rounds: naive mul */
                s[c] = ug_dtype_round_fast(ar->naive_dt, s[c] + p);                       /* rounds: naive add */
                abs_sum[c] += fabs(p);
            }
    } else if (w == 64) {
        dot_d_cols64(a, B + c0, ldb, n, s, abs_sum);
    } else { /* fewer than 64 columns: 8 at a time (a constant trip count the vectoriser takes), then the rest */
        for (size_t i = 0; i < n; i++) {
            const double *row = B + i * ldb + c0;
            size_t c = 0;
            for (; c + 8 <= w; c += 8)
                for (size_t k = c; k < c + 8; k++) {
                    double p = a[i] * row[k];
                    s[k] += p;
                    abs_sum[k] += fabs(p);
                }
            for (; c < w; c++) {
                double p = a[i] * row[c];
                s[c] += p;
                abs_sum[c] += fabs(p);
            }
        }
    }
    for (size_t c = 0; c < w; c++) {
        if (ar->mode == UG_AR_CERT) /* ug_cv_dot_d past 64 terms: no exactness tracking */
            out[c] = num_cert(s[c], ug_cv_dot_err(n, abs_sum[c]));
        else if (IS_DEV(ar))
            out[c] = ugx_num_dev(s[c], ugx_gamma32(n) * abs_sum[c] + 2.0 * (double)n * UG_DEV_ETA);
        else
            out[c] = (ug_num){s[c], 0.0, NULL};
    }
}

/* ug_dot_d_cols in UG_AR_EXACT: ug_dot_d's numbers per column, the pool's numbers taken in its
 * order, the columns through ug_exact_dot_cols (16 per pass over B's rows, no strided walks);
 * a column holding an inf or a NaN through the MPFR path, as ug_dot_d takes it. */
static void dot_d_cols_exact(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols,
                             ug_num *out)
{
    mpfr_ptr m[64];
    int rc[64];
    for (size_t c0 = 0; c0 < ncols; c0 += 64) {
        size_t w = ncols - c0 < 64 ? ncols - c0 : 64;
        for (size_t c = 0; c < w; c++) m[c] = pool_get(ar);
        ug_exact_dot_cols(m, a, B + c0, ldb, n, w, rc);
        for (size_t c = 0; c < w; c++) {
            if (rc[c] != 0) dot_d_mpfr(ar, m[c], a, 1, B + c0 + c, ldb, n);
            out[c0 + c] = num_exact(m[c]);
        }
    }
}

/* ug_dot_d_cols in CERT for short sums (n <= 64, exactness tracked): cert_block.c's
 * ug_cv_dot_d_cols, ug_cv_dot_d's value and bound per column in one vectorised pass over B's
 * rows instead of a strided scalar dot each; 0 (nothing written) without memory for its sums. */
static int cert_short_cols(const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out)
{
    ug_cv_cols_work w;
    int ok = ug_cv_cols_open(&w, ncols) == 0;
    if (ok) {
        ug_cv_dot_d_cols(a, 1, B, ldb, n, ncols, &w.acc, w.out);
        for (size_t c = 0; c < ncols; c++) out[c] = ug_cv_num(w.out[c]);
    }
    ug_cv_cols_close(&w);
    return ok;
}

void ug_dot_d_cols_each(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out)
{
    if (ar->mode == UG_AR_EXACT) {
        dot_d_cols_exact(ar, a, B, ldb, n, ncols, out);
        return;
    }
    if (ar->mode == UG_AR_CERT && n <= 64 && cert_short_cols(a, B, ldb, n, ncols, out)) return;
    if (IS_MP(ar) || (ar->mode == UG_AR_CERT && n <= 64)) { /* MPFR_SEQ per column; CERT tracks short sums' exactness */
        for (size_t c = 0; c < ncols; c++) out[c] = ug_dot_d(ar, a, 1, B + c, ldb, n);
        return;
    }
    for (size_t c0 = 0; c0 < ncols; c0 += 64)
        dot_d_cols_chunk(ar, a, B, ldb, n, c0, ncols - c0 < 64 ? ncols - c0 : 64, out + c0);
}
