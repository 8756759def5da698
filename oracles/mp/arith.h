/* arith.h — one reference definition, several arithmetics.
 *
 * Every operator oracle is written once against these primitives. The context decides
 * what a number is and how each primitive rounds:
 *   UG_AR_EXACT  MPFR at the working precision (the arithmetic of record). Inputs are
 *                exact doubles; products of doubles are exact (128-bit scratch); sums use
 *                mpfr_sum (exact, then one rounding).
 *   UG_AR_CERT   double with a rigorous absolute error bound carried along (interval
 *                radius). ug_ar_emit() accepts the rounded output only when the whole
 *                interval rounds to one value of the output dtype; otherwise the element
 *                is marked unsure and the engine re-evaluates it in UG_AR_EXACT. This is
 *                the fast path: exact results at near-double cost. libm's exp/log/tanh/
 *                sin/cos are assumed within 1 ulp (glibc documents <= 1 ulp for these on
 *                x86-64); the bound allows 2 ulp.
 *   UG_AR_NAIVE  every primitive's result rounded to one dtype (the input dtype): the
 *                "benchmark device" of the benchmark standard. Sums and dot products
 *                round after every addition, left to right.
 *   UG_AR_DEVICE double with a bound e on what a correct device may compute instead of
 *                the exact value: every primitive rounded to fp32 (u = 2^-24), reductions
 *                in any order (gamma_n = n*u/(1-n*u) times the sum of magnitudes), exp, log,
 *                rsqrt, tanh, sigmoid, silu, sin, cos within UG_DEV_FN_ULPS fp32 ulps, and
 *                the intermediate roundings the op declares (ug_dev_round), all propagated
 *                to first order; each rounding costs u|v| + 2^-150 (fp32 underflow). The `certified` standard judges |a - g*| <= c*e + ulp(g)/2.
 *   UG_AR_F64    plain double, no bound: the float64 baseline of `ulpgym bench oracle`.
 *   UG_AR_MPFR_SEQ  EXACT with reductions done one MPFR multiply-add at a time: the
 *                "naive MPFR" baseline of `ulpgym bench oracle`.
 * Numbers live until ug_ar_release() of an earlier mark; EXACT numbers point into a
 * pool of mpfr_t that never moves. An op never asks which arithmetic it runs in: its hot
 * loops are written on arith_inline.h's inline forms, which the engine specialises per
 * arithmetic (tests/test_one_formula.sh). */
#ifndef UG_ARITH_H
#define UG_ARITH_H
#include <stddef.h>

#include <mpfr.h>

#include "core/dtype.h"
#include "oracles/mp/arith_engine.h" /* the engine: ug_ar_new, the sinks, emitting, marks */
#include "oracles/mp/arith_fn.h"     /* log, tanh, sigmoid, silu, sin, cos, ug_round */
#include "oracles/mp/arith_num.h"    /* ug_num, ug_ar_sink, the modes, the device model */

ug_num ug_c(ug_ar *ar, double x); /* an exact input value or constant */
double ug_v(ug_num x);            /* approximate value, for control flow only */
ug_num ug_add(ug_ar *ar, ug_num a, ug_num b);
ug_num ug_sub(ug_ar *ar, ug_num a, ug_num b);
ug_num ug_mul(ug_ar *ar, ug_num a, ug_num b);
ug_num ug_div(ug_ar *ar, ug_num a, ug_num b);
ug_num ug_neg(ug_ar *ar, ug_num a);
ug_num ug_max(ug_ar *ar, ug_num a, ug_num b);
ug_num ug_sqrt(ug_ar *ar, ug_num a);
ug_num ug_rsqrt(ug_ar *ar, ug_num a);
ug_num ug_recip(ug_ar *ar, ug_num a);
ug_num ug_exp(ug_ar *ar, ug_num a);
/* A rounding the op's semantics lets a device make mid-way (P cast to bf16 before P*V, a
 * bf16 intermediate write): x unchanged in every arithmetic but UG_AR_DEVICE, where the
 * bound grows by half an ulp of dt. The exact reference never rounds here. */
ug_num ug_dev_round(ug_ar *ar, ug_num x, ug_dtype dt);
/* Other errors the op's semantics let a device make, seen (like ug_dev_round) by the device
 * bound only, x unchanged in every other arithmetic. ug_dev_err: a relative error rel on x
 * (of its value and bound) plus an absolute one abs, e.g. a quantisation of x to fp8 and
 * back. ug_dev_err_dot, for x computed from the dot product of a and b (n terms): the
 * device rounds each operand first (a dequantised value to fp32), which moves the dot by
 * at most rel * sum |a_i b_i| (rel: the roundings per term, and any factor x carries). */
ug_num ug_dev_err(ug_ar *ar, ug_num x, double rel, double abs);
ug_num ug_dev_err_dot(ug_ar *ar, ug_num x, const double *a, const double *b, size_t n, double rel);
/* A softmax row's numerators from its n >= 1 dots (all finite): e[j] <- ug_dev_round(ug_exp(
 * ug_sub(ug_mul(e[j], ug_c(scale)), *m)), p_dt) with *m the ug_max of the scaled e[j] in
 * order and *total the ug_sum of the exponentials: those primitives' numbers bit for bit,
 * with the plain arithmetics' bodies inlined (an attention oracle's per-key work). */
void ug_softmax_row(ug_ar *ar, ug_num *e, size_t n, double scale, ug_dtype p_dt, ug_num *m, ug_num *total);
/* out[j] = ug_dev_round(ug_div(x[j], d), dt) and out[j] = ug_dev_round(ug_mul(x[j],
 * ug_sub(a[j], b)), dt) for j < n: those primitives' numbers bit for bit, inlined per mode
 * (the attention gradient's P and dS rows). out may be x. */
void ug_div_row(ug_ar *ar, const ug_num *x, ug_num d, size_t n, ug_dtype dt, ug_num *out);
void ug_mul_diff_row(ug_ar *ar, const ug_num *x, const ug_num *a, ug_num b, size_t n, ug_dtype dt, ug_num *out);
/* ug_ar_emit(ar, out, k0 + i, ug_c(ar, x[i])) for i < n: exact values handed over as they are
 * (a cache slot a kernel must leave as its input), the same numbers, in the plain
 * arithmetics a block at a time (ug_ar_emit_block). */
void ug_emit_values(ug_ar *ar, int out, size_t k0, const double *x, size_t n);
/* Reductions. a and b are exact doubles (input values). */
ug_num ug_sum(ug_ar *ar, const ug_num *xs, size_t n);
ug_num ug_dot_d(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n);
/* ug_dot_d, but in CERT the exactness of the sum is tracked at any length (ug_dot_d stops
 * tracking past 64 terms): the same value, and a zero bound when every product and addition
 * was exact. For a retry where a bound decided nothing (a mandated rounding left
 * ambiguous), not for every dot product: the tracking costs about as much as the sum. */
ug_num ug_dot_d_tracked(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n);
ug_num ug_dot_nd(ug_ar *ar, const ug_num *x, const double *b, size_t sb, size_t n);
/* out[c] = ug_dot_nd(ar, x, V + c, ldv, n) for the ncols columns c of V (row i at V +
 * i*ldv): bit for bit the same numbers in every arithmetic (each column's sum in its own
 * order), but one pass over V's rows instead of ncols strided ones. For the outputs of
 * one attention row, which share their weights x. */
void ug_dot_nd_cols(ug_ar *ar, const ug_num *x, const double *V, size_t ldv, size_t n, size_t ncols, ug_num *out);
/* out[r*ldo + c] = ug_dot_nd(ar, X + r*ldx, V + c, ldv, n[r]) for the m rows r < m (each
 * with its own term count n[r]) and columns c < ncols: ug_dot_nd_cols for several rows at
 * once, V read in chunks of rows that stay in cache across the m rows (arith_tile.c). */
void ug_dot_nd_cols_tile(ug_ar *ar, const ug_num *X, size_t ldx, const size_t *n, size_t m, const double *V, size_t ldv,
                         size_t ncols, ug_num *out, size_t ldo);
/* out[r*ldo + j] = ug_dot_d(ar, Q + r*ldq, 1, Kt + j, ldk, D) for rows r < m and columns
 * j < n of Kt (D rows of ldk): the scores of m query rows against n keys held transposed,
 * bit for bit (value and bound) in every arithmetic, as vector loops over the keys. */
void ug_dot_d_tile(ug_ar *ar, const double *Q, size_t ldq, size_t m, const double *Kt, size_t ldk, size_t D, size_t n,
                   ug_num *out, size_t ldo);
/* out[c] = ug_dot_d(ar, a, 1, B + c, ldb, n) for the ncols columns c of B (row i at B +
 * i*ldb): bit for bit the same numbers in every arithmetic, one pass over B's rows instead
 * of ncols strided ones (a token's row of x times a weight's columns). */
void ug_dot_d_cols(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out);
/* out[r*ldo + c] = ug_dot_d_cols(ar, X + r*ldx, B, ldb, n, ncols)[c] for the m rows r < m:
 * the same numbers, bit for bit, with B read in chunks of terms that stay in cache across
 * the m rows (many tokens' x times one weight; arith_tile.c). */
void ug_dot_d_rows(ug_ar *ar, const double *X, size_t ldx, size_t m, const double *B, size_t ldb, size_t n,
                   size_t ncols, ug_num *out, size_t ldo);
/* sqrt(sum x_i^2) of exact doubles. */
ug_num ug_l2norm_d(ug_ar *ar, const double *a, size_t sa, size_t n);

#endif
