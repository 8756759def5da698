/* attn_vec.h — the vectorised inner loops of the attention sim kernels
 * (flash_attention_mha, flash_attention_mha_grad, page_attention, and through
 * attn_tiles.c gqa_decode_attn, incre_flash_attention_mla, sparse_flash_attention): a tile
 * of fp32 q.k scores and the fp32 P.V (or dS.K, dK, dV) updates, vectorised across
 * independent outputs and never inside one sum.
 *
 * Numerics are those of the plain loops they replace, bit for bit: every score is the
 * fp32 sum over d = 0, 1, ..., D-1 of the fp32 products q[d]*k[d], started from +0.0f and
 * rounded at every add; every P.V element is the fp32 sum over the tile's live keys in
 * key order, started from +0.0f, then acc*alpha + sum (two roundings). Lanes hold
 * different keys (scores) or different d (P.V), so no sum is reassociated; the build's
 * -ffp-contract=off keeps each multiply and add a separate rounding (no FMA).
 * tests/test_kernel_digests.sh checks the kernels that use them against the plain-loop
 * outputs on every plan case. */
#ifndef UG_SIM_ATTN_VEC_H
#define UG_SIM_ATTN_VEC_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/sim/simlib.h"

/* Columns (keys) per block of a score tile: the staged K^T's row stride and the score
 * rows' length are multiples of it. */
#define UG_AV_COLS 16

/* n rounded up to a multiple of UG_AV_COLS. */
static inline size_t ug_av_cols(size_t n) { return (n + UG_AV_COLS - 1) / UG_AV_COLS * UG_AV_COLS; }

/* kt[d*ldt + c] = k[c*ldk + d] for c < n, d < D, and 0 for n <= c < ug_av_cols(n) (the
 * padding's scores are computed and ignored): a key tile transposed once, so its scores
 * are contiguous in c. ldt >= ug_av_cols(n). */
void ug_av_stage_kt(const float *k, size_t ldk, size_t n, size_t D, float *kt, size_t ldt);

/* s[r*lds + c] = sum over d < D of q[r*ldq + d] * kt[d*ldt + c] for r < nr, c < ncols
 * (ncols a multiple of UG_AV_COLS): fp32 products, summed in fp32 in d order from +0.0f
 * (rounds: fp32 multiply and add, one at a time). The scale is the caller's. */
void ug_av_scores(const float *q, size_t ldq, size_t nr, const float *kt, size_t ldt, size_t ncols, size_t D, float *s,
                  size_t lds);

/* acc[d] = acc[d]*alpha + sum over i < n of p[c_i] * v[c_i*ldv + d], d < D, where c_i =
 * live[i] (live NULL: c_i = i): the sum in fp32 in i order from +0.0f, then one multiply
 * and one add (rounds: fp32 each). alpha = 1 is an exact identity (x*1 = x), so it also
 * serves a plain acc += sum. */
void ug_av_pv(float *acc, float alpha, const float *p, const int *live, size_t n, const float *v, size_t ldv, size_t D);

/* For r = 0, 1, ..., nr-1 in order, and every c < nc[r]: acc[c*D + d] += w[r*ldw + c] *
 * x[r*ldx + d], d < D (rounds: fp32 multiply and add, one row after the other): the
 * outer-product updates of a backward's dK/dV accumulators ([nk x D]) by a tile of query
 * rows, row r weighting the first nc[r] keys (0: none). Each accumulator is kept in a
 * register across the rows, its adds in row order. */
void ug_av_outer_rows(float *acc, size_t nk, const float *w, size_t ldw, const long *nc, size_t nr, const float *x,
                      size_t ldx, size_t D);

/* x rounded to bf16 and back (rounds: RNE, overflow to inf; subnormals on the same grid
 * as fp32's, so the bit rule holds there too): the value ug_sim_round_bf16 gives, on the
 * float's bits; NaN goes through ug_sim_round_bf16 itself. */
static inline float ug_av_round_bf16(float x)
{
    if (x != x) return ug_sim_round_bf16(x);
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u); /* half an ulp of bf16, ties to the even neighbour */
    u &= 0xFFFF0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x rounded to the storage dtype dt and back, as ug_sim_round_to: bf16 on the bits, the
 * rest through ug_sim_round_to. */
static inline float ug_av_round_to(int dt, float x)
{
    return dt == ULPGYM_BF16 ? ug_av_round_bf16(x) : ug_sim_round_to(dt, x);
}

#endif
