/* arith_fn.h — the primitives the engine keeps out of line, one function for every
 * arithmetic (arith.h describes them): the elementary functions past exp (log, and tanh,
 * sigmoid, silu, sin, cos from one table of {MPFR function, libm function, Lipschitz
 * constant, charges}) and the rounding an op's specification mandates. No formula's loop
 * needs them inline; arith_inline.h's ugx_ forms call these. */
#ifndef UG_ARITH_FN_H
#define UG_ARITH_FN_H
#include <stddef.h>

#include "oracles/mp/arith_num.h"

ug_num ug_log(ug_ar *ar, ug_num a);
ug_num ug_tanh(ug_ar *ar, ug_num a);
ug_num ug_sigmoid(ug_ar *ar, ug_num a);
ug_num ug_silu(ug_ar *ar, ug_num a);
ug_num ug_sin(ug_ar *ar, ug_num a);
ug_num ug_cos(ug_ar *ar, ug_num a);
/* A rounding the operator's specification itself mandates (quantisation to int8/fp8, a
 * bf16 cache write): x correctly rounded to dt (RNE, saturating per dtype.h). In CERT, a
 * value whose interval straddles a rounding boundary comes back with an infinite bound,
 * so everything computed from it is settled by the EXACT fallback. */
ug_num ug_round(ug_ar *ar, ug_num x, ug_dtype dt);

#endif
