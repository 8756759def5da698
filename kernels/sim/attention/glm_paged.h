/* glm_paged.h — the device walk of GLM-4.5 paged decode attention (GQA, one block per key
 * tile), shared by the sim kernels of glm_attention and glm_attention_fusion (which runs
 * it on the caches it has just written), with the planted bugs of glm_attention's mutants.
 *
 * Device model: one core per (sequence, kv head) walks the sequence's block-table row and
 * loads each block's K/V slots (bf16, widened exactly to fp32) once, serving the G query
 * heads of the group and the S_q rows of the step from them; the tile loop is attn_tiles.h
 * with one block per key tile, or tile_blocks blocks: fp32 scores times the fp32 scale,
 * online softmax, P cast to bf16 before P.V, fp32 accumulation; o rounded once to bf16.
 * Only the slots below a row's end are used; -1 table entries are never followed.
 * Legal variants (the view's tile_keys and legal): another key-tile size, a row's keys in
 * reverse order, a two-pass softmax, exp within UG_SIM_FN_ULPS fp32 ulps of libm's. */
#ifndef UG_SIM_GLM_PAGED_H
#define UG_SIM_GLM_PAGED_H
#include <stdint.h>

#include "op_params.h" /* ug_variant_code */
#include "ulpgym/kernel_abi.h"

/* What the walk reads and writes: q [B*sq, hq, dim], caches [nb, bs, hkv, dim] (any
 * bound tensor: a kernel's inputs, or outputs it has written), o like q; the block table
 * [batch, width] and the lengths [batch] as int32. */
typedef struct {
    const ulpgym_tensor *q, *kc, *vc, *o;
    const int32_t *table, *lens;
    long batch, hq, hkv, dim, bs, nb, width, sq;
    float scale;      /* the fp32 attribute */
    long tile_blocks; /* cache blocks per key tile: 0 or 1 for one (glm_attention's kernel), 4
                       * for the fusion kernel's (its s2_tile of 512 tokens over blocks of 128) */
    /* Legal variants (other correct devices; all 0 for the kernels' own walk): */
    long tile_keys; /* > 0: keys per key tile, whatever the block size (overrides tile_blocks) */
    unsigned legal; /* UG_GLP_LEGAL_* */
} ug_glp_view;

/* ug_glp_view.legal: a legal variant's device choices (bit flags). */
#define UG_GLP_LEGAL_REVERSED 0x1u /* each row's keys walked last to first (tiles from its last key) */
#define UG_GLP_LEGAL_TWO_PASS 0x2u /* two-pass softmax (attn_tiles.h UG_GL_ATTN_TWO_PASS) */
#define UG_GLP_LEGAL_FN_ULPS 0x4u  /* every exp UG_SIM_FN_ULPS fp32 ulps off libm's (UG_GL_ATTN_FN_ULPS) */

/* Fills the sizes of g from its tensors q, kc and the table's width (g->q, g->kc set). */
void ug_glp_sizes(ug_glp_view *g, long width);
/* Every query row of every sequence into g->o. 0, or -1 out of memory. */
int ug_glp_run(const ug_glp_view *g, ug_variant_code bug);

#endif
