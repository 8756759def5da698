/* ktile.h — the fp32 K-tiled dot product of the GreenLight GEMM sim kernels
 * (moe_grouped_gemm, mla_prolog).
 *
 * A cube unit multiplies bf16 operands exactly into fp32 and reduces a K-tile of
 * UG_KTILE products in 16 fp32 lanes folded by a pairwise tree; the tile's partial sum
 * is then added to the fp32 accumulator (L0C) tile after tile. Both operands are
 * contiguous fp32 arrays (the caller transposes weights once per matrix). */
#ifndef UG_SIM_KTILE_H
#define UG_SIM_KTILE_H
#include <stddef.h>

#include "ulpgym/kernel_abi.h"

#define UG_KTILE 128
#define UG_KTILE_LANES 16

/* sum_k a[k]*b[k], k < n, in fp32 K-tiles (a == b gives the sum of squares of an
 * RMSNorm, reduced the same way). */
float ug_ktile_dot_f32(const float *a, const float *b, size_t n);

/* Other legal orders of the same fp32 sums, for the legal_* kernel variants: */
/* a pairwise (recursive halving) fp32 sum of v[0..n); */
float ug_pairwise_sum_f32(const float *v, size_t n);
/* sum_k a[k]*b[k] as one sequential chain of fused multiply-adds (one rounding each). */
float ug_fma_dot_f32(const float *a, const float *b, size_t n);
/* sum_k a[k]*b[k] in UG_KTILE_LANES fp32 lanes (term k into lane k % lanes), the lanes
 * folded pairwise (halving). */
float ug_lanes_dot_f32(const float *a, const float *b, size_t n);

/* dst[j*rows + i] = src[i*cols + j]: an [rows, cols] fp32 matrix transposed. */
void ug_ktile_transpose(const float *src, size_t rows, size_t cols, float *dst);

/* Stages the [rows, cols] matrix at element offset off of t as fp32 [cols, rows] in dst
 * (exact widening, then transposed), so each output column is a contiguous reduction.
 * stage is scratch of rows*cols floats. */
void ug_ktile_load_transposed(const ulpgym_tensor *t, size_t off, size_t rows, size_t cols, float *dst, float *stage);

#endif
