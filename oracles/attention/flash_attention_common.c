/* flash_attention_common.c — the shared check, inputs and the exact softmax row of
 * the flash-attention operators (see flash_attention_common.h).
 *
 * The sequence lengths are one string param ("seqlens": "Q[:K],...") rather than two
 * lists so that a generalization-space grid can vary them as one axis and every grid
 * point stays a legal batch. */
#include "oracles/attention/flash_attention_common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ug_fa_check(const ug_params *P, char *err, size_t errlen)
{
    const char *op = P->decl->op;
    long tq = ug_p_int(P, "total_q"), tk = ug_p_int(P, "total_k");
    if (ug_p_int(P, "batch") > UG_FA_MAX_BATCH) {
        snprintf(err, errlen, "%s: param \"seqlens\" has %ld entries, at most %d allowed", op, ug_p_int(P, "batch"),
                 UG_FA_MAX_BATCH);
        return -2;
    }
    if (tq < 1 || tk < 1) {
        snprintf(err, errlen, "%s: param \"seqlens\" needs >= 1 query and key token in all", op);
        return -2;
    }
    return 0;
}

void ug_fa_read(const ug_params *P, ug_fa_params *p)
{
    const long *l;
    p->batch = (long)ug_p_list(P, "seqlens", &l);
    p->heads = ug_p_int(P, "heads");
    p->dim = ug_p_int(P, "head_dim");
    p->causal = (int)ug_p_int(P, "causal");
    p->scale = ug_p_num(P, "scale");
    if (p->scale == 0.0) p->scale = (float)(1.0 / sqrt((double)p->dim)); /* rounds: fp32 attribute */
    p->cu_q[0] = p->cu_k[0] = 0;
    for (long b = 0; b < p->batch; b++) {
        p->lq[b] = l[2 * b];
        p->lk[b] = l[2 * b + 1];
        p->cu_q[b + 1] = p->cu_q[b] + p->lq[b];
        p->cu_k[b + 1] = p->cu_k[b] + p->lk[b];
    }
    p->tq = p->cu_q[p->batch];
    p->tk = p->cu_k[p->batch];
}

void ug_fa_build_cu(ug_case *c, const ug_fa_params *p)
{
    ug_tensor *cq = ug_case_input_mut(c, "cu_seqlens_q"), *ck = ug_case_input_mut(c, "cu_seqlens_k");
    for (long b = 0; b <= p->batch; b++) {
        ug_dtype_store(UG_DT_INT32, cq->data, (size_t)b, (double)p->cu_q[b]);
        ug_dtype_store(UG_DT_INT32, ck->data, (size_t)b, (double)p->cu_k[b]);
    }
}

long ug_fa_visible(const ug_fa_params *p, long b, long i)
{
    if (!p->causal) return p->lk[b];
    long n = i + 1 + p->lk[b] - p->lq[b]; /* bottom-right aligned: key j visible iff j <= i + lk - lq */
    return n < 0 ? 0 : n > p->lk[b] ? p->lk[b] : n;
}

long ug_fa_batch_of(const ug_fa_params *p, long t)
{
    long b = 0;
    while (b + 1 < p->batch && p->cu_q[b + 1] <= t) b++;
    return b;
}

/* The device's error on a weight p of the fp8 form (the device bound only, ug_dev_err): p quantised to e4m3
 * per row and key tile with the scale 448/max over the tile (max <= 1 in units of the
 * row's weights, whose max is 1): half an e4m3 ulp is at most 2^-4 |p| in the normal range
 * and the subnormal step 2^-10 (times max/448 <= 1/448) below it, whatever the tiling;
 * plus five fp32 roundings: p * 448/max, 448/max, its reciprocal, code * max/448, and V's
 * dequantisation (a relative error on the product p v, counted on p). */
static ug_num fp8_p_round(ug_ar *ar, ug_num p) { return ug_dev_err(ar, p, 0x1p-4 + 5 * UG_DEV_U, 0x1p-10 / 448); }

/* The weights of ug_attn_weights from the scores of the live keys in e: e_j = exp(s_j - m),
 * m the max of the scores, *total their sum, then the device's rounding of P (p_dt, or the
 * fp8 form). With every key live this is ug_softmax_row's sequence (ug_attn_weights_of_dots). */
static void weights_of_scores(ug_ar *ar, ug_num *e, const unsigned char *live, long n, ug_dtype p_dt, int fp8,
                              ug_num *m, ug_num *total)
{
    ug_num zero = ug_c(ar, 0.0);
    int first = 1;
    for (long j = 0; j < n; j++) {
        if (!live[j]) continue;
        *m = first ? e[j] : ug_max(ar, *m, e[j]);
        first = 0;
    }
    for (long j = 0; j < n; j++) e[j] = live[j] ? ug_exp(ar, ug_sub(ar, e[j], *m)) : zero;
    *total = ug_sum(ar, e, (size_t)n);
    for (long j = 0; j < n; j++) e[j] = fp8 ? fp8_p_round(ar, e[j]) : ug_dev_round(ar, e[j], p_dt); /* a device's P */
}

void ug_attn_weights_of_dots(ug_ar *ar, ug_num *e, long n, double scale, ug_dtype p_dt, ug_num *m, ug_num *total)
{
    ug_softmax_row(ar, e, (size_t)n, scale, p_dt, m, total); /* weights_of_scores' numbers, all keys live */
}

/* ug_attn_weights, and with fp8 set ug_attn_weights_fp8 (p_dt unused then). */
static long attn_weights(ug_ar *ar, const double *qr, const double *k, size_t kstride, long n, size_t d, double scale,
                         ug_dtype p_dt, int fp8, ug_num *e, unsigned char *live, ug_num *m, ug_num *total)
{
    long n_live = 0;
    for (long j = 0; j < n; j++) { /* the class of each score, in double (finite inputs stay finite here) */
        const double *kr = k + (size_t)j * kstride;
        double s = 0;
        for (size_t i = 0; i < d; i++) s += qr[i] * kr[i];
        s *= scale;
        if (isnan(s) || s == INFINITY) return -1;
        live[j] = s != -INFINITY;
        n_live += live[j];
    }
    if (n_live == 0) return 0;
    ug_num sc = ug_c(ar, scale);
    for (long j = 0; j < n; j++) {
        if (!live[j]) continue;
        e[j] = ug_mul(ar, ug_dot_d(ar, qr, 1, k + (size_t)j * kstride, 1, d), sc); /* the score, exp taken below */
        if (fp8) /* the device's dequantisation roundings of q and k: one fp32 rounding each */
            e[j] = ug_dev_err_dot(ar, e[j], qr, k + (size_t)j * kstride, d, 2 * UG_DEV_U * scale);
    }
    weights_of_scores(ar, e, live, n, p_dt, fp8, m, total);
    return n;
}

long ug_attn_weights(ug_ar *ar, const double *qr, const double *k, size_t kstride, long n, size_t d, double scale,
                     ug_dtype p_dt, ug_num *e, unsigned char *live, ug_num *m, ug_num *total)
{
    return attn_weights(ar, qr, k, kstride, n, d, scale, p_dt, 0, e, live, m, total);
}

long ug_attn_weights_fp8(ug_ar *ar, const double *qr, const double *k, size_t kstride, long n, size_t d, double scale,
                         ug_num *e, unsigned char *live, ug_num *m, ug_num *total)
{
    return attn_weights(ar, qr, k, kstride, n, d, scale, UG_DT_FP32, 1, e, live, m, total);
}

ug_num ug_attn_weighted_v(ug_ar *ar, const ug_num *e, const unsigned char *live, const double *vc, size_t stride,
                          long n, ug_num total, double *col)
{
    int nan = 0, pinf = 0, ninf = 0, dead = 0;
    for (long j = 0; j < n; j++) {
        double x = vc[(size_t)j * stride];
        col[j] = live[j] ? x : 0.0;
        dead |= !live[j];
        if (!live[j]) continue;
        nan |= isnan(x);
        pinf |= x == INFINITY;
        ninf |= x == -INFINITY;
    }
    if (nan || (pinf && ninf)) return ug_c(ar, NAN);
    if (pinf || ninf) return ug_c(ar, pinf ? INFINITY : -INFINITY);
    ug_num acc = dead ? ug_dot_nd(ar, e, col, 1, (size_t)n) : ug_dot_nd(ar, e, vc, stride, (size_t)n);
    return ug_div(ar, acc, total);
}

/* Whether a row's weighted sums can go through ug_dot_nd_cols as they stand: every key live
 * and every value finite, so that ug_attn_weighted_v would take its plain dot product for
 * each column. */
static int plain_rows(const unsigned char *live, const double *v0, size_t stride, long n, size_t ncols)
{
    for (long j = 0; j < n; j++) {
        if (!live[j]) return 0;
        const double *vr = v0 + (size_t)j * stride;
        for (size_t c = 0; c < ncols; c++)
            if (!isfinite(vr[c])) return 0;
    }
    return 1;
}

void ug_attn_weighted_v_cols(ug_ar *ar, const ug_num *e, const unsigned char *live, const double *v0, size_t stride,
                             long n, size_t ncols, ug_num total, double *col, ug_num *out)
{
    if (!plain_rows(live, v0, stride, n, ncols)) {
        for (size_t c = 0; c < ncols; c++) out[c] = ug_attn_weighted_v(ar, e, live, v0 + c, stride, n, total, col);
        return;
    }
    ug_attn_weighted_v_cols_plain(ar, e, v0, stride, n, ncols, total, out);
}

void ug_attn_weighted_v_cols_plain(ug_ar *ar, const ug_num *e, const double *v0, size_t stride, long n, size_t ncols,
                                   ug_num total, ug_num *out)
{
    ug_dot_nd_cols(ar, e, v0, stride, (size_t)n, ncols, out);
    for (size_t c = 0; c < ncols; c++) out[c] = ug_div(ar, out[c], total);
}

int ug_attn_row_dense(const ug_selection *sel, int o, size_t r, size_t ncols, size_t *b, size_t *e)
{
    ug_selection_range(sel, o, r * ncols, (r + 1) * ncols, b, e);
    return 2 * (*e - *b) > ncols;
}

long ug_fa_row(ug_ar *ar, const ug_fa_params *p, const double *q, const double *k, long t, long h, ug_dtype p_dt,
               ug_num *e, unsigned char *live, ug_num *m, ug_num *total)
{
    long b = ug_fa_batch_of(p, t), n = ug_fa_visible(p, b, t - p->cu_q[b]);
    size_t d = (size_t)p->dim, hd = (size_t)p->heads * d;
    const double *qr = q + ((size_t)t * (size_t)p->heads + (size_t)h) * d;
    return ug_attn_weights(ar, qr, k + (size_t)p->cu_k[b] * hd + (size_t)h * d, hd, n, d, p->scale, p_dt, e, live, m,
                           total);
}

/* Whether the n values of each of rows [t0, t1) of head h (row t at x + (t*H + h)*D) are finite. */
static int rows_finite(const ug_fa_params *p, const double *x, long t0, long t1, long h)
{
    size_t D = (size_t)p->dim, HD = (size_t)p->heads * D;
    for (long t = t0; t < t1; t++)
        for (size_t d = 0; d < D; d++)
            if (!isfinite(x[(size_t)t * HD + (size_t)h * D + d])) return 0;
    return 1;
}

int ug_fa_tiles = 1;

int ug_fa_group_finite(const ug_fa_params *p, const double *q, const double *k, const double *v, const double *dout,
                       long b, long h)
{
    long q0 = p->cu_q[b], q1 = p->cu_q[b + 1], k0 = p->cu_k[b], k1 = p->cu_k[b + 1];
    return isfinite(p->scale) && rows_finite(p, q, q0, q1, h) && rows_finite(p, k, k0, k1, h) &&
           rows_finite(p, v, k0, k1, h) && (!dout || rows_finite(p, dout, q0, q1, h));
}

void ug_fa_group_transpose(const ug_fa_params *p, const double *x, long b, long h, double *out)
{
    size_t D = (size_t)p->dim, HD = (size_t)p->heads * D, lk = (size_t)p->lk[b], ld = ug_fa_kt_ld(p->lk[b]);
    const double *x0 = x + (size_t)p->cu_k[b] * HD + (size_t)h * D;
    for (size_t j = 0; j < lk; j++)
        for (size_t d = 0; d < D; d++) out[d * ld + j] = x0[j * HD + d];
}

void ug_fa_gather_rows(const ug_fa_params *p, const double *x, long t0, long n, long h, double *out)
{
    size_t D = (size_t)p->dim, HD = (size_t)p->heads * D;
    for (long i = 0; i < n; i++)
        memcpy(out + (size_t)i * D, x + (size_t)(t0 + i) * HD + (size_t)h * D, D * sizeof *out);
}
