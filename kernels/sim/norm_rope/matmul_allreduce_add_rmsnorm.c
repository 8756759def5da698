/* matmul_allreduce_add_rmsnorm.c — sim kernel and planted-bug mutants for
 * matmul_allreduce_add_rmsnorm over W simulated ranks:
 *     p_r = x_r . w_r (fp32 acc, rounded to bf16 per rank),  y = sum_r p_r in rank order,
 *     h = y + residual,  out = h * gamma / sqrt(mean(h^2) + eps)
 *
 * Device model: each rank's cube unit walks its K/W slice in tiles of 128, summing each
 * tile's products in fp32 and adding the tile into an fp32 accumulator; the partial is
 * written to the communication buffer in bf16. The all-reduce adds the bf16 partials in
 * rank order in fp32 (reduce bf16: into a bf16 running sum, rounded after each rank);
 * the vector unit adds the residual in fp32, stores h (bf16), and
 * normalises the fp32 h: sum of squares in 64 fp32 lanes with a pairwise lane tree,
 * rstd in fp32, outputs rounded once. The ranks run in-process one after another. Each
 * rank's bf16 partial is also written to the optional output partials where it is asked.
 *
 * Mutants: mut_reverse_bf16_reduce, mut_residual_after_norm, mut_eps_outside,
 * mut_norm_stored_h (the norm reads the stored bf16 h instead of the fp32 sum).
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract fixes the bf16 partials and, with reduce bf16, the rank order of the bf16
 * running sum, and leaves the order of every fp32 sum free; the certified device model
 * allows an rsqrt within 4 fp32 ulps): legal_seq_fma sums each rank's K slice and the
 * norm's squares in one sequential fmaf chain each; legal_tile64_tree sums K-tiles of 64
 * each sequentially in fp32, adds the tile partials pairwise, and (reduce fp32) adds the
 * ranks' partials as a pairwise tree, as a recursive-halving all-reduce does;
 * legal_fn_ulps takes rstd from an rsqrt 3 fp32 ulps off libm's 1/sqrtf (ug_sim_fn_ulps). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define K_TILE 128
#define LEGAL_K_TILE 64 /* legal_tile64_tree's K-tile */

/* legal_seq_fma's partial row: one sequential fmaf chain per column over the rank's kk. */
static void rank_partial_fma(const float *x, const float *w, size_t kk, size_t n_cols, float *part)
{
    for (size_t j = 0; j < n_cols; j++) part[j] = 0.0f;
    for (size_t k = 0; k < kk; k++)
        for (size_t j = 0; j < n_cols; j++) part[j] = fmaf(x[k], w[k * n_cols + j], part[j]); /* rounds: fp32, once */
    for (size_t j = 0; j < n_cols; j++) part[j] = ug_sim_round_bf16(part[j]);                 /* rounds: bf16 wire */
}

/* legal_tile64_tree's partial row: each K-tile of 64 summed sequentially in fp32 into
 * tiles[t*n_cols + j], then column j's tile partials added pairwise (col: nt floats). */
static void rank_partial_tile64(const float *x, const float *w, size_t kk, size_t n_cols, float *part, float *tiles,
                                float *col)
{
    size_t nt = 0;
    for (size_t k0 = 0; k0 < kk; k0 += LEGAL_K_TILE, nt++) {
        size_t len = kk - k0 < LEGAL_K_TILE ? kk - k0 : LEGAL_K_TILE; /* tail tile handled explicitly */
        float *tile = tiles + nt * n_cols;
        for (size_t j = 0; j < n_cols; j++) tile[j] = 0.0f;
        for (size_t k = k0; k < k0 + len; k++)
            for (size_t j = 0; j < n_cols; j++) tile[j] += x[k] * w[k * n_cols + j]; /* rounds: fp32 mul, add */
    }
    for (size_t j = 0; j < n_cols; j++) {
        for (size_t t = 0; t < nt; t++) col[t] = tiles[t * n_cols + j];
        part[j] = ug_sim_round_bf16(ug_pairwise_sum_f32(col, nt)); /* rounds: fp32 adds, then bf16 wire */
    }
}

/* One rank's partial row: part[n] = sum_k x[k] w[k, n] over kk elements, fp32 per tile. */
static void rank_partial(const float *x, const float *w, size_t kk, size_t n_cols, float *part, float *tile)
{
    for (size_t j = 0; j < n_cols; j++) part[j] = 0.0f;
    for (size_t k0 = 0; k0 < kk; k0 += K_TILE) {
        size_t len = kk - k0 < K_TILE ? kk - k0 : K_TILE; /* tail tile handled explicitly */
        for (size_t j = 0; j < n_cols; j++) tile[j] = 0.0f;
        for (size_t k = k0; k < k0 + len; k++)
            for (size_t j = 0; j < n_cols; j++) tile[j] += x[k] * w[k * n_cols + j]; /* rounds: fp32 */
        for (size_t j = 0; j < n_cols; j++) part[j] += tile[j];                      /* rounds: fp32 */
    }
    for (size_t j = 0; j < n_cols; j++) part[j] = ug_sim_round_bf16(part[j]); /* rounds: bf16 wire */
}

/* y = all-reduce of the W bf16 partials parts[r*n + j]: fp32 in rank order, or with
 * bf16_acc a bf16 running sum in rank order (reduce bf16: the communication buffer is bf16). */
static void all_reduce(const float *parts, size_t world, size_t n, float *y, int bf16_acc, ug_variant_code bug)
{
    for (size_t j = 0; j < n; j++) {
        float acc = 0.0f;
        if (bug == UG_VAR_MUT_REVERSE_BF16_REDUCE) { /* bug: reverse rank order, bf16 accumulator */
            for (size_t r = world; r-- > 0;) acc = ug_sim_round_bf16(acc + parts[r * n + j]);
        } else if (bf16_acc) {
            for (size_t r = 0; r < world; r++) acc = ug_sim_round_bf16(acc + parts[r * n + j]); /* rounds: bf16 */
        } else if (bug == UG_VAR_LEGAL_TILE64_TREE) { /* legal: (p0+p1)+(p2+p3)... a recursive-halving all-reduce */
            float lv[8];
            for (size_t r = 0; r < world; r++) lv[r] = parts[r * n + j];
            acc = ug_pairwise_sum_f32(lv, world); /* rounds: fp32 at every add */
        } else {
            for (size_t r = 0; r < world; r++) acc += parts[r * n + j]; /* rounds: fp32 */
        }
        y[j] = acc;
    }
}

typedef struct {
    const ulpgym_tensor *x, *w, *res, *gamma, *out, *h, *partials; /* partials: optional, or NULL */
    size_t world, t, kk, n;
    float eps;
    int bf16_reduce; /* param reduce bf16 */
} mar_io;

static int open_io(const ulpgym_call *call, mar_io *io, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_matmul_allreduce_add_rmsnorm_params *params = UG_P(matmul_allreduce_add_rmsnorm, &p);
    io->eps = (float)params->eps; /* exact: an fp32 value */
    io->bf16_reduce = (params->reduce == UG_MATMUL_ALLREDUCE_ADD_RMSNORM_REDUCE_BF16);
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&io->x, &io->w, &io->res, &io->gamma, &io->out, &io->h, &io->partials};
    if (ug_sim_bind(call, "x w residual gamma out h partials?", slots, err, errlen)) return -2;
    io->world = (size_t)io->x->shape[0];
    io->t = (size_t)io->x->shape[1];
    io->kk = (size_t)io->x->shape[2];
    io->n = (size_t)io->w->shape[2];
    return 0;
}

static int mar_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    mar_io io;
    if (open_io(call, &io, err, errlen)) return -2;
    size_t W = io.world, kk = io.kk, n = io.n;
    float *w = malloc((W * kk * n + 1) * sizeof *w);
    float *buf = malloc(((W + 5) * n + kk + 1) * sizeof *buf);
    if (!w || !buf) {
        free(w);
        free(buf);
        return -1;
    }
    float *parts = buf, *y = parts + W * n, *res = y + n, *g = res + n, *tile = g + n, *o = tile + n;
    float *x = o + n;
    float *tiles = NULL; /* legal_tile64_tree: the tile partials of a row, and one column of them */
    size_t nt = (kk + LEGAL_K_TILE - 1) / LEGAL_K_TILE;
    if (bug == UG_VAR_LEGAL_TILE64_TREE && !(tiles = malloc((nt * n + nt + 1) * sizeof *tiles))) {
        free(w);
        free(buf);
        return -1;
    }
    ug_sim_load(io.w, 0, W * kk * n, w);
    ug_sim_load(io.gamma, 0, n, g);
    for (size_t t = 0; t < io.t; t++) {
        for (size_t r = 0; r < W; r++) {
            ug_sim_load(io.x, (r * io.t + t) * kk, kk, x);
            if (bug == UG_VAR_LEGAL_SEQ_FMA)
                rank_partial_fma(x, w + r * kk * n, kk, n, parts + r * n);
            else if (bug == UG_VAR_LEGAL_TILE64_TREE)
                rank_partial_tile64(x, w + r * kk * n, kk, n, parts + r * n, tiles, tiles + nt * n);
            else
                rank_partial(x, w + r * kk * n, kk, n, parts + r * n, tile);
            if (io.partials) ug_sim_store(io.partials, (r * io.t + t) * n, n, parts + r * n); /* exact: bf16 values */
        }
        all_reduce(parts, W, n, y, io.bf16_reduce, bug);
        ug_sim_load(io.res, t * n, n, res);
        int res_late = bug == UG_VAR_MUT_RESIDUAL_AFTER_NORM; /* bug: residual added after the norm */
        for (size_t j = 0; j < n; j++) y[j] += res[j];        /* rounds: fp32 */
        ug_sim_store(io.h, t * n, n, y);
        if (res_late)
            for (size_t j = 0; j < n; j++) y[j] -= res[j]; /* the norm sees the reduced y only */
        if (bug == UG_VAR_MUT_NORM_STORED_H)               /* bug: the norm reads the stored bf16 h */
            for (size_t j = 0; j < n; j++) y[j] = ug_sim_round_bf16(y[j]);
        float ss =
            bug == UG_VAR_LEGAL_SEQ_FMA ? ug_sim_sumsq_seq_fma(y, n) : ug_sim_sumsq_lanes(y, n); /* rounds: fp32 */
        float ms = ss / (float)n;                                                                /* rounds: fp32 */
        float rs = bug == UG_VAR_MUT_EPS_OUTSIDE ? 1.0f / (sqrtf(ms) + io.eps) : 1.0f / sqrtf(ms + io.eps);
        if (bug == UG_VAR_LEGAL_FN_ULPS)
            rs = ug_sim_fn_ulps(rs, ms + io.eps, UG_SIM_FN_ULPS); /* rounds: a device rsqrt */
        for (size_t j = 0; j < n; j++) {
            o[j] = y[j] * rs * g[j]; /* rounds: fp32, left to right */
            if (res_late) o[j] += res[j];
        }
        ug_sim_store(io.out, t * n, n, o);
    }
    free(w);
    free(buf);
    free(tiles);
    return 0;
}

const ug_kernel_fn ug_sim_matmul_allreduce_add_rmsnorm = mar_kernel;
