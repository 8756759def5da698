/* int8_dot.h — exact integer dots of int8 codes with column groups of an int8 weight, read
 * in row order. The quantised prologs dequantise q as (codes . W_i8[:, col]) * scales for
 * the columns of the heads their selection reaches (lightning_indexer_prolog_quant's w_qb,
 * mla_prolog_quant's w_uq), and the int8 shared expert takes its GEMMs' dots, a token's
 * whole row in one pass or a dot down a transposed column (oracles/moe/glm_moe_oracle_parts.c). Walking each
 * column down the weight strides a page a row and was most of those oracles' time; the
 * integers are the same in every arithmetic. */
#ifndef UG_MP_INT8_DOT_H
#define UG_MP_INT8_DOT_H
#include <stddef.h>
#include <stdint.h>

/* dot[g*w + i] = sum_{j<L} a[j] * B[j*ldb + col0[g] + i] for the ng groups g and i < w.
 * a: L integer values in [-128, 127] as doubles (decoded int8 codes); B: int8 storage.
 * Exact in int64 (no rounding anywhere), any order. acc: scratch of ng*w int32. */
void ug_int8_col_dots(const double *a, const int8_t *B, size_t ldb, size_t L, const size_t *col0, size_t ng, size_t w,
                      int32_t *acc, int64_t *dot);

/* sum_k a[k] * b[k] over n int8 codes: exact in int64 (int32 partial sums of 2^16 terms). */
int64_t ug_int8_dot(const int8_t *a, const int8_t *b, size_t n);
#endif
