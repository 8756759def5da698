/* sparse_flash_attention_quant.c — sim kernel and planted-bug mutants for
 * sparse_flash_attention_quant (DeepSeek-V3.2 sparse MLA attention over top-k positions of
 * a paged cache of int8 codes kv_i8, fp32 per-128-group scales kv_scale and bf16 rope keys
 * k_rope):
 *     K_p = [bf16(code·scale_g) ‖ k_rope_p],  V_p = bf16(code·scale_g),  o = softmax(scale·q·K)·V
 * The gather, the tile loop and the shared mutants are sparse_quant_rows.c's; this file
 * decodes a slot of the three-tensor cache and plants the decode bugs.
 *
 * Mutants: mut_one_scale, mut_rope_dequant (this file's), mut_scale_512, mut_pad_as_zero,
 * mut_local_max, mut_mtp_len_off_by_one (each row of a q_per_step > 1 step sees vis + 1
 * positions, capped at the context) (sparse_quant_rows.c's).
 * Legal variants (sparse_quant_rows.c's): legal_tile16, legal_reversed, legal_p_bf16,
 * legal_fn_ulps. */
#include <stdint.h>

#include "core/ops.h"
#include "kernels/sim/attention/sparse_quant_rows.h"

/* Slot `slot`'s key: 512 dequantised codes, then the 64 rope values. */
static void decode(const ug_sqk *k, size_t slot, float *row)
{
    size_t lora = (size_t)k->lora, rope = (size_t)k->rope, ng = (size_t)k->groups, gs = lora / ng;
    float sc[16];
    ug_sim_load(k->cache[0], slot * lora, lora, row);        /* exact: int8 codes widened */
    ug_sim_load(k->cache[1], slot * ng, ng, sc);             /* exact: fp32 scales */
    ug_sim_load(k->cache[2], slot * rope, rope, row + lora); /* exact: bf16 widened */
    for (size_t d = 0; d < lora; d++)
        row[d] = ug_sqk_dequant(row[d], sc[k->bug == UG_VAR_MUT_ONE_SCALE ? 0 : d / gs]); /* rounds: fp32, bf16 */
    if (k->bug == UG_VAR_MUT_ROPE_DEQUANT)
        for (size_t d = 0; d < rope; d++) row[lora + d] = ug_sqk_dequant(row[lora + d], sc[ng - 1]);
}

static int sfaq_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_sqk k;
    if (ug_sqk_open(call, "sparse_flash_attention_quant", "kv_i8 kv_scale k_rope", &k, err, errlen)) return -2;
    k.bug = bug, k.decode = decode;
    return ug_sqk_run(&k, err, errlen);
}

const ug_kernel_fn ug_sim_sparse_flash_attention_quant = sfaq_kernel;
