/* arith_num.h — what a number is in each of the engine's arithmetics, and the device model's
 * charges: the types every file of oracles/mp/ shares, below all of them (arith.h, the
 * engine, the out-of-line functions, the certified pairs, the inline forms).
 *
 * Why a floor of its own: the inline forms (arith_inline.h) are called by arith.c and call
 * the engine's MPFR primitives (arith_engine.h) and out-of-line functions (arith_fn.h); with
 * the types in arith.h, every one of those files would lean on arith.h's file and that on
 * them, a circle. Here nothing is defined that runs. The arithmetics themselves are
 * described in arith.h. */
#ifndef UG_ARITH_NUM_H
#define UG_ARITH_NUM_H
#include <math.h>
#include <stddef.h>

#include <mpfr.h>

#include "core/dtype.h"

typedef enum { UG_AR_EXACT, UG_AR_CERT, UG_AR_NAIVE, UG_AR_F64, UG_AR_MPFR_SEQ, UG_AR_DEVICE } ug_ar_mode;

/* The device model of UG_AR_DEVICE: fp32 unit roundoff, and the accuracy assumed of a
 * device's elementary functions (exp, log, rsqrt, tanh, sigmoid, silu, sin, cos), in fp32
 * ulps of the result. */
#define UG_DEV_U 0x1p-24
#define UG_DEV_ETA 0x1p-150 /* the absolute error of an fp32 rounding into the subnormal range */
#define UG_DEV_FN_ULPS 4
/* The relative error DEVICE charges an elementary function: UG_DEV_FN_ULPS fp32 ulps. */
#define UG_DEV_FN (UG_DEV_FN_ULPS * 2.0 * UG_DEV_U)

typedef struct {
    double v;   /* value (CERT/NAIVE/F64); in EXACT, a double approximation */
    double e;   /* CERT: absolute error bound of v; DEVICE: the device's error bound; else 0 */
    mpfr_ptr m; /* EXACT: the value; else NULL */
} ug_num;

/* Where emitted values go: one entry per output tensor, arrays indexed by the
 * element's position in that output's selection. */
typedef struct {
    ug_dtype dt;           /* the output's dtype: emitted values are rounded to it */
    double *gstar;         /* exact value, nearest double (NAIVE, F64: NULL, none kept) */
    double *g;             /* exact value correctly rounded to dt */
    unsigned char *unsure; /* CERT only: 1 where the interval straddles a rounding boundary */
    double *bound;         /* DEVICE only, and then the only array written: each element's bound e (NULL: none) */
} ug_ar_sink;

/* The engine (arith_engine_private.h opens it to the engine's own files). */
typedef struct ug_ar ug_ar;

#define UG_AI static inline __attribute__((always_inline))

/* An arithmetic as a formula sees it: the engine (for MPFR and the output sinks), its mode
 * (a constant in the copies arith_inline.h's UG_ARX_SPECIALISE makes) and the dtype NAIVE
 * rounds to. */
typedef struct {
    ug_ar *ar;
    ug_ar_mode mode;
    ug_dtype ndt;
} ug_arx;

UG_AI int ugx_is_mp(ug_arx A) { return A.mode == UG_AR_EXACT || A.mode == UG_AR_MPFR_SEQ; }

/* A DEVICE number: a bound that is NaN (inf - inf) means nothing is known. */
UG_AI ug_num ugx_num_dev(double v, double e) { return (ug_num){v, isnan(e) ? INFINITY : e, NULL}; }
/* DEVICE's charge for rounding v to fp32. */
UG_AI double ugx_dev_rounding(double v) { return UG_DEV_U * fabs(v) + UG_DEV_ETA; }
/* NAIVE's and F64's number: v, rounded to the naive dtype in NAIVE. */
UG_AI ug_num ugx_plain(ug_arx A, double v)
{
    return (ug_num){A.mode == UG_AR_NAIVE ? ug_dtype_round_fast(A.ndt, v) : v, 0.0, NULL}; /* rounds: naive */
}

/* DEVICE's gamma_n for fp32: n u / (1 - n u), u = 2^-24. Built with -DUG_PROB_LAMBDA=L (an
 * experiment, never the default): min(gamma_n, L sqrt(n) u), Higham and Mary's
 * probabilistic bound, to measure what it would tighten (docs/STANDARDS.md "Tightness"); it
 * is not sound for a kernel whose roundings all go one way. */
UG_AI double ugx_gamma32(size_t n)
{
    double g = (double)n * UG_DEV_U / (1.0 - (double)n * UG_DEV_U);
#ifdef UG_PROB_LAMBDA
    g = fmin(g, UG_PROB_LAMBDA * sqrt((double)n) * UG_DEV_U);
#endif
    return g;
}

#endif
