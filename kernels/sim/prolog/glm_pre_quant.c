/* glm_pre_quant.c — the device computation of glm_attention_pre_quant for one token (the
 * model and its use: glm_pre_quant.h), and the walk over a call's tokens that binds
 * and stores every exported stage (ug_gpq_kernel, with a per-token hook for the fusion). */
#include "kernels/sim/prolog/glm_pre_quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/sim/prolog/prolog_legal.h"
#include "kernels/sim/simlib.h"

#define GPQ_PRESCALE_ABOVE 0x1p32f /* rows with a larger |v| are scaled before squaring */

/* sum v^2 over n values in fp32: 64 lanes (simlib), or a legal variant's order. */
static float sumsq(const float *v, size_t n, ug_variant_code bug)
{
    if (bug == UG_VAR_LEGAL_SEQ_FMA) return ug_sim_sumsq_seq_fma(v, n);      /* rounds: fp32, one per FMA */
    if (bug == UG_VAR_LEGAL_TILE64) return ug_pl_dot(v, v, n, UG_PL_TILE64); /* rounds: fp32 tiles, pairwise */
    return ug_sim_sumsq_lanes(v, n);                                         /* rounds: fp32 */
}

/* den = sqrt(sum v^2 / n + eps) in fp32; a row whose max |v| is above 2^32 is scaled by
 * 2^-k first (exact), so the squares stay finite: den = 2^k sqrt(ss'/n + eps 4^-k). */
static float norm_den(const float *v, size_t n, float eps, float *scratch, ug_variant_code bug)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(v[i])); /* exact; NaN is skipped */
    int k = 0;
    if (bug != UG_VAR_MUT_SUMSQ_OVERFLOW && isfinite(amax) && amax > GPQ_PRESCALE_ABOVE) frexpf(amax, &k);
    if (k == 0) return sqrtf(sumsq(v, n, bug) / (float)n + eps);  /* rounds: fp32 */
    for (size_t i = 0; i < n; i++) scratch[i] = ldexpf(v[i], -k); /* exact: a power of two */
    float ss = sumsq(scratch, n, bug);                            /* rounds: fp32 */
    return ldexpf(sqrtf(ss / (float)n + ldexpf(eps, -2 * k)), k); /* rounds: fp32 (eps*4^-k may underflow) */
}

/* out = bf16(v/den*g + b) over n values (b NULL: the no-bias bug). */
static void norm_bias(const float *v, size_t n, const float *g, const float *b, float eps, float *scratch, float *out,
                      ug_variant_code bug)
{
    float den = norm_den(v, n, eps, scratch, bug);
    for (size_t i = 0; i < n; i++)
        out[i] = ug_sim_round_bf16(v[i] / den * g[i] + (b ? b[i] : 0.0f)); /* rounds: fp32 div, mul, add; bf16 */
}

/* code = sat_int8(rint(n*s + o)) (bugs: round half away, wrap). */
static void quantise(const float *n, const float *s, const float *o, size_t H, int8_t *code, ug_variant_code bug)
{
    for (size_t i = 0; i < H; i++) {
        float v = n[i] * s[i] + o[i]; /* rounds: fp32, the sum only (the product is exact) */
        if (isnan(v)) {
            code[i] = 0;
            continue;
        }
        float q = bug == UG_VAR_MUT_HALF_AWAY ? roundf(v) : rintf(v); /* rounds: RNE to an integer */
        if (bug == UG_VAR_MUT_WRAP && fabsf(q) < 0x1p31f)
            code[i] = (int8_t)(uint8_t)(uint32_t)(int32_t)q; /* bug */
        else
            code[i] = (int8_t)fminf(fmaxf(q, -128.0f), 127.0f); /* saturating */
    }
}

/* mm = bf16((code.W + bias)*deq) for every column (bug: bias added after the scale): the
 * cube's int32 accumulators (exact, |acc| < 2^30 at the declared sizes) take one row of W
 * per code, so W is read in its stored [H, cols] layout. */
static void gemm_row(const ug_gpq_dev *m, const int8_t *code, float *mm, ug_variant_code bug)
{
    size_t cols = m->cols;
    int32_t *acc = m->acc;
    memset(acc, 0, cols * sizeof *acc);
    for (size_t k = 0; k < m->H; k++) {
        const int8_t *w = m->w + k * cols;
        int32_t a = code[k];
        if (a)
            for (size_t c = 0; c < cols; c++) acc[c] += a * w[c]; /* exact */
    }
    for (size_t c = 0; c < cols; c++)
        mm[c] = bug == UG_VAR_MUT_BIAS_AFTER_DEQ
                    ? ug_sim_round_bf16((float)acc[c] * m->deq[c] + (float)m->qb[c]) /* bug */
                    : ug_sim_round_bf16((float)((int64_t)acc[c] + m->qb[c]) *
                                        m->deq[c]); /* rounds: int -> fp32, fp32 product, bf16 */
}

/* RoPE_half on x[0, R) in place, bf16 (bug: the interleaved pairs). */
static void rope(float *x, const float *cs, const float *sn, size_t R, ug_variant_code bug)
{
    size_t half = R / 2;
    for (size_t i = 0; i < half; i++) {
        size_t a = bug == UG_VAR_MUT_ROPE_INTERLEAVED ? 2 * i : i,
               b = bug == UG_VAR_MUT_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        float x1 = x[a], x2 = x[b];
        x[a] = ug_sim_round_bf16(x1 * cs[i] - x2 * sn[i]); /* rounds: fp32 products and sub, bf16 */
        x[b] = ug_sim_round_bf16(x2 * cs[i] + x1 * sn[i]); /* rounds: fp32 products and add, bf16 */
    }
}

void ug_gpq_dev_token(const ug_gpq_dev *m, const float *x, const float *res, const float *cs, const float *sn,
                      ug_gpq_tok *tk, ug_variant_code bug)
{
    size_t H = m->H, D = m->D, heads = m->Nq + m->Nk;
    for (size_t i = 0; i < H; i++) tk->r[i] = x[i] + res[i]; /* rounds: fp32 add */
    norm_bias(tk->r, H, m->nw, m->nb, m->eps, m->scratch, tk->n, bug);
    quantise(tk->n, m->sr, m->off, H, tk->code, bug);
    gemm_row(m, tk->code, tk->mm, bug);
    for (size_t h = 0; h < heads; h++) {
        int kh = h >= m->Nq;
        norm_bias(tk->mm + h * D, D, m->hw[kh], bug == UG_VAR_MUT_QK_NORM_NO_BIAS ? NULL : m->hb[kh], m->eps,
                  m->scratch, tk->qkn + h * D, bug);
        memcpy(tk->qk + h * D, tk->qkn + h * D, D * sizeof *tk->qk);
        rope(tk->qk + h * D, cs, sn, m->R, bug);
    }
}

/* n elements of an input into a malloc'd fp32 array (exact widening). */
static float *load_vec(const ulpgym_call *call, const char *name, size_t n)
{
    const ulpgym_tensor *t = ug_sim_in(call, name, -1, NULL, 0);
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (v && t) ug_sim_load(t, 0, n, v);
    return t ? v : (free(v), NULL);
}

int ug_gpq_dev_load(ug_gpq_dev *m, const ulpgym_call *call)
{
    static const char *const names[] = {"norm_weight",   "norm_bias",   "scale_reciprocal", "offset",
                                        "q_norm_weight", "q_norm_bias", "k_norm_weight",    "k_norm_bias"};
    float **dst[] = {&m->nw, &m->nb, &m->sr, &m->off, &m->hw[0], &m->hb[0], &m->hw[1], &m->hb[1]};
    m->cols = (m->Nq + 2 * m->Nk) * m->D;
    for (int i = 0; i < 8; i++)
        if (!(*dst[i] = load_vec(call, names[i], i < 4 ? m->H : m->D))) return -1;
    if (!(m->deq = load_vec(call, "deq_scale", m->cols))) return -1;
    const ulpgym_tensor *w = ug_sim_in(call, "qkv_weight", 2, NULL, 0), *qb = ug_sim_in(call, "quant_bias", 1, NULL, 0);
    m->acc = malloc((m->cols ? m->cols : 1) * sizeof *m->acc);
    m->qb = malloc((m->cols ? m->cols : 1) * sizeof *m->qb);
    m->scratch = malloc((m->H > m->D ? m->H : m->D) * sizeof *m->scratch);
    if (!w || !qb || !m->acc || !m->qb || !m->scratch) return -1;
    m->w = w->data;                                   /* int8 [H, cols], read in place */
    memcpy(m->qb, qb->data, m->cols * sizeof *m->qb); /* exact: int32 */
    return 0;
}

void ug_gpq_dev_free(ug_gpq_dev *m)
{
    float *f[] = {m->nw, m->nb, m->sr, m->off, m->deq, m->hw[0], m->hw[1], m->hb[0], m->hb[1], m->scratch};
    for (int i = 0; i < 10; i++) free(f[i]);
    free(m->qb), free(m->acc);
}

int ug_gpq_tok_alloc(const ug_gpq_dev *m, ug_gpq_tok *tk)
{
    size_t qk = (m->Nq + m->Nk) * m->D;
    tk->r = malloc((2 * m->H + m->cols + 2 * qk) * sizeof *tk->r);
    tk->code = malloc(m->H ? m->H : 1);
    if (!tk->r || !tk->code) return free(tk->r), free(tk->code), -1;
    tk->n = tk->r + m->H, tk->mm = tk->n + m->H, tk->qkn = tk->mm + m->cols, tk->qk = tk->qkn + qk;
    return 0;
}

void ug_gpq_tok_free(ug_gpq_tok *tk) { free(tk->r), free(tk->code); }

/* ---- the walk over a call's tokens (ug_gpq_kernel) ---- */

static int pq_bind(const ulpgym_call *call, ug_gpq_io *io, ug_gpq_dev *m, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    m->H = (size_t)ug_p_int(&p, "hidden"), m->Nq = (size_t)ug_p_int(&p, "q_heads");
    m->Nk = (size_t)ug_p_int(&p, "kv_heads"), m->D = (size_t)ug_p_int(&p, "head_dim");
    m->R = (size_t)ug_p_int(&p, "rotary_dim"), m->eps = (float)ug_p_num(&p, "eps"); /* exact: an fp32 value */
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&io->x, &io->res, &io->cos, &io->sin, &io->q,    &io->k,
                                     &io->v, &io->rr,  &io->n,   &io->n8,  &io->qkmm, &io->qkn};
    return ug_sim_bind(call, "x residual cos sin q k v residual_res n n_i8 qk_mm qk_norm", slots, err, errlen) ? -2 : 0;
}

/* Stores token t's exported values (rounds: bf16 stores of values already bf16, exact;
 * residual_res from the fp32 r). */
static void pq_store(const ug_gpq_io *io, const ug_gpq_dev *m, const ug_gpq_tok *tk, size_t t, float *codes)
{
    size_t H = m->H, qs = m->Nq * m->D, kv = m->Nk * m->D, qk = qs + kv;
    for (size_t i = 0; i < H; i++) codes[i] = tk->code[i]; /* exact */
    ug_sim_store(io->rr, t * H, H, tk->r);                 /* rounds: bf16 */
    ug_sim_store(io->n, t * H, H, tk->n);
    ug_sim_store(io->n8, t * H, H, codes);
    ug_sim_store(io->qkmm, t * qk, qk, tk->mm);
    ug_sim_store(io->v, t * kv, kv, tk->mm + qk);
    ug_sim_store(io->qkn, t * qk, qk, tk->qkn);
    ug_sim_store(io->q, t * qs, qs, tk->qk);
    ug_sim_store(io->k, t * kv, kv, tk->qk + qs);
}

int ug_gpq_kernel(const ulpgym_call *call, char *err, size_t errlen, ug_variant_code bug, ug_gpq_token_fn fn, void *ctx)
{
    ug_gpq_io io;
    ug_gpq_dev m = {0};
    ug_gpq_tok tk = {0};
    int rc = pq_bind(call, &io, &m, err, errlen);
    if (rc) return rc;
    size_t T = (size_t)io.x->shape[0], H = m.H, hr = m.R / 2;
    float *row = malloc((3 * H + 2 * hr + 1) * sizeof *row);
    if (!row || ug_gpq_dev_load(&m, call) || ug_gpq_tok_alloc(&m, &tk)) rc = -1;
    for (size_t t = 0; t < T && !rc; t++) {
        float *xr = row, *rs = xr + H, *codes = rs + H, *cs = codes + H, *sn = cs + hr;
        ug_sim_load(io.x, t * H, H, xr);
        ug_sim_load(io.res, t * H, H, rs);
        ug_sim_load(io.cos, t * hr, hr, cs);
        ug_sim_load(io.sin, t * hr, hr, sn);
        ug_gpq_dev_token(&m, xr, rs, cs, sn, &tk, bug);
        pq_store(&io, &m, &tk, t, codes);
        if (fn) fn(ctx, &m, &tk, t);
    }
    free(row);
    ug_gpq_tok_free(&tk);
    ug_gpq_dev_free(&m);
    return rc;
}
