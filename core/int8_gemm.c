/* int8_gemm.c — the exact int8 matrix product in int32 over a packed B (int8_gemm.h).
 *
 * A row's codes go in pairs, (a[2p], a[2p+1]) as the two 16-bit halves of one int32, and
 * the packed B holds (B[2p][j], B[2p+1][j]) the same way, so one 16-bit multiply-add
 * (vpmaddwd: lo*lo + hi*hi into 32 bits) gives a[2p]*B[2p][j] + a[2p+1]*B[2p+1][j]
 * exactly (each product below 2^14). Four rows of A share each load of B; a strip of B
 * (16 columns, 64 bytes a pair of rows) stays in cache across the rows of the block. The
 * plain-C path computes the same sums term by term. */
#include "core/int8_gemm.h"

#include <stdlib.h>
#include <string.h>

#define STRIP 16 /* columns of a packed strip: two vectors of 8 int32 lanes */

int ug_i8_pack(const int8_t *B, size_t ldb, size_t L, size_t n, ug_i8_packed *out)
{
    memset(out, 0, sizeof *out);
    if (L > UG_I8_GEMM_MAX_L) return -1;
    size_t pairs = (L + 1) / 2, strips = (n + STRIP - 1) / STRIP;
    int16_t *p = calloc(strips * pairs * 2 * STRIP + 1, sizeof *p);
    if (!p) return -1;
    for (size_t k = 0; k < L; k++) {
        const int8_t *row = B + k * ldb;
        size_t pr = k / 2, half = k % 2;
        for (size_t j = 0; j < n; j++) p[((j / STRIP * pairs + pr) * STRIP + j % STRIP) * 2 + half] = row[j];
    }
    *out = (ug_i8_packed){p, L, n, pairs, strips};
    return 0;
}

void ug_i8_packed_free(ug_i8_packed *pk)
{
    free(pk->p);
    memset(pk, 0, sizeof *pk);
}

/* Row i's code pairs as int32: low half a[2p], high half a[2p+1] (0 past L). */
static void pair_rows(const int8_t *A, size_t lda, size_t m, size_t L, size_t pairs, int32_t *Ap)
{
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < pairs; p++) {
            uint16_t lo = (uint16_t)(int16_t)A[i * lda + 2 * p];
            uint16_t hi = 2 * p + 1 < L ? (uint16_t)(int16_t)A[i * lda + 2 * p + 1] : 0;
            Ap[i * pairs + p] = (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
        }
}

/* Columns 16s.. of row i from the strip's 16 sums (only those below n). */
static void store_strip(const int32_t *sum, size_t s, size_t n, int32_t *Crow)
{
    size_t j0 = s * STRIP, w = n - j0 < STRIP ? n - j0 : STRIP;
    memcpy(Crow + j0, sum, w * sizeof *sum);
}

/* The plain path: the same pairs, each 16-bit product widened and summed in int32. */
static void gemm_plain(const int32_t *Ap, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc)
{
    for (size_t s = 0; s < B->strips; s++) {
        const int16_t *bs = B->p + s * B->pairs * 2 * STRIP;
        for (size_t i = 0; i < m; i++) {
            int32_t sum[STRIP] = {0};
            const int32_t *a = Ap + i * B->pairs;
            for (size_t p = 0; p < B->pairs; p++) {
                int32_t a0 = (int16_t)(a[p] & 0xffff), a1 = (int16_t)((uint32_t)a[p] >> 16);
                const int16_t *b = bs + p * 2 * STRIP;
                for (size_t c = 0; c < STRIP; c++) sum[c] += a0 * b[2 * c] + a1 * b[2 * c + 1];
            }
            store_strip(sum, s, B->n, C + i * ldc);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define UG_I8_AVX2 1

/* One strip for rows [i, i+r) with r <= 4: 2 vectors of 8 column sums a row. */
__attribute__((target("avx2"))) static inline void strip_rows_avx2(const int32_t *Ap, size_t pairs, size_t r,
                                                                   const int16_t *bs, __m256i acc[4][2])
{
    for (size_t q = 0; q < r; q++) acc[q][0] = acc[q][1] = _mm256_setzero_si256();
    for (size_t p = 0; p < pairs; p++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(bs + p * 2 * STRIP));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(bs + p * 2 * STRIP + STRIP));
        for (size_t q = 0; q < r; q++) {
            __m256i a = _mm256_set1_epi32(Ap[q * pairs + p]);
            acc[q][0] = _mm256_add_epi32(acc[q][0], _mm256_madd_epi16(a, b0)); /* exact: |sum| < 2^31 */
            acc[q][1] = _mm256_add_epi32(acc[q][1], _mm256_madd_epi16(a, b1));
        }
    }
}

__attribute__((target("avx2"))) static void gemm_avx2(const int32_t *Ap, size_t m, const ug_i8_packed *B, int32_t *C,
                                                      size_t ldc)
{
    for (size_t s = 0; s < B->strips; s++) {
        const int16_t *bs = B->p + s * B->pairs * 2 * STRIP;
        for (size_t i = 0; i < m; i += 4) {
            size_t r = m - i < 4 ? m - i : 4;
            __m256i acc[4][2];
            if (r == 4)
                strip_rows_avx2(Ap + i * B->pairs, B->pairs, 4, bs, acc); /* a constant count: unrolled */
            else
                strip_rows_avx2(Ap + i * B->pairs, B->pairs, r, bs, acc);
            for (size_t q = 0; q < r; q++) {
                int32_t sum[STRIP];
                _mm256_storeu_si256((__m256i *)sum, acc[q][0]);
                _mm256_storeu_si256((__m256i *)(sum + 8), acc[q][1]);
                store_strip(sum, s, B->n, C + (i + q) * ldc);
            }
        }
    }
}
#endif

static void gemm(const int8_t *A, size_t lda, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc, int32_t *Ap,
                 int simd)
{
    if (!m || !B->n) return;
    pair_rows(A, lda, m, B->L, B->pairs, Ap);
#ifdef UG_I8_AVX2
    if (simd && __builtin_cpu_supports("avx2")) {
        gemm_avx2(Ap, m, B, C, ldc);
        return;
    }
#endif
    gemm_plain(Ap, m, B, C, ldc);
}

void ug_i8_gemm(const int8_t *A, size_t lda, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc, int32_t *Ap)
{
    gemm(A, lda, m, B, C, ldc, Ap, 1);
}

void ug_i8_gemm_plain(const int8_t *A, size_t lda, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc, int32_t *Ap)
{
    gemm(A, lda, m, B, C, ldc, Ap, 0);
}
