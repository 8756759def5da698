/* mla_common.h — the exact pieces the DeepSeek MLA prologs share (mla_prolog, and
 * mla_prolog_quant through mla_prolog_quant_core.h): the builder of slot_mapping and of
 * the cos/sin tables, the exact RMSNorm statistic and one element of RoPE in either
 * pairing. Moved here from mla_prolog.c unchanged, so that the quantised prolog (and the
 * fused mla_indexer_prolog_quant after it) reuse them instead of copying them. */
#ifndef UG_ORACLE_MLA_COMMON_H
#define UG_ORACLE_MLA_COMMON_H
#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "oracles/mp/arith.h"

/* slot_mapping[T] of a cache of S = blocks*bs slots, per mode: "append" = contiguous from a
 * seeded start; "random" = distinct seeded slots; "padded" = random with every fourth token
 * (t % 4 == 3) a padding token -1; "edges" = contiguous from a seeded block edge k*bs - 1
 * (token 0 on the last slot of a block, token 1 on the first of the next; start 0 when the
 * cache has no room for that). 0, or -1 out of memory. */
int ug_mla_fill_slots(uint64_t seed, long T, long S, long bs, const char *mode, ug_tensor *slot);

/* cos/sin [T, dr] in the half layout (entries i and i + dr/2 share angle i), angle
 * pos*10000^(-2(i mod dr/2)/dr) at a seeded position in 0..8191 per token, stored in the
 * tables' dtype. */
void ug_mla_fill_rope(uint64_t seed, long T, long dr, ug_tensor *cs, ug_tensor *sn);

/* rstd = 1/sqrt(sum v^2/n + eps) of v[0..n), exact; sq is scratch of n numbers. */
ug_num ug_mla_rstd(ug_ar *ar, const ug_num *v, size_t n, double eps, ug_num *sq);

/* Element i of the RoPE of v[0..d) with table rows cs, sn (exact), written in the half order:
 * pair p = i mod d/2 is (v_p, v_{p+d/2}), or (v_2p, v_2p+1) with inter (interleaved_to_half). */
ug_num ug_mla_rope_at(ug_ar *ar, const ug_num *v, const double *cs, const double *sn, size_t d, size_t i, int inter);
#endif
