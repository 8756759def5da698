/* glm_attention.c — sim kernel and planted-bug mutants for glm_attention, the GLM-4.5
 * paged decode attention (GQA 12:1, head 128, block 128):
 *     o[b*S_q+i,h,:] = softmax_t(scale * q[b*S_q+i,h,:].K_b[t, h/G, :]) . V_b[t, h/G, :],
 *     t < actual_seqs[b] - S_q + 1 + i
 * where token t of sequence b sits in block block_tables[b, t / BS] at slot t % BS.
 *
 * The device walk (one core per sequence and kv head, one block per key tile, fp32 online
 * softmax, bf16 P, fp32 P.V, o rounded once to bf16) is kernels/sim/attention/glm_paged.c,
 * shared with glm_attention_fusion; this file binds the tensors and names the mutants.
 *
 * Mutants (bug classes of real paged-attention kernels):
 *   mut_pv_bf16         P.V accumulated in bf16 (most cases)
 *   mut_no_sum_rescale  the running sum not rescaled when a later block raises the max
 *                       (only rows over more than one block whose max moves)
 *   mut_full_last_block the partial last block read as full: garbage slots past the
 *                       context join the softmax (only lengths not a block multiple)
 *   mut_table_stride    block-table row stride cdiv(max(actual_seqs), BS) instead of the
 *                       table's width (only tables wider than the longest sequence needs,
 *                       as the reference's s2-sized table)
 *   mut_mtp_no_offset   multi-token step without the causal offset (only q_per_step > 1) */
#include "core/ops.h"
#include "kernels/sim/attention/glm_paged.h"
#include "kernels/sim/simlib.h"

static int ga_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_glp_view g = {0}; /* tile_blocks 0: one block per key tile */
    const ulpgym_tensor *bt, *lens;
    const ulpgym_tensor **slots[] = {&g.q, &g.kc, &g.vc, &bt, &lens, &g.o};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables actual_seqs o", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    g.scale = (float)ug_p_num(&p, "scale"); /* exact: already an fp32 value */
    g.sq = ug_p_int(&p, "q_per_step");
    ug_params_free(&p);
    ug_glp_sizes(&g, (long)bt->shape[1]);
    g.table = bt->data, g.lens = lens->data, g.batch = (long)lens->shape[0];
    return ug_glp_run(&g, (ug_glp_bug)bug);
}

const ug_kernel_variant ug_variants_glm_attention[] = {
    {"sim", "paged decode, one block per key tile, fp32 online softmax, bf16 P, fp32 P.V (attn_tiles)", ga_kernel, 0,
     UG_GLP_OK},
    {"mut_pv_bf16", "P.V accumulated in bf16 instead of fp32", ga_kernel, 0, UG_GLP_PV_BF16},
    {"mut_no_sum_rescale", "running softmax sum not rescaled when a later block raises the max", ga_kernel, 0,
     UG_GLP_NO_SUM_RESCALE},
    {"mut_full_last_block", "the partial last block read as full: garbage slots past the context join the softmax",
     ga_kernel, 0, UG_GLP_FULL_LAST_BLOCK},
    {"mut_table_stride", "block-table row stride cdiv(max(actual_seqs), block_size) instead of the table's width",
     ga_kernel, 0, UG_GLP_TABLE_STRIDE},
    {"mut_mtp_no_offset", "multi-token step without the causal offset: every query row sees the whole context",
     ga_kernel, 0, UG_GLP_MTP_NO_OFFSET},
    {NULL, NULL, NULL},
};
