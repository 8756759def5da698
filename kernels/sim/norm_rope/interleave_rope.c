/* interleave_rope.c — sim kernel and planted-bug mutants for interleave_rope:
 *     for pair i < D/2 of row (b,n,s):  e = x[2i], o = x[2i+1], c = cos[s,i], s_ = sin[s,i]
 *         y[i]       = e*c - o*s_      (even results first)
 *         y[D/2 + i] = o*c + e*s_      (odd results second: split-half layout)
 *
 * Device model: the sequence is walked in tiles of 16 positions (one cos/sin tile loaded
 * per tile, reused across B and N); a row's even and odd lanes are gathered into two
 * fp32 vectors, each result is two fp32 products and one fp32 add/sub, then rounded once
 * to the output dtype. The tail tile (S % 16 positions) goes through the same code. */
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"

#define ROPE_SEQ_TILE 16

typedef enum { MUT_NONE, MUT_HALF_PAIRING, MUT_LAYOUT_INTERLEAVED, MUT_TAIL_SIN_SIGN } rope_bug;

/* Rotates one row x[0..d) into y[0..d) with the cos/sin row of its position. */
static void rotate_row(const float *x, const float *c, const float *s, size_t d, rope_bug bug, int in_tail, float *y)
{
    size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        /* bug MUT_HALF_PAIRING: NeoX pairs (x_i, x_{i+D/2}) instead of (x_2i, x_2i+1) */
        float e = bug == MUT_HALF_PAIRING ? x[i] : x[2 * i];
        float o = bug == MUT_HALF_PAIRING ? x[half + i] : x[2 * i + 1];
        float sn = bug == MUT_TAIL_SIN_SIGN && in_tail ? -s[i] : s[i]; /* bug: tail path negates sin */
        float ye = e * c[i] - o * sn; /* rounds: fp32 mul, mul, sub */
        float yo = o * c[i] + e * sn; /* rounds: fp32 mul, mul, add */
        if (bug == MUT_LAYOUT_INTERLEAVED) { /* bug: results written back in place (interleaved) */
            y[2 * i] = ye;
            y[2 * i + 1] = yo;
        } else {
            y[i] = ye;
            y[half + i] = yo;
        }
    }
}

static int rope_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *ct, *st, *yt, **slots[] = {&x, &ct, &st, &yt};
    if (ug_sim_bind(call, "x cos sin y", slots, err, errlen)) return -2;
    size_t bn = (size_t)(x->shape[0] * x->shape[1]), seq = (size_t)x->shape[2], d = (size_t)x->shape[3];
    size_t half = d / 2, full = seq / ROPE_SEQ_TILE * ROPE_SEQ_TILE;
    float *cs = malloc((ROPE_SEQ_TILE * half * 2 + 2 * d) * sizeof *cs);
    if (!cs) return -1;
    float *sn = cs + ROPE_SEQ_TILE * half, *xr = sn + ROPE_SEQ_TILE * half, *yr = xr + d;
    for (size_t s0 = 0; s0 < seq; s0 += ROPE_SEQ_TILE) {
        size_t len = seq - s0 < ROPE_SEQ_TILE ? seq - s0 : ROPE_SEQ_TILE;
        ug_sim_load(ct, s0 * half, len * half, cs); /* exact widening */
        ug_sim_load(st, s0 * half, len * half, sn);
        for (size_t h = 0; h < bn; h++)
            for (size_t j = 0; j < len; j++) {
                size_t row = h * seq + s0 + j;
                ug_sim_load(x, row * d, d, xr);
                rotate_row(xr, cs + j * half, sn + j * half, d, bug, s0 >= full, yr);
                ug_sim_store(yt, row * d, d, yr); /* rounds: output dtype */
            }
    }
    free(cs);
    return 0;
}

const ug_kernel_variant ug_variants_interleave_rope[] = {
    {"sim", "fp32 rotation of interleaved pairs in tiles of 16 positions, split-half output", rope_kernel, 0, MUT_NONE},
    {"mut_half_pairing", "rotates NeoX pairs (x_i, x_i+D/2) instead of interleaved (x_2i, x_2i+1)", rope_kernel, 0,
     MUT_HALF_PAIRING},
    {"mut_layout_interleaved", "rotates the right pairs but writes results interleaved, not split-half", rope_kernel, 0,
     MUT_LAYOUT_INTERLEAVED},
    {"mut_tail_sin_sign", "the tail tile of S % 16 positions rotates with sin negated", rope_kernel, 0,
     MUT_TAIL_SIN_SIGN},
    {NULL, NULL, NULL},
};
