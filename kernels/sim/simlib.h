/* simlib.h — helpers shared by the sim kernels: reading params, moving tensors between
 * their storage dtype and fp32 working arrays the way a device's load/store units do,
 * and the fp32 reductions device kernels use.
 *
 * Everything here rounds like hardware: loads are exact (every stored format widens
 * exactly to fp32), stores round fp32 to the tensor's dtype once (RNE). Kernels use
 * kernel_abi.h views and read params through the op's declaration (core/opdecl.h), the
 * one place that knows every param's type, range and default. */
#ifndef UG_SIMLIB_H
#define UG_SIMLIB_H
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ulpgym/kernel_abi.h"

#include "core/opdecl.h"
#include "op_params.h" /* the variant codes UG_VAR_* a kernel tests its bug argument against */

/* Whether variant (a ug_variant_code) is a legal one ("legal_*"): another correct kernel.
 * cmake/op_params.cmake numbers the legal variants right after UG_VAR_SIM. */
static inline int ug_sim_legal(int variant) { return variant > UG_VAR_SIM && variant < UG_VAR_LEGAL_END; }

/* Parses call->params_json against the op's declaration: the same ug_params the oracle
 * gets (defaults filled, fp32 attributes rounded). -2 with a message; free the result
 * with ug_params_free(). */
int ug_sim_params_parse(const ulpgym_call *call, ug_params *p, char *err, size_t errlen);

/* Binds the call's tensors named in names (space-separated) to *slots[0], *slots[1], ...:
 * each is looked up among the inputs or outputs by its declared role and must have its
 * declared rank (the op's declaration, core/opdecl.h). A name ending in '?' is a tensor
 * whose declaration has a `when`, or an optional output: its slot gets NULL where the call
 * has none. 0, or -2
 * with a message naming the tensor. */
int ug_sim_bind(const ulpgym_call *call, const char *names, const ulpgym_tensor **slots[], char *err, size_t errlen);

/* Finds the named tensor or sets err; checks ndim when ndim >= 0. */
const ulpgym_tensor *ug_sim_in(const ulpgym_call *call, const char *name, int ndim, char *err, size_t errlen);
const ulpgym_tensor *ug_sim_out(const ulpgym_call *call, const char *name, int ndim, char *err, size_t errlen);

/* Loads n elements from offset off of t into fp32 (exact widening). */
void ug_sim_load(const ulpgym_tensor *t, size_t off, size_t n, float *dst);
/* Stores n fp32 values at offset off of t, rounding to t's dtype (rounds: RNE). */
void ug_sim_store(const ulpgym_tensor *t, size_t off, size_t n, const float *src);
/* Sum of squares of v[0..n) the way the norm kernels reduce a row: 64 fp32 lanes (element
 * i into lane i % 64), then a pairwise tree over the lanes (rounds: fp32 at every add). */
float ug_sim_sumsq_lanes(const float *v, size_t n);
/* The same sum in one sequential fp32 accumulator with fused multiply-adds (rounds: fp32,
 * once per element): another legal order, for the norms' legal_seq_fma variants. */
float ug_sim_sumsq_seq_fma(const float *v, size_t n);
/* Rounds an fp32 value to bf16 / fp16 and back (rounds: RNE). */
float ug_sim_round_bf16(float x);
float ug_sim_round_fp16(float x);
/* Rounds fp32 to the storage dtype dt (enum ulpgym_dtype) and back. */
float ug_sim_round_to(int dt, float x);
/* Rounds fp32 to dt toward zero (rounds: truncation, not RNE; past the largest finite value
 * it saturates there, inf and NaN pass): the store of a converter missing its rounding step.
 * For planted bugs only; a correct kernel stores with ug_sim_store. */
float ug_sim_trunc_to(int dt, float x);

/* What the legal_fn_ulps variants move each elementary function by: UG_DEV_FN_ULPS - 1
 * (oracles/mp/arith.h: the certified standard's device model allows 4 fp32 ulps; one is left
 * for libm's own error and the roundings of the function's formula, e.g. sigmoid's add and
 * divide after its exp). Kept here, not read from the oracle: the kernels do not see it. */
#define UG_SIM_FN_ULPS 3
/* A device's approximate elementary function (exp, log, rsqrt, sigmoid, silu, ...), for the
 * legal_fn_ulps variants: f's fp32 value r as libm gives it (within about 1/2 ulp of the
 * correctly rounded one) moved by `ulps` fp32 ulps, up or down in magnitude as a hash of the
 * argument's bits decides, so that a kernel's errors do not all go one way. Device kernels
 * use approximate functions (outside checkers' legal kernels used ones within 3 ulps of
 * libm); every op whose kernel calls this states in its contract (`ulpgym ops show OP`) or
 * through docs/STANDARDS.md's device model that its functions may be off by up to 4 fp32
 * ulps, and the certified bound charges each one that (UG_DEV_FN_ULPS). Never moved past the
 * largest finite value or below the smallest normal one (the walk stops there); 0, subnormal,
 * +-inf and NaN results are returned as they are: the bound charges a function 4 ulps of its
 * value's magnitude (4 * 2^-23 * |v|, plus 2^-150), less than one ulp of a subnormal result.
 * ulps <= 0: r unchanged (rounds: none; exact steps of one ulp). */
float ug_sim_fn_ulps(float r, float arg, int ulps);

/* rows[0, n) of `width` floats each put last to first, in place (the legal_reversed
 * variants' key order; exact: values only move). */
void ug_sim_reverse_rows(float *rows, size_t n, size_t width);

#endif
