/* flash_attention_mha.c — param checks, input builder and exact oracle of
 * flash_attention_mha, the variable-length MHA forward in the packed TND layout:
 *
 *     s_tj = scale * q[t,h,:].k[j,h,:]     for the keys j of t's batch element that t sees
 *     o[t,h,:] = sum_j exp(s_tj - m) v[j,h,:] / sum_j exp(s_tj - m),   m = max_j s_tj
 *     lse[t,h] = m + ln sum_j exp(s_tj - m)                              (natural log)
 *     softmax_max[t,h] = m,  softmax_sum[t,h] = sum_j exp(s_tj - m)       (optional: the reference's M, L)
 *
 * Batch element b owns query tokens cu_seqlens_q[b]..cu_seqlens_q[b+1] and key tokens
 * cu_seqlens_k[b]..; with causal, local query i sees key j iff j <= i + Lk - Lq (bottom-
 * right aligned, as FlashAttention-2 defines it). A row that sees no key (causal with
 * Lk < Lq) is defined as o = 0, lse = -inf in both kernel and oracle; special values
 * follow the op's semantics text (ug_fa_row, ug_attn_weighted_v). scale is an fp32 attribute
 * (default 1/sqrt(D) rounded to fp32). The spec rounds nothing mid-way: the device's cast
 * of P to the input dtype is the kernel's approximation, not the math.
 *
 * Primary standard pypto: lse 2.5e-5 / 0.005 as docs/STANDARDS.md lists it; o rtol 2^-7 as
 * listed but atol 1e-3 instead of 1e-4. Why: a correct FA2 kernel casts P to the input
 * dtype before P.V, which perturbs o by about u * sqrt(sum_j p_j^2 v_j^2) / l (u the
 * dtype's unit roundoff); for fp16 (u = 2^-11) that stays inside 1e-4, for bf16
 * (u = 2^-8) it does not where o is small through cancellation. Measured on the nightly
 * plan with the correct sim kernel: atol 1e-4 fails 42 of 49 bf16 cases, 2.5e-4 fails 27,
 * 5e-4 fails 4, 1e-3 fails none (every fp16 case passes at 1e-4). So the widening is
 * per dtype (adjust_rule): fp16 cases keep the listed 1e-4, bf16 cases get 1e-3. */
#include <math.h>
#include <stdlib.h>

#include "oracles/attention/flash_attention_common.h"
#include "oracles/verdict.h"

/* Fills cu_seqlens_q/k. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    ug_fa_build_cu(c, &p);
    return 0;
}

/* The max of a row with a NaN or +inf score (ug_fa_row returned -1): NaN if a score is
 * NaN, else +inf. Scores are classified in double, as ug_attn_weights does. */
static double special_row_max(const ug_fa_params *p, const double *q, const double *k, long t, long h)
{
    long b = ug_fa_batch_of(p, t), n = ug_fa_visible(p, b, t - p->cu_q[b]);
    size_t d = (size_t)p->dim, hd = (size_t)p->heads * d;
    const double *qr = q + ((size_t)t * (size_t)p->heads + (size_t)h) * d;
    const double *kr = k + (size_t)p->cu_k[b] * hd + (size_t)h * d;
    for (long j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < d; i++) s += qr[i] * kr[(size_t)j * hd + i];
        if (isnan(s * p->scale)) return NAN;
    }
    return INFINITY;
}

/* The row values of the outputs indexed by row r = t*H + h: lse, and the optional softmax
 * row max m and sum l (the reference's M and L); n as ug_fa_row returned it (-1: a NaN or
 * +inf score, where l and lse are NaN and m is special_max; 0: no key seen). */
static ug_num row_value(ug_ar *ar, int out, long n, ug_num m, ug_num total, double special_max)
{
    if (n < 0) return ug_c(ar, out == 2 ? special_max : NAN);
    if (n == 0) return ug_c(ar, out == 3 ? 0.0 : -INFINITY); /* l = 0; lse = m = -inf */
    return out == 1 ? ug_add(ar, m, ug_log(ar, total)) : out == 2 ? m : total;
}

/* Output indices: 0 o [Tq,H,D], 1 lse, 2 softmax_max, 3 softmax_sum [Tq,H]; row r = t*H + h of all. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    size_t D = (size_t)p.dim, H = (size_t)p.heads, pos[4] = {0, 0, 0, 0}, maxk = 1;
    for (long b = 0; b < p.batch; b++) maxk = (size_t)p.lk[b] > maxk ? (size_t)p.lk[b] : maxk;
    ug_num *e = malloc(maxk * sizeof *e);
    unsigned char *live = malloc(maxk);
    double *col = malloc(maxk * sizeof *col);
    ug_num *o_row = malloc(D * sizeof *o_row);
    if (!e || !live || !col || !o_row) {
        free(e), free(live), free(col), free(o_row);
        return -1;
    }
    for (size_t r = 0; r < (size_t)p.tq * H; r++) {
        int want_o = pos[0] < sel->n[0] && sel->idx[0][pos[0]] / D == r, want_row = 0;
        for (int out = 1; out < sel->n_out; out++) want_row |= pos[out] < sel->n[out] && sel->idx[out][pos[out]] == r;
        if (!want_o && !want_row) continue;
        size_t mark = ug_ar_mark(ar);
        long t = (long)(r / H), h = (long)(r % H), b = ug_fa_batch_of(&p, t);
        ug_num m, total;
        long n = ug_fa_row(ar, &p, q->values, k->values, t, h, c->spec.dtype, e, live, &m, &total);
        const double *v0 = v->values + (size_t)p.cu_k[b] * H * D + (size_t)h * D;
        size_t end;
        int whole = ug_attn_row_dense(sel, 0, r, D, &pos[0], &end) && n > 0; /* most of the row: all of it at once */
        if (whole) ug_attn_weighted_v_cols(ar, e, live, v0, H * D, n, D, total, col, o_row);
        for (; pos[0] < end; pos[0]++) {
            size_t d = sel->idx[0][pos[0]] % D;
            ug_num x = whole ? o_row[d]
                       : n > 0 ? ug_attn_weighted_v(ar, e, live, v0 + d, H * D, n, total, col)
                               : ug_c(ar, n ? NAN : 0.0);
            ug_ar_emit(ar, 0, pos[0], x);
        }
        for (int out = 1; out < sel->n_out; out++)
            if (pos[out] < sel->n[out] && sel->idx[out][pos[out]] == r)
                ug_ar_emit(ar, out, pos[out]++,
                           row_value(ar, out, n, m, total, n < 0 && out == 2 ? special_row_max(&p, q->values, k->values, t, h) : 0));
        ug_ar_release(ar, mark);
    }
    free(e);
    free(live);
    free(col);
    free(o_row);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[t->ndim - 1];
    g->rows = t->numel / g->cols;
    /* o rows are (token, head): a 64-token query tile spans 64*H rows */
    g->row_tile = out == 0 ? 64 * (size_t)t->shape[1] : 64;
    g->col_tile = out == 0 ? 64 : 16;
}

/* bf16 cases only: o's atol 1e-4 -> 1e-3 (see the file header). */
static void adjust_rule(const ug_case *c, int out, const double *g, size_t n, ug_output_rule *rule)
{
    (void)g;
    (void)n;
    if (out == 0 && c->spec.dtype == UG_DT_BF16) rule->pypto_atol = 1e-3;
}

/* Scratch for the case memory estimate: the sim kernel's fp32 copies of q, k, v, o, lse, m and l;
 * the oracle's row arrays over the longest key sequence and one row of o. */
static double scratch(const ug_params *P)
{
    ug_fa_params p;
    ug_fa_read(P, &p);
    double maxk = 1, HD = (double)p.heads * (double)p.dim;
    for (long b = 0; b < p.batch; b++) maxk = (double)p.lk[b] > maxk ? (double)p.lk[b] : maxk;
    return 4 * (2 * (double)p.tq * HD + 2 * (double)p.tk * HD + 3 * (double)p.tq * (double)p.heads) +
           maxk * (UG_NUM_BYTES + 1 + 8) + (double)p.dim * UG_NUM_BYTES;
}

const ug_op_def ug_opdef_flash_attention_mha = {
    .op = UG_OP_FLASH_ATTENTION_MHA, .decl.check = ug_fa_check, .build = build, .oracle = oracle, .geometry = geometry,
    .adjust_rule = adjust_rule, .scratch = scratch};
