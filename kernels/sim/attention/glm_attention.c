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
 *   mut_mtp_no_offset   multi-token step without the causal offset (only q_per_step > 1)
 *   mut_kv_head_mod     query head h reads kv head h % heads_kv instead of h / (heads_q /
 *                       heads_kv) (only heads_kv > 1 with heads_q > heads_kv); the shared
 *                       walk is run on the query heads permuted so that each kv head's
 *                       group holds the heads h % heads_kv maps to, and o permuted back
 *
 * Legal variants (other correct devices, the false-alarm set; glm_paged.h):
 *   legal_tile16        key tiles of 16 keys instead of one block (P rounded against
 *                       other running maxima)
 *   legal_two_pass      each row's max over all its keys first, then the weights against
 *                       it (no rescaling)
 *   legal_fn_ulps       every exp UG_SIM_FN_ULPS fp32 ulps off libm's (ug_sim_fn_ulps) */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/glm_paged.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

/* mut_kv_head_mod: q's heads permuted so that slot kvh*G + j of each row holds head j*Hkv + kvh
 * (the heads h with h % Hkv == kvh), the correct walk run on that fp32 copy into an fp32 o,
 * and o's heads permuted back and rounded once to bf16 (the walk's fp32 store is exact). */
static int ga_kv_head_mod(ug_glp_view *g)
{
    const ulpgym_tensor *q = g->q, *o = g->o;
    size_t rows = (size_t)q->shape[0], hq = (size_t)g->hq, hkv = (size_t)g->hkv, D = (size_t)g->dim;
    size_t grp = hq / hkv, n = rows * hq * D;
    float *qa = malloc((4 * n + 1) * sizeof *qa);
    if (!qa) return -1;
    float *qp = qa + n, *op = qp + n, *oa = op + n;
    ug_sim_load(q, 0, n, qa); /* exact: a widening */
    for (size_t r = 0; r < rows; r++)
        for (size_t kvh = 0; kvh < hkv; kvh++)
            for (size_t j = 0; j < grp; j++)
                for (size_t d = 0; d < D; d++)
                    qp[(r * hq + kvh * grp + j) * D + d] = qa[(r * hq + j * hkv + kvh) * D + d];
    ulpgym_tensor tq = *q, to = *o;
    tq.dtype = ULPGYM_FP32, tq.strides = NULL, tq.data = qp;
    to.dtype = ULPGYM_FP32, to.strides = NULL, to.data = op;
    g->q = &tq, g->o = &to;
    int rc = ug_glp_run(g, UG_VAR_SIM);
    g->q = q, g->o = o;
    for (size_t r = 0; r < rows; r++)
        for (size_t kvh = 0; kvh < hkv; kvh++)
            for (size_t j = 0; j < grp; j++)
                for (size_t d = 0; d < D; d++)
                    oa[(r * hq + j * hkv + kvh) * D + d] = op[(r * hq + kvh * grp + j) * D + d];
    ug_sim_store(o, 0, n, oa); /* rounds: bf16 output, once */
    free(qa);
    return rc;
}

static int ga_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ug_glp_view g = {0}; /* tile_blocks 0: one block per key tile */
    const ulpgym_tensor *bt, *lens;
    const ulpgym_tensor **slots[] = {&g.q, &g.kc, &g.vc, &bt, &lens, &g.o};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables actual_seqs o", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_glm_attention_params *params = UG_P(glm_attention, &p);
    g.scale = (float)params->scale; /* exact: already an fp32 value */
    g.sq = params->q_per_step;
    ug_params_free(&p);
    ug_glp_sizes(&g, (long)bt->shape[1]);
    g.table = bt->data, g.lens = lens->data, g.batch = (long)lens->shape[0];
    if (bug == UG_VAR_MUT_KV_HEAD_MOD) return ga_kv_head_mod(&g); /* bug: kv head h % heads_kv */
    if (bug == UG_VAR_LEGAL_TILE16) g.tile_keys = 16;             /* legal: 16-key tiles */
    if (bug == UG_VAR_LEGAL_TWO_PASS) g.legal = UG_GLP_LEGAL_TWO_PASS;
    if (bug == UG_VAR_LEGAL_FN_ULPS) g.legal = UG_GLP_LEGAL_FN_ULPS;
    return ug_glp_run(&g, bug); /* the walk's own mutants act there */
}

const ug_kernel_fn ug_sim_glm_attention = ga_kernel;
