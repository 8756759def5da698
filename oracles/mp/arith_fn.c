/* arith_fn.c — the primitives kept out of line in every arithmetic (arith_fn.h): log, the
 * special functions from one table and the mandated rounding. Their
 * MPFR branches are the engine's (arith_engine.h); the bounds are those described in
 * arith.c's header. */
#include "oracles/mp/arith_fn.h"

#include <math.h>

#include "oracles/mp/arith_engine.h"
#include "oracles/mp/arith_engine_private.h"
#include "oracles/mp/cert_inline.h"

#define U51 UG_CV_U51

/* e == 0 means v is exact (an error-free transformation proved it): kept exact, so that
 * exact values at a rounding tie of the output dtype need no MPFR fallback. */
static ug_num num_cert(double v, double e) { return ug_cv_num(ug_cv_make(v, e)); }

ug_num ug_log(ug_ar *ar, ug_num a)
{
    if (UG_AR_IS_MP(ar)) return ug_mp_op1(ar, mpfr_log, a);
    double v = log(a.v);
    if (ar->mode == UG_AR_CERT || UG_AR_IS_DEV(ar)) {
        double lo = a.v - a.e;
        double e = lo > 0 ? a.e / lo : INFINITY;
        return UG_AR_IS_DEV(ar) ? ugx_num_dev(v, e + (UG_DEV_FN * fabs(v) + UG_DEV_ETA))
                                : num_cert(v, e + fabs(v) * U51);
    }
    return ugx_plain(UG_AR_ARX(ar), v);
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
    ug_mp_fn1 mp;
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
    return 1.0 / t;                                        /* rounded by ugx_plain */
}

static ug_num apply_special(ug_ar *ar, int which, ug_num a)
{
    const special_fn *f = &special[which];
    if (UG_AR_IS_MP(ar)) return ug_mp_op1(ar, f->mp, a);
    if (ar->mode == UG_AR_NAIVE && which == FN_SILU) /* x * sigmoid(x), the product rounded */
        return ugx_plain(UG_AR_ARX(ar), a.v * ug_sigmoid(ar, a).v);
    if (ar->mode == UG_AR_NAIVE && which == FN_SIGMOID) return ugx_plain(UG_AR_ARX(ar), naive_sigmoid(ar, a.v));
    double v = f->d(a.v);
    if (ar->mode == UG_AR_CERT) return num_cert(v, f->lip * a.e + fabs(v) * f->cert_rel);
    if (UG_AR_IS_DEV(ar))
        return ugx_num_dev(v, f->lip * a.e + (UG_DEV_FN * fabs(v) + UG_DEV_ETA) +
                                  (f->overflow_zero ? exp_overflow_zero(a, v) : 0.0));
    return ugx_plain(UG_AR_ARX(ar), v);
}

ug_num ug_tanh(ug_ar *ar, ug_num a) { return apply_special(ar, FN_TANH, a); }
ug_num ug_sigmoid(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SIGMOID, a); }
ug_num ug_silu(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SILU, a); }
ug_num ug_sin(ug_ar *ar, ug_num a) { return apply_special(ar, FN_SIN, a); }
ug_num ug_cos(ug_ar *ar, ug_num a) { return apply_special(ar, FN_COS, a); }

ug_num ug_round(ug_ar *ar, ug_num x, ug_dtype dt)
{
    if (UG_AR_IS_MP(ar)) return ug_mp_round_num(ar, x, dt);
    double r = ug_dtype_round_fast(dt, x.v); /* rounds: as the spec mandates */
    if (ar->mode == UG_AR_CERT && x.e != 0.0) {
        double lo = ug_dtype_round_fast(dt, nextafter(x.v - x.e, -INFINITY));
        double hi = ug_dtype_round_fast(dt, nextafter(x.v + x.e, INFINITY));
        ug_num u = {r, (lo == hi && isfinite(x.e)) ? 0.0 : INFINITY, NULL};
        return u;
    }
    if (UG_AR_IS_DEV(ar)) { /* the device rounds its own value: a code away at most across a boundary */
        double lo = ug_dtype_round_fast(dt, x.v - x.e), hi = ug_dtype_round_fast(dt, x.v + x.e);
        return ugx_num_dev(r, isfinite(x.e) ? fmax(hi - r, r - lo) : INFINITY);
    }
    ug_num u = {r, 0.0, NULL};
    return u;
}
