/* int8_gemm.h — the exact int8 matrix product C = A.B in int32, for many rows of A at once.
 *
 * The int8 quantised prologs multiply every token's int8 codes by an int8 weight of
 * millions of entries (lightning_indexer_prolog_quant's q_norm.w_qb: 1536 x 8192). Read
 * once per token, that weight makes the product bound by memory, not arithmetic; here B
 * is packed once (column strips of 16, pairs of rows interleaved, widened to int16) and
 * read once per block of rows, and each pair of products is one multiply-add of 16-bit
 * lanes into 32-bit ones (AVX2 vpmaddwd where the CPU has it, plain C elsewhere).
 *
 * No rounding anywhere: every product of two int8 values is below 2^14 in magnitude and a
 * row's sum of L < 2^17 of them fits int32, so the result is the one integer C[i][j] in
 * any order, on any machine. That is why the sim kernels and the oracles may share this
 * code without sharing a rounding decision (tests/test_dot_cols.c checks it against the
 * int64 sum term by term). */
#ifndef UG_CORE_INT8_GEMM_H
#define UG_CORE_INT8_GEMM_H
#include <stddef.h>
#include <stdint.h>

/* The most terms a dot may have: L * 2^14 < 2^31. */
#define UG_I8_GEMM_MAX_L 131071u

/* B [L rows, n columns] packed: strip s holds columns 16s..16s+15 (zeros past n), row pair
 * p of a strip its 16 columns' (B[2p][j], B[2p+1][j]) as adjacent int16 (B[L] = 0 when L
 * is odd). */
typedef struct {
    int16_t *p;
    size_t L, n, pairs, strips;
} ug_i8_packed;

/* Packs B (int8, row i at B + i*ldb); 0, or -1 when out of memory or L > UG_I8_GEMM_MAX_L
 * (nothing allocated). Free with ug_i8_packed_free. */
int ug_i8_pack(const int8_t *B, size_t ldb, size_t L, size_t n, ug_i8_packed *out);
void ug_i8_packed_free(ug_i8_packed *pk);

/* C[i*ldc + j] = sum_{k<L} A[i*lda + k] * B[k][j] for rows i < m and every column j < n,
 * exact. scratch: m * B->pairs int32 (the rows' codes in pairs). */
void ug_i8_gemm(const int8_t *A, size_t lda, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc, int32_t *scratch);
/* ug_i8_gemm without SIMD: the path of CPUs without AVX2, callable anywhere so that tests
 * compare both. */
void ug_i8_gemm_plain(const int8_t *A, size_t lda, size_t m, const ug_i8_packed *B, int32_t *C, size_t ldc,
                      int32_t *scratch);
#endif
