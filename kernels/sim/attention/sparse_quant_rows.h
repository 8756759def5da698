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

typedef struct ug_sqk ug_sqk;

/* Writes the dk fp32 key values of cache slot `slot` (block*BS + offset) to row. */
typedef void (*ug_sqk_decode_fn)(const ug_sqk *k, size_t slot, float *row);

struct ug_sqk {
    const char *op;
    const ulpgym_tensor *qn, *qr, *idx, *table, *lens, *o;
    const ulpgym_tensor *cache[3]; /* the op's cache tensors, in the order of its names */
    long batch, sq, heads, topk, bs, maxb, nblocks, lora, rope, dk, groups;
    float scale; /* the fp32 attribute */
    int bug;     /* the variant: its ug_variant_code (UG_VAR_SIM: the correct kernel) */
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
