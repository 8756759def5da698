/* glm_attention_fusion.c — sim kernel and planted-bug mutants of glm_attention_fusion, the
 * GLM-4.5 attention decode step in one kernel: the prolog (glm_attention_pre_quant),
 * k/v scattered into the paged caches at slot_mapping, paged decode attention
 * (glm_attention) over the updated caches.
 *
 * Composition, nothing copied: the prolog is kernels/sim/prolog/glm_pre_quant.c's walk
 * (ug_gpq_kernel: every token's device computation and exported stages) with a per-token
 * hook that scatters the token's bf16 k and v heads, as a device's prolog core writes
 * them to the cache once they are ready; the attention is glm_attention's device walk
 * (kernels/sim/attention/glm_paged.c) run on the output caches, in key tiles of 4 blocks
 * as the reference kernel's (its s2_tile of 512 tokens over blocks of 128). The output caches start
 * as a copy of the input caches (bits, garbage included), so slots no token writes keep
 * their input.
 *
 * Mutants (bug classes of a fused decode step's cache handling):
 *   mut_slot_plus_one  each token written one slot late (slot_mapping + 1): every case
 *   mut_k_before_rope  the key cache gets k before RoPE (qk_norm's k head): every case
 *   mut_v_trunc        v written to the cache as the fp32 product truncated to bf16 (the
 *                      v output itself RNE): about half the written values
 *   mut_kv_head0       kv head 0's k/v written to every kv head of the slot: only
 *                      kv_heads > 1
 *   mut_stale_cache    attention reads the caches as they were before the scatter: only
 *                      where a token's slot lies inside a context (the decode default)
 *   mut_len_excl_new   attention over actual_seqs - 1 tokens, the new token left out
 *   mut_table_stride   the attention reads the block table with row stride
 *                      cdiv(max(actual_seqs), block_size), not the table's width: only
 *                      where the table is wider than the longest sequence needs
 *
 * Legal variants (other correct devices, the false-alarm set; the walk's, glm_paged.h):
 *   legal_tile16       the attention in key tiles of 16 keys instead of 4 blocks
 *   legal_reversed     each row's keys walked last to first
 *   legal_fn_ulps      every exp of the attention UG_SIM_FN_ULPS fp32 ulps off libm's (the
 *                      prolog's only function is sqrt, an IEEE operation) */
#include <stdint.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/glm_paged.h"
#include "kernels/sim/prolog/glm_pre_quant.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

typedef struct {
    const ulpgym_tensor *kc, *vc, *bt, *lens, *slots, *kc_out, *vc_out, *o, *q;
    size_t pool; /* slots in the cache: num_blocks * block_size */
    float *row;  /* kv_heads * head_dim floats */
    ug_variant_code bug;
} fu_ctx;

/* Copies a cache input to its output slot by slot (exact: same dtype). */
static void fu_copy_cache(const ulpgym_tensor *in, const ulpgym_tensor *out, size_t rows, size_t cols, float *buf)
{
    for (size_t r = 0; r < rows; r++) {
        ug_sim_load(in, r * cols, cols, buf);
        ug_sim_store(out, r * cols, cols, buf); /* exact: bf16 values into bf16 */
    }
}

/* The prolog's hook: token t's k and v heads into its slot of the output caches. */
static void fu_scatter(void *ctx, const ug_gpq_dev *m, const ug_gpq_tok *tk, size_t t)
{
    fu_ctx *f = ctx;
    size_t D = m->D, kv = m->Nk * D, qs = m->Nq * D, qk = qs + kv;
    float slot_f;
    ug_sim_load(f->slots, t, 1, &slot_f); /* exact: slots < 2^24 */
    size_t slot = (size_t)slot_f;
    if (f->bug == UG_VAR_MUT_SLOT_PLUS_ONE) slot = (slot + 1) % f->pool;              /* bug: one slot late */
    const float *k = f->bug == UG_VAR_MUT_K_BEFORE_ROPE ? tk->qkn + qs : tk->qk + qs; /* bug: k before RoPE */
    const float *v = tk->mm + qk;
    if (f->bug == UG_VAR_MUT_V_TRUNC) {
        for (size_t c = 0; c < kv; c++) /* bug: rounds: fp32 product as the GEMM's, then truncated to bf16 */
            f->row[c] = ug_sim_trunc_to(ULPGYM_BF16, (float)((int64_t)m->acc[qk + c] + m->qb[qk + c]) * m->deq[qk + c]);
        v = f->row;
    }
    for (size_t h = 0; h < m->Nk; h++) {
        size_t src = f->bug == UG_VAR_MUT_KV_HEAD0 ? 0 : h * D; /* bug: head 0 into every head */
        ug_sim_store(f->kc_out, slot * kv + h * D, D, k + src); /* exact: bf16 values */
        ug_sim_store(f->vc_out, slot * kv + h * D, D, v + src);
    }
}

static int fu_bind(const ulpgym_call *call, fu_ctx *f, float *scale, char *err, size_t errlen)
{
    const ulpgym_tensor **slots[] = {&f->kc, &f->vc, &f->bt, &f->lens, &f->slots, &f->kc_out, &f->vc_out, &f->o, &f->q};
    if (ug_sim_bind(call,
                    "key_cache value_cache block_tables actual_seqs slot_mapping key_cache_out value_cache_out o q",
                    slots, err, errlen))
        return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    *scale = (float)UG_P(glm_attention_fusion, &p)->scale; /* exact: already an fp32 value */
    ug_params_free(&p);
    return 0;
}

/* The attention over the updated caches (the mutants: the stale caches, one token short). */
static int fu_attend(const fu_ctx *f, float scale)
{
    ug_glp_view g = {f->q, f->kc_out, f->vc_out, f->o, f->bt->data, f->lens->data};
    g.batch = (long)f->lens->shape[0], g.hq = f->o->shape[1], g.dim = f->o->shape[2];
    g.nb = f->kc->shape[0], g.bs = f->kc->shape[1], g.hkv = f->kc->shape[2], g.width = f->bt->shape[1];
    g.sq = 1, g.scale = scale, g.tile_blocks = 4; /* the reference kernel's s2_tile: 4 blocks of 128 */
    if (f->bug == UG_VAR_MUT_STALE_CACHE) g.kc = f->kc, g.vc = f->vc; /* bug: the caches before the scatter */
    if (f->bug == UG_VAR_LEGAL_TILE16) g.tile_keys = 16;              /* legal: 16-key tiles */
    if (f->bug == UG_VAR_LEGAL_REVERSED) g.legal = UG_GLP_LEGAL_REVERSED;
    if (f->bug == UG_VAR_LEGAL_FN_ULPS) g.legal = UG_GLP_LEGAL_FN_ULPS;
    int32_t *short_lens = NULL;
    if (f->bug == UG_VAR_MUT_LEN_EXCL_NEW) { /* bug: the new token left out of its context */
        if (!(short_lens = malloc((size_t)g.batch * sizeof *short_lens))) return -1;
        for (long b = 0; b < g.batch; b++) short_lens[b] = g.lens[b] - 1;
        g.lens = short_lens;
    }
    int rc = ug_glp_run(&g, f->bug == UG_VAR_MUT_TABLE_STRIDE ? UG_VAR_MUT_TABLE_STRIDE : UG_VAR_SIM);
    free(short_lens);
    return rc;
}

static int fu_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    fu_ctx f = {.bug = bug};
    float scale;
    int rc = fu_bind(call, &f, &scale, err, errlen);
    if (rc) return rc;
    size_t row = (size_t)(f.kc->shape[2] * f.kc->shape[3]);
    f.pool = (size_t)(f.kc->shape[0] * f.kc->shape[1]);
    if (!(f.row = malloc((row ? row : 1) * sizeof *f.row))) return -1;
    fu_copy_cache(f.kc, f.kc_out, f.pool, row, f.row);
    fu_copy_cache(f.vc, f.vc_out, f.pool, row, f.row);
    rc = ug_gpq_kernel(call, err, errlen, UG_VAR_SIM, fu_scatter, &f);
    if (!rc) rc = fu_attend(&f, scale);
    free(f.row);
    return rc;
}

const ug_kernel_fn ug_sim_glm_attention_fusion = fu_kernel;
