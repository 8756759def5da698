/* arith_inline.h — arith.h's primitives as inline functions of an arithmetic whose mode is
 * a compile-time constant: how an operator's formula, written once, runs at fast-path speed
 * in every arithmetic.
 *
 * An op writes its formula once, as `static inline UG_AI` functions of a `ug_arx` (the
 * engine and its mode) calling ugx_add, ugx_mul, ... . The engine calls that formula
 * through UG_ARX_SPECIALISE (or an op's block loop through UG_ARX_CLONES), which builds
 * the ug_arx with the mode a constant in each branch: the compiler then keeps only that
 * mode's arithmetic in each copy (CERT's value and bound, DEVICE's bound, NAIVE's rounded
 * value, F64's value) and inlines it into the op's loop, which vectorises where the
 * formula does; EXACT and MPFR_SEQ go through the engine's MPFR primitives
 * (arith_engine.c). So the op never asks which arithmetic it is in, and there is no second
 * copy of its formula to drift.
 *
 * Every function here is the arith.h primitive of the same name, number for number: arith.c's
 * public forms are these bodies (one copy), their MPFR branches the engine's primitives,
 * CERT's pairs cert_inline.h's (the bounds are documented there and in arith.c's header),
 * and the functions kept out of line arith_fn.c's. */
#ifndef UG_ARITH_INLINE_H
#define UG_ARITH_INLINE_H
#include <math.h>

#include "oracles/mp/arith_engine.h" /* the MPFR branches, emitting, the arena */
#include "oracles/mp/arith_fn.h"     /* the functions kept out of line */
#include "oracles/mp/arith_num.h"    /* ug_num, ug_arx, UG_AI, the device model's charges */
#include "oracles/mp/cert_inline.h"  /* CERT's {value, bound} pairs */

UG_AI ug_num ugx_c(ug_arx A, double x)
{
    if (ugx_is_mp(A)) return ug_mp_c(A.ar, x);
    if (A.mode == UG_AR_CERT || A.mode == UG_AR_DEVICE) return (ug_num){x, 0.0, NULL}; /* inputs are exact */
    return ugx_plain(A, x);
}

UG_AI ug_num ugx_add(ug_arx A, ug_num a, ug_num b)
{
    if (ugx_is_mp(A)) return ug_mp_op2(A.ar, mpfr_add, a, b);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_add(ug_cv_of(a), ug_cv_of(b)));
    double v = a.v + b.v;
    if (A.mode == UG_AR_DEVICE) return ugx_num_dev(v, a.e + b.e + ugx_dev_rounding(v));
    return ugx_plain(A, v);
}

UG_AI ug_num ugx_sub(ug_arx A, ug_num a, ug_num b)
{
    if (ugx_is_mp(A)) return ug_mp_op2(A.ar, mpfr_sub, a, b);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_sub(ug_cv_of(a), ug_cv_of(b)));
    double v = a.v - b.v;
    if (A.mode == UG_AR_DEVICE) return ugx_num_dev(v, a.e + b.e + ugx_dev_rounding(v));
    return ugx_plain(A, v);
}

UG_AI ug_num ugx_mul(ug_arx A, ug_num a, ug_num b)
{
    if (ugx_is_mp(A)) return ug_mp_op2(A.ar, mpfr_mul, a, b);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_mul(ug_cv_of(a), ug_cv_of(b)));
    double v = a.v * b.v;
    if (A.mode == UG_AR_DEVICE)
        return ugx_num_dev(v, fabs(a.v) * b.e + fabs(b.v) * a.e + a.e * b.e + ugx_dev_rounding(v));
    return ugx_plain(A, v);
}

UG_AI ug_num ugx_div(ug_arx A, ug_num a, ug_num b)
{
    if (ugx_is_mp(A)) return ug_mp_op2(A.ar, mpfr_div, a, b);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_div(ug_cv_of(a), ug_cv_of(b)));
    double v = a.v / b.v;
    if (A.mode == UG_AR_DEVICE) {
        double ab = fabs(b.v);
        double e = ab > b.e ? (fabs(a.v) * b.e + ab * a.e) / (ab * (ab - b.e)) : INFINITY;
        return ugx_num_dev(v, e + ugx_dev_rounding(v));
    }
    return ugx_plain(A, v);
}

UG_AI ug_num ugx_neg(ug_arx A, ug_num a)
{
    if (ugx_is_mp(A)) return ug_mp_op1(A.ar, mpfr_neg, a);
    a.v = -a.v; /* exact */
    return a;
}

/* max is exact on a device too: CERT's rule (the larger value, the larger bound). */
UG_AI ug_num ugx_max(ug_arx A, ug_num a, ug_num b)
{
    if (ugx_is_mp(A)) return mpfr_greaterequal_p(a.m, b.m) ? a : b;
    if (A.mode == UG_AR_CERT || A.mode == UG_AR_DEVICE) return ug_cv_num(ug_cv_max(ug_cv_of(a), ug_cv_of(b)));
    return a.v >= b.v ? a : b;
}

UG_AI ug_num ugx_sqrt(ug_arx A, ug_num a)
{
    if (ugx_is_mp(A)) return ug_mp_op1(A.ar, mpfr_sqrt, a);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_sqrt(ug_cv_of(a)));
    double v = sqrt(a.v);
    if (A.mode == UG_AR_DEVICE) {
        double e = a.v > a.e ? a.e / v : sqrt((a.v > 0.0 ? a.v : 0.0) + a.e);
        return ugx_num_dev(v, e + ugx_dev_rounding(v));
    }
    return ugx_plain(A, v);
}

UG_AI ug_num ugx_rsqrt(ug_arx A, ug_num a)
{
    if (ugx_is_mp(A)) return ug_mp_op1(A.ar, mpfr_rec_sqrt, a);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_rsqrt(ug_cv_of(a)));
    double s = sqrt(a.v), v = 1.0 / s;
    if (A.mode == UG_AR_DEVICE) {
        double lo = a.v - a.e;
        double e = lo > 0 ? 0.5 * a.e / (lo * sqrt(lo)) : INFINITY;
        return ugx_num_dev(v, e + (UG_DEV_FN * fabs(v) + UG_DEV_ETA));
    }
    if (A.mode == UG_AR_NAIVE) s = ug_dtype_round_fast(A.ndt, s); /* rounds: naive sqrt */
    return ugx_plain(A, 1.0 / s);
}

UG_AI ug_num ugx_exp(ug_arx A, ug_num a)
{
    if (ugx_is_mp(A)) return ug_mp_op1(A.ar, mpfr_exp, a);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_exp(ug_cv_of(a)));
    double v = exp(a.v);
    if (A.mode == UG_AR_DEVICE) return ugx_num_dev(v, ug_cv_exp_spread(v, a.e) + (UG_DEV_FN * fabs(v) + UG_DEV_ETA));
    return ugx_plain(A, v);
}

/* The sum of xs[0..n) left to right: exact in EXACT; in CERT cert_inline.h's ug_cv_sum over
 * the numbers' values and bounds (why its bound is its own TwoSum errors, not gamma_n *
 * sum|x_i|: there); DEVICE adds the operands' bounds and gamma_{n-1} of the magnitudes. */
UG_AI ug_num ugx_sum(ug_arx A, const ug_num *xs, size_t n)
{
    if (ugx_is_mp(A)) return ug_mp_sum(A.ar, xs, n);
    if (A.mode == UG_AR_CERT) {
        _Static_assert(sizeof(ug_num) % sizeof(double) == 0, "a ug_num is a whole number of doubles");
        if (!n) return ug_cv_num(ug_cv_make(0.0, 0.0)); /* the empty sum (xs may be NULL) */
        return ug_cv_num(ug_cv_sum(&xs->v, &xs->e, sizeof *xs / sizeof(double), n));
    }
    double s = 0.0, abs_sum = 0.0, e = 0.0;
    for (size_t i = 0; i < n; i++) {
        s += xs[i].v;
        if (A.mode == UG_AR_NAIVE) s = ug_dtype_round_fast(A.ndt, s); /* rounds: naive add */
        abs_sum += fabs(xs[i].v);
        e += xs[i].e;
    }
    if (A.mode == UG_AR_DEVICE)
        return ugx_num_dev(s, e + ugx_gamma32(n > 0 ? n - 1 : 0) * abs_sum + (double)n * UG_DEV_ETA);
    return (ug_num){s, 0.0, NULL};
}

/* ug_dev_round: half an ulp of dt on DEVICE's bound, x unchanged elsewhere. */
UG_AI ug_num ugx_dev_round(ug_arx A, ug_num x, ug_dtype dt)
{
    if (A.mode == UG_AR_DEVICE) x.e += 0.5 * ug_dtype_ulp(dt, fabs(x.v) + x.e);
    return x;
}

/* The functions kept out of line (arith_fn.c: no loop here needs them inline). */
UG_AI ug_num ugx_log(ug_arx A, ug_num a) { return ug_log(A.ar, a); }
UG_AI ug_num ugx_tanh(ug_arx A, ug_num a) { return ug_tanh(A.ar, a); }
UG_AI ug_num ugx_sigmoid(ug_arx A, ug_num a) { return ug_sigmoid(A.ar, a); }
UG_AI ug_num ugx_silu(ug_arx A, ug_num a) { return ug_silu(A.ar, a); }
UG_AI ug_num ugx_sin(ug_arx A, ug_num a) { return ug_sin(A.ar, a); }
UG_AI ug_num ugx_cos(ug_arx A, ug_num a) { return ug_cos(A.ar, a); }
UG_AI ug_num ugx_round(ug_arx A, ug_num x, ug_dtype dt) { return ug_round(A.ar, x, dt); }

/* Element k of output out's selection (ug_ar_emit), and the engine's number arena: a
 * formula that emits element by element releases what each element made (a no-op but in
 * the MPFR arithmetics, whose numbers live in the arena). */
UG_AI void ugx_emit(ug_arx A, int out, size_t k, ug_num x) { ug_ar_emit(A.ar, out, k, x); }
UG_AI size_t ugx_mark(ug_arx A) { return ugx_is_mp(A) ? ug_ar_mark(A.ar) : 0; }
UG_AI void ugx_release(ug_arx A, size_t mark)
{
    if (ugx_is_mp(A)) ug_ar_release(A.ar, mark);
}

/* fn(A, ...) with A's mode a constant in each branch: one copy of fn (a `static inline
 * UG_AI` function of a ug_arx) per arithmetic. The engine's business, not the op's: the op
 * hands over its formula and its arguments. */
#define UG_ARX_SPECIALISE(ar, fn, ...)                                                                                 \
    do {                                                                                                               \
        ug_arx ugx_x_ = ugx_of(ar);                                                                                    \
        ug_ar *ugx_ar_ = ugx_x_.ar;                                                                                    \
        ug_dtype ugx_nd_ = ugx_x_.ndt;                                                                                 \
        switch (ugx_x_.mode) {                                                                                         \
        case UG_AR_CERT: fn((ug_arx){ugx_ar_, UG_AR_CERT, ugx_nd_}, __VA_ARGS__); break;                               \
        case UG_AR_DEVICE: fn((ug_arx){ugx_ar_, UG_AR_DEVICE, ugx_nd_}, __VA_ARGS__); break;                           \
        case UG_AR_NAIVE: fn((ug_arx){ugx_ar_, UG_AR_NAIVE, ugx_nd_}, __VA_ARGS__); break;                             \
        case UG_AR_F64: fn((ug_arx){ugx_ar_, UG_AR_F64, ugx_nd_}, __VA_ARGS__); break;                                 \
        case UG_AR_EXACT: fn((ug_arx){ugx_ar_, UG_AR_EXACT, ugx_nd_}, __VA_ARGS__); break;                             \
        case UG_AR_MPFR_SEQ: fn((ug_arx){ugx_ar_, UG_AR_MPFR_SEQ, ugx_nd_}, __VA_ARGS__); break;                       \
        }                                                                                                              \
    } while (0)

/* An op's block loop (a UG_AI function `fn(ug_arx A, PARAMS)` whose lanes are elements)
 * compiled once per plain arithmetic, each copy also for AVX-512 and AVX2 and picked at
 * load time (no contraction, -ffp-contract=off: every instruction set gives the same
 * bits), and `int fn_plain(ug_ar *ar, PARAMS)` calling the copy of ar's mode: 0 when it
 * ran, -1 in the MPFR arithmetics (whose numbers live in the arena, one element at a
 * time). PARAMS and ARGS are the parameter list and the names to pass, in parentheses. fn
 * must be a name no other file gives a clone (prefix it with the op's): clang emits each
 * clone's ifunc resolver as a global symbol, static or not, and two files' `row_values`
 * fail the link (tests/test_one_formula.sh checks the names). No clones under the
 * sanitizers, whose set-up an ifunc resolver would precede, nor with UG_NO_TARGET_CLONES
 * (the UBSan build's, as kernels/sim/attention/attn_vec.c). */
#if defined(__has_feature) && !defined(UG_NO_TARGET_CLONES) /* clang's spelling of the sanitizer test */
#if __has_feature(address_sanitizer)
#define UG_NO_TARGET_CLONES
#endif
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__) && !defined(UG_NO_TARGET_CLONES)
#if __has_attribute(target_clones)
#define UG_ARX_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef UG_ARX_TARGET_CLONES
#define UG_ARX_TARGET_CLONES
#endif
#define UG_ARX_EXPAND(...) __VA_ARGS__
#define UG_ARX_CLONE_ONE(fn, M, PARAMS, ARGS)                                                                          \
    UG_ARX_TARGET_CLONES static void fn##_##M(ug_ar *ar, UG_ARX_EXPAND PARAMS)                                         \
    {                                                                                                                  \
        fn((ug_arx){ar, UG_AR_##M, ugx_of(ar).ndt}, UG_ARX_EXPAND ARGS);                                               \
    }
#define UG_ARX_CLONES(fn, PARAMS, ARGS)                                                                                \
    UG_ARX_CLONE_ONE(fn, CERT, PARAMS, ARGS)                                                                           \
    UG_ARX_CLONE_ONE(fn, DEVICE, PARAMS, ARGS)                                                                         \
    UG_ARX_CLONE_ONE(fn, NAIVE, PARAMS, ARGS)                                                                          \
    UG_ARX_CLONE_ONE(fn, F64, PARAMS, ARGS)                                                                            \
    static int fn##_plain(ug_ar *ar, UG_ARX_EXPAND PARAMS)                                                             \
    {                                                                                                                  \
        switch (ugx_of(ar).mode) {                                                                                     \
        case UG_AR_CERT: fn##_CERT(ar, UG_ARX_EXPAND ARGS); return 0;                                                  \
        case UG_AR_DEVICE: fn##_DEVICE(ar, UG_ARX_EXPAND ARGS); return 0;                                              \
        case UG_AR_NAIVE: fn##_NAIVE(ar, UG_ARX_EXPAND ARGS); return 0;                                                \
        case UG_AR_F64: fn##_F64(ar, UG_ARX_EXPAND ARGS); return 0;                                                    \
        default: return -1;                                                                                            \
        }                                                                                                              \
    }

/* ---- dot products of exact doubles, inline ---- */
/* ug_dot_d of exact doubles (arith.c) as inline steps, so that an op's row or column loop
 * keeps each lane's sum in ug_dot_d's operations and order, in every plain arithmetic. */

/* Whether CERT's ug_dot_d tracks the exactness of an n-term sum (ug_cv_dot_d: n <= 64). */
UG_AI int64_t ugx_dot_tracked(size_t n) { return n <= 64; }

/* The running sum s + p of ug_dot_d in a plain arithmetic (p = x*y of exact doubles):
 * NAIVE rounds the product and the sum, the others add in double. */
UG_AI double ugx_dot_sum(ug_arx A, double s, double p)
{
    if (A.mode != UG_AR_NAIVE) return s + p;
    return ug_dtype_round_fast(A.ndt, s + ug_dtype_round_fast(A.ndt, p)); /* rounds: naive mul, naive add */
}

/* One term x*y of ug_dot_d in a plain arithmetic: *s and *abs_sum (the sum of the terms'
 * magnitudes, which NAIVE's number does not use) updated, and in CERT *exact &= the term's
 * exactness (ug_cv_term_exact: the flag ug_cv_dot_step keeps, without its branch); exact
 * NULL: not tracked. */
UG_AI void ugx_dot_step(ug_arx A, double x, double y, double *s, double *abs_sum, int64_t *exact)
{
    double p = x * y, t = ugx_dot_sum(A, *s, p);
    if (A.mode == UG_AR_CERT && exact) *exact &= ug_cv_term_exact(x, y, *s, p, t);
    *s = t;
    *abs_sum += fabs(p);
}

/* ug_dot_d's number from its running sums over n terms (exact: CERT's tracked flag). */
UG_AI ug_num ugx_dot_end(ug_arx A, double s, double abs_sum, size_t n, int64_t exact)
{
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_make(s, exact ? 0.0 : ug_cv_dot_err(n, abs_sum)));
    if (A.mode == UG_AR_DEVICE) /* n mul, n-1 add */
        return ugx_num_dev(s, ugx_gamma32(n) * abs_sum + 2.0 * (double)n * UG_DEV_ETA);
    return (ug_num){s, 0.0, NULL};
}

/* ug_dot_d(A.ar, a, sa, b, sb, n), number for number. */
UG_AI ug_num ugx_dot_d(ug_arx A, const double *a, size_t sa, const double *b, size_t sb, size_t n)
{
    if (ugx_is_mp(A)) return ug_mp_dot_d(A.ar, a, sa, b, sb, n);
    if (A.mode == UG_AR_CERT) return ug_cv_num(ug_cv_dot_d(a, sa, b, sb, n, 0));
    double s = 0.0, abs_sum = 0.0;
    for (size_t i = 0; i < n; i++) ugx_dot_step(A, a[i * sa], b[i * sb], &s, &abs_sum, NULL);
    return ugx_dot_end(A, s, abs_sum, n, 0);
}

/* ug_dot_d of the two terms a0*b0 + a1*b1, number for number, without a branch in CERT (so
 * that a loop of it vectorises): a rotary pair. */
UG_AI ug_num ugx_dot2(ug_arx A, double a0, double a1, double b0, double b1)
{
    if (ugx_is_mp(A)) {
        const double a[2] = {a0, a1}, b[2] = {b0, b1};
        return ug_mp_dot_d(A.ar, a, 1, b, 1, 2);
    }
    double s = 0.0, abs_sum = 0.0;
    int64_t exact = 1;
    ugx_dot_step(A, a0, b0, &s, &abs_sum, &exact);
    ugx_dot_step(A, a1, b1, &s, &abs_sum, &exact);
    return ugx_dot_end(A, s, abs_sum, 2, exact);
}

/* ---- recurrences whose row error the certified arithmetic carries as a norm ---- */
/* A recurrence whose row error the certified arithmetic carries as one norm bound rather
 * than per component: a linear step s <- M s + b, through which componentwise intervals
 * wrap (they grow with the norm of |M|, not of M). The op bounds the norm, the arithmetic
 * decides whether to carry it: CERT does; the others carry their numbers as the primitives
 * make them (DEVICE's bound per component). ugx_rec_in: a component of the previous row as
 * the step reads it, in CERT its value alone (bound 0: the primitives then bound the step's
 * own roundings), x itself elsewhere. ugx_rec_set: in CERT every component of the new row
 * gets the op's norm bound e (the previous row's times the step's norm, plus its own
 * roundings) and e is returned; elsewhere the row stays as it is and 0 is returned. */
UG_AI ug_num ugx_rec_in(ug_arx A, ug_num x)
{
    if (A.mode == UG_AR_CERT) x.e = 0.0;
    return x;
}

UG_AI double ugx_rec_set(ug_arx A, ug_num *row, size_t n, double e)
{
    if (A.mode != UG_AR_CERT) return 0.0;
    for (size_t j = 0; j < n; j++) row[j].e = e;
    return e;
}

/* ---- sums of squares of several rows at once ---- */
/* out[k] = ug_dot_d(A.ar, r[k], 1, r[k], 1, n) for UGX_SQ_ROWS rows side by side: each row's
 * own left-to-right sum, the rows' chains of dependent additions interleaved (one row's is
 * latency-bound). Every term x*x is >= 0 or NaN, so the sum of the terms' magnitudes is the
 * sum itself, bit for bit (the same additions of the same terms): not summed twice. */
#define UGX_SQ_ROWS 4

UG_AI void ugx_sumsq_rows(ug_arx A, const double *const r[UGX_SQ_ROWS], size_t n, ug_num out[UGX_SQ_ROWS])
{
    if (ugx_is_mp(A)) {
        for (int k = 0; k < UGX_SQ_ROWS; k++) out[k] = ug_mp_dot_d(A.ar, r[k], 1, r[k], 1, n);
        return;
    }
    const double *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, dead = 0.0; /* four chains in registers; dead: unread */
    int64_t tracked = A.mode == UG_AR_CERT && ugx_dot_tracked(n);
    int64_t e0 = tracked, e1 = tracked, e2 = tracked, e3 = tracked;
    if (tracked) /* CERT, short rows: each term's exactness too (ug_cv_dot_d) */
        for (size_t i = 0; i < n; i++) {
            ugx_dot_step(A, r0[i], r0[i], &s0, &dead, &e0);
            ugx_dot_step(A, r1[i], r1[i], &s1, &dead, &e1);
            ugx_dot_step(A, r2[i], r2[i], &s2, &dead, &e2);
            ugx_dot_step(A, r3[i], r3[i], &s3, &dead, &e3);
        }
    else
        for (size_t i = 0; i < n; i++) { /* rounds: as ug_dot_d, each row left to right */
            s0 = ugx_dot_sum(A, s0, r0[i] * r0[i]);
            s1 = ugx_dot_sum(A, s1, r1[i] * r1[i]);
            s2 = ugx_dot_sum(A, s2, r2[i] * r2[i]);
            s3 = ugx_dot_sum(A, s3, r3[i] * r3[i]);
        }
    out[0] = ugx_dot_end(A, s0, s0, n, e0), out[1] = ugx_dot_end(A, s1, s1, n, e1);
    out[2] = ugx_dot_end(A, s2, s2, n, e2), out[3] = ugx_dot_end(A, s3, s3, n, e3);
}

#endif
