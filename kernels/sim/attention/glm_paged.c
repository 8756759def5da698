/* glm_paged.c — the device walk of GLM-4.5 paged decode attention (the model and its
 * use: glm_paged.h). */
#include "kernels/sim/attention/glm_paged.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"

void ug_glp_sizes(ug_glp_view *g, long width)
{
    g->hq = g->q->shape[1], g->dim = g->q->shape[2];
    g->nb = g->kc->shape[0], g->bs = g->kc->shape[1], g->hkv = g->kc->shape[2], g->width = width;
}

/* Loads the first n tokens of sequence b (table row `row`), kv head kvh, into kf / vf
 * token-major. A correct walk never meets an entry outside the pool (-1 pads a row past
 * its last block); a wrong one (the stride mutant) that does reads the pool's memory
 * modulo its size, where a device would read whatever lies around the cache. */
static void glp_gather(const ug_glp_view *g, const int32_t *row, long kvh, long n, float *kf, float *vf)
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

/* Keys per tile of the online softmax: tile_keys (a legal variant's), else tile_blocks cache
 * blocks (at least one). */
static size_t glp_tile(const ug_glp_view *g)
{
    if (g->tile_keys > 0) return (size_t)g->tile_keys;
    return (size_t)(g->bs * (g->tile_blocks > 1 ? g->tile_blocks : 1));
}

/* legal_reversed: the first n keys and values of kf / vf into kr / vr last to first (exact). */
static void glp_reverse(const float *kf, const float *vf, size_t n, size_t D, float *kr, float *vr)
{
    for (size_t j = 0; j < n; j++) {
        memcpy(kr + j * D, kf + (n - 1 - j) * D, D * sizeof *kr);
        memcpy(vr + j * D, vf + (n - 1 - j) * D, D * sizeof *vr);
    }
}

/* Every query row and head of (sequence b, kv head kvh). */
static void glp_group(const ug_glp_view *g, long b, long kvh, const int32_t *row, long len, ug_variant_code bug,
                      float *kf, float *vf, float *qf, float *of, float *kr, float *scratch)
{
    long loaded = bug == UG_VAR_MUT_FULL_LAST_BLOCK ? (len + g->bs - 1) / g->bs * g->bs : len;
    glp_gather(g, row, kvh, loaded, kf, vf);
    ug_gl_attn_cfg cfg = {(size_t)g->dim, (size_t)g->dim, (size_t)g->dim,   (size_t)g->dim,
                          glp_tile(g),    g->scale,       UG_GL_ATTN_P_BF16};
    if (bug == UG_VAR_MUT_PV_BF16) cfg.flags |= UG_GL_ATTN_BUG_PV_BF16;
    if (bug == UG_VAR_MUT_NO_SUM_RESCALE) cfg.flags |= UG_GL_ATTN_BUG_NO_SUM_RESCALE;
    if (g->legal & UG_GLP_LEGAL_TWO_PASS) cfg.flags |= UG_GL_ATTN_TWO_PASS;
    if (g->legal & UG_GLP_LEGAL_FN_ULPS) cfg.flags |= UG_GL_ATTN_FN_ULPS;
    long group = g->hq / g->hkv;
    size_t D = (size_t)g->dim, nr = (size_t)group;
    for (long i = 0; i < g->sq; i++) {
        long end = bug == UG_VAR_MUT_MTP_NO_OFFSET ? len : ug_gl_mtp_end(len, g->sq, i); /* bug: no causal offset */
        if (bug == UG_VAR_MUT_FULL_LAST_BLOCK) end = (end + g->bs - 1) / g->bs * g->bs; /* bug: last block read whole */
        /* the query heads of this kv head are adjacent rows sharing its keys: computed together */
        size_t at = (size_t)((b * g->sq + i) * g->hq + kvh * group) * D;
        ug_sim_load(g->q, at, nr * D, qf);
        const float *k = kf, *v = vf;
        if (g->legal & UG_GLP_LEGAL_REVERSED) { /* legal: the row's keys last to first */
            glp_reverse(kf, vf, (size_t)end, D, kr, kr + (size_t)end * D);
            k = kr, v = kr + (size_t)end * D;
        }
        ug_gl_attn_rows(&cfg, qf, D, nr, k, v, (size_t)end, of, D, scratch);
        ug_sim_store(g->o, at, nr * D, of); /* rounds: bf16 output */
    }
}

int ug_glp_run(const ug_glp_view *g, ug_variant_code bug)
{
    long B = g->batch, maxlen = 1, stride = g->width;
    for (long b = 0; b < B; b++) maxlen = g->lens[b] > maxlen ? g->lens[b] : maxlen;
    if (bug == UG_VAR_MUT_TABLE_STRIDE) stride = (maxlen + g->bs - 1) / g->bs; /* bug: stride from the lengths */
    size_t D = (size_t)g->dim, span = (size_t)((maxlen + g->bs - 1) / g->bs * g->bs), nr = (size_t)(g->hq / g->hkv);
    size_t nrev = g->legal & UG_GLP_LEGAL_REVERSED ? 2 * span * D : 0; /* legal_reversed's copies */
    float *kf = malloc((2 * span * D + 2 * nr * D + nrev) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH(glp_tile(g), D, D, nr) * sizeof *scratch); /* a block of its own */
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *vf = kf + span * D, *qf = vf + span * D, *of = qf + nr * D, *kr = of + nr * D;
    for (long b = 0; b < B; b++)
        for (long kvh = 0; kvh < g->hkv; kvh++)
            glp_group(g, b, kvh, g->table + b * stride, g->lens[b], bug, kf, vf, qf, of, kr, scratch);
    free(kf);
    free(scratch);
    return 0;
}
