/* moe_grouped_gemm.c — sim kernel and planted-bug mutants for moe_grouped_gemm:
 *     for each expert e, rows r in its group:  out[r] = (silu(x[r]·W1_e) ⊙ (x[r]·W3_e))·W2_e
 * x [T,h] sorted by expert, group_list [E] int32 token counts (zeros allowed),
 * W1/W3 [E,h,I], W2 [E,I,h], out [T,h].
 *
 * Device model: group offsets are the exclusive prefix sum of group_list; empty experts
 * are skipped; per expert the weights are staged once (transposed so the reduction is
 * contiguous); both GEMMs multiply bf16 exactly and accumulate in fp32 K-tiles
 * (ktile.h); the gate/up activation a = silu(g)·u is computed in fp32 and written back
 * as bf16 before the second GEMM, as the device's vector unit does between the two
 * cube passes; out is rounded once to bf16. The output is zero-filled first (rows of a
 * skipped expert would read zero). silu is g/(1 + exp(-g)): NaN at g = -inf, as the
 * op's semantics state.
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract rounds only a and out to bf16, every other value is fp32 in any order):
 * every dot product (g, u and out) one sequential fp32 fmaf chain; every dot product in
 * K-tiles of 64 summed sequentially in fp32, the tile partials added pairwise; every dot
 * product one sequential fp32 sum from the last k to the first (glm_moe_sim_parts.c,
 * gmoe_legal). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/moe/glm_moe_sim_parts.h"
#include "kernels/sim/simlib.h"

/* A legal variant's order of the arithmetic (GMOE_LEGAL_NONE: the sim's and the mutants'). */
static gmoe_legal moe_legal(ug_variant_code bug)
{
    return bug == UG_VAR_LEGAL_SEQ_FMA     ? GMOE_LEGAL_SEQ_FMA
           : bug == UG_VAR_LEGAL_TILE64    ? GMOE_LEGAL_TILE64
           : bug == UG_VAR_LEGAL_K_REVERSE ? GMOE_LEGAL_K_REVERSE
                                           : GMOE_LEGAL_NONE;
}

typedef struct {
    const ulpgym_tensor *x, *w1, *w3, *w2, *gl, *out;
    size_t T, h, E, I;
    float *w1t, *w3t, *w2t, *stage, *xr, *a, *o; /* working buffers */
} moe_ctx;

/* Stages expert e's weights as fp32, transposed: w1t/w3t [I,h], w2t [h,I]. */
static void moe_stage_expert(moe_ctx *m, size_t e)
{
    size_t hi = m->h * m->I;
    ug_ktile_load_transposed(m->w1, e * hi, m->h, m->I, m->w1t, m->stage);
    ug_ktile_load_transposed(m->w3, e * hi, m->h, m->I, m->w3t, m->stage);
    ug_ktile_load_transposed(m->w2, e * hi, m->I, m->h, m->w2t, m->stage);
}

static void moe_run_rows(moe_ctx *m, size_t begin, size_t end, ug_variant_code bug)
{
    size_t h = m->h, I = m->I;
    for (size_t r = begin; r < end; r++) {
        ug_sim_load(m->x, r * h, h, m->xr);
        if (ug_sim_legal(bug)) { /* legal: another order of the same fp32 arithmetic */
            gmoe_swiglu_row_legal(m->xr, m->w1t, m->w3t, h, I, 0, moe_legal(bug), m->a); /* rounds: fp32, bf16 a */
            for (size_t j = 0; j < h; j++) m->o[j] = gmoe_dot(moe_legal(bug), m->a, m->w2t + j * I, I);
            ug_sim_store(m->out, r * h, h, m->o); /* rounds: bf16 */
            continue;
        }
        gmoe_swiglu_row(m->xr, m->w1t, m->w3t, h, I, bug == UG_VAR_MUT_W13_SWAP, m->a); /* rounds: fp32, bf16 a */
        for (size_t j = 0; j < h; j++) m->o[j] = ug_ktile_dot_f32(m->a, m->w2t + j * I, I);
        ug_sim_store(m->out, r * h, h, m->o); /* rounds: bf16 */
    }
}

/* Reads group_list into off[0..E] (exclusive prefix sum); -2 unless counts >= 0 sum to T. */
static int moe_offsets(const moe_ctx *m, size_t *off, char *err, size_t errlen)
{
    float *cnt = malloc((m->E ? m->E : 1) * sizeof *cnt);
    if (!cnt) return -1;
    ug_sim_load(m->gl, 0, m->E, cnt);
    off[0] = 0;
    int rc = 0;
    for (size_t e = 0; e < m->E && !rc; e++) {
        if (cnt[e] < 0)
            rc = -2;
        else
            off[e + 1] = off[e] + (size_t)cnt[e];
    }
    if (!rc && off[m->E] != m->T) rc = -2;
    if (rc == -2) snprintf(err, errlen, "moe_grouped_gemm: group_list must hold counts >= 0 summing to T");
    free(cnt);
    return rc;
}

static int moe_alloc(moe_ctx *m)
{
    size_t hi = m->h * m->I > 0 ? m->h * m->I : 1;
    m->w1t = malloc(4 * hi * sizeof(float));
    m->xr = malloc((2 * m->h + m->I + 1) * sizeof(float));
    if (!m->w1t || !m->xr) return -1;
    m->w3t = m->w1t + hi;
    m->w2t = m->w3t + hi;
    m->stage = m->w2t + hi;
    m->o = m->xr + m->h;
    m->a = m->o + m->h;
    return 0;
}

static int moe_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    moe_ctx m = {0};
    const ulpgym_tensor **slots[] = {&m.x, &m.w1, &m.w3, &m.w2, &m.gl, &m.out};
    if (ug_sim_bind(call, "x w1 w3 w2 group_list out", slots, err, errlen)) return -2;
    m.T = (size_t)m.x->shape[0];
    m.h = (size_t)m.x->shape[1];
    m.E = (size_t)m.w1->shape[0];
    m.I = (size_t)m.w1->shape[2];
    size_t *off = malloc((m.E + 1) * sizeof *off);
    int rc = off ? moe_offsets(&m, off, err, errlen) : -1;
    if (!rc) rc = moe_alloc(&m);
    if (!rc) {
        memset(m.o, 0, m.h * sizeof *m.o);
        for (size_t r = 0; r < m.T; r++) ug_sim_store(m.out, r * m.h, m.h, m.o);
        for (size_t e = 0; e < m.E; e++) {
            if (off[e + 1] == off[e]) {
                if (bug == UG_VAR_MUT_ZERO_SKIP) e++; /* bug: stepping over an empty expert skips the next one too */
                continue;
            }
            size_t begin = off[e];
            if (bug == UG_VAR_MUT_GROUP_OFFSET && begin > 0) begin--; /* bug: group start off by one */
            moe_stage_expert(&m, e);
            moe_run_rows(&m, begin, off[e + 1], bug);
        }
    }
    free(m.w1t);
    free(m.xr);
    free(off);
    return rc;
}

const ug_kernel_fn ug_sim_moe_grouped_gemm = moe_kernel;
