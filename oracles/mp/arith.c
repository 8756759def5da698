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
 * subnormal range) to the propagated operand bounds.
 *
 * Here: the primitives' public forms (arith_inline.h's bodies), the rows and the dot
 * products. The engine's state and MPFR primitives are arith_engine.c's; log, the special
 * functions and ug_round arith_fn.c's. */
#include "oracles/mp/arith.h"
#include "oracles/mp/arith_inline.h"
#include "oracles/mp/arith_engine_private.h"
#include "oracles/mp/cert_inline.h"

#include <math.h>

/* The primitives are arith_inline.h's bodies (one copy, which an op's formula inlines with a
 * constant mode); their MPFR branches are the engine's (arith_engine.c). */
ug_num ug_c(ug_ar *ar, double x) { return ugx_c(UG_AR_ARX(ar), x); }
double ug_v(ug_num x) { return x.v; }

ug_num ug_add(ug_ar *ar, ug_num a, ug_num b) { return ugx_add(UG_AR_ARX(ar), a, b); }

ug_num ug_sub(ug_ar *ar, ug_num a, ug_num b) { return ugx_sub(UG_AR_ARX(ar), a, b); }

ug_num ug_mul(ug_ar *ar, ug_num a, ug_num b) { return ugx_mul(UG_AR_ARX(ar), a, b); }

ug_num ug_div(ug_ar *ar, ug_num a, ug_num b) { return ugx_div(UG_AR_ARX(ar), a, b); }

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

ug_num ug_neg(ug_ar *ar, ug_num a) { return ugx_neg(UG_AR_ARX(ar), a); }

ug_num ug_max(ug_ar *ar, ug_num a, ug_num b) { return ugx_max(UG_AR_ARX(ar), a, b); }

ug_num ug_sqrt(ug_ar *ar, ug_num a) { return ugx_sqrt(UG_AR_ARX(ar), a); }

ug_num ug_rsqrt(ug_ar *ar, ug_num a) { return ugx_rsqrt(UG_AR_ARX(ar), a); }

ug_num ug_recip(ug_ar *ar, ug_num a) { return ug_div(ar, ug_c(ar, 1.0), a); }

ug_num ug_exp(ug_ar *ar, ug_num a) { return ugx_exp(UG_AR_ARX(ar), a); }

ug_num ug_sum(ug_ar *ar, const ug_num *xs, size_t n) { return ugx_sum(UG_AR_ARX(ar), xs, n); }

/* ug_softmax_row's loop, in every arithmetic (a constant mode where specialised). */
UG_AI void softmax_row_x(ug_arx A, ug_num *e, size_t n, ug_num sc, ug_dtype p_dt, ug_num *m, ug_num *total)
{
    for (size_t j = 0; j < n; j++) {
        e[j] = ugx_mul(A, e[j], sc);
        *m = j ? ugx_max(A, *m, e[j]) : e[0];
    }
    for (size_t j = 0; j < n; j++) e[j] = ugx_exp(A, ugx_sub(A, e[j], *m));
    *total = ugx_sum(A, e, n);
    for (size_t j = 0; A.mode == UG_AR_DEVICE && j < n; j++) e[j] = ugx_dev_round(A, e[j], p_dt);
}

void ug_softmax_row(ug_ar *ar, ug_num *e, size_t n, double scale, ug_dtype p_dt, ug_num *m, ug_num *total)
{
    UG_ARX_SPECIALISE(ar, softmax_row_x, e, n, ug_c(ar, scale), p_dt, m, total);
}

/* ug_emit_values in a plain arithmetic: ugx_c's numbers, EMIT_VALUES at a time. */
#define EMIT_VALUES 256
UG_AI void emit_values_x(ug_arx A, int out, size_t k0, const double *x, size_t n)
{
    double v[EMIT_VALUES], e[EMIT_VALUES];
    for (size_t i0 = 0; i0 < n; i0 += EMIT_VALUES) {
        size_t w = n - i0 < EMIT_VALUES ? n - i0 : EMIT_VALUES;
        for (size_t i = 0; i < w; i++) {
            ug_num c = ugx_c(A, x[i0 + i]);
            v[i] = c.v, e[i] = c.e;
        }
        ug_ar_emit_block(A.ar, out, k0 + i0, v, e, w);
    }
}

void ug_emit_values(ug_ar *ar, int out, size_t k0, const double *x, size_t n)
{
    if (UG_AR_IS_MP(ar)) { /* the MPFR arithmetics' numbers live in the pool: one at a time */
        for (size_t i = 0; i < n; i++) ug_ar_emit(ar, out, k0 + i, ug_c(ar, x[i]));
        return;
    }
    UG_ARX_SPECIALISE(ar, emit_values_x, out, k0, x, n);
}

ug_num ug_dev_round(ug_ar *ar, ug_num x, ug_dtype dt) { return ugx_dev_round(UG_AR_ARX(ar), x, dt); }

ug_num ug_dev_err(ug_ar *ar, ug_num x, double rel, double abs)
{
    if (UG_AR_IS_DEV(ar)) x.e += (rel != 0.0 ? rel * (fabs(x.v) + x.e) : 0.0) + abs;
    return x;
}

ug_num ug_dev_err_dot(ug_ar *ar, ug_num x, const double *a, const double *b, size_t n, double rel)
{
    if (!UG_AR_IS_DEV(ar)) return x;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += fabs(a[i] * b[i]);
    x.e += rel * s;
    return x;
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

ug_num ug_dot_d(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    if (ar->mode == UG_AR_CERT) return ug_cv_num(ug_cv_dot_d(a, sa, b, sb, n, 0));
    if (UG_AR_IS_MP(ar)) return ug_mp_dot_d(ar, a, sa, b, sb, n);
    /* the plain arithmetics: arith_inline.h's loop, its mode a constant (no test per term) */
    if (ar->mode == UG_AR_NAIVE) return ugx_dot_d((ug_arx){ar, UG_AR_NAIVE, ar->naive_dt}, a, sa, b, sb, n);
    if (UG_AR_IS_DEV(ar)) return ugx_dot_d((ug_arx){ar, UG_AR_DEVICE, ar->naive_dt}, a, sa, b, sb, n);
    return ugx_dot_d((ug_arx){ar, UG_AR_F64, ar->naive_dt}, a, sa, b, sb, n);
}

ug_num ug_dot_d_tracked(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    return ar->mode == UG_AR_CERT ? ug_cv_num(ug_cv_dot_d(a, sa, b, sb, n, 1)) : ug_dot_d(ar, a, sa, b, sb, n);
}

ug_num ug_dot_nd(ug_ar *ar, const ug_num *x, const double *b, size_t sb, size_t n)
{
    if (UG_AR_IS_MP(ar)) return ug_mp_dot_nd(ar, x, b, sb, n);
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
    if (UG_AR_IS_DEV(ar)) return ugx_num_dev(s, e + ugx_gamma32(n) * abs_sum + 2.0 * (double)n * UG_DEV_ETA);
    ug_num r = {s, 0.0, NULL};
    return r;
}

ug_num ug_l2norm_d(ug_ar *ar, const double *a, size_t sa, size_t n)
{
    return ug_sqrt(ar, ug_dot_d(ar, a, sa, a, sa, n));
}
