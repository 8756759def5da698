/* mhc_post.c — sim kernel and planted-bug mutants for mhc_post (the post step of
 * manifold-constrained hyper-connections), per token t and output stream n:
 *     out[t,n,:] = h_post[t,n] * h_out[t,:] + sum_k h_res[t,k,n] * x[t,k,:]
 *
 * Device model: a token's N x N mixing matrix and N post weights are fp32 scalars; D is
 * walked in tiles of 256 lanes; each lane starts from h_post * h_out (fp32 product) and
 * adds the N products h_res[k,n] * x[k] in stream order, one fp32 multiply and one fp32
 * add each (no fused multiply-add); the lane is rounded once to bf16. The tail tile
 * (D % 256 lanes) runs the same code with a shorter length.
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract is the exact sum of the N + 1 products rounded once to bf16, so any fp32
 * order of it is a correct device): each lane's N mixing terms by fused multiply-adds
 * (fmaf) onto h_post * h_out; the mixing terms in reverse stream order (k = N-1 .. 0) from
 * 0, h_post * h_out added last; a pairwise fp32 sum of the N + 1 products. */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"

#define MHC_TILE 256

#define MHC_MAX_TERMS 17 /* N <= 16 streams, plus h_post * h_out */

/* A pairwise (recursive halving) fp32 sum of v[0..n), n >= 1. */
static float pairwise_sum(const float *v, size_t n)
{
    if (n == 1) return v[0];
    size_t m = n / 2;
    return pairwise_sum(v, m) + pairwise_sum(v + m, n - m); /* rounds: fp32 */
}

/* The legal variants' tile: the same exact sum in another fp32 order. */
static void mix_tile_legal(const float *ho, const float *xs, size_t d, size_t len, const float *hres, float hpost,
                           size_t nst, size_t n, ug_variant_code how, float *acc)
{
    for (size_t j = 0; j < len; j++) {
        if (how == UG_VAR_LEGAL_FMA) {
            float a = hpost * ho[j];                                                        /* rounds: fp32 */
            for (size_t k = 0; k < nst; k++) a = fmaf(hres[k * nst + n], xs[k * d + j], a); /* rounds: fp32, once */
            acc[j] = a;
        } else if (how == UG_VAR_LEGAL_REVERSE) {
            float a = 0.0f;
            for (size_t k = nst; k-- > 0;) a = a + hres[k * nst + n] * xs[k * d + j]; /* rounds: fp32 mul, fp32 add */
            acc[j] = a + hpost * ho[j];                                               /* rounds: fp32 mul, fp32 add */
        } else {
            float term[MHC_MAX_TERMS];
            term[0] = hpost * ho[j];                                                          /* rounds: fp32 */
            for (size_t k = 0; k < nst; k++) term[k + 1] = hres[k * nst + n] * xs[k * d + j]; /* rounds: fp32 */
            acc[j] = pairwise_sum(term, nst + 1);
        }
    }
}

/* One tile of one output stream: acc[0..len) for stream n of a token. xs holds the
 * token's N streams (row stride d), starting at the tile's first lane. */
static void mix_tile(const float *ho, const float *xs, size_t d, size_t len, const float *hres, float hpost, size_t nst,
                     size_t n, int skip_mix, ug_variant_code bug, float *acc)
{
    for (size_t j = 0; j < len; j++) acc[j] = hpost * ho[j]; /* rounds: fp32 */
    if (skip_mix) return; /* bug UG_VAR_MUT_TAIL_NO_MIX: the tail tile never gets the residual mix */
    for (size_t k = 0; k < nst; k++) {
        /* bug UG_VAR_MUT_RES_TRANSPOSED reads h_res[n,k] for h_res[k,n] */
        float w = bug == UG_VAR_MUT_RES_TRANSPOSED ? hres[n * nst + k] : hres[k * nst + n];
        for (size_t j = 0; j < len; j++) {
            acc[j] = acc[j] + w * xs[k * d + j];                                /* rounds: fp32 mul, fp32 add */
            if (bug == UG_VAR_MUT_BF16_ACC) acc[j] = ug_sim_round_bf16(acc[j]); /* bug: bf16 accumulator */
        }
    }
}

static int mhc_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *x, *ho, *hr, *hp, *out, **slots[] = {&x, &ho, &hr, &hp, &out};
    if (ug_sim_bind(call, "x h_out h_res h_post out", slots, err, errlen)) return -2;
    size_t tok = (size_t)x->shape[0], nst = (size_t)x->shape[1], d = (size_t)x->shape[2];
    size_t full = d / MHC_TILE * MHC_TILE;
    float *xs = malloc((nst * d + 2 * d + nst * nst + nst) * sizeof *xs);
    if (!xs) return -1;
    float *hov = xs + nst * d, *acc = hov + d, *hres = acc + d, *hpost = hres + nst * nst;
    for (size_t t = 0; t < tok; t++) {
        ug_sim_load(x, t * nst * d, nst * d, xs); /* exact widening */
        ug_sim_load(ho, t * d, d, hov);
        ug_sim_load(hr, t * nst * nst, nst * nst, hres);
        ug_sim_load(hp, t * nst, nst, hpost);
        for (size_t n = 0; n < nst; n++) {
            for (size_t j0 = 0; j0 < d; j0 += MHC_TILE) {
                size_t len = d - j0 < MHC_TILE ? d - j0 : MHC_TILE;
                int skip = bug == UG_VAR_MUT_TAIL_NO_MIX && j0 >= full;
                if (ug_sim_legal(bug)) {
                    mix_tile_legal(hov + j0, xs + j0, d, len, hres, hpost[n], nst, n, bug, acc + j0);
                    continue;
                }
                mix_tile(hov + j0, xs + j0, d, len, hres, hpost[n], nst, n, skip, bug, acc + j0);
            }
            ug_sim_store(out, (t * nst + n) * d, d, acc); /* rounds: bf16 */
        }
    }
    free(xs);
    return 0;
}

const ug_kernel_fn ug_sim_mhc_post = mhc_kernel;
