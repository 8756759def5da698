/* flash_attention_common.c — params, shared inputs and the exact softmax row of the
 * flash-attention operators (see flash_attention_common.h).
 *
 * The sequence lengths are one string param ("seqlens": "Q[:K],...") rather than two
 * lists so that a generalization-space grid can vary them as one axis and every grid
 * point stays a legal batch. */
#include "oracles/attention/flash_attention_common.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int parse_len(const char **s, long *out)
{
    if (!isdigit((unsigned char)**s)) return -1;
    char *end;
    long v = strtol(*s, &end, 10);
    if (v < 0 || v > UG_FA_MAX_LEN) return -1;
    *s = end;
    *out = v;
    return 0;
}

/* "Q[:K],Q[:K],..." into p->lq/lk/batch. */
static int parse_seqlens(const char *s, ug_fa_params *p)
{
    p->batch = 0;
    for (;;) {
        if (p->batch == UG_FA_MAX_BATCH) return -1;
        long q, k;
        if (parse_len(&s, &q)) return -1;
        k = q;
        if (*s == ':') {
            s++;
            if (parse_len(&s, &k)) return -1;
        }
        p->lq[p->batch] = q;
        p->lk[p->batch++] = k;
        if (*s == '\0') return 0;
        if (*s++ != ',') return -1;
    }
}

int ug_fa_read_params(const ug_spec *s, const char *op, ug_fa_params *p, char *err, size_t errlen)
{
    const char *seqlens;
    long causal;
    double scale;
    if (ug_param_str(s->params, "seqlens", "", &seqlens, err, errlen) ||
        ug_param_int(s->params, "heads", 1, &p->heads, err, errlen) ||
        ug_param_int(s->params, "head_dim", 64, &p->dim, err, errlen) ||
        ug_param_int(s->params, "causal", 0, &causal, err, errlen) ||
        ug_param_num(s->params, "scale", 0.0, &scale, err, errlen))
        return -2;
    if (parse_seqlens(seqlens, p)) {
        snprintf(err, errlen,
                 "%s: param \"seqlens\" must be \"Q[:K],...\": 1..%d entries of lengths 0..%d (got \"%s\")", op,
                 UG_FA_MAX_BATCH, UG_FA_MAX_LEN, seqlens);
        return -2;
    }
    if (p->heads < 1 || p->heads > 128 || p->dim < 1 || p->dim > 576) {
        snprintf(err, errlen, "%s: params \"heads\" must be 1..128 and \"head_dim\" 1..576", op);
        return -2;
    }
    if (causal != 0 && causal != 1) {
        snprintf(err, errlen, "%s: param \"causal\" must be 0 or 1", op);
        return -2;
    }
    p->causal = (int)causal;
    p->cu_q[0] = p->cu_k[0] = 0;
    for (long b = 0; b < p->batch; b++) {
        p->cu_q[b + 1] = p->cu_q[b] + p->lq[b];
        p->cu_k[b + 1] = p->cu_k[b] + p->lk[b];
    }
    p->tq = p->cu_q[p->batch];
    p->tk = p->cu_k[p->batch];
    if (p->tq < 1 || p->tk < 1 || p->tq * p->heads * p->dim > (1L << 24) || p->tk * p->heads * p->dim > (1L << 24)) {
        snprintf(err, errlen, "%s: param \"seqlens\" needs >= 1 query and key token in all, and T*H*D <= 2^24", op);
        return -2;
    }
    if (scale == 0.0) scale = 1.0 / sqrt((double)p->dim);
    if (!isfinite(scale) || scale <= 0.0 || !isfinite((float)scale)) {
        snprintf(err, errlen, "%s: param \"scale\" must be a finite fp32 value > 0", op);
        return -2;
    }
    p->scale = (float)scale; /* fp32 attribute */
    return 0;
}

int ug_fa_add_inputs(ug_case *c, const char *op, const ug_fa_params *p, char *err, size_t errlen)
{
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_BF16 && dt != UG_DT_FP16) {
        snprintf(err, errlen, "%s: dtype must be bf16 or fp16", op);
        return -2;
    }
    int64_t qs[3] = {p->tq, p->heads, p->dim}, ks[3] = {p->tk, p->heads, p->dim}, cs[1] = {p->batch + 1};
    ug_tensor *cq, *ck;
    if (!ug_case_add_input(c, "q", dt, 3, qs, 1, err, errlen) ||
        !ug_case_add_input(c, "k", dt, 3, ks, 1, err, errlen) ||
        !ug_case_add_input(c, "v", dt, 3, ks, 1, err, errlen) ||
        !(cq = ug_case_add_input(c, "cu_seqlens_q", UG_DT_INT32, 1, cs, 0, err, errlen)) ||
        !(ck = ug_case_add_input(c, "cu_seqlens_k", UG_DT_INT32, 1, cs, 0, err, errlen)))
        return -2;
    for (long b = 0; b <= p->batch; b++) {
        ug_dtype_store(UG_DT_INT32, cq->data, (size_t)b, (double)p->cu_q[b]);
        ug_dtype_store(UG_DT_INT32, ck->data, (size_t)b, (double)p->cu_k[b]);
    }
    return 0;
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

long ug_fa_row(ug_ar *ar, const ug_fa_params *p, const double *q, const double *k, long t, long h, ug_num *e, ug_num *m,
               ug_num *total)
{
    long b = ug_fa_batch_of(p, t), n = ug_fa_visible(p, b, t - p->cu_q[b]);
    size_t d = (size_t)p->dim, hh = (size_t)p->heads;
    const double *qr = q + ((size_t)t * hh + (size_t)h) * d;
    ug_num sc = ug_c(ar, p->scale);
    for (long j = 0; j < n; j++) {
        const double *kr = k + ((size_t)(p->cu_k[b] + j) * hh + (size_t)h) * d;
        e[j] = ug_mul(ar, ug_dot_d(ar, qr, 1, kr, 1, d), sc); /* the score, exp taken below */
        *m = j ? ug_max(ar, *m, e[j]) : e[j];
    }
    if (n == 0) return 0;
    for (long j = 0; j < n; j++) e[j] = ug_exp(ar, ug_sub(ar, e[j], *m));
    *total = ug_sum(ar, e, (size_t)n);
    return n;
}
