/* attn_tiles.h — query rows of decode-style attention, the way a device's flash kernel
 * walks the keys: tiles of keys, fp32 scores, online softmax, fp32 P·V.
 *
 * Shared by the attention kernels gqa_decode_attn, incre_flash_attention_mla and
 * sparse_flash_attention: they differ in how they find a row's keys (window, paged cache,
 * top-k indices) and gather them into fp32 rows; the tile loop, its special-value rule
 * (the ops' semantics: a -inf score is a dead key, NaN/+inf scores make the row NaN, a
 * row with no live key is zeros, a non-finite value at a live key decides its column)
 * and its planted bugs are the same code. */
#ifndef UG_SIM_ATTN_TILES_H
#define UG_SIM_ATTN_TILES_H
#include <stddef.h>

/* Device choices and planted bugs of the tile loop (bit flags). */
#define UG_GL_ATTN_P_BF16 0x1u             /* P cast to bf16 before P·V (a device choice, not a bug) */
#define UG_GL_ATTN_BUG_PV_BF16 0x2u        /* bug: the P·V accumulator is kept in bf16 */
#define UG_GL_ATTN_BUG_NO_SUM_RESCALE 0x4u /* bug: running sum not rescaled when the max grows */
#define UG_GL_ATTN_BUG_LOCAL_MAX 0x8u      /* bug: each tile uses its own max; nothing rescaled */
#define UG_GL_ATTN_BUG_SCALE_AFTER 0x10u   /* bug: softmax of unscaled scores, output times scale */
#define UG_GL_ATTN_BUG_MAX_ZERO 0x20u      /* bug: the running max starts at 0, not -inf */
/* Legal variants of the loop (other correct devices, for the kernels' legal_* variants):
 * FN_ULPS: every exp UG_SIM_FN_ULPS fp32 ulps off libm's (ug_sim_fn_ulps); TWO_PASS: each
 * row's max over all n keys first (the same fp32 scores), then the tiles walked with that
 * max from the start, so every weight is exp(s - m) against the row's final max and nothing
 * is rescaled (alpha = exp(0) = 1, exact). */
#define UG_GL_ATTN_FN_ULPS 0x40u
#define UG_GL_ATTN_TWO_PASS 0x80u

typedef struct {
    size_t dk;       /* length of q·k */
    size_t dv;       /* length of a value row */
    size_t ldk, ldv; /* strides (floats) between consecutive key / value rows */
    size_t tile;     /* keys per tile (>= 1) */
    float scale;     /* multiplier of q·k, fp32 */
    unsigned flags;  /* UG_GL_ATTN_* */
    /* NULL, or nr floats each: every row's final running max m and sum l (the online softmax's
     * own, l rescaled to the final m; a row with a NaN or +inf score gets NaN for both, one
     * with no live key -inf and 0), for kernels that output them */
    float *row_max, *row_sum;
} ug_gl_attn_cfg;

/* For each of nr query rows q_r = q + r*ldq that share their keys and values:
 * o + r*ldo gets o_r[0..dv) = softmax(scale * q_r·k_j) · v_j over the n keys
 * k_j = k + j*ldk, v_j = v + j*ldv (all fp32 holding bf16 values), computed in fp32 tiles,
 * left in fp32 for the caller to store; n == 0 gives zeros. Rows are independent: a row's
 * output is the same whichever rows it is computed with. Each key tile is transposed once
 * and its q·k computed for all rows with the vectorised loops of attn_vec.h, every score
 * the fp32 sum of its products in d order. scratch holds at least
 * UG_GL_ATTN_ROWS_SCRATCH(tile, dk, dv, nr) floats and starts with the rows' state, so it
 * must be aligned as malloc aligns (a block of its own). */
#define UG_GL_ATTN_COLS(tile) (((tile) + 15) / 16 * 16)
#define UG_GL_ATTN_ROWS_SCRATCH(tile, dk, dv, nr)                                                                      \
    (8 * (nr) + 2 * UG_GL_ATTN_COLS(tile) + (nr) * (dv) + ((dk) + (nr)) * UG_GL_ATTN_COLS(tile) + (tile) / 4 + 1)
void ug_gl_attn_rows(const ug_gl_attn_cfg *cfg, const float *q, size_t ldq, size_t nr, const float *k, const float *v,
                     size_t n, float *o, size_t ldo, float *scratch);

/* Multi-token prediction (decode kernels' q_per_step = sq): query row i of a step over a
 * sequence of len keys is the token at position len - sq + i, so it sees the keys before
 * len - sq + 1 + i (the last row all len, each earlier row one fewer). */
static inline long ug_gl_mtp_end(long len, long sq, long i) { return len - sq + 1 + i; }

#endif
