/* sparse_attention_antiquant.c — sim kernel and planted-bug mutants for
 * sparse_attention_antiquant (DeepSeek-V3.2 sparse MLA attention, store 8 compute 16):
 * each cache position is one packed int8 row of 656 bytes, 512 int8 codes | 64 bf16 rope
 * keys | 4 fp32 group scales, dequantised to bf16 (code times fp32 scale, cast to bf16)
 * before the bf16 x bf16 -> fp32 matmuls. The gather, the tile loop and the shared mutants
 * are sparse_quant_rows.c's (shared with sparse_flash_attention_quant); this file decodes
 * a packed row and plants the layout bug.
 *
 * Mutants: mut_scale_offset (this file's), mut_scale_512, mut_pad_as_zero, mut_local_max,
 * mut_running_max_zero (the online softmax's running max starts at 0, not -inf: rows whose
 * scores all lie below about -88 underflow to zero weight) (sparse_quant_rows.c's).
 * Legal variants (sparse_quant_rows.c's): legal_tile16, legal_reversed, legal_p_bf16,
 * legal_fn_ulps. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/sparse_quant_rows.h"

/* Little-endian unsigned integer of n bytes at b. */
static uint32_t le(const unsigned char *b, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Slot `slot`'s key from its packed row: 512 dequantised codes, then the 64 rope values. */
static void decode(const ug_sqk *k, size_t slot, float *row)
{
    size_t lora = (size_t)k->lora, rope = (size_t)k->rope, ng = (size_t)k->groups, gs = lora / ng;
    size_t w = lora + 2 * rope + 4 * ng, soff = k->bug == UG_VAR_MUT_SCALE_OFFSET ? lora + rope : lora + 2 * rope;
    const unsigned char *b = (const unsigned char *)k->cache[0]->data + slot * w;
    float sc[16];
    for (size_t g = 0; g < ng; g++) sc[g] = from_bits(le(b + soff + 4 * g, 4));                 /* exact: fp32 bits */
    for (size_t d = 0; d < lora; d++) row[d] = ug_sqk_dequant((float)(int8_t)b[d], sc[d / gs]); /* rounds: fp32, bf16 */
    for (size_t d = 0; d < rope; d++) row[lora + d] = from_bits(le(b + lora + 2 * d, 2) << 16); /* exact: bf16 bits */
}

static int saq_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_sqk k;
    if (ug_sqk_open(call, "sparse_attention_antiquant", "kv_cache", &k, err, errlen)) return -2;
    if (k.cache[0]->shape[2] != k.lora + 2 * k.rope + 4 * k.groups) {
        snprintf(err, errlen,
                 "sparse_attention_antiquant: kv_cache rows are %ld bytes, not kv_lora + 2*rope + "
                 "4*groups = %ld",
                 (long)k.cache[0]->shape[2], k.lora + 2 * k.rope + 4 * k.groups);
        return -2;
    }
    k.bug = bug, k.decode = decode;
    return ug_sqk_run(&k, err, errlen);
}

const ug_kernel_fn ug_sim_sparse_attention_antiquant = saq_kernel;
