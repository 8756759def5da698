/* int8_dot.c — exact int8 column-group dots read in row order (int8_dot.h). Each product
 * is below 2^14 in magnitude, so 2^16 rows sum exactly in int32 before they move into the
 * int64 dot. Columns go 32 at a time where they can (a constant trip count, which GCC's -O2
 * vectoriser takes), the rest one by one. */
#include "oracles/mp/int8_dot.h"

#include <string.h>

#define COLS 32
#define ROWS 65536

/* AVX2 where the CPU has it: 16 int16 products a vector instead of SSE2's 8 (same integers) */
#if defined(__has_attribute)
#if __has_attribute(target_clones)
#define I8_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef I8_CLONES
#define I8_CLONES
#endif

/* acc[i] += a0 * b0[i] + a1 * b1[i] for i < w (two rows a pass: half the loads and stores
 * of acc). |a|, |b[i]| <= 128, so each product fits int16 (|p| <= 2^14) and a 16-bit
 * multiply (pmullw) gives it exactly; b1 == NULL: one row. */
static inline void axpy_i8(int32_t a0, const int8_t *restrict b0, int32_t a1, const int8_t *restrict b1, size_t w,
                           int32_t *restrict acc)
{
    size_t i0 = 0;
    int16_t x0 = (int16_t)a0, x1 = (int16_t)a1;
    if (!b1) {
        for (; i0 + COLS <= w; i0 += COLS)
            for (size_t i = 0; i < COLS; i++) acc[i0 + i] += (int16_t)(x0 * (int16_t)b0[i0 + i]);
        for (; i0 < w; i0++) acc[i0] += a0 * (int32_t)b0[i0];
        return;
    }
    for (; i0 + COLS <= w; i0 += COLS)
        for (size_t i = 0; i < COLS; i++)
            acc[i0 + i] += (int32_t)(int16_t)(x0 * (int16_t)b0[i0 + i]) + (int16_t)(x1 * (int16_t)b1[i0 + i]);
    for (; i0 < w; i0++) acc[i0] += a0 * (int32_t)b0[i0] + a1 * (int32_t)b1[i0];
}

/* The clones go on a static function: clang (the libFuzzer build) emits no symbol for an
 * exported target_clones function that other files call. */
I8_CLONES static void col_dots(const double *a, const int8_t *B, size_t ldb, size_t L, const size_t *col0, size_t ng,
                               size_t w, int32_t *acc, int64_t *dot)
{
    size_t n = ng * w;
    for (size_t i = 0; i < n; i++) dot[i] = 0;
    for (size_t j0 = 0; j0 < L; j0 += ROWS) {
        size_t j1 = L - j0 < ROWS ? L : j0 + ROWS;
        memset(acc, 0, n * sizeof *acc);
        for (size_t j = j0; j < j1; j++) {
            int32_t aj = (int32_t)a[j], ak = j + 1 < j1 ? (int32_t)a[j + 1] : 0;
            if (!aj && !ak) {
                j++;
                continue;
            }
            if (!ak || !aj) { /* one row: the other is zero */
                size_t r = aj ? j : j + 1;
                for (size_t g = 0; g < ng; g++) axpy_i8(aj ? aj : ak, B + r * ldb + col0[g], 0, NULL, w, acc + g * w);
            } else
                for (size_t g = 0; g < ng; g++)
                    axpy_i8(aj, B + j * ldb + col0[g], ak, B + (j + 1) * ldb + col0[g], w, acc + g * w);
            j++;
        }
        for (size_t i = 0; i < n; i++) dot[i] += acc[i];
    }
}

void ug_int8_col_dots(const double *a, const int8_t *B, size_t ldb, size_t L, const size_t *col0, size_t ng, size_t w,
                      int32_t *acc, int64_t *dot)
{
    col_dots(a, B, ldb, L, col0, ng, w, acc, dot);
}

/* 32 products at a time into int32 lanes (the 16-bit multiply of axpy_i8), then the rest. */
int64_t ug_int8_dot(const int8_t *a, const int8_t *b, size_t n)
{
    int64_t dot = 0;
    for (size_t k0 = 0; k0 < n; k0 += ROWS) {
        size_t k1 = n - k0 < ROWS ? n : k0 + ROWS, k = k0;
        int32_t lane[COLS] = {0}, rest = 0;
        for (; k + COLS <= k1; k += COLS)
            for (size_t i = 0; i < COLS; i++) lane[i] += (int16_t)((int16_t)a[k + i] * (int16_t)b[k + i]);
        for (; k < k1; k++) rest += (int32_t)a[k] * b[k];
        for (size_t i = 0; i < COLS; i++) rest += lane[i]; /* |sum| <= 2^16 * 2^14: int32 */
        dot += rest;
    }
    return dot;
}
