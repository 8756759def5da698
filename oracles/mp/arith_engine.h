/* arith_engine.h — the engine under every arithmetic: its state (the MPFR number pool, the
 * output sinks, the counters), emitting an element, and the MPFR arithmetics' primitives
 * (EXACT and MPFR_SEQ; arith.h says what each arithmetic is).
 *
 * The first part is arith.h's (an oracle's and the oracle driver's view); the ug_mp_ part
 * is the engine's own, called by arith.c and by the inline forms' MPFR branches
 * (arith_inline.h), never by an op (tests/test_one_formula.sh). Nothing here calls up into
 * arith.c or the inline forms. */
#ifndef UG_ARITH_ENGINE_H
#define UG_ARITH_ENGINE_H
#include <stddef.h>

#include <mpfr.h>

#include "oracles/mp/arith_num.h"

ug_ar *ug_ar_new(ug_ar_mode mode, mpfr_prec_t prec, ug_dtype naive_dt);
void ug_ar_free(ug_ar *ar);
mpfr_prec_t ug_ar_get_prec(const ug_ar *ar);
void ug_ar_set_sink(ug_ar *ar, ug_ar_sink *sinks, int n);
/* Numbers live until ug_ar_release() of an earlier mark (a no-op but in the MPFR
 * arithmetics, whose numbers live in a pool that never moves). */
size_t ug_ar_mark(const ug_ar *ar);
void ug_ar_release(ug_ar *ar, size_t mark);

/* Emits value x for element k of output out's selection. */
void ug_ar_emit(ug_ar *ar, int out, size_t k, ug_num x);
/* ug_ar_emit of elements k0 .. k0+n-1 of output out's selection, element i with value v[i]
 * and bound e[i] (a plain arithmetic's number {v[i], e[i]}): an op's block loop hands
 * over a block at a time. Not for the MPFR arithmetics (their numbers are not doubles). */
void ug_ar_emit_block(ug_ar *ar, int out, size_t k0, const double *v, const double *e, size_t n);

/* 1 in the arithmetics whose numbers are doubles (CERT, DEVICE, NAIVE, F64), 0 in the MPFR
 * ones, whose numbers live in the arena and are released row by row. Where an op may hold
 * many numbers at once (a tile of scores, a block of tokens' x.W) or use the block forms
 * (ug_dot_d_rows, ug_ar_emit_block); the values are the same either way. */
int ug_ar_plain(const ug_ar *ar);

/* Correctly rounded (RNE) value of an MPFR number in dtype dt, with the format's
 * exponent range, subnormals and overflow rule (dtype.h). */
double ug_mp_round(mpfr_srcptr x, ug_dtype dt);

/* The CERT rule: *g = v rounded to dt; returns 1 when every value within e of v rounds to
 * *g (an exact e = 0 needs only v not NaN), 0 when the exact value's rounding is not
 * settled. Zeros of either sign count as one value. */
int ug_cert_round(ug_dtype dt, double v, double e, double *g);

/* Counters since creation: elements emitted, and (CERT) elements left unsure. */
void ug_ar_counts(const ug_ar *ar, unsigned long *emitted, unsigned long *unsure);

/* ar as a ug_arx (its mode a run-time value): what arith_inline.h's specialisers switch
 * on. The engine's, not an op's: an op that read the mode would be writing a second
 * formula. */
ug_arx ugx_of(ug_ar *ar);

/* ---- the MPFR arithmetics' primitives (ar in EXACT or MPFR_SEQ), the engine's own ---- */
typedef int (*ug_mp_fn1)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
typedef int (*ug_mp_fn2)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);

/* An exact input value or constant: x in a new pool number. */
ug_num ug_mp_c(ug_ar *ar, double x);
/* f(a) and f(a, b) into a new pool number, rounded to the working precision. */
ug_num ug_mp_op1(ug_ar *ar, ug_mp_fn1 f, ug_num a);
ug_num ug_mp_op2(ug_ar *ar, ug_mp_fn2 f, ug_num a, ug_num b);
/* ug_round in MPFR: x correctly rounded to dt (exactly representable in the pool). */
ug_num ug_mp_round_num(ug_ar *ar, ug_num x, ug_dtype dt);
/* ug_sum, ug_dot_d and ug_dot_nd: in EXACT the exact sum rounded once, in MPFR_SEQ one
 * rounded MPFR multiply-add per term. */
ug_num ug_mp_sum(ug_ar *ar, const ug_num *xs, size_t n);
ug_num ug_mp_dot_d(ug_ar *ar, const double *a, size_t sa, const double *b, size_t sb, size_t n);
ug_num ug_mp_dot_nd(ug_ar *ar, const ug_num *x, const double *b, size_t sb, size_t n);
/* out[c] = ug_mp_dot_d(ar, a, 1, B + c, ldb, n) in EXACT for the ncols columns of B, the
 * pool's numbers taken in column order, 16 columns per pass over B's rows. */
void ug_mp_dot_d_cols(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out);

#endif
