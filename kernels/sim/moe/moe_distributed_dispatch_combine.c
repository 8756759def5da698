/* moe_distributed_dispatch_combine.c — sim kernel and planted-bug mutants for
 * moe_distributed_dispatch_combine over W simulated ranks.
 *
 * Device model: experts are split into contiguous blocks, E/W per rank with the
 * remainder on the last rank. Dispatch walks tokens in order and appends each of a
 * token's k copies to its owning rank's receive buffer (copy order: token, then slot),
 * so a rank's block in the concatenated buffer starts at the sum of the earlier ranks'
 * counts. On the int8 wire a token is quantised once before sending: amax in fp32,
 * scale = amax/127 (fp32), q = rne(x/scale) clamped to [-128,127], and the receiver
 * dequantises q*scale in fp32. The stand-in expert multiplies by its fp32 scale; results
 * return in fp32 and the source rank sums w_k*y_k over the slots in fp32, storing bf16.
 * On the int8 wire a row holding NaN or +-inf is sent as NaN (its scale is not finite),
 * as the op's semantics state.
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the contract rounds only the int8 wire's codes, so the combine's fp32 sum may run in
 * any order and the fp32 products w*scale*x' in either order): legal_rank_order adds a
 * token's copies in the order they come back, rank by rank (the receive buffer's order),
 * not slot by slot; legal_fma_reversed adds them last slot first, each by one fused
 * multiply-add; legal_weight_at_expert applies the routing weight on the expert's rank,
 * y = (w*scale_e)*x', and the source rank adds the weighted copies in slot order. */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

/* The combine's order of token t's K slots into ord[0..K): slot order, or (legal variants)
 * rank by rank, or last slot first. */
static void combine_order(const long *slot_rank, size_t K, ug_variant_code bug, size_t *ord)
{
    for (size_t s = 0; s < K; s++) ord[s] = bug == UG_VAR_LEGAL_FMA_REVERSED ? K - 1 - s : s;
    if (bug != UG_VAR_LEGAL_RANK_ORDER) return;
    for (size_t i = 1; i < K; i++) /* stable insertion sort by owning rank (K <= 8) */
        for (size_t j = i; j > 0 && slot_rank[ord[j - 1]] > slot_rank[ord[j]]; j--) {
            size_t tmp = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = tmp;
        }
}

typedef struct {
    const ulpgym_tensor *x, *ids, *wts, *escale, *out, *rcount, *roff, *ecount;
    size_t t, h, k, e, world;
    int int8_wire;
} moe_io;

static int open_io(const ulpgym_call *call, moe_io *io, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_moe_distributed_dispatch_combine_params *params = UG_P(moe_distributed_dispatch_combine, &p);
    io->world = (size_t)params->world;
    io->int8_wire = (params->wire == UG_MOE_DISTRIBUTED_DISPATCH_COMBINE_WIRE_INT8);
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&io->x,   &io->ids,    &io->wts,  &io->escale,
                                     &io->out, &io->rcount, &io->roff, &io->ecount};
    if (ug_sim_bind(call, "x expert_ids weights expert_scale out rank_counts rank_offsets expert_counts", slots, err,
                    errlen))
        return -2;
    io->t = (size_t)io->x->shape[0];
    io->h = (size_t)io->x->shape[1];
    io->k = (size_t)io->ids->shape[1];
    io->e = (size_t)io->escale->shape[0];
    return 0;
}

/* Owning rank of expert e, or -1 when no rank holds it (only the count bug). */
static long owner(size_t e, size_t n_exp, size_t world, ug_variant_code bug)
{
    size_t per = n_exp / world;
    for (size_t r = 0; r < world; r++) {
        size_t lo = r * per, hi = r + 1 == world && bug != UG_VAR_MUT_LAST_RANK_COUNT ? n_exp : lo + per;
        if (e >= lo && e < hi) return (long)r; /* bug: the last rank's block is E/W long */
    }
    return -1;
}

/* The token as it arrives on an expert's rank: x itself, or int8 codes dequantised. */
static void wire(const float *x, size_t h, int int8_wire, ug_variant_code bug, float *dst)
{
    if (!int8_wire) {
        for (size_t j = 0; j < h; j++) dst[j] = x[j];
        return;
    }
    float amax = 0.0f;
    int special = 0;
    for (size_t j = 0; j < h; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
        special |= !isfinite(x[j]);
    }
    if (special) { /* NaN or +-inf in the row: no finite scale, the row arrives as NaN */
        for (size_t j = 0; j < h; j++) dst[j] = NAN;
        return;
    }
    float scale = amax / (bug == UG_VAR_MUT_INT8_SCALE_128 ? 128.0f : 127.0f); /* rounds: fp32; bug: 128 */
    for (size_t j = 0; j < h; j++) {
        float q = scale > 0.0f ? rintf(x[j] / scale) : 0.0f; /* rounds: fp32 divide, then RNE */
        q = fminf(fmaxf(q, -128.0f), 127.0f);
        dst[j] = q * scale; /* rounds: fp32 dequantisation */
    }
}

static int moe_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    moe_io io;
    if (open_io(call, &io, err, errlen)) return -2;
    size_t T = io.t, h = io.h, K = io.k, E = io.e, W = io.world;
    float *rows = malloc((T * K * h + 1) * sizeof *rows), *xt = malloc((3 * h + E + T * K + 1) * sizeof *xt);
    long *slot_rank = malloc((T * K + 1) * sizeof *slot_rank);
    float *rcount = calloc(W + 1, sizeof *rcount), *roff = calloc(W + 1, sizeof *roff);
    if (!rows || !xt || !slot_rank || !rcount || !roff) {
        free(rows), free(xt), free(slot_rank), free(rcount), free(roff);
        return -1;
    }
    float *xw = xt + h, *acc = xw + h, *es = acc + h, *ids = es + E;
    ug_sim_load(io.escale, 0, E, es);
    ug_sim_load(io.ids, 0, T * K, ids);
    float *ecount = calloc(E + 1, sizeof *ecount);
    float *wt = malloc((T * K + 1) * sizeof *wt); /* the routing weights [T,K] */
    /* dispatch: count the copies per rank, then lay them out rank by rank */
    for (size_t i = 0; i < T * K; i++) {
        slot_rank[i] = owner((size_t)ids[i], E, W, bug);
        if (slot_rank[i] >= 0) rcount[slot_rank[i]] += 1.0f;
        if (ecount && slot_rank[i] >= 0) ecount[(size_t)ids[i]] += 1.0f;
    }
    for (size_t r = 1; r < W; r++) roff[r] = roff[r - 1] + rcount[r - 1];
    if (wt) ug_sim_load(io.wts, 0, T * K, wt);
    for (size_t t = 0; wt && t < T; t++) {
        ug_sim_load(io.x, t * h, h, xt);
        wire(xt, h, io.int8_wire, bug, xw);
        for (size_t s = 0; s < K; s++) { /* each received copy through its expert, fp32 back */
            float *y = rows + (t * K + s) * h, e = es[(size_t)ids[t * K + s]];
            if (bug == UG_VAR_LEGAL_WEIGHT_AT_EXPERT) {           /* legal: the weight folded into the expert's scale */
                float we = wt[t * K + s] * e;                     /* rounds: fp32 */
                for (size_t j = 0; j < h; j++) y[j] = we * xw[j]; /* rounds: fp32 */
                continue;
            }
            for (size_t j = 0; j < h; j++) y[j] = e * xw[j]; /* rounds: fp32 */
        }
    }
    /* combine on the source rank: sum over the slots in order (legal variants: their order) */
    size_t ord[8];
    for (size_t t = 0; wt && t < T; t++) {
        const float *w_t = wt + t * K;
        for (size_t j = 0; j < h; j++) acc[j] = 0.0f;
        combine_order(slot_rank + t * K, K, bug, ord);
        for (size_t i = 0; i < K; i++) {
            size_t s = ord[i];
            const float *y = rows + (t * K + s) * h;
            if (slot_rank[t * K + s] < 0) continue;            /* a copy nobody received */
            if (bug == UG_VAR_LEGAL_WEIGHT_AT_EXPERT) {        /* legal: already weighted on the expert's rank */
                for (size_t j = 0; j < h; j++) acc[j] += y[j]; /* rounds: fp32 */
            } else if (bug == UG_VAR_LEGAL_FMA_REVERSED) {
                for (size_t j = 0; j < h; j++) acc[j] = fmaf(w_t[s], y[j], acc[j]); /* rounds: fp32, once */
            } else {
                float w = bug == UG_VAR_MUT_WEIGHT_TWICE ? w_t[s] * w_t[s] : w_t[s]; /* bug: weight applied twice */
                for (size_t j = 0; j < h; j++) acc[j] += w * y[j];                   /* rounds: fp32 */
            }
        }
        ug_sim_store(io.out, t * h, h, acc);
    }
    int rc = wt && ecount ? 0 : -1;
    if (!rc) {
        ug_sim_store(io.rcount, 0, W, rcount);
        ug_sim_store(io.roff, 0, W, roff);
        ug_sim_store(io.ecount, 0, E, ecount);
    }
    free(rows), free(xt), free(slot_rank), free(rcount), free(roff), free(ecount), free(wt);
    return rc;
}

const ug_kernel_fn ug_sim_moe_distributed_dispatch_combine = moe_kernel;
