/* sparse_quant_attn.h — the exact reference shared by the two DeepSeek-V3.2 sparse
 * attentions over an int8 paged cache, sparse_flash_attention_quant (nope codes, group
 * scales and rope keys in three tensors) and sparse_attention_antiquant (the same three
 * packed into one int8 row): their params, checks, the builder of the block table, the
 * context lengths and the top-k index lists, and the oracle loop. The two ops differ only
 * in how one cache slot decodes into its 576 key values, a callback here.
 *
 * Math (both ops): query row r = b*S_q + i (token i of the decode step of sequence b)
 * sees the first vis = L_b - S_q + 1 + i positions of its context and reads index slots
 * 0..c-1 of its top-k list, c = min(vis, topk) (the reference suite's count rule); a
 * slot holding -1 is padding; any other slot names a position p < vis, found in
 * physical block block_table[b][p / BS] at slot p % BS. Its key is
 * [dq(codes) ‖ k_rope], its value dq(codes), with dq(code) = bf16(fp32(code × scale_g))
 * per 128-wide group g: the dequantisation the spec (the reference golden) rounds, done
 * here in double on exact inputs (an 8-bit times a 24-bit significand is exact in double,
 * then ug_dtype_round to fp32 and to bf16). o = softmax(scale · q·K)·V exactly
 * (attn_rows.h, with its special-value rule and the bf16 P a device may use), rounded
 * once to bf16 by the judge. */
#ifndef UG_SPARSE_QUANT_ATTN_H
#define UG_SPARSE_QUANT_ATTN_H
#include <stddef.h>

#include "oracles/oracle.h"

/* The params the builder and the oracle use. */
typedef struct {
    long batch, sq, heads, ctx, bs, topk, lora, rope, dk, group, groups, max_blocks, num_blocks;
    double scale; /* fp32 value */
    int ragged;
    const long *given; /* params.context_lens when it lists the lengths, else NULL */
    const char *pad, *pick;
} ug_sqa_params;

void ug_sqa_read_params(const ug_params *P, ug_sqa_params *p);

/* Checks what ranges cannot say: the lengths (attn_rows.h's decode rule), the cache
 * holding every sequence's blocks (num_blocks), the group dividing kv_lora. 0, or -2 with
 * a message naming op and the param. */
int ug_sqa_check(const ug_params *P, const char *op, char *err, size_t errlen);

/* Fills seq_lens, block_table and topk_indices from the params and the seed. */
int ug_sqa_build(ug_case *c, char *err, size_t errlen);

/* bf16(fp32(code × scale)): one dequantised cache value, the spec's two roundings. */
double ug_sqa_dequant(double code, double scale);

/* Writes the dk exact key values of physical cache slot `slot` (block*BS + offset) to row:
 * the kv_lora dequantised values, then the rope values. */
typedef void (*ug_sqa_decode_fn)(const ug_case *c, const ug_sqa_params *p, size_t slot, double *row);

/* The oracle: emits every selected element of output 0 (o), the slots decoded by decode. */
int ug_sqa_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel, ug_sqa_decode_fn decode);

/* The reference golden of o (core/ops.h reference_golden) for both ops: their tests'
 * golden casts the softmax weights P/l to bf16 before P.V, over the same decoded keys
 * (reference_golden.h, ug_golden_attn_row); out[0] only. */
int ug_sqa_reference_golden(const ug_case *c, const ug_selection *sel, double **out, ug_sqa_decode_fn decode, char *err,
                            size_t errlen);

/* Scratch of the case memory estimate shared by both ops (builder, oracle, sim kernel);
 * extra is the op's own. */
double ug_sqa_scratch(const ug_params *P, double extra);

#endif
