/* glm_attention.c — sim kernel and planted-bug mutants for glm_attention, the GLM-4.5
 * paged decode attention (GQA 12:1, head 128, block 128):
 *     o[b*S_q+i,h,:] = softmax_t(scale * q[b*S_q+i,h,:].K_b[t, h/G, :]) . V_b[t, h/G, :],
 *     t < actual_seqs[b] - S_q + 1 + i
 * where token t of sequence b sits in block block_tables[b, t / BS] at slot t % BS.
 *
 * Device model: one core per (sequence, kv head) walks the sequence's block-table row and
 * loads each block's K/V slots (bf16, widened exactly to fp32) once, serving the G query
 * heads of the group and the S_q rows of the step from them; the tile loop is the shared
 * one of attn_tiles.h with one block per key tile: fp32 scores times the fp32 scale,
 * online softmax, P cast to bf16 before P.V, fp32 accumulation; o rounded once to bf16.
 * Only the slots below a row's end are used; -1 table entries are never followed.
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
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_PV_BF16, MUT_NO_SUM_RESCALE, MUT_FULL_LAST_BLOCK, MUT_TABLE_STRIDE, MUT_MTP_NO_OFFSET } ga_bug;

typedef struct {
    const ulpgym_tensor *q, *kc, *vc, *bt, *lens, *o;
    long hq, hkv, dim, bs, nb, width, sq;
    float scale;
} ga_view;

static int ga_open(const ulpgym_call *call, ga_view *g, char *err, size_t errlen)
{
    const ulpgym_tensor **slots[] = {&g->q, &g->kc, &g->vc, &g->bt, &g->lens, &g->o};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables actual_seqs o", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    g->scale = (float)ug_p_num(&p, "scale"); /* exact: already an fp32 value */
    g->sq = ug_p_int(&p, "q_per_step");
    ug_params_free(&p);
    g->hq = g->q->shape[1], g->dim = g->q->shape[2];
    g->nb = g->kc->shape[0], g->bs = g->kc->shape[1], g->hkv = g->kc->shape[2], g->width = g->bt->shape[1];
    return 0;
}

/* Loads the first n tokens of sequence b (table row `row`), kv head kvh, into kf / vf
 * token-major. A correct walk never meets an entry outside the pool (-1 pads a row past
 * its last block); a wrong one (the stride mutant) that does reads the pool's memory
 * modulo its size, where a device would read whatever lies around the cache. */
static void ga_gather(const ga_view *g, const int32_t *row, long kvh, long n, float *kf, float *vf)
{
    size_t D = (size_t)g->dim;
    for (long blk = 0; blk * g->bs < n; blk++) {
        long phys = row[blk], len = n - blk * g->bs < g->bs ? n - blk * g->bs : g->bs;
        phys = (phys % g->nb + g->nb) % g->nb; /* identity on a valid entry */
        size_t at = ((size_t)phys * (size_t)g->bs * (size_t)g->hkv + (size_t)kvh) * D, slot = (size_t)g->hkv * D;
        for (long s = 0; s < len; s++) {
            size_t dst = (size_t)(blk * g->bs + s) * D;
            ug_sim_load(g->kc, at + (size_t)s * slot, D, kf + dst);
            ug_sim_load(g->vc, at + (size_t)s * slot, D, vf + dst);
        }
    }
}

/* Every query row and head of (sequence b, kv head kvh). */
static void ga_group(const ga_view *g, long b, long kvh, const int32_t *row, long len, ga_bug bug, float *kf,
                     float *vf, float *qf, float *of, float *scratch)
{
    long loaded = bug == MUT_FULL_LAST_BLOCK ? (len + g->bs - 1) / g->bs * g->bs : len;
    ga_gather(g, row, kvh, loaded, kf, vf);
    ug_gl_attn_cfg cfg = {(size_t)g->dim, (size_t)g->dim, (size_t)g->dim, (size_t)g->dim, (size_t)g->bs, g->scale,
                          UG_GL_ATTN_P_BF16};
    if (bug == MUT_PV_BF16) cfg.flags |= UG_GL_ATTN_BUG_PV_BF16;
    if (bug == MUT_NO_SUM_RESCALE) cfg.flags |= UG_GL_ATTN_BUG_NO_SUM_RESCALE;
    long group = g->hq / g->hkv;
    size_t D = (size_t)g->dim, nr = (size_t)group;
    for (long i = 0; i < g->sq; i++) {
        long end = bug == MUT_MTP_NO_OFFSET ? len : ug_gl_mtp_end(len, g->sq, i); /* bug: no causal offset */
        if (bug == MUT_FULL_LAST_BLOCK) end = (end + g->bs - 1) / g->bs * g->bs; /* bug: last block read whole */
        /* the query heads of this kv head are adjacent rows sharing its keys: computed together */
        size_t at = (size_t)((b * g->sq + i) * g->hq + kvh * group) * D;
        ug_sim_load(g->q, at, nr * D, qf);
        ug_gl_attn_rows(&cfg, qf, D, nr, kf, vf, (size_t)end, of, D, scratch);
        ug_sim_store(g->o, at, nr * D, of); /* rounds: bf16 output */
    }
}

static int ga_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    ga_view g;
    if (ga_open(call, &g, err, errlen)) return -2;
    const int32_t *lens = g.lens->data, *table = g.bt->data;
    long B = g.lens->shape[0], maxlen = 1, stride = g.width;
    for (long b = 0; b < B; b++) maxlen = lens[b] > maxlen ? lens[b] : maxlen;
    if (bug == MUT_TABLE_STRIDE) stride = (maxlen + g.bs - 1) / g.bs; /* bug: stride from the lengths, not the table */
    size_t D = (size_t)g.dim, span = (size_t)((maxlen + g.bs - 1) / g.bs * g.bs), nr = (size_t)(g.hq / g.hkv);
    float *kf = malloc((2 * span * D + 2 * nr * D) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH((size_t)g.bs, D, D, nr) * sizeof *scratch); /* a block of its own */
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *vf = kf + span * D, *qf = vf + span * D, *of = qf + nr * D;
    for (long b = 0; b < B; b++)
        for (long kvh = 0; kvh < g.hkv; kvh++)
            ga_group(&g, b, kvh, table + b * stride, lens[b], bug, kf, vf, qf, of, scratch);
    free(kf);
    free(scratch);
    return 0;
}

const ug_kernel_variant ug_variants_glm_attention[] = {
    {"sim", "paged decode, one block per key tile, fp32 online softmax, bf16 P, fp32 P.V (attn_tiles)", ga_kernel, 0,
     MUT_NONE},
    {"mut_pv_bf16", "P.V accumulated in bf16 instead of fp32", ga_kernel, 0, MUT_PV_BF16},
    {"mut_no_sum_rescale", "running softmax sum not rescaled when a later block raises the max", ga_kernel, 0,
     MUT_NO_SUM_RESCALE},
    {"mut_full_last_block", "the partial last block read as full: garbage slots past the context join the softmax",
     ga_kernel, 0, MUT_FULL_LAST_BLOCK},
    {"mut_table_stride", "block-table row stride cdiv(max(actual_seqs), block_size) instead of the table's width",
     ga_kernel, 0, MUT_TABLE_STRIDE},
    {"mut_mtp_no_offset", "multi-token step without the causal offset: every query row sees the whole context",
     ga_kernel, 0, MUT_MTP_NO_OFFSET},
    {NULL, NULL, NULL},
};
