/* naive_f32.h — the naive bf16/fp16 arithmetic of the tile loops (arith_tile.c) on fp32
 * lanes: eight lanes a 256-bit register instead of four doubles, the same results.
 *
 * Why the same: NAIVE rounds every product and every partial sum to the dtype, and its
 * operands are values of the dtype (q bits of significand: 8 for bf16, 11 for fp16). A
 * product of two such values has at most 2q <= 22 bits, so fp32 holds it exactly, as
 * double does; a sum of two such values rounded first to fp32's 24 bits and then to q bits
 * is the sum rounded once to q bits, because 24 >= 2q + 1 (Figueroa, "When is double
 * rounding innocuous?", 1995), as it is from double's 53. Both hold only in range, so a
 * lane whose product or sum leaves the dtype's normal range (below its top binade; a zero
 * is fine, and for fp16 so is a value below the normal range, which fp32 holds exactly as
 * a multiple of 2^-24 and which is rounded to that grid as the double path rounds it)
 * flags its block, and the caller redoes that block in double, as the double lanes did. The operands are checked to be such values first (ug_nf_take); where one is
 * not, the caller keeps the double loops. tests/test_attn_row_oracle.c compares both
 * paths, and the scalar ones, bit for bit. */
#ifndef UG_NAIVE_F32_H
#define UG_NAIVE_F32_H
#include <stddef.h>

#include "core/dtype.h"

/* Copies x[0..n) to f and returns 1 when every one is a finite value of at most dt's
 * significand bits (dt bf16 or fp16), exactly an fp32, and a zero or of magnitude in
 * [2^-63, 2^63) for bf16, [2^-24, 2^16) for fp16 (no product of two underflows fp32);
 * else 0 (f undefined). */
int ug_nf_take(ug_dtype dt, const double *x, size_t n, float *f);

/* The naive scores of row qf (D terms) against keys j < w of ktf (row i of the keys'
 * transpose at ktf + i * ldf): s[j] = the sum over i, left to right, of each product
 * rounded to dt, each partial sum rounded to dt (bf: bf16, else fp16). bad[b] is set for
 * each block of 8 keys that left the range (its s[] are then not written), and for the
 * keys past the last whole block, which are not computed. */
void ug_nf_scores(int bf, const float *qf, const float *ktf, size_t ldf, size_t D, size_t w, double *s,
                  unsigned char *bad);

/* Adds the naive terms i < n of columns c < w8 (a multiple of 8) to s[c]: s[c] =
 * rnd(s[c] + rnd(xf[i] * vf[i * ldf + c])), left to right. s[] must hold values of dt. A
 * block of 8 columns that left the range keeps its s[] and sets bad[c / 8]. */
void ug_nf_cols(int bf, double *s, const float *xf, const float *vf, size_t ldf, size_t n, size_t w8,
                unsigned char *bad);

/* 1 (the default): the loops above take whole 32-lane blocks 16 lanes a register where the
 * CPU has AVX-512; 0: 8 lanes a register everywhere (tests/test_attn_row_oracle.c runs
 * both, the same numbers). */
extern int ug_nf_wide;

#endif
