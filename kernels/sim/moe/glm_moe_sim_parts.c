/* glm_moe_sim_parts.c — the device side of the GLM-4.5 MoE parts (glm_moe_sim_parts.h): the
 * router (moved from glm_select_experts.c), the int8 shared expert (moved from
 * glm_ffn_shared_expert_quant.c; the output row is left to the caller, which stores it
 * or adds the routed experts to it), the routed SwiGLU row (moe_grouped_gemm's) and the
 * fused ops' front (moved from glm_moe_fusion.c and glm_moe_fusion_mix.c), and the
 * legal variants' other orders of the same fp32 arithmetic (gmoe_legal; GMOE_LEGAL_NONE
 * runs the sim kernels' code unchanged) and their approximate sigmoid and silu (legal_fn_ulps:
 * each result moved by 3 fp32 ulps, ug_sim_fn_ulps; the contracts' device model allows
 * sigmoid and silu within 4 ulps, and the certified bound charges each as one function). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/ktile.h"
#include "kernels/sim/moe/glm_moe_sim_parts.h"
#include "kernels/sim/simlib.h"

/* ---- legal variants' dot products ---- */

#define GMOE_LEGAL_TILE 64

/* K-tiles of 64, each summed sequentially in fp32, the tile partials added pairwise. */
static float dot_tile64(const float *a, const float *b, size_t n)
{
    float part[64], sum[64]; /* partials of up to 64 tiles at a time, then the groups' sums */
    size_t ng = 0;
    for (size_t g0 = 0; g0 < n; g0 += 64 * GMOE_LEGAL_TILE) { /* n up to 2^17: groups of 64 tiles */
        size_t np = 0;
        for (size_t t = g0; t < n && t < g0 + 64 * GMOE_LEGAL_TILE; t += GMOE_LEGAL_TILE) {
            size_t len = n - t < GMOE_LEGAL_TILE ? n - t : GMOE_LEGAL_TILE;
            float s = 0.0f;
            for (size_t k = 0; k < len; k++) s += a[t + k] * b[t + k]; /* rounds: fp32 mul, fp32 add */
            part[np++] = s;
        }
        sum[ng++] = ug_pairwise_sum_f32(part, np);
        if (ng == 64) { /* never for n <= 2^18; keeps the buffer bounded for any n */
            sum[0] = ug_pairwise_sum_f32(sum, ng);
            ng = 1;
        }
    }
    return ug_pairwise_sum_f32(sum, ng);
}

float gmoe_dot(gmoe_legal how, const float *a, const float *b, size_t n)
{
    if (how == GMOE_LEGAL_SEQ_FMA) return ug_fma_dot_f32(a, b, n);
    if (how == GMOE_LEGAL_TILE64) return dot_tile64(a, b, n);
    if (how == GMOE_LEGAL_K_REVERSE) {
        float acc = 0.0f;
        for (size_t k = n; k-- > 0;) acc += a[k] * b[k]; /* rounds: fp32 mul, fp32 add */
        return acc;
    }
    return ug_ktile_dot_f32(a, b, n);
}

/* ---- router ---- */

void gmoe_se_cfg_read(const ug_params *p, long E, long k, ug_variant_code bug, gmoe_se_cfg *c)
{
    *c = (gmoe_se_cfg){.E = E,
                       .k = k,
                       .ng = ug_p_int(p, "num_expert_group"),
                       .tg = ug_p_int(p, "topk_group"),
                       .top2 = ug_p_is(p, "group_score", "top2_sum"),
                       .renorm = (int)ug_p_int(p, "renormalize"),
                       .rsf = (float)ug_p_num(p, "routed_scaling_factor"), /* exact: already an fp32 value */
                       .bug = bug};
    c->per = c->E / c->ng;
}

int gmoe_se_alloc(const gmoe_se_cfg *c, gmoe_se_work *w)
{
    size_t E = (size_t)c->E, G = (size_t)c->ng;
    w->s = malloc((3 * E + G) * sizeof *w->s);
    w->idx = malloc((E + G) * sizeof *w->idx);
    w->used = malloc(E + G);
    if (!w->s || !w->idx || !w->used) return gmoe_se_free(w), -1;
    w->b = w->s + E, w->gs = w->b + E;
    return 0;
}

void gmoe_se_free(gmoe_se_work *w)
{
    free(w->s), free(w->idx), free(w->used);
    w->s = NULL, w->idx = NULL, w->used = NULL;
}

/* a ranks before b: NaN first, then larger, ties to the lower index. */
static int before(float a, long ia, float b, long ib)
{
    if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ia < ib);
    return a > b || (a == b && ia < ib);
}

/* The n best indices of v[0..m) into out, best first (selection, as a sort network would). */
static void top_n(const float *v, long m, long n, long *out, unsigned char *used)
{
    for (long i = 0; i < m; i++) used[i] = 0;
    for (long r = 0; r < n; r++) {
        long best = -1;
        for (long i = 0; i < m; i++)
            if (!used[i] && (best < 0 || before(v[i], i, v[best], best))) best = i;
        used[best] = 1;
        out[r] = best;
    }
}

/* Dropped groups' experts excluded from b (set to -inf; the mask-zero bug: 0). */
static void group_mask(const gmoe_se_cfg *c, float *b, float *gs, long *idx, unsigned char *used)
{
    for (long g = 0; g < c->ng; g++) {
        long two[2], n = c->top2 && c->per > 1 ? 2 : 1;
        top_n(b + g * c->per, c->per, n, two, used);
        gs[g] = b[g * c->per + two[0]] + (n == 2 ? b[g * c->per + two[1]] : 0.0f); /* rounds: fp32 */
    }
    top_n(gs, c->ng, c->tg, idx, used);
    for (long g = 0; g < c->ng; g++) used[c->E + g] = 0;
    for (long i = 0; i < c->tg; i++) used[c->E + idx[i]] = 1;
    for (long e = 0; e < c->E; e++)
        if (!used[c->E + e / c->per])
            b[e] = c->bug == UG_VAR_MUT_MASK_ZERO ? 0.0f : -INFINITY; /* bug: 0, not excluded */
}

void gmoe_se_token(const gmoe_se_cfg *c, const float *x, const float *bias, float *w, float *ids, gmoe_se_work *wk)
{
    float *s = wk->s, *b = wk->b;
    for (long e = 0; e < c->E; e++) {
        float z = c->stable && x[e] < 0.0f ? expf(x[e]) : 1.0f; /* rounds: fp32 exp */
        s[e] =
            c->stable && x[e] < 0.0f ? z / (1.0f + z) : 1.0f / (1.0f + expf(-x[e])); /* rounds: fp32 exp, add, divide */
        s[e] = ug_sim_fn_ulps(s[e], x[e], c->fn_ulps); /* legal_fn_ulps: a device's sigmoid (else unchanged) */
        b[e] = c->bug == UG_VAR_MUT_UNBIASED_CHOICE ? s[e] : s[e] + bias[e]; /* rounds: fp32 (bug: bias left out) */
    }
    if (c->bug != UG_VAR_MUT_NO_GROUP_LIMIT && c->tg < c->ng) group_mask(c, b, wk->gs, wk->idx, wk->used);
    top_n(b, c->E, c->k, wk->idx, wk->used);
    float sum = 0.0f;
    for (long j = 0; j < c->k; j++) {
        long e = wk->idx[j];
        ids[j] = (float)e;                                                   /* exact: ids < 2^24 */
        w[j] = c->bug == UG_VAR_MUT_BIAS_IN_WEIGHTS ? s[e] + bias[e] : s[e]; /* bug: biased score */
        if (c->bug == UG_VAR_MUT_SCALE_BEFORE_RENORM) w[j] *= c->rsf; /* bug: scaled before the sum; rounds: fp32 */
        sum += w[j];                                                  /* rounds: fp32 */
    }
    for (long j = 0; j < c->k; j++) {
        if (c->renorm && c->bug != UG_VAR_MUT_NO_RENORM) w[j] /= sum; /* rounds: fp32 (bug: skipped) */
        if (c->bug != UG_VAR_MUT_SCALE_BEFORE_RENORM) w[j] *= c->rsf; /* rounds: fp32 */
    }
}

/* The fused ops' gate: fp32 gate weight staged once, fp32 K-tiles (glm_gate's model). */
int gmoe_gate_router_run(const ulpgym_call *call, const gmoe_se_cfg *c, float *w, float *ids, char *err, size_t errlen)
{
    const ulpgym_tensor *x, *gw, *bias, *lg, *tw, *ti, **slots[] = {&x, &gw, &bias, &lg, &tw, &ti};
    if (ug_sim_bind(call, "x gate_w e_score_correction_bias router_logits topk_weights topk_ids", slots, err, errlen))
        return -2;
    size_t T = (size_t)x->shape[0], h = (size_t)x->shape[1], E = (size_t)c->E, K = (size_t)c->k;
    gmoe_se_work wk;
    float *wf = malloc((E * h + h + 2 * E) * sizeof *wf);
    if (!wf || gmoe_se_alloc(c, &wk)) return free(wf), -1;
    float *xr = wf + E * h, *o = xr + h, *bf = o + E;
    ug_sim_load(gw, 0, E * h, wf);
    ug_sim_load(bias, 0, E, bf);
    for (size_t t = 0; t < T; t++) {
        ug_sim_load(x, t * h, h, xr);
        for (size_t e = 0; e < E; e++) o[e] = gmoe_dot(c->legal, xr, wf + e * h, h); /* rounds: fp32 K-tiles */
        ug_sim_store(lg, t * E, E, o);                                               /* exact: fp32 */
        gmoe_se_token(c, o, bf, w + t * K, ids + t * K, &wk);
        ug_sim_store(tw, t * K, K, w + t * K);
        ug_sim_store(ti, t * K, K, ids + t * K); /* exact: integers */
    }
    free(wf);
    gmoe_se_free(&wk);
    return 0;
}

/* ---- int8 shared expert ---- */

/* DynQuant of v[0..n): codes into q (integers as fp32), returns the scale (0 for a zero
 * row, NaN for a row holding NaN or inf, whose codes are 0). amax_all >= 0: the amax to
 * use instead of the row's (the per-tensor-scale bug). */
static float dynquant_row(const float *v, size_t n, float *q, ug_variant_code bug, float amax_all)
{
    float amax = 0.0f;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            finite = 0;
        else
            amax = fmaxf(amax, fabsf(v[i])); /* exact */
    }
    if (amax_all >= 0.0f) amax = amax_all; /* bug: one scale for every token */
    for (size_t i = 0; i < n; i++) q[i] = 0.0f;
    if (!finite) return NAN;
    if (amax == 0.0f) return 0.0f;
    float scale =
        amax / (bug == UG_VAR_MUT_SCALE_128 ? 128.0f : 127.0f); /* rounds: fp32 (bug: 128 is not int8's max) */
    if (bug == UG_VAR_MUT_CLIP_982) scale *= 0.982f; /* bug: a static calibration's clip ratio on a dynamic scale */
    for (size_t i = 0; i < n; i++) {
        float y = bug == UG_VAR_MUT_X127 ? v[i] * 127.0f / amax /* bug: v*127 overflows fp32 first */
                                         : v[i] / scale;        /* rounds: fp32 */
        y = bug == UG_VAR_MUT_TRUNC       ? truncf(y)           /* bug: toward zero */
            : bug == UG_VAR_MUT_HALF_AWAY ? roundf(y)           /* bug: a tie goes away from zero */
                                          : rintf(y);           /* rounds: RNE to an integer */
        q[i] = fminf(fmaxf(y, -128.0f), 127.0f);                /* saturating int8 */
    }
    return scale;
}

/* sum_k a[k]*b[k] over int8 codes, as the cube accumulates it (bug: in int16, wrapping). */
static int32_t int_dot(const int8_t *a, const int8_t *b, size_t n, ug_variant_code bug)
{
    int32_t acc = 0;
    int16_t acc16 = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t p = (int32_t)a[k] * b[k]; /* exact */
        acc += p;
        acc16 = (int16_t)(uint16_t)((uint16_t)acc16 + (uint16_t)p); /* the bug's two's-complement wrap */
    }
    return bug == UG_VAR_MUT_INT16_ACC ? acc16 : acc;
}

/* An int8 [rows, cols] tensor transposed into [cols][rows] int8 codes (each output
 * column a contiguous reduction); stage is scratch of rows*cols floats. */
static void load_codes_t(const ulpgym_tensor *w, size_t rows, size_t cols, int8_t *dst, float *stage)
{
    ug_sim_load(w, 0, rows * cols, stage); /* exact */
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = (int8_t)stage[r * cols + c];
}

static void to_codes(const float *q, size_t n, int8_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = (int8_t)q[i];
}

void gmoe_ffn_token(gmoe_ffn *k, size_t t, ug_variant_code bug)
{
    size_t h = k->h, I = k->I;
    ug_sim_load(k->x, t * h, h, k->xr);
    float sx = dynquant_row(k->xr, h, k->q, bug, bug == UG_VAR_MUT_TENSOR_SCALE ? k->x_amax : -1.0f);
    ug_sim_store(k->x8, t * h, h, k->q);
    ug_sim_store(k->xs, t, 1, &sx);
    to_codes(k->q, h, k->xq8);
    for (size_t c = 0; c < 2 * I; c++) {        /* rounds: int32 -> fp32, two fp32 products, bf16 */
        if (bug == UG_VAR_LEGAL_SCALES_FIRST) { /* legal: the scales' product first */
            k->gu[c] = ug_sim_round_bf16((float)int_dot(k->xq8, k->w13t + c * h, h, bug) * (k->sw13[c] * sx));
            continue;
        }
        float v = (float)int_dot(k->xq8, k->w13t + c * h, h, bug) * k->sw13[c];
        k->gu[c] = ug_sim_round_bf16(v * sx);
    }
    for (size_t i = 0; i < I; i++) {
        float g = k->gu[i], u = k->gu[I + i];
        if (bug == UG_VAR_MUT_SILU_UP) g = k->gu[I + i], u = k->gu[i];             /* bug: silu on the up half */
        float s = g / (1.0f + expf(-g));                                           /* rounds: fp32 silu */
        if (bug == UG_VAR_LEGAL_FN_ULPS) s = ug_sim_fn_ulps(s, g, UG_SIM_FN_ULPS); /* legal: a device's silu */
        k->ar[i] = ug_sim_round_bf16(s * u);                                       /* rounds: fp32 product, bf16 */
    }
    ug_sim_store(k->a, t * I, I, k->ar); /* exact: already bf16 */
    float sa = dynquant_row(k->ar, I, k->q, bug, -1.0f);
    ug_sim_store(k->a8, t * I, I, k->q);
    ug_sim_store(k->as, t, 1, &sa);
    to_codes(k->q, I, k->aq8);
    for (size_t j = 0; j < h; j++) /* rounds: int32 -> fp32, two fp32 products */
        k->o[j] = bug == UG_VAR_LEGAL_SCALES_FIRST ? (float)int_dot(k->aq8, k->w2t + j * I, I, bug) * (k->sw2[j] * sa)
                                                   : (float)int_dot(k->aq8, k->w2t + j * I, I, bug) * k->sw2[j] * sa;
}

/* k's buffers: int8 weights and code rows, fp32 scales and rows (freed by gmoe_ffn_close). */
static int ffn_alloc(gmoe_ffn *k)
{
    size_t h = k->h, I = k->I;
    k->w13t = malloc(3 * I * h + h + I);
    k->sw13 = malloc((6 * I + 4 * h) * sizeof *k->sw13);
    if (!k->w13t || !k->sw13) return -1;
    k->w2t = k->w13t + 2 * I * h, k->xq8 = k->w2t + I * h, k->aq8 = k->xq8 + h;
    k->sw2 = k->sw13 + 2 * I, k->xr = k->sw2 + h, k->q = k->xr + h, k->o = k->q + (h > I ? h : I);
    k->gu = k->o + h, k->ar = k->gu + 2 * I;
    return 0;
}

/* The amax of every finite element of x (the per-tensor-scale bug's). */
static float tensor_amax(gmoe_ffn *k)
{
    float amax = 0.0f;
    for (size_t t = 0; t < k->T; t++) {
        ug_sim_load(k->x, t * k->h, k->h, k->xr);
        for (size_t i = 0; i < k->h; i++)
            if (isfinite(k->xr[i])) amax = fmaxf(amax, fabsf(k->xr[i]));
    }
    return amax;
}

int gmoe_ffn_open(gmoe_ffn *k, const ulpgym_call *call, ug_variant_code bug, char *err, size_t errlen)
{
    *k = (gmoe_ffn){0};
    const ulpgym_tensor **slots[] = {&k->x, &k->w13, &k->s13, &k->w2, &k->s2, &k->x8, &k->xs, &k->a, &k->a8, &k->as};
    if (ug_sim_bind(call, "x w13 w13_scale w2 w2_scale x_i8 x_scale a a_i8 a_scale", slots, err, errlen)) return -2;
    k->T = (size_t)k->x->shape[0], k->h = (size_t)k->x->shape[1], k->I = (size_t)k->w2->shape[0];
    float *stage = malloc(2 * k->I * k->h * sizeof *stage);
    if (!stage || ffn_alloc(k)) {
        free(stage);
        gmoe_ffn_close(k);
        return -1;
    }
    load_codes_t(k->w13, k->h, 2 * k->I, k->w13t, stage);
    load_codes_t(k->w2, k->I, k->h, k->w2t, stage);
    free(stage);
    ug_sim_load(k->s13, 0, 2 * k->I, k->sw13);
    ug_sim_load(k->s2, 0, k->h, k->sw2);
    if (bug == UG_VAR_MUT_TENSOR_SCALE) k->x_amax = tensor_amax(k);
    return 0;
}

void gmoe_ffn_close(gmoe_ffn *k)
{
    free(k->w13t), free(k->sw13);
    k->w13t = NULL, k->sw13 = NULL;
}

int gmoe_ffn_run(const ulpgym_call *call, ug_variant_code bug, float *rows, char *err, size_t errlen)
{
    gmoe_ffn k;
    int rc = gmoe_ffn_open(&k, call, bug, err, errlen);
    if (rc) return rc;
    for (size_t t = 0; t < k.T; t++) {
        gmoe_ffn_token(&k, t, bug);
        memcpy(rows + t * k.h, k.o, k.h * sizeof *rows);
    }
    gmoe_ffn_close(&k);
    return 0;
}

/* ---- routed SwiGLU row ---- */

void gmoe_swiglu_row(const float *x, const float *w1t, const float *w3t, size_t h, size_t I, int swap, float *a)
{
    gmoe_swiglu_row_legal(x, w1t, w3t, h, I, swap, GMOE_LEGAL_NONE, a);
}

void gmoe_swiglu_row_legal(const float *x, const float *w1t, const float *w3t, size_t h, size_t I, int swap,
                           gmoe_legal how, float *a)
{
    for (size_t i = 0; i < I; i++) {
        float g = gmoe_dot(how, x, w1t + i * h, h); /* GMOE_LEGAL_NONE: ug_ktile_dot_f32 */
        float u = gmoe_dot(how, x, w3t + i * h, h);
        if (swap) { /* bug: gate and up projections swapped */
            float t = g;
            g = u;
            u = t;
        }
        float s = g / (1.0f + expf(-g));                                         /* rounds: fp32 silu */
        if (how == GMOE_LEGAL_FN_ULPS) s = ug_sim_fn_ulps(s, g, UG_SIM_FN_ULPS); /* legal: a device's silu */
        a[i] = ug_sim_round_bf16(s * u); /* rounds: fp32 mul, then bf16 write-back */
    }
}

/* ---- routed experts ---- */

typedef struct {
    const ulpgym_tensor *x, *w1, *w3, *w2, *act;
    size_t T, h, E, I, k;
    float *w1t, *w3t, *w2t, *stage, *xr, *a, *y; /* y [T*k][h]: each slot's down projection */
} gmoe_rt;

static int rt_alloc(gmoe_rt *r)
{
    size_t hi = r->h * r->I > 0 ? r->h * r->I : 1;
    r->w1t = malloc(4 * hi * sizeof(float));
    r->xr = malloc((r->h + r->I + r->T * r->k * r->h) * sizeof(float));
    if (!r->w1t || !r->xr) return -1;
    r->w3t = r->w1t + hi, r->w2t = r->w3t + hi, r->stage = r->w2t + hi;
    r->a = r->xr + r->h, r->y = r->a + r->I;
    return 0;
}

/* The legal variant's order of a routed-part bug code (GMOE_LEGAL_NONE: the sim's). */
static gmoe_legal rt_legal(gmoe_rt_bug bug)
{
    return bug == GMOE_RT_LEGAL_SEQ_FMA   ? GMOE_LEGAL_SEQ_FMA
           : bug == GMOE_RT_LEGAL_TILE64  ? GMOE_LEGAL_TILE64
           : bug == GMOE_RT_LEGAL_FN_ULPS ? GMOE_LEGAL_FN_ULPS
                                          : GMOE_LEGAL_NONE;
}

/* Expert e over every (token, slot) that chose it. */
static void rt_expert(gmoe_rt *r, size_t e, const float *ids, gmoe_rt_bug bug)
{
    size_t h = r->h, I = r->I, hi = h * I, staged = 0;
    for (size_t ts = 0; ts < r->T * r->k; ts++) {
        if (ids[ts] != (float)e) continue;
        if (!staged) {
            ug_ktile_load_transposed(r->w1, e * hi, h, I, r->w1t, r->stage);
            ug_ktile_load_transposed(r->w3, e * hi, h, I, r->w3t, r->stage);
            ug_ktile_load_transposed(r->w2, e * hi, I, h, r->w2t, r->stage);
            staged = 1;
        }
        ug_sim_load(r->x, ts / r->k * h, h, r->xr);
        gmoe_swiglu_row_legal(r->xr, r->w1t, r->w3t, h, I, bug == GMOE_RT_SWAP, rt_legal(bug),
                              r->a);           /* rounds: fp32, bf16 act */
        ug_sim_store(r->act, ts * I, I, r->a); /* exact: already bf16 */
        for (size_t n = 0; n < h; n++) r->y[ts * h + n] = gmoe_dot(rt_legal(bug), r->a, r->w2t + n * I, I);
    }
}

/* acc[t,:] += w[t,j]*y[t,j,:], slot by slot in fp32 (bugs: bf16 running sum, last slot dropped). */
static void rt_combine(const gmoe_rt *r, const float *w, float *acc, gmoe_rt_bug bug)
{
    size_t k = bug == GMOE_RT_DROP_LAST && r->k > 1 ? r->k - 1 : r->k; /* bug: off by one */
    if (bug == GMOE_RT_LEGAL_SEQ_FMA || bug == GMOE_RT_LEGAL_TILE64) { /* legal: fmaf, or the slots last to first */
        for (size_t t = 0; t < r->T; t++)
            for (size_t jj = 0; jj < k; jj++) {
                size_t j = bug == GMOE_RT_LEGAL_TILE64 ? k - 1 - jj : jj;
                float wj = w[t * r->k + j];
                const float *y = r->y + (t * r->k + j) * r->h;
                float *a = acc + t * r->h;
                for (size_t n = 0; n < r->h; n++)
                    a[n] = bug == GMOE_RT_LEGAL_SEQ_FMA ? fmaf(wj, y[n], a[n]) /* rounds: fp32, once */
                                                        : a[n] + wj * y[n];    /* rounds: fp32 mul, add */
            }
        return;
    }
    for (size_t t = 0; t < r->T; t++)
        for (size_t j = 0; j < k; j++)
            for (size_t n = 0; n < r->h; n++) {
                float v = acc[t * r->h + n] + w[t * r->k + j] * r->y[(t * r->k + j) * r->h + n]; /* rounds: fp32 */
                acc[t * r->h + n] = bug == GMOE_RT_BF16_ACC ? ug_sim_round_bf16(v) : v; /* bug: bf16 partials */
            }
}

int gmoe_routed_run(const ulpgym_call *call, const float *w, const float *ids, size_t k, float *acc, gmoe_rt_bug bug,
                    char *err, size_t errlen)
{
    gmoe_rt r = {0};
    const ulpgym_tensor **slots[] = {&r.x, &r.w1, &r.w3, &r.w2, &r.act};
    if (ug_sim_bind(call, "x expert_w1 expert_w3 expert_w2 act", slots, err, errlen)) return -2;
    r.T = (size_t)r.x->shape[0], r.h = (size_t)r.x->shape[1], r.E = (size_t)r.w1->shape[0];
    r.I = (size_t)r.w1->shape[2], r.k = k;
    int rc = rt_alloc(&r);
    if (!rc) {
        for (size_t e = 0; e < r.E; e++) rt_expert(&r, e, ids, bug);
        rt_combine(&r, w, acc, bug);
    }
    free(r.w1t), free(r.xr);
    return rc;
}

/* ---- the fused ops' front ---- */

ug_variant_code gmoe_mut_se(int mut)
{
    return mut == UG_VAR_MUT_NO_RENORM || mut == UG_VAR_MUT_UNBIASED_CHOICE ? (ug_variant_code)mut : UG_VAR_SIM;
}

ug_variant_code gmoe_mut_ffn(int mut)
{
    return mut == UG_VAR_MUT_TENSOR_SCALE || mut == UG_VAR_LEGAL_SCALES_FIRST || mut == UG_VAR_LEGAL_FN_ULPS
               ? (ug_variant_code)mut
               : UG_VAR_SIM;
}

gmoe_rt_bug gmoe_mut_rt(int mut)
{
    return mut == UG_VAR_MUT_BF16_COMBINE  ? GMOE_RT_BF16_ACC
           : mut == UG_VAR_MUT_DROP_LAST   ? GMOE_RT_DROP_LAST
           : mut == UG_VAR_MUT_SWIGLU_SWAP ? GMOE_RT_SWAP
           : mut == UG_VAR_LEGAL_SEQ_FMA   ? GMOE_RT_LEGAL_SEQ_FMA
           : mut == UG_VAR_LEGAL_TILE64    ? GMOE_RT_LEGAL_TILE64
           : mut == UG_VAR_LEGAL_FN_ULPS   ? GMOE_RT_LEGAL_FN_ULPS
                                           : GMOE_RT_OK;
}

gmoe_legal gmoe_mut_legal(int mut)
{
    return mut == UG_VAR_LEGAL_SEQ_FMA   ? GMOE_LEGAL_SEQ_FMA
           : mut == UG_VAR_LEGAL_TILE64  ? GMOE_LEGAL_TILE64
           : mut == UG_VAR_LEGAL_FN_ULPS ? GMOE_LEGAL_FN_ULPS
                                         : GMOE_LEGAL_NONE;
}

int gmoe_fused_route(gmoe_fused *f, const ulpgym_call *call, int mut, int has_form, char *err, size_t errlen)
{
    *f = (gmoe_fused){0};
    const ulpgym_tensor **slots[] = {&f->out, &f->tw};
    if (ug_sim_bind(call, "out topk_weights", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    gmoe_se_cfg_read(&p, ug_p_int(&p, "experts"), f->tw->shape[1], gmoe_mut_se(mut), &f->c);
    f->routed = has_form && ug_p_is(&p, "form", "routed");
    f->c.stable = 1;                  /* the fused kernels' sigmoid keeps subnormal scores of logits below -88 */
    f->c.legal = gmoe_mut_legal(mut); /* the legal variants' gate order (GMOE_LEGAL_NONE: the sim's) */
    f->c.fn_ulps = mut == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0; /* legal_fn_ulps: a device's sigmoid */
    ug_params_free(&p);
    size_t TK = (size_t)f->tw->shape[0] * (size_t)f->tw->shape[1];
    f->n_out = (size_t)f->out->shape[0] * (size_t)f->out->shape[1];
    f->w = calloc(2 * TK + f->n_out + 1, sizeof *f->w);
    if (!f->w) return -1;
    f->ids = f->w + TK;
    f->acc = f->ids + TK;
    return gmoe_gate_router_run(call, &f->c, f->w, f->ids, err, errlen);
}

void gmoe_fused_free(gmoe_fused *f)
{
    free(f->w);
    f->w = f->ids = f->acc = NULL;
}
