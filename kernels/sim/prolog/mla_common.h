/* mla_common.h — device numerics the DeepSeek MLA prolog sim kernels share (mla_prolog,
 * mla_prolog_quant): the fp32 RMSNorm written to bf16 and the fp32 RoPE in either pairing,
 * each with the planted bugs of the kernels that use it (moved from mla_prolog.c) and the
 * legal variants' orders of its sum of squares and rsqrt (prolog_legal.h). */
#ifndef UG_SIM_MLA_COMMON_H
#define UG_SIM_MLA_COMMON_H
#include <stddef.h>

#include "kernels/sim/prolog/prolog_legal.h"

#define UG_MLA_MAX_ROPE 256

/* How an RMSNorm goes wrong (0: it does not). */
typedef enum { UG_MLA_NORM_OK, UG_MLA_NORM_BF16_SUM, UG_MLA_NORM_EPS_OUTSIDE } ug_mla_norm_bug;

/* v <- bf16((v*rstd)*gamma), rstd = 1/sqrt(sum v^2/n + eps): fp32 K-tiled sum of squares,
 * fp32 rstd and products. Bugs: the sum in one bf16 scalar; eps added outside the root.
 * legal (prolog_legal.h): a legal variant's order of the sum of squares or its rsqrt
 * (UG_PL_NONE: the sim kernel's). */
void ug_mla_rmsnorm_bf16(float *v, const float *gamma, size_t n, float eps, ug_mla_norm_bug bug, ug_prolog_legal legal);

/* RoPE on v[0..d) (d <= UG_MLA_MAX_ROPE) in place with cos/sin rows of d entries, fp32,
 * written in the half order: pair i is (v_i, v_{i+d/2}), or (v_2i, v_2i+1) with inter, and
 * lands on (i, i + d/2). sin_neg (a bug) rotates by -angle. */
void ug_mla_rope(float *v, const float *c, const float *s, size_t d, int inter, int sin_neg);
#endif
