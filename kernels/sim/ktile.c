/* ktile.c — fp32 K-tiled dot product shared by the GreenLight GEMM sim kernels.
 *
 * Lanes rather than one running sum: it is what the hardware does, and the explicit lane
 * loop lets the compiler vectorise without reassociating anything (-ffp-contract=off
 * keeps every product and sum rounded to fp32 one at a time). */
#include "kernels/sim/ktile.h"

#include <math.h>

#include "kernels/sim/simlib.h"

float ug_ktile_dot_f32(const float *a, const float *b, size_t n)
{
    float acc = 0.0f;
    for (size_t t = 0; t < n; t += UG_KTILE) {
        size_t len = n - t < UG_KTILE ? n - t : UG_KTILE;
        float lane[UG_KTILE_LANES] = {0};
        size_t full = len / UG_KTILE_LANES * UG_KTILE_LANES;
        for (size_t k = 0; k < full; k += UG_KTILE_LANES)
            for (size_t l = 0; l < UG_KTILE_LANES; l++) lane[l] += a[t + k + l] * b[t + k + l]; /* rounds: fp32 */
        for (size_t k = full; k < len; k++) lane[k - full] += a[t + k] * b[t + k];              /* rounds: fp32 */
        for (size_t w = UG_KTILE_LANES / 2; w > 0; w /= 2)
            for (size_t l = 0; l < w; l++) lane[l] += lane[l + w]; /* rounds: fp32 */
        acc += lane[0];                                            /* rounds: fp32 (L0C) */
    }
    return acc;
}

void ug_ktile_transpose(const float *src, size_t rows, size_t cols, float *dst)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) dst[j * rows + i] = src[i * cols + j];
}

void ug_ktile_load_transposed(const ulpgym_tensor *t, size_t off, size_t rows, size_t cols, float *dst, float *stage)
{
    ug_sim_load(t, off, rows * cols, stage);
    ug_ktile_transpose(stage, rows, cols, dst);
}

float ug_pairwise_sum_f32(const float *v, size_t n)
{
    if (n == 0) return 0.0f;
    if (n == 1) return v[0];
    size_t m = n / 2;
    return ug_pairwise_sum_f32(v, m) + ug_pairwise_sum_f32(v + m, n - m); /* rounds: fp32 */
}

float ug_lanes_dot_f32(const float *a, const float *b, size_t n)
{
    float lane[UG_KTILE_LANES] = {0};
    for (size_t k = 0; k < n; k++) lane[k % UG_KTILE_LANES] += a[k] * b[k]; /* rounds: fp32 mul and add */
    for (size_t w = UG_KTILE_LANES / 2; w > 0; w /= 2)
        for (size_t l = 0; l < w; l++) lane[l] += lane[l + w]; /* rounds: fp32 */
    return lane[0];
}

float ug_fma_dot_f32(const float *a, const float *b, size_t n)
{
    float acc = 0.0f;
    for (size_t k = 0; k < n; k++) acc = fmaf(a[k], b[k], acc); /* rounds: fp32, one per FMA */
    return acc;
}
