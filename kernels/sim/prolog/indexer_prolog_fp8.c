/* indexer_prolog_fp8.c — sim kernel shared by the lightning indexer prologs
 * lightning_indexer_prolog_quant (int8), _fp8 and _mxfp8.
 *
 * One pipeline, three quantisation formats, so the device model lives once:
 *   q path (per token, indexer head): the dequantised bf16 q row widened to fp32 (int8 op:
 *     q = fp32(q_norm.w_qb) * q_norm_scale * w_qb_scale, the int8 dot accumulated exactly
 *     in int32 over all H*D columns of the token, the cast and the two products in fp32),
 *     RoPE_half on the first R dims (fp32 products and sums), an in-place fp32
 *     Walsh-Hadamard butterfly, then times the fp32 constant 1/sqrt(D);
 *   k path (per token): x.W_k with fp32 accumulation in K tiles of 128, LayerNorm in fp32
 *     (mean, then the mean of squared deviations, rstd = 1/sqrtf(var+eps)), or with
 *     k_norm rmsnorm an fp32 RMSNorm (rstd = 1/sqrtf(sum v^2/D + eps), no beta), RoPE,
 *     Hadamard, quantised and scattered to the paged cache at slot_mapping (slot -1 =
 *     padding, not written); cache slots no token writes hold code 0 and scale 0 (fp8) or
 *     2^-127 (MX);
 *   weights: x.W_proj in fp32 tiles times the fp32 constant 1/sqrt(H*D), stored bf16
 *     (int8 op: fp16).
 * Given tables (params.tables given): cos/sin [T, R], the second half of the rotation
 * reading columns R/2..R-1. Given Hadamard (params.hadamard given): u = v.H with the dense
 * bf16 hadamard_q / hadamard_k widened to fp32, fp32 accumulation per K tile of 128 (the
 * GEMMs' tiled_gemv), no normalisation.
 * Quantisation: fp8 one fp32 scale per row, scale = amax/448, code = e4m3(v/scale)
 * (RNE, saturating); MXFP8 blocks of 32 share scale 2^(floor(log2 amax)-8) (E8M0, exponent
 * clamped to [-127, 127]; an all-zero block gets 2^-127), code = e4m3(v/scale),
 * saturating to +-448 as the OCP MX spec prescribes; int8 one scale per row, the
 * reference's form: r = 127/amax (fp32), code = rne(v*r) (fp32 product, saturating to
 * int8), scale = 1/r in fp32 stored fp16; an all-zero row gets scale 0 and codes 0. A block
 * holding NaN or +-inf gets a NaN scale and NaN codes (int8: codes 0; the op's semantics).
 * Per-token entry points for a fused op: indexer_prolog_sim.h.
 * Legal variants (prolog_legal.h; the certified device model's sums in any order, rsqrt
 * within 4 ulps): every fp32 GEMM dot (x.W_k, x.W_proj, a given dense Hadamard) and the k
 * norm's sums (mean, squared deviations or squares) as one sequential chain, fmaf for the
 * products (legal_seq_fma), or in K-tiles of 64 summed in fp32 with the partials added
 * pairwise (legal_tile64); the k norm's rstd from an rsqrt 3 fp32 ulps off (legal_fn_ulps).
 * The fp32 constants 1/sqrt(D) and 1/sqrt(H*D) stay as they are (host constants), and the
 * butterfly keeps its fixed order (its adds are not a reduction a device may reorder). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stdint.h>

#include "core/int8_gemm.h"
#include "core/ops.h"
#include "kernels/sim/prolog/indexer_prolog_sim.h"
#include "kernels/sim/prolog/prolog_legal.h"
#include "kernels/sim/simlib.h"

#define K_TILE 128
#define MX_BLOCK 32
#define TOKEN_BLOCK 32 /* tokens whose x.W and q_norm.w_qb products share each pass over the weights */

typedef struct {
    const ulpgym_tensor *q, *x, *wk, *gamma, *beta, *wproj, *cos, *sin, *slots;
    const ulpgym_tensor *q8, *qs, *kc, *ks, *wts, *hq, *hk; /* hq, hk: given Hadamard, else NULL */
    const ulpgym_tensor *qn, *qns, *wqb, *wqs;              /* int8's q source (q: NULL), else NULL */
    size_t t, heads, d, hid, half, cs_w, n_slots, lora;     /* cs_w: a table row, half or 2 half (given) */
    float eps;
    int rms; /* params.k_norm == rmsnorm */
} lip_io;

/* The tensors of each format: the fp8 ops take a dequantised q, the int8 op its int8 factors. */
static int bind_io(const ulpgym_call *call, lip8_format fmt, lip_io *io, char *err, size_t errlen)
{
    /* q_scale and k_scale have one dim more under MX (a scale per 32-block) than under fp8 (one per row); each op
     * declares its own rank, so binding by the call's op checks what one lookup for both formats had to leave open. */
    const ulpgym_tensor **common[] = {&io->x,     &io->wk, &io->gamma, &io->beta, &io->wproj, &io->cos, &io->sin,
                                      &io->slots, &io->qs, &io->kc,    &io->ks,   &io->wts,   &io->hq,  &io->hk};
    const char *names = "x w_k ln_gamma ln_beta w_proj cos sin slot_mapping q_scale k_cache k_scale weights "
                        "hadamard_q? hadamard_k?";
    if (ug_sim_bind(call, names, common, err, errlen)) return -2;
    io->q = io->qn = io->qns = io->wqb = io->wqs = NULL;
    if (fmt == LIP8_INT8) {
        const ulpgym_tensor **qsrc[] = {&io->qn, &io->qns, &io->wqb, &io->wqs, &io->q8};
        return ug_sim_bind(call, "q_norm q_norm_scale w_qb w_qb_scale q_i8", qsrc, err, errlen) ? -2 : 0;
    }
    const ulpgym_tensor **qsrc[] = {&io->q, &io->q8};
    return ug_sim_bind(call, "q q_fp8", qsrc, err, errlen) ? -2 : 0;
}

static int open_io(const ulpgym_call *call, lip8_format fmt, const lip_sim_opts *o, lip_io *io, char *err,
                   size_t errlen)
{
    int given_tables;
    if (o) { /* a fused op's own param names, read by the caller */
        io->eps = o->eps, io->rms = o->rms, given_tables = o->given_tables;
    } else {
        ug_params p;
        if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
        io->eps = (float)ug_p_num(&p, "eps"); /* exact: an fp32 value */
        io->rms = !strcmp(ug_p_str(&p, "k_norm"), "rmsnorm");
        given_tables = ug_p_is(&p, "tables", "given");
        ug_params_free(&p);
    }
    if (bind_io(call, fmt, io, err, errlen)) return -2;
    io->t = (size_t)io->q8->shape[0];
    io->heads = (size_t)io->q8->shape[1];
    io->d = (size_t)io->q8->shape[2];
    io->hid = (size_t)io->x->shape[1];
    io->lora = io->qn ? (size_t)io->qn->shape[1] : 0;
    io->cs_w = (size_t)io->cos->shape[1];
    io->half = given_tables ? io->cs_w / 2 : io->cs_w;
    io->n_slots = (size_t)(io->kc->shape[0] * io->kc->shape[1]);
    return 0;
}

/* This token's RoPE table rows (lo: the first half of the rotation, hi: the second; the
 * same row for position tables) and the row transform (h: a given dense Hadamard in fp32,
 * NULL for the butterfly; u, tile: its scratch). */
typedef struct {
    const float *c_lo, *s_lo, *c_hi, *s_hi;
    size_t half;
    const float *h;
    float *u, *tile;
    ug_prolog_legal legal; /* a legal variant's order of the dense transform's sums (UG_PL_NONE: the sim's) */
    float *col;            /* its scratch: a column of h */
} lip_rot;

/* out[j] = sum_k a[k] * b[k*ld + j] for j < n, fp32 per K tile of 128. */
static void tiled_gemv(const float *a, const float *b, size_t kk, size_t n, size_t ld, float *out, float *tile);
/* out[i*ldo + j] = sum_k A[i*lda + k] * b[k*ld + j], each in a legal variant's order. */
static void legal_gemm_rows(ug_prolog_legal legal, float *col, const float *A, size_t lda, size_t m, const float *b,
                            size_t kk, size_t n, size_t ld, float *out, size_t ldo);

/* RoPE_half on v[0..2*half) with this token's cos/sin. */
static void rope(float *v, const lip_rot *r)
{
    size_t half = r->half;
    for (size_t i = 0; i < half; i++) {
        float a = v[i], b = v[i + half];
        v[i] = a * r->c_lo[i] - b * r->s_lo[i];        /* rounds: fp32 products and difference */
        v[i + half] = b * r->c_hi[i] + a * r->s_hi[i]; /* rounds: fp32 */
    }
}

static void butterfly(float *v, size_t d, ug_variant_code bug);

/* RoPE_half, then the normalised Hadamard (or the given dense transform). */
static void rope_hadamard(float *v, size_t d, const lip_rot *r, ug_variant_code bug)
{
    rope(v, r);
    if (r->h) { /* the given dense transform, u = v.H (bug: H^T loaded by the caller) */
        if (r->legal == UG_PL_SEQ_FMA || r->legal == UG_PL_TILE64)
            legal_gemm_rows(r->legal, r->col, v, d, 1, r->h, d, d, d, r->u, d);
        else
            tiled_gemv(v, r->h, d, d, d, r->u, r->tile);
        for (size_t j = 0; j < d; j++) v[j] = r->u[j];
        return;
    }
    butterfly(v, d, bug);
}

/* The in-place Walsh-Hadamard butterfly times 1/sqrt(D) (bug: unnormalised). */
static void butterfly(float *v, size_t d, ug_variant_code bug)
{
    for (size_t len = 1; len < d; len <<= 1)
        for (size_t i = 0; i < d; i += 2 * len)
            for (size_t j = i; j < i + len; j++) {
                float a = v[j], b = v[j + len];
                v[j] = a + b; /* rounds: fp32 */
                v[j + len] = a - b;
            }
    if (bug == UG_VAR_MUT_HADAMARD_UNNORMALISED) return; /* bug: 1/sqrt(D) left out */
    float inv = 1.0f / sqrtf((float)d);                  /* rounds: fp32 constant */
    for (size_t i = 0; i < d; i++) v[i] *= inv;          /* rounds: fp32 */
}

/* e4m3 conversion the way the device does it: saturating (bug: overflow becomes NaN). */
static float to_e4m3_input(float x, ug_variant_code bug)
{
    if (bug == UG_VAR_MUT_NO_SATURATION && fabsf(x) >= 464.0f) return NAN; /* 464: midpoint 448..480 */
    return x;
}

/* The reference's int8 DynQuant of one finite row: r = 127/amax, codes rne(v*r), scale 1/r
 * (fp32; the store rounds it to fp16). */
static void quantise_int8(const float *v, size_t d, float amax, ug_variant_code bug, float *codes, float *scale)
{
    if (amax == 0.0f) { /* an all-zero row: no division */
        for (size_t i = 0; i < d; i++) codes[i] = 0.0f;
        *scale = 0.0f;
        return;
    }
    float r = (bug == UG_VAR_MUT_SCALE_128 ? 128.0f : 127.0f) / amax; /* rounds: fp32 (bug: 128) */
    for (size_t i = 0; i < d; i++) {
        float y = v[i] * r;                                         /* rounds: fp32 */
        y = bug == UG_VAR_MUT_TRUNC ? truncf(y) : nearbyintf(y);    /* rounds: RNE (bug: toward zero) */
        codes[i] = y > 127.0f ? 127.0f : y < -128.0f ? -128.0f : y; /* saturating int8 */
    }
    *scale = 1.0f / r; /* rounds: fp32, then fp16 at the store */
}

void lip_sim_quantise(const float *v, size_t d, lip8_format fmt, ug_variant_code bug, float *codes, float *scales)
{
    size_t block = fmt == LIP8_MX ? MX_BLOCK : d;
    for (size_t b0 = 0; b0 < d; b0 += block) {
        float amax = 0.0f, scale;
        int finite = 1;
        for (size_t i = b0; i < b0 + block; i++) {
            amax = fmaxf(amax, fabsf(v[i]));
            finite &= isfinite(v[i]) != 0;
        }
        if (!finite) { /* the contract: a block holding NaN or inf has a NaN scale and NaN codes (int8: 0) */
            for (size_t i = b0; i < b0 + block; i++) codes[i] = fmt == LIP8_INT8 ? 0.0f : NAN;
            scales[b0 / block] = NAN;
            continue;
        }
        if (fmt == LIP8_INT8) {
            quantise_int8(v + b0, block, amax, bug, codes + b0, &scales[b0 / block]);
            continue;
        }
        if (fmt == LIP8_FP8) {
            scale = amax / (bug == UG_VAR_MUT_SCALE_440 ? 440.0f : 448.0f); /* rounds: fp32 (bug: 440, not e4m3 max) */
        } else if (amax == 0.0f) {
            scale = ldexpf(1.0f, -127);
        } else {
            int e = ilogbf(amax) - (bug == UG_VAR_MUT_MX_EXP_OFF_BY_ONE ? 7 : 8); /* bug: emax 7 */
            e = e < -127 ? -127 : e > 127 ? 127 : e;
            scale = ldexpf(1.0f, e); /* exact: a power of two */
        }
        for (size_t i = b0; i < b0 + block; i++)
            codes[i] = to_e4m3_input(scale > 0.0f ? v[i] / scale : 0.0f, bug); /* rounds: fp32 (exact for MX) */
        scales[b0 / block] = scale;
    }
}

/* AVX2 where the CPU has it: lanes are output columns, each its own fp32 multiplies and adds
 * in its own order, no contraction (-ffp-contract=off), so the bits are SSE2's. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef KERNEL_CLONES
#define KERNEL_CLONES
#endif

/* out[i*ldo + j] = sum_k A[i*lda + k] * b[k*ld + j] for rows i < m and j < n: fp32, each
 * output summed from 0 in K tiles of 128 (a tile's partial sum from 0 in k order, then added
 * to the output), each row of b read once for the m rows. tile: m*n floats. */
KERNEL_CLONES static void tiled_gemm_rows(const float *A, size_t lda, size_t m, const float *b, size_t kk, size_t n,
                                          size_t ld, float *out, size_t ldo, float *tile)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) out[i * ldo + j] = 0.0f;
    for (size_t k0 = 0; k0 < kk; k0 += K_TILE) {
        size_t len = kk - k0 < K_TILE ? kk - k0 : K_TILE;
        for (size_t j = 0; j < m * n; j++) tile[j] = 0.0f;
        for (size_t k = k0; k < k0 + len; k++)
            for (size_t i = 0; i < m; i++) {
                float a = A[i * lda + k];
                float *restrict ti = tile + i * n;
                const float *restrict bk = b + k * ld;
                for (size_t j = 0; j < n; j++) ti[j] += a * bk[j]; /* rounds: fp32 */
            }
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) out[i * ldo + j] += tile[i * n + j]; /* rounds: fp32 */
    }
}

/* out[j] = sum_k a[k] * b[k*ld + j] for j < n, fp32 per K tile of 128: one row of
 * tiled_gemm_rows. */
static void tiled_gemv(const float *a, const float *b, size_t kk, size_t n, size_t ld, float *out, float *tile)
{
    tiled_gemm_rows(a, kk, 1, b, kk, n, ld, out, n, tile);
}

/* legal_gemm_rows: each output a ug_pl_dot of A's row and b's column j (gathered in col, kk
 * floats, exact), b read column by column. */
static void legal_gemm_rows(ug_prolog_legal legal, float *col, const float *A, size_t lda, size_t m, const float *b,
                            size_t kk, size_t n, size_t ld, float *out, size_t ldo)
{
    for (size_t j = 0; j < n; j++) {
        for (size_t k = 0; k < kk; k++) col[k] = b[k * ld + j]; /* exact */
        for (size_t i = 0; i < m; i++)
            out[i * ldo + j] = ug_pl_dot(A + i * lda, col, kk, legal); /* rounds: fp32, the variant's order */
    }
}

/* The LayerNorm of a legal variant that reorders the sums: v - mean formed once (the same
 * fp32 difference the sim forms twice), its squares summed in the variant's order. */
static void layer_norm_legal(float *v, size_t d, const float *g, const float *b, float eps, ug_prolog_legal legal)
{
    float mean = ug_pl_sum(v, d, legal) / (float)d;        /* rounds: fp32 sum in the variant's order, fp32 div */
    for (size_t i = 0; i < d; i++) v[i] -= mean;           /* rounds: fp32 */
    float ms = ug_pl_dot(v, v, d, legal) / (float)d + eps; /* rounds: fp32 */
    float rstd = 1.0f / sqrtf(ms);                         /* rounds: fp32 */
    for (size_t i = 0; i < d; i++) v[i] = v[i] * rstd * g[i] + b[i]; /* rounds: fp32 */
}

static void layer_norm(float *v, size_t d, const float *g, const float *b, float eps, ug_variant_code bug)
{
    ug_prolog_legal order = ug_pl_sum_order(bug);
    if (order != UG_PL_NONE) {
        layer_norm_legal(v, d, g, b, eps, order);
        return;
    }
    float mean = 0.0f, var = 0.0f;
    for (size_t i = 0; i < d; i++) mean += v[i]; /* rounds: fp32 */
    mean /= (float)d;
    for (size_t i = 0; i < d; i++) var += (v[i] - mean) * (v[i] - mean);                            /* rounds: fp32 */
    float rstd = 1.0f / sqrtf(var / (float)d + eps);                                                /* rounds: fp32 */
    if (bug == UG_VAR_LEGAL_FN_ULPS) rstd = ug_pl_rsqrt(rstd, var / (float)d + eps, UG_PL_FN_ULPS); /* a device rsqrt */
    for (size_t i = 0; i < d; i++) /* rounds: fp32 (bug: beta left out) */
        v[i] = bug == UG_VAR_MUT_LN_NO_BETA ? (v[i] - mean) * rstd * g[i] : (v[i] - mean) * rstd * g[i] + b[i];
}

/* k_norm rmsnorm (the reference suite's k norm): v*rstd*gamma, rstd from the mean of
 * squares, no mean subtraction and no beta. */
static void rms_norm(float *v, size_t d, const float *g, float eps, ug_variant_code bug)
{
    float ss = 0.0f;
    ug_prolog_legal order = ug_pl_sum_order(bug);
    if (order != UG_PL_NONE) /* rounds: fp32, the legal variant's order */
        ss = ug_pl_dot(v, v, d, order);
    else
        for (size_t i = 0; i < d; i++) ss += v[i] * v[i];                                          /* rounds: fp32 */
    float rstd = 1.0f / sqrtf(ss / (float)d + eps);                                                /* rounds: fp32 */
    if (bug == UG_VAR_LEGAL_FN_ULPS) rstd = ug_pl_rsqrt(rstd, ss / (float)d + eps, UG_PL_FN_ULPS); /* a device rsqrt */
    for (size_t i = 0; i < d; i++) v[i] = v[i] * rstd * g[i];                                      /* rounds: fp32 */
}

/* The weights widened once, a row's scratch, and a block of TOKEN_BLOCK tokens: their x
 * rows, x.W_proj and x.W_k (the k path's and weights' products before anything else), and
 * int8 their q_norm rows and exact q_norm.w_qb, computed when the block's first token needs
 * them (lip_sim's blk0, blkn). */
typedef struct {
    float *wk, *wp, *v, *codes, *scales, *cs, *sn, *g, *b, *tile, *zero, *hq, *hk, *u;
    float *xb, *wtb, *kb, *tileb; /* the block's x rows [TB*hid], x.W_proj [TB*H], x.W_k [TB*D]; tileb [TB*max(D,H)] */
    ug_i8_packed wqb;             /* int8: w_qb [L, H*D], packed for ug_i8_gemm */
    int8_t *qn;                   /* int8: the block's q_norm rows [TB*L] */
    int32_t *acc, *pairs;         /* int8: the block's exact q_norm.w_qb [TB*H*D]; ug_i8_gemm's scratch */
    float *qf;                    /* the token's q rows [H*D] (int8: dequantised) */
    float *hu;                    /* given Hadamard: the q rows' transform and its tile [2*H*D] */
    float *col;                   /* the legal variants' GEMM column [max(hid, D)] */
} lip_buf;

static void buf_free(lip_buf *b)
{
    free(b->wk), free(b->wp), free(b->xb), free(b->v), free(b->hq), free(b->acc), free(b->qf), free(b->qn);
    free(b->hu), free(b->col);
    free(b->pairs);
    ug_i8_packed_free(&b->wqb);
}

/* int8's q source buffers (none for the fp8 ops); w_qb is packed by load_weights. */
static int buf_alloc_int8(const lip_io *io, lip_buf *b)
{
    size_t hd = io->heads * io->d;
    if (!io->qn) return 0;
    b->acc = malloc(TOKEN_BLOCK * hd * sizeof *b->acc);
    b->qn = malloc(TOKEN_BLOCK * io->lora + 1);
    b->pairs = malloc((TOKEN_BLOCK * (io->lora / 2 + 1)) * sizeof *b->pairs);
    return b->acc && b->qn && b->pairs ? 0 : -1;
}

static int buf_alloc(const lip_io *io, lip_buf *b)
{
    size_t d = io->d, n = d > io->heads ? d : io->heads;
    memset(b, 0, sizeof *b);
    b->wk = malloc((io->hid * d + 1) * sizeof(float));
    b->wp = malloc((io->hid * io->heads + 1) * sizeof(float));
    b->xb = malloc((TOKEN_BLOCK * (io->hid + io->heads + d + n) + 1) * sizeof(float));
    b->v = malloc((5 * d + 2 * n + 2 * io->cs_w + 2) * sizeof(float)); /* v and tile hold d or H values */
    b->hq = io->hq ? malloc((2 * d * d + d) * sizeof(float)) : NULL;   /* both dense transforms and u */
    b->hu = io->hq ? malloc((2 * io->heads * d + 1) * sizeof(float)) : NULL;
    b->qf = malloc((io->heads * d + 1) * sizeof *b->qf);
    b->col = malloc(((io->hid > d ? io->hid : d) + 1) * sizeof *b->col);
    if (!b->wk || !b->wp || !b->xb || !b->v || (io->hq && (!b->hq || !b->hu)) || !b->qf || !b->col ||
        buf_alloc_int8(io, b)) {
        buf_free(b);
        return -1;
    }
    b->wtb = b->xb + TOKEN_BLOCK * io->hid, b->kb = b->wtb + TOKEN_BLOCK * io->heads,
    b->tileb = b->kb + TOKEN_BLOCK * d;
    b->codes = b->v + n, b->scales = b->codes + d, b->g = b->scales + d, b->b = b->g + d, b->zero = b->b + d;
    b->cs = b->zero + d, b->sn = b->cs + io->cs_w, b->tile = b->sn + io->cs_w;
    if (b->hq) b->hk = b->hq + d * d, b->u = b->hk + d * d;
    return 0;
}

/* A given dense transform widened to fp32 (exact), or its transpose (the bug). */
static void load_dense(const ulpgym_tensor *h, size_t d, int transposed, float *dst)
{
    ug_sim_load(h, 0, d * d, dst);
    for (size_t i = 0; transposed && i < d; i++)
        for (size_t j = i + 1; j < d; j++) {
            float t = dst[i * d + j];
            dst[i * d + j] = dst[j * d + i];
            dst[j * d + i] = t;
        }
}

/* n int8 values of t from offset off, through fp32 (exact both ways). */
static void load_int8(const ulpgym_tensor *t, size_t off, size_t n, int8_t *dst, float *tmp, size_t tmp_n)
{
    for (size_t i0 = 0; i0 < n; i0 += tmp_n) {
        size_t len = n - i0 < tmp_n ? n - i0 : tmp_n;
        ug_sim_load(t, off + i0, len, tmp);
        for (size_t i = 0; i < len; i++) dst[i0 + i] = (int8_t)tmp[i];
    }
}

struct lip_sim {
    lip_io io;
    lip_buf b;
    lip8_format fmt;
    ug_variant_code bug;
    lip_rot rq, rk;
    float cst;             /* 1/sqrt(H*D), the weights' factor */
    size_t blk0, blkn;     /* the token block in b (blkn 0: none yet) */
    int blk_q;             /* int8: the block's q_norm.w_qb computed */
    ug_prolog_legal order; /* a legal variant's order of the GEMM sums (UG_PL_NONE: tiled_gemm_rows') */
};

/* tiled_gemm_rows, or each output in the legal variant's order. */
static void gemm_rows(const lip_sim *s, const float *A, size_t lda, size_t m, const float *b, size_t kk, size_t n,
                      size_t ld, float *out, size_t ldo, float *tile)
{
    if (s->order != UG_PL_NONE)
        legal_gemm_rows(s->order, s->b.col, A, lda, m, b, kk, n, ld, out, ldo);
    else
        tiled_gemm_rows(A, lda, m, b, kk, n, ld, out, ldo, tile);
}

/* Writes slot s of the cache (codes and scales), s counted in [0, n_slots). */
static void store_slot(const lip_io *io, lip8_format fmt, size_t s, const float *codes, const float *scales)
{
    size_t ns = fmt == LIP8_MX ? io->d / MX_BLOCK : 1;
    ug_sim_store(io->kc, s * io->d, io->d, codes);
    ug_sim_store(io->ks, s * ns, ns, scales);
}

/* w_qb, int8, packed for the blocked product (a transient int8 copy). */
static int load_wqb(lip_sim *s)
{
    lip_io *io = &s->io;
    size_t n = io->heads * io->d;
    int8_t *w = malloc(io->lora * n + 1);
    if (!w) return -1;
    load_int8(io->wqb, 0, io->lora * n, w, s->b.v, io->d); /* b.v holds at least d floats */
    int rc = ug_i8_pack(w, n, io->lora, n, &s->b.wqb);
    free(w);
    return rc;
}

static int load_weights(lip_sim *s)
{
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    size_t d = io->d, H = io->heads;
    ug_sim_load(io->wk, 0, io->hid * d, b->wk);
    ug_sim_load(io->wproj, 0, io->hid * H, b->wp);
    ug_sim_load(io->gamma, 0, d, b->g);
    ug_sim_load(io->beta, 0, d, b->b);
    if (io->hq) {
        load_dense(io->hq, d, s->bug == UG_VAR_MUT_HADAMARD_TRANSPOSED, b->hq);
        load_dense(io->hk, d, s->bug == UG_VAR_MUT_HADAMARD_TRANSPOSED, b->hk);
    }
    return io->wqb ? load_wqb(s) : 0;
}

lip_sim *lip_sim_open(const ulpgym_call *call, lip8_format fmt, ug_variant_code bug, char *err, size_t errlen,
                      int *status)
{
    return lip_sim_open_ex(call, fmt, bug, NULL, err, errlen, status);
}

lip_sim *lip_sim_open_ex(const ulpgym_call *call, lip8_format fmt, ug_variant_code bug, const lip_sim_opts *o,
                         char *err, size_t errlen, int *status)
{
    lip_sim *s = calloc(1, sizeof *s);
    *status = -1;
    if (!s) return NULL;
    s->fmt = fmt, s->bug = bug;
    if (open_io(call, fmt, o, &s->io, err, errlen)) {
        free(s);
        *status = -2;
        return NULL;
    }
    if (buf_alloc(&s->io, &s->b)) {
        free(s);
        return NULL;
    }
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    size_t d = io->d, ns = fmt == LIP8_MX ? d / MX_BLOCK : 1;
    if (load_weights(s)) {
        lip_sim_close(s);
        return NULL;
    }
    size_t hi = io->cs_w == io->half ? 0 : io->half; /* the second half's table column */
    s->rq = (lip_rot){b->cs, b->sn, b->cs + hi, b->sn + hi, io->half, b->hq, b->u, b->tile}, s->rk = s->rq;
    s->rk.h = io->hk ? b->hk : NULL;
    s->order = ug_pl_sum_order(bug);
    s->rq.legal = s->rk.legal = s->order, s->rq.col = s->rk.col = b->col;
    for (size_t i = 0; i < d; i++) b->zero[i] = 0.0f;
    float empty_scale = fmt == LIP8_MX ? ldexpf(1.0f, -127) : 0.0f;
    for (size_t i = 0; i < ns; i++) b->scales[i] = empty_scale;
    for (size_t i = 0; i < io->n_slots; i++) store_slot(io, fmt, i, b->zero, b->scales); /* the empty cache */
    /* rounds: fp32 constant (bug: 1/sqrt(D), the heads' factor left out) */
    s->cst = 1.0f / sqrtf((float)((bug == UG_VAR_MUT_WEIGHTS_NO_HEADS ? 1 : io->heads) * d));
    return s;
}

size_t lip_sim_tokens(const lip_sim *s) { return s->io.t; }

/* The block of tokens holding t, from t on: their x rows, x.W_proj and x.W_k (each row's
 * sums those of tiled_gemv, bit for bit). */
static void token_block(lip_sim *s, size_t t)
{
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    if (s->blkn && t >= s->blk0 && t < s->blk0 + s->blkn) return;
    size_t m = io->t - t < TOKEN_BLOCK ? io->t - t : TOKEN_BLOCK, d = io->d, H = io->heads;
    ug_sim_load(io->x, t * io->hid, m * io->hid, b->xb);
    gemm_rows(s, b->xb, io->hid, m, b->wp, io->hid, H, H, b->wtb, H, b->tileb); /* weights */
    gemm_rows(s, b->xb, io->hid, m, b->wk, io->hid, d, d, b->kb, d, b->tileb);  /* k path */
    s->blk0 = t, s->blkn = m, s->blk_q = 0;
}

/* int8: the token's q for all heads, fp32(q_norm.w_qb) * q_norm_scale * w_qb_scale into b->qf. */
static void dequant_q(lip_sim *s, size_t t)
{
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    size_t hd = io->heads * io->d, L = io->lora;
    float sq, sw;
    if (!s->blk_q) { /* the block's exact int32 dots, w_qb read once for its tokens */
        load_int8(io->qn, s->blk0 * L, s->blkn * L, b->qn, b->tile, io->d);
        ug_i8_gemm(b->qn, L, s->blkn, &b->wqb, b->acc, hd, b->pairs);
        s->blk_q = 1;
    }
    const int32_t *acc = b->acc + (t - s->blk0) * hd;
    ug_sim_load(io->qns, t, 1, &sq);
    for (size_t j = 0; j < hd; j++) {
        ug_sim_load(io->wqs, j, 1, &sw);
        b->qf[j] = (float)acc[j] * sq * sw; /* rounds: fp32 cast (exact below 2^24) and products */
    }
}

static void q_path(lip_sim *s, size_t t, const float *q)
{
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    size_t d = io->d, H = io->heads, ns = s->fmt == LIP8_MX ? d / MX_BLOCK : 1;
    float *rows = b->qf;
    if (io->qn && q)
        memcpy(rows, q, H * d * sizeof *rows); /* the caller's q (a fused op's hook) */
    else if (io->qn)
        dequant_q(s, t);
    else
        ug_sim_load(io->q, t * H * d, H * d, rows);
    for (size_t h = 0; h < H; h++) rope(rows + h * d, &s->rq);
    if (s->rq.h) { /* u = v.H for the token's H rows at once: each row's sums those of tiled_gemv */
        gemm_rows(s, rows, d, H, s->rq.h, d, d, d, b->hu, d, b->hu + H * d);
        memcpy(rows, b->hu, H * d * sizeof *rows);
    } else
        for (size_t h = 0; h < H; h++) butterfly(rows + h * d, d, s->bug);
    for (size_t h = 0; h < H; h++) {
        lip_sim_quantise(rows + h * d, d, s->fmt, s->bug, b->codes, b->scales);
        ug_sim_store(io->q8, (t * H + h) * d, d, b->codes);
        ug_sim_store(io->qs, (t * H + h) * ns, ns, b->scales);
    }
}

/* The cache slot token t writes (its slot_mapping entry; -1: none), with the planted slot bugs. */
static long k_slot(const lip_sim *s, size_t t)
{
    float slot;
    ug_sim_load(s->io.slots, t, 1, &slot);
    if (slot < 0) return s->bug == UG_VAR_MUT_PAD_SLOT_WRAPS ? (long)s->io.n_slots - 1 : -1; /* bug: cache[-1] */
    if (s->bug == UG_VAR_MUT_SLOT_OFF_BY_ONE) return ((long)slot + 1) % (long)s->io.n_slots; /* bug: one past */
    return (long)slot;
}

void lip_sim_token(lip_sim *s, size_t t) { lip_sim_token_q(s, t, NULL); }

void lip_sim_token_q(lip_sim *s, size_t t, const float *q)
{
    lip_io *io = &s->io;
    lip_buf *b = &s->b;
    size_t d = io->d, H = io->heads, w = io->cs_w;
    ug_sim_load(io->cos, t * w, w, b->cs);
    ug_sim_load(io->sin, t * w, w, b->sn);
    token_block(s, t);
    q_path(s, t, q);
    const float *wt = b->wtb + (t - s->blk0) * H;            /* x.W_proj */
    for (size_t h = 0; h < H; h++) b->v[h] = wt[h] * s->cst; /* rounds: fp32 */
    ug_sim_store(io->wts, t * H, H, b->v);
    long slot = k_slot(s, t);
    if (slot < 0) return;                                      /* padding token: no cache write */
    memcpy(b->v, b->kb + (t - s->blk0) * d, d * sizeof *b->v); /* x.W_k */
    if (io->rms)
        rms_norm(b->v, d, b->g, io->eps, s->bug);
    else
        layer_norm(b->v, d, b->g, b->b, io->eps, s->bug);
    rope_hadamard(b->v, d, &s->rk, s->bug);
    lip_sim_quantise(b->v, d, s->fmt, s->bug, b->codes, b->scales);
    store_slot(io, s->fmt, (size_t)slot, b->codes, b->scales);
}

void lip_sim_close(lip_sim *s)
{
    if (!s) return;
    buf_free(&s->b);
    free(s);
}

static int lip8_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    /* the format is the op's identity: one kernel serves the three ops */
    lip8_format fmt = !strcmp(call->op, "lightning_indexer_prolog_quant_mxfp8") ? LIP8_MX
                      : !strcmp(call->op, "lightning_indexer_prolog_quant_fp8") ? LIP8_FP8
                                                                                : LIP8_INT8;
    int status;
    lip_sim *s = lip_sim_open(call, fmt, bug, err, errlen, &status);
    if (!s) return status;
    for (size_t t = 0; t < lip_sim_tokens(s); t++) lip_sim_token(s, t);
    lip_sim_close(s);
    return 0;
}

const ug_kernel_fn ug_sim_lightning_indexer_prolog_quant_fp8 = lip8_kernel;

const ug_kernel_fn ug_sim_lightning_indexer_prolog_quant_mxfp8 = lip8_kernel;

const ug_kernel_fn ug_sim_lightning_indexer_prolog_quant = lip8_kernel;
