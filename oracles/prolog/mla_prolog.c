/* mla_prolog.c — param checks, input builder and exact oracle of mla_prolog:
 * DeepSeek's MLA prolog (mla_prolog_quant without quantisation), bf16 throughout.
 *     c_q = bf16(RMSNorm(bf16(x·W_dq); γ_q, eps))
 *     q   = bf16(c_q·W_uq), per head n: q_nope = q[n, :d_nope], q_rope = q[n, d_nope:]
 *     q_nope_abs[t,n,:] = q_nope·W_uk[n]             (-> kv_lora)
 *     q_rope[t,n,:]     = RoPE_half(q_rope; cos[t], sin[t])
 *     kv  = bf16(x·W_dkv)                              (kv_lora + d_rope)
 *     kv_cache[slot_mapping[t]] = RMSNorm(kv[:kv_lora]; γ_kv, eps)
 *     kr_cache[slot_mapping[t]] = RoPE_half(kv[kv_lora:]; cos[t], sin[t])
 *     q_norm[t,:] = c_q                                (optional: the reference test's qNorm)
 * RoPE_half: out_i = v_i·cos_i − v_{i+d/2}·sin_i, out_{i+d/2} = v_{i+d/2}·cos_{i+d/2} + v_i·sin_{i+d/2}.
 * params.rope_layout = interleaved_to_half (the reference suite's DeepSeek-V3.2 prolog) rotates
 * the pairs (v_2i, v_2i+1) instead and writes them in the half order:
 *     out_i = v_2i·cos_i − v_2i+1·sin_i, out_{i+d/2} = v_2i+1·cos_{i+d/2} + v_2i·sin_{i+d/2}
 * (the same cos/sin tables: entry i and i+d/2 share angle i, and out_i, out_{i+d/2} are
 * the pair rotated by it); the default half is the layout above.
 *
 * Roundings that are part of the spec ("bf16 throughout", docs/OPERATORS.md): the results
 * that the operator hands from stage to stage as bf16 tensors — x·W_dq (the reference's
 * q_a_proj, cast to bf16 before the norm as its golden and kernel do), c_q, q and kv — are
 * rounded to bf16 (ug_round) before the next stage; the RMSNorm statistics and every
 * other step are exact; each output is correctly rounded once to bf16. Cache slots that
 * no token writes keep their input value exactly; slot -1 marks a padding token that
 * writes nothing. A flip of an intermediate between kernel and oracle (the exact value
 * within the kernel's fp32 error of a bf16 boundary) is rare in the plan's draws.
 * Primary standard: certified (docs/STANDARDS.md "Which rule carries each op's precision
 * claim"): where x spans 2^-23..2^17 in a row or gamma_q takes both signs, x.W_dq and
 * c_q.W_uq cancel and those flips become common, so pypto (mla_prolog_quant's q
 * tolerances, atol 0.005, rtol 2^-7, and the "silent" 1e-3 / 1e-3 on the caches, kept
 * stored) failed the correct kernel on fuzz cases certified passes; certified catches every
 * mutant pypto catches, and more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/oracle.h"
#include "oracles/prolog/mla_common.h"
#include "op_params.h"

/* The params the oracle and the builder use, read from the case's parsed params. */
typedef struct {
    long T, h, Lq, N, Lkv, dn, dr, bs, nb;
    double eps; /* fp32 value */
    const char *slots;
    int rope_inter; /* params.rope_layout == interleaved_to_half */
} mla_params;

static void read_params(const ug_case *c, mla_params *p)
{
    const ug_params *P = &c->params;
    const ug_mla_prolog_params *params = UG_P(mla_prolog, P);
    *p = (mla_params){params->tokens, params->h,          params->q_lora,
                      params->heads,  params->kv_lora,    params->d_nope,
                      params->d_rope, params->block_size, params->blocks,
                      params->eps,    params->slots_name, !strcmp(params->rope_layout_name, "interleaved_to_half")};
}

/* What ranges cannot say: an even d_rope, a cache with a slot per token (size is the case
 * memory budget's). */
static int check(const ug_params *P, char *err, size_t errlen)
{
    const ug_mla_prolog_params *params = UG_P(mla_prolog, P);
    long T = params->tokens, dr = params->d_rope, bs = params->block_size, nb = params->blocks,
         need = (T + bs - 1) / bs;
    if (dr % 2) return snprintf(err, errlen, "mla_prolog: param \"d_rope\" must be even"), -2;
    if (nb < need)
        return snprintf(err, errlen, "mla_prolog: param \"blocks\" = %ld must be >= ceil(tokens/block_size) = %ld", nb,
                        need),
               -2;
    return 0;
}

/* Fills slot_mapping and the cos/sin tables. */
static int build(ug_case *c, char *err, size_t errlen)
{
    mla_params p;
    read_params(c, &p);
    if (ug_mla_fill_slots(c->spec.seed, p.T, p.nb * p.bs, p.bs, p.slots, ug_case_input_mut(c, "slot_mapping")))
        return snprintf(err, errlen, "mla_prolog: out of memory"), -1;
    ug_mla_fill_rope(c->spec.seed, p.T, p.dr, ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"));
    return 0;
}

typedef struct {
    mla_params p;
    const double *x, *wdq, *gq, *wuq, *wuk, *wdkv, *gkv, *cs, *sn, *kv_in, *kr_in;
    ug_num *cq, *q, *v; /* scratch: c_q [Lq], q of one head [dn+dr], GEMM outputs [max] */
} mla_oracle;

/* c_q of token t into m->cq: bf16(RMSNorm(bf16(x[t]·W_dq); γ_q)) (spec roundings); m->v[0..Lq)
 * keeps the RMSNorm before the last rounding, the optional output q_norm (rounded once to
 * bf16 there). */
static void mla_cq(ug_ar *ar, mla_oracle *m, size_t t)
{
    size_t h = (size_t)m->p.h, Lq = (size_t)m->p.Lq;
    ug_dot_d_cols(ar, m->x + t * h, m->wdq, Lq, h, Lq, m->v);
    for (size_t j = 0; j < Lq; j++) m->v[j] = ug_round(ar, m->v[j], UG_DT_BF16); /* spec rounding: q_a_proj */
    ug_num rstd = ug_mla_rstd(ar, m->v, Lq, m->p.eps, m->cq);
    for (size_t j = 0; j < Lq; j++) {
        m->v[j] = ug_mul(ar, ug_mul(ar, m->v[j], rstd), ug_c(ar, m->gq[j]));
        m->cq[j] = ug_round(ar, m->v[j], UG_DT_BF16);
    }
}

/* Output 4 (the optional q_norm [T, Lq]): c_q before its bf16 rounding, token by token. Its
 * certified bound is the DEVICE evaluation of the very numbers q is computed from. */
static void mla_emit_qnorm(ug_ar *ar, mla_oracle *m, const ug_selection *sel)
{
    size_t Lq = (size_t)m->p.Lq, k = 0;
    while (k < sel->n[4]) {
        size_t t = sel->idx[4][k] / Lq, mark = ug_ar_mark(ar);
        mla_cq(ar, m, t);
        for (; k < sel->n[4] && sel->idx[4][k] / Lq == t; k++) ug_ar_emit(ar, 4, k, m->v[sel->idx[4][k] % Lq]);
        ug_ar_release(ar, mark);
    }
}

/* Outputs 0 (q_nope_abs) and 1 (q_rope): rows t*N + n, walked in order. */
static void mla_emit_query(ug_ar *ar, mla_oracle *m, const ug_selection *sel)
{
    size_t N = (size_t)m->p.N, Lkv = (size_t)m->p.Lkv, dn = (size_t)m->p.dn, dr = (size_t)m->p.dr, dq = dn + dr;
    size_t Lq = (size_t)m->p.Lq, k0 = 0, k1 = 0;
    while (k0 < sel->n[0] || k1 < sel->n[1]) {
        size_t r0 = k0 < sel->n[0] ? sel->idx[0][k0] / Lkv : SIZE_MAX,
               r1 = k1 < sel->n[1] ? sel->idx[1][k1] / dr : SIZE_MAX;
        size_t t = (r0 < r1 ? r0 : r1) / N, mark = ug_ar_mark(ar);
        mla_cq(ar, m, t);
        for (size_t n = 0; n < N; n++) {
            size_t row = t * N + n;
            int want0 = k0 < sel->n[0] && sel->idx[0][k0] / Lkv == row,
                want1 = k1 < sel->n[1] && sel->idx[1][k1] / dr == row;
            if (!want0 && !want1) continue;
            size_t mark_n = ug_ar_mark(ar);
            for (size_t c = 0; c < dq; c++) /* spec rounding: q is bf16 */
                m->q[c] = ug_round(ar, ug_dot_nd(ar, m->cq, m->wuq + n * dq + c, N * dq, Lq), UG_DT_BF16);
            for (; k0 < sel->n[0] && sel->idx[0][k0] / Lkv == row; k0++)
                ug_ar_emit(ar, 0, k0, ug_dot_nd(ar, m->q, m->wuk + n * dn * Lkv + sel->idx[0][k0] % Lkv, Lkv, dn));
            for (; k1 < sel->n[1] && sel->idx[1][k1] / dr == row; k1++)
                ug_ar_emit(ar, 1, k1,
                           ug_mla_rope_at(ar, m->q + dn, m->cs + t * dr, m->sn + t * dr, dr, sel->idx[1][k1] % dr,
                                          m->p.rope_inter));
            ug_ar_release(ar, mark_n);
        }
        ug_ar_release(ar, mark);
    }
}

/* kv of token t into m->v: bf16(x[t]·W_dkv) (spec rounding); the c_kv part only if asked. */
static void mla_kv(ug_ar *ar, mla_oracle *m, size_t t, int need_ckv)
{
    size_t h = (size_t)m->p.h, Lkv = (size_t)m->p.Lkv, w = Lkv + (size_t)m->p.dr;
    size_t j0 = need_ckv ? 0 : Lkv;
    ug_dot_d_cols(ar, m->x + t * h, m->wdkv + j0, w, h, w - j0, m->v + j0);
    for (size_t j = j0; j < w; j++) m->v[j] = ug_round(ar, m->v[j], UG_DT_BF16);
}

/* Outputs 2 (kv_cache) and 3 (kr_cache): rows are cache slots; inv[slot] = token or -1. */
static void mla_emit_cache(ug_ar *ar, mla_oracle *m, const ug_selection *sel, const long *inv)
{
    size_t Lkv = (size_t)m->p.Lkv, dr = (size_t)m->p.dr, k2 = 0, k3 = 0;
    while (k2 < sel->n[2] || k3 < sel->n[3]) {
        size_t r2 = k2 < sel->n[2] ? sel->idx[2][k2] / Lkv : SIZE_MAX,
               r3 = k3 < sel->n[3] ? sel->idx[3][k3] / dr : SIZE_MAX;
        size_t s = r2 < r3 ? r2 : r3, mark = ug_ar_mark(ar);
        long t = inv[s];
        ug_num rstd = {0};
        if (t >= 0) {
            mla_kv(ar, m, (size_t)t, r2 == s);
            if (r2 == s) rstd = ug_mla_rstd(ar, m->v, Lkv, m->p.eps, m->cq);
        }
        for (; k2 < sel->n[2] && sel->idx[2][k2] / Lkv == s; k2++) {
            size_t j = sel->idx[2][k2] % Lkv;
            ug_ar_emit(ar, 2, k2,
                       t < 0 ? ug_c(ar, m->kv_in[s * Lkv + j])
                             : ug_mul(ar, ug_mul(ar, m->v[j], rstd), ug_c(ar, m->gkv[j])));
        }
        for (; k3 < sel->n[3] && sel->idx[3][k3] / dr == s; k3++) {
            size_t i = sel->idx[3][k3] % dr;
            ug_ar_emit(ar, 3, k3,
                       t < 0 ? ug_c(ar, m->kr_in[s * dr + i])
                             : ug_mla_rope_at(ar, m->v + Lkv, m->cs + (size_t)t * dr, m->sn + (size_t)t * dr, dr, i,
                                              m->p.rope_inter));
        }
        ug_ar_release(ar, mark);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    mla_oracle m;
    read_params(c, &m.p);
    m.x = ug_case_input(c, "x")->values;
    m.wdq = ug_case_input(c, "w_dq")->values;
    m.gq = ug_case_input(c, "gamma_q")->values;
    m.wuq = ug_case_input(c, "w_uq")->values;
    m.wuk = ug_case_input(c, "w_uk")->values;
    m.wdkv = ug_case_input(c, "w_dkv")->values;
    m.gkv = ug_case_input(c, "gamma_kv")->values;
    m.cs = ug_case_input(c, "cos")->values;
    m.sn = ug_case_input(c, "sin")->values;
    m.kv_in = ug_case_input(c, "kv_cache_in")->values;
    m.kr_in = ug_case_input(c, "kr_cache_in")->values;
    const double *slot = ug_case_input(c, "slot_mapping")->values;
    size_t S = (size_t)(m.p.nb * m.p.bs), nv = (size_t)(m.p.Lkv + m.p.dr);
    size_t ncq = (size_t)m.p.Lq > (size_t)m.p.Lkv ? (size_t)m.p.Lq : (size_t)m.p.Lkv;
    if ((size_t)m.p.Lq > nv) nv = (size_t)m.p.Lq;
    long *inv = malloc(S * sizeof *inv);
    m.cq = malloc(ncq * sizeof *m.cq);
    m.q = malloc((size_t)(m.p.dn + m.p.dr) * sizeof *m.q);
    m.v = malloc(nv * sizeof *m.v);
    int rc = inv && m.cq && m.q && m.v ? 0 : -1;
    if (!rc) {
        for (size_t s = 0; s < S; s++) inv[s] = -1;
        for (long t = 0; t < m.p.T; t++)
            if (slot[t] >= 0) inv[(size_t)slot[t]] = t; /* builder's slots are distinct */
        mla_emit_query(ar, &m, sel);
        mla_emit_cache(ar, &m, sel, inv);
        if (sel->n_out > 4) mla_emit_qnorm(ar, &m, sel);
    }
    free(inv);
    free(m.cq);
    free(m.q);
    free(m.v);
    return rc;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    if (out == 4) { /* q_norm [T, Lq]: a row per token, the kernel's 16-token tiles */
        ug_geom_last_dim(t, 16, 128, g);
        return;
    }
    g->cols = (size_t)t->shape[2];
    g->rows = (size_t)(t->shape[0] * t->shape[1]);
    /* q outputs: rows are (token, head), the kernel's 16-token tile edges; caches: rows
     * are slots, the block edges matter */
    g->row_tile = out < 2 ? 16 * (size_t)t->shape[1] : (size_t)t->shape[1];
    g->col_tile = 128;
    if (out < 2) return;
    /* caches: the slots the first and last tokens write, and their neighbours (an
     * off-by-one scatter lands there; the rest of the cache is its input, untouched) */
    const ug_tensor *slots = ug_case_input(c, "slot_mapping");
    for (size_t i = 0; i < slots->numel; i++) {
        double s = ug_tload(slots, i);
        if (s >= 0) ug_geom_hot(g, (size_t)s, 1);
        if (g->n_hot >= 3) break;
    }
    for (size_t i = slots->numel; i-- > 0;) {
        double s = ug_tload(slots, i);
        if (s >= 0) {
            ug_geom_hot(g, (size_t)s, 1);
            break;
        }
    }
}

/* Scratch for the case memory estimate: the sim kernel's fp32 weights and its staging
 * buffer (the largest weight again), the builder's slot permutation and the oracle's
 * inverse slot map. */
static double scratch(const ug_params *P)
{
    const ug_mla_prolog_params *params = UG_P(mla_prolog, P);
    double h = (double)params->h, Lq = (double)params->q_lora, N = (double)params->heads, Lkv = (double)params->kv_lora,
           dn = (double)params->d_nope, dr = (double)params->d_rope;
    double wdq = h * Lq, wuq = N * (dn + dr) * Lq, wuk = N * Lkv * dn, wdkv = h * (Lkv + dr);
    return 4 * (wdq + wuq + wuk + wdkv + fmax(fmax(wdq, wuq), fmax(wuk, wdkv)) + 2 * h + 4 * (Lq + Lkv + dr)) +
           16 * (double)params->blocks * (double)params->block_size;
}

const ug_op_def ug_opdef_mla_prolog = {
    .decl.check = check, .build = build, .oracle = oracle, .geometry = geometry, .scratch = scratch};
