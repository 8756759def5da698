/* sparse_quant_rows.h — the sim kernel body shared by sparse_flash_attention_quant and
 * sparse_attention_antiquant (DeepSeek-V3.2 sparse MLA attention over an int8 paged
 * cache): tensor binding, the per-query-row gather of the top-k positions through the
 * block table (count rule, -1 padding, range checks), the dequantisation and the tile
 * loop (attn_tiles.h). The two ops differ only in how a cache slot decodes into its 576
 * fp32 key values: the op's decode callback. */
#ifndef UG_SIM_SPARSE_QUANT_ROWS_H
#define UG_SIM_SPARSE_QUANT_ROWS_H
#include <stddef.h>

#include "kernels/sim/simlib.h"

/* Planted bugs of the shared body (bit flags; the ops add their decode bugs from 0x100 up). */
#define UG_SQK_BUG_PAD_AS_ZERO 0x1u    /* bug: a -1 slot read as position 0 */
#define UG_SQK_BUG_LOCAL_MAX 0x2u      /* bug: online softmax without the rescale across key tiles */
#define UG_SQK_BUG_SCALE_512 0x4u      /* bug: softmax scale 512^-1/2, ignoring the declared one */
#define UG_SQK_BUG_MAX_ZERO 0x8u       /* bug: the online softmax's running max starts at 0, not -inf */
#define UG_SQK_BUG_MTP_LEN_PLUS1 0x10u /* bug: an MTP row (S_q > 1) sees vis + 1 positions (capped at L_b) */
/* Legal variants of the shared body (other correct kernels, the false-alarm set; same flags word). */
#define UG_SQK_LEGAL_TILE16 0x20u     /* legal: the online softmax on 16-key tiles instead of 128 */
#define UG_SQK_LEGAL_REVERSED 0x40u   /* legal: the gathered keys walked last to first */
#define UG_SQK_LEGAL_P_BF16 0x80u     /* legal: the weights P cast to bf16 before P·V (the semantics allow it) */
#define UG_SQK_LEGAL_FN_ULPS 0x10000u /* legal: every exp UG_SIM_FN_ULPS fp32 ulps off (above the ops' decode bugs) */

typedef struct ug_sqk ug_sqk;

/* Writes the dk fp32 key values of cache slot `slot` (block*BS + offset) to row. */
typedef void (*ug_sqk_decode_fn)(const ug_sqk *k, size_t slot, float *row);

struct ug_sqk {
    const char *op;
    const ulpgym_tensor *qn, *qr, *idx, *table, *lens, *o;
    const ulpgym_tensor *cache[3]; /* the op's cache tensors, in the order of its names */
    long batch, sq, heads, topk, bs, maxb, nblocks, lora, rope, dk, groups;
    float scale;   /* the fp32 attribute */
    unsigned bugs; /* UG_SQK_BUG_* and the op's own */
    ug_sqk_decode_fn decode;
};

/* Binds the shared tensors and the op's cache tensors (space-separated names, at most 3;
 * the first's shape leads with [NB, BS]) and reads the params. 0, or -2 with a message. */
int ug_sqk_open(const ulpgym_call *call, const char *op, const char *cache_names, ug_sqk *k, char *err, size_t errlen);

/* Computes o for every query row. 0, -1 out of memory, -2 on a bad index, table entry or
 * length (message in err). */
int ug_sqk_run(const ug_sqk *k, char *err, size_t errlen);

/* One dequantised value as a device makes it: the fp32 product of code and scale, cast
 * to bf16 (rounds: fp32 multiply, then bf16 RNE). */
float ug_sqk_dequant(float code, float scale);

#endif
