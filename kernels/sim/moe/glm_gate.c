/* glm_gate.c — sim kernel and planted-bug mutants for glm_gate, the MoE router gate:
 *     logits[t,e] = sum_k float(x[t,k]) * W[e,k]      x [T,h], W [E,h] fp32, logits [T,E] fp32
 *
 * Device model: W is staged once as fp32 (its rows are already the contiguous
 * reductions); each token row of x is widened exactly to fp32; the cube unit multiplies in
 * fp32 and reduces K-tiles of 128 into the fp32 L0C accumulator (ktile.h); the experts are
 * walked in N-tiles of 64 (160 = 64 + 64 + a 32-expert tail), and each logit is stored as
 * fp32 with no further rounding.
 *
 * The mutants are the bugs that matter to a router: the logits only feed a top-k, so a
 * bug that shifts every logit alike is harmless, while one that perturbs them per expert
 * (a rounded weight, a dropped K tail, a wrong weight row) reorders the experts.
 * Mutants: mut_bf16_acc, mut_w_bf16, mut_k_tail, mut_expert_row, mut_tf32_matmul (both
 * operands of every product rounded to tf32, RNE to 10 mantissa bits, as a tf32 cube pass).
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract lets the kernel sum in any order in fp32, with nothing rounded narrower):
 * one sequential fp32 fused multiply-add chain over K; K-tiles of 64 each summed
 * sequentially in fp32, the tile partials then added pairwise; a pairwise (recursive
 * halving) fp32 sum of the fp32 products. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"

#define GATE_N_TILE 64

#define GATE_LEGAL_TILE 64
#define GATE_LEGAL_MAX_TILES 256 /* hidden <= 16384 = 256 tiles of 64 */

/* A pairwise fp32 sum of the products x[k]*w[k], k in [0, n). */
static float pairwise_dot(const float *x, const float *w, size_t n)
{
    if (n == 0) return 0.0f;
    if (n == 1) return x[0] * w[0]; /* rounds: fp32 */
    size_t m = n / 2;
    return pairwise_dot(x, w, m) + pairwise_dot(x + m, w + m, n - m); /* rounds: fp32 */
}

/* The legal variants' dot products (another order of the same fp32 sum). */
static float gate_dot_legal(const float *x, const float *w, size_t h, ug_variant_code how)
{
    if (how == UG_VAR_LEGAL_PAIRWISE) return pairwise_dot(x, w, h);
    if (how == UG_VAR_LEGAL_SEQ_FMA) return ug_fma_dot_f32(x, w, h);
    float part[GATE_LEGAL_MAX_TILES + 1];
    size_t nt = 0;
    for (size_t t = 0; t < h; t += GATE_LEGAL_TILE) {
        size_t len = h - t < GATE_LEGAL_TILE ? h - t : GATE_LEGAL_TILE;
        float s = 0.0f;
        for (size_t k = 0; k < len; k++) s += x[t + k] * w[t + k]; /* rounds: fp32 mul, fp32 add */
        part[nt++] = s;
    }
    return ug_pairwise_sum_f32(part, nt);
}

/* fp32 rounded to tf32 (10 explicit mantissa bits, RNE on the fp32 pattern); inf and NaN pass. */
static float round_tf32(float v)
{
    if (!isfinite(v)) return v;
    union {
        float f;
        uint32_t u;
    } b = {v};
    b.u = (b.u + 0xFFFu + ((b.u >> 13) & 1u)) & ~0x1FFFu; /* rounds: tf32, RNE */
    return b.f;
}

/* One logit: x·w over h, as the bug computes it. */
static float gate_dot(const float *x, const float *w, size_t h, ug_variant_code bug)
{
    if (ug_sim_legal(bug)) return gate_dot_legal(x, w, h, bug);
    if (bug == UG_VAR_MUT_K_TAIL && h > UG_KTILE) /* bug: the partial last K-tile is never issued */
        return ug_ktile_dot_f32(x, w, h - h % UG_KTILE);
    if (bug != UG_VAR_MUT_BF16_ACC) return ug_ktile_dot_f32(x, w, h);
    float acc = 0.0f;
    for (size_t t = 0; t < h; t += UG_KTILE) { /* bug: the L0C accumulator holds bf16 */
        size_t len = h - t < UG_KTILE ? h - t : UG_KTILE;
        acc = ug_sim_round_bf16(acc + ug_ktile_dot_f32(x + t, w + t, len)); /* rounds: fp32 tile, then bf16 */
    }
    return acc;
}

static int gate_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *w, *out, **slots[] = {&x, &w, &out};
    if (ug_sim_bind(call, "x w logits", slots, err, errlen)) return -2;
    size_t T = (size_t)x->shape[0], h = (size_t)x->shape[1], E = (size_t)w->shape[0];
    float *wf = malloc((E * h + h + E + 1) * sizeof *wf), *xr = wf + E * h, *o = xr + h;
    if (!wf) return -1;
    ug_sim_load(w, 0, E * h, wf);
    if (bug == UG_VAR_MUT_W_BF16) /* bug: W cast to bf16 to feed a bf16 x bf16 cube pass */
        for (size_t i = 0; i < E * h; i++) wf[i] = ug_sim_round_bf16(wf[i]);
    if (bug == UG_VAR_MUT_TF32_MATMUL) /* bug: the cube pass reads W as tf32 */
        for (size_t i = 0; i < E * h; i++) wf[i] = round_tf32(wf[i]);
    size_t tail = E % GATE_N_TILE && E > GATE_N_TILE ? E - E % GATE_N_TILE : E; /* first expert of a tail tile */
    for (size_t t = 0; t < T; t++) {
        ug_sim_load(x, t * h, h, xr);
        if (bug == UG_VAR_MUT_TF32_MATMUL) /* bug: the cube pass reads x as tf32 */
            for (size_t k = 0; k < h; k++) xr[k] = round_tf32(xr[k]);
        for (size_t e = 0; e < E; e++) {
            size_t row =
                bug == UG_VAR_MUT_EXPERT_ROW && e >= tail ? e - 1 : e; /* bug: tail tile's W base one row early */
            o[e] = gate_dot(xr, wf + row * h, h, bug);
        }
        ug_sim_store(out, t * E, E, o); /* exact: fp32 out */
    }
    free(wf);
    return 0;
}

const ug_kernel_fn ug_sim_glm_gate = gate_kernel;
