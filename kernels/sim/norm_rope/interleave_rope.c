/* interleave_rope.c — sim kernel and planted-bug mutants for interleave_rope:
 *     for pair i < D/2 of row (b,n,s):  e = x[2i], o = x[2i+1], c = cos[s,i], s_ = sin[s,i]
 *         y[i]       = e*c - o*s_      (even results first)
 *         y[D/2 + i] = o*c + e*s_      (odd results second: split-half layout)
 *
 * Device model: the sequence is walked in tiles of 16 positions (one cos/sin tile loaded
 * per tile, reused across B and N); a row's even and odd lanes are gathered into two
 * fp32 vectors, each result is two fp32 products and one fp32 add/sub, then rounded once
 * to the output dtype. The tail tile (S % 16 positions) goes through the same code.
 * Tables: position tables cos/sin [S, D/2] (2-D) serve both halves; given tables
 * [B, 1, cs_s, D] (4-D, params.tables given) give the even results columns 0..D/2-1 and
 * the odd ones D/2..D-1, one row per position or one row per batch (cs_s = 1). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"

#define ROPE_SEQ_TILE 16

/* The cos/sin a row's even (lo) and odd (hi) results use: the same for position tables. */
typedef struct {
    const float *c_lo, *s_lo, *c_hi, *s_hi;
} rope_row;

/* Rotates one row x[0..d) into y[0..d) with the cos/sin of its position. */
static void rotate_row(const float *x, rope_row t, size_t d, ug_variant_code bug, int in_tail, float *y)
{
    size_t half = d / 2;
    float flip = bug == UG_VAR_MUT_TAIL_SIN_SIGN && in_tail ? -1.0f : 1.0f; /* bug: tail path negates sin */
    for (size_t i = 0; i < half; i++) {
        /* bug UG_VAR_MUT_HALF_PAIRING: NeoX pairs (x_i, x_{i+D/2}) instead of (x_2i, x_2i+1) */
        float e = bug == UG_VAR_MUT_HALF_PAIRING ? x[i] : x[2 * i];
        float o = bug == UG_VAR_MUT_HALF_PAIRING ? x[half + i] : x[2 * i + 1];
        float s_lo = flip * t.s_lo[i], s_hi = flip * t.s_hi[i]; /* exact: a sign */
        float ye = bug == UG_VAR_LEGAL_FMA
                       ? fmaf(e, t.c_lo[i], -(o * s_lo)) /* rounds: fp32 mul, one fused multiply-add */
                       : e * t.c_lo[i] - o * s_lo;       /* rounds: fp32 mul, mul, sub */
        float yo =
            bug == UG_VAR_LEGAL_FMA ? fmaf(o, t.c_hi[i], e * s_hi) : o * t.c_hi[i] + e * s_hi; /* the same, add */
        if (bug == UG_VAR_MUT_LAYOUT_INTERLEAVED) { /* bug: results written back in place (interleaved) */
            y[2 * i] = ye;
            y[2 * i + 1] = yo;
        } else {
            y[i] = ye;
            y[half + i] = yo;
        }
    }
}

/* The table layout of a call: width w of a table row, rows per batch (0: position tables,
 * shared by every batch). */
typedef struct {
    size_t w, rows_per_batch;
} table_shape;

/* Loads the table rows positions s0..s0+len of batch b use into cs/sn (exact widening):
 * position tables once per tile (b = 0), given tables per batch, one row when broadcast. */
static void load_tables(const ulpgym_tensor *ct, const ulpgym_tensor *st, table_shape ts, size_t b, size_t s0,
                        size_t len, float *cs, float *sn)
{
    size_t first = ts.rows_per_batch ? b * ts.rows_per_batch + (ts.rows_per_batch == 1 ? 0 : s0) : s0;
    size_t rows = ts.rows_per_batch == 1 ? 1 : len;
    ug_sim_load(ct, first * ts.w, rows * ts.w, cs);
    ug_sim_load(st, first * ts.w, rows * ts.w, sn);
}

static int rope_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *ct, *st, *yt, **slots[] = {&x, &ct, &st, &yt};
    if (ug_sim_bind(call, "x cos sin y", slots, err, errlen)) return -2;
    size_t nb = (size_t)x->shape[0], nh = (size_t)x->shape[1], seq = (size_t)x->shape[2], d = (size_t)x->shape[3];
    size_t half = d / 2, full = seq / ROPE_SEQ_TILE * ROPE_SEQ_TILE;
    int given = ct->ndim == 4;
    table_shape ts = {given ? d : half, given ? (size_t)ct->shape[2] : 0};
    float *cs = malloc((ROPE_SEQ_TILE * d * 2 + 2 * d) * sizeof *cs);
    if (!cs) return -1;
    float *sn = cs + ROPE_SEQ_TILE * d, *xr = sn + ROPE_SEQ_TILE * d, *yr = xr + d;
    for (size_t s0 = 0; s0 < seq; s0 += ROPE_SEQ_TILE) {
        size_t len = seq - s0 < ROPE_SEQ_TILE ? seq - s0 : ROPE_SEQ_TILE;
        for (size_t b = 0; b < nb; b++) {
            if (given || b == 0) load_tables(ct, st, ts, b, s0, len, cs, sn);
            for (size_t n = 0; n < nh; n++)
                for (size_t j = 0; j < len; j++) {
                    size_t row = (b * nh + n) * seq + s0 + j, r = ts.rows_per_batch == 1 ? 0 : j;
                    const float *c = cs + r * ts.w, *s = sn + r * ts.w;
                    /* bug UG_VAR_MUT_TABLES_LO_ONLY: assumes half-duplicated tables, cat(freqs, freqs) */
                    int both = given && bug != UG_VAR_MUT_TABLES_LO_ONLY;
                    rope_row t = {c, s, both ? c + half : c, both ? s + half : s};
                    ug_sim_load(x, row * d, d, xr);
                    rotate_row(xr, t, d, bug, s0 >= full, yr);
                    ug_sim_store(yt, row * d, d, yr); /* rounds: output dtype */
                }
        }
    }
    free(cs);
    return 0;
}

const ug_kernel_fn ug_sim_interleave_rope = rope_kernel;
