/* mla_prolog_quant_core.c — exact per-token pieces of mla_prolog_quant (see the header).
 * The roundings here are the reference golden's own (pypto-gym tests/ops/deepseek_v32_exp/
 * test_mla_prolog_quant.py, is_quant_b): q_a_proj, kv_a_proj, both RMSNorm outputs and
 * q_b_proj are cast to bf16, the scales are fp32; they are spec roundings (ug_round). */
#include "oracles/prolog/mla_prolog_quant_core.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mp/int8_dot.h"
#include "oracles/verdict.h"

/* Whether every correct device rounds x to the same bf16 as the exact value does: x lies
 * further than rel*|x| from a bf16 rounding midpoint (then x*(1 +- rel) round alike). */
static int bf16_settled(double x, double rel)
{
    double r = ug_dtype_round(UG_DT_BF16, x);
    return isfinite(x) && ug_dtype_round(UG_DT_BF16, x * (1 + rel)) == r &&
           ug_dtype_round(UG_DT_BF16, x * (1 - rel)) == r;
}

/* v[0..n) <- bf16(v*rstd(v)*gamma): the golden's rms_norm on a bf16 row, cast to bf16;
 * settled[j] (when given): whether every correct device holds the same bf16 there, given the
 * same row v. A device's value before that rounding is off by at most about (n/2 + 19)*2^-24
 * relative (its fp32 sum of squares gamma_n/2 through the root, rsqrt within 4 ulps, eps
 * and two products); (n + 32)*2^-24 leaves a margin of two. */
static void rmsnorm_bf16(ug_ar *ar, ug_num *v, size_t n, const double *gamma, double eps, ug_num *sq,
                         unsigned char *settled)
{
    ug_num rstd = ug_mla_rstd(ar, v, n, eps, sq);
    double rel = ((double)n + 32.0) * 0x1p-24;
    for (size_t j = 0; j < n; j++) {
        ug_num pre = ug_mul(ar, ug_mul(ar, v[j], rstd), ug_c(ar, gamma[j]));
        if (settled) settled[j] = (unsigned char)bf16_settled(ug_v(pre), rel);
        v[j] = ug_round(ar, pre, UG_DT_BF16); /* rounds: the golden's bf16 norm output */
    }
}

void ug_mlaq_cq(ug_ar *ar, const ug_mlaq_in *m, size_t t, const ug_num *dots, ug_num *cq, ug_num *sq,
                unsigned char *settled)
{
    if (dots)
        memcpy(cq, dots, m->Lq * sizeof *cq);
    else
        ug_dot_d_cols(ar, m->x + t * m->h, m->wdq, m->Lq, m->h, m->Lq, cq);
    for (size_t j = 0; j < m->Lq; j++) cq[j] = ug_round(ar, cq[j], UG_DT_BF16); /* rounds: the golden's bf16 q_a_proj */
    rmsnorm_bf16(ar, cq, m->Lq, m->gq, m->eps, sq, settled);
}

void ug_mlaq_kv(ug_ar *ar, const ug_mlaq_in *m, size_t t, const ug_num *dots, ug_num *kv, ug_num *sq,
                unsigned char *settled)
{
    size_t w = m->Lkv + m->dr;
    if (dots)
        memcpy(kv, dots, w * sizeof *kv);
    else
        ug_dot_d_cols(ar, m->x + t * m->h, m->wdkv, w, m->h, w, kv);
    for (size_t j = 0; j < w; j++) kv[j] = ug_round(ar, kv[j], UG_DT_BF16); /* rounds: the golden's bf16 kv_a_proj */
    rmsnorm_bf16(ar, kv, m->Lkv, m->gkv, m->eps, sq, settled);
}

/* The exponent of the lowest set bit of a finite nonzero double p. */
static int lowest_bit(double p)
{
    uint64_t u;
    memcpy(&u, &p, sizeof u);
    int be = (int)((u >> 52) & 0x7ffu);
    uint64_t m = u & ((1ull << 52) - 1u);
    if (be) m |= 1ull << 52; /* the hidden bit: p = m * 2^(be - 1075); a subnormal m * 2^-1074 */
    return (be ? be - 1075 : -1074) + __builtin_ctzll(m);
}

/* Whether x.w[:, j] is formed exactly by an fp32 sum in any order, blocking or FMA for every
 * column j in [0, ncols) of w [h, ld]: each product x_i*w_ij is exact in double (bf16 inputs)
 * and every partial sum is a multiple of the finest product bit 2^m below 2^(m+24), hence
 * an fp32 number. Rows of w outermost (one pass over it), each column's magnitudes summed
 * in row order; 0 without memory (not proved). */
static int row_sums_exact(const double *x, const double *w, size_t h, size_t ld, size_t ncols)
{
    double *mag = calloc(ncols ? ncols : 1, sizeof *mag);
    int *fine = malloc((ncols ? ncols : 1) * sizeof *fine), ok = mag && fine;
    for (size_t j = 0; ok && j < ncols; j++) fine[j] = INT_MAX;
    for (size_t i = 0; ok && i < h; i++)
        for (size_t j = 0; j < ncols; j++) {
            double p = x[i] * w[i * ld + j]; /* exact: two bf16 values */
            if (p == 0) continue;
            if (!isfinite(p)) ok = 0;
            if (!ok) break;
            int low = lowest_bit(p);
            fine[j] = low < fine[j] ? low : fine[j];
            mag[j] += fabs(p);
        }
    /* fp32 holds every multiple of 2^fine below 2^(fine+24) when fine >= -149 (its finest
     * subnormal bit) and the sum stays below 2^127 */
    for (size_t j = 0; ok && j < ncols; j++)
        if (mag[j] != 0 && (fine[j] < -149 || !(mag[j] < ldexp(1.0, fine[j] + 24)) || !(mag[j] < 0x1p127))) ok = 0;
    free(mag), free(fine);
    return ok;
}

/* The code value element i of a row is judged against: v/s, or where v/s is exactly k + 1/2
 * and every correct device holds the same v (t->settled[i], and the row's a = x.W all exact
 * sums: row_sums_exact, taken once per row into *exact), the code RNE gives (the even one,
 * saturated): a correct device's fp32 division forms that tie exactly, so a flip there is not
 * legal (docs/STANDARDS.md "Exact ties"). sd: s's value; NaN: no tie is decided. */
static ug_num code_value(ug_ar *ar, double v, ug_num s, double sd, const ug_mlaq_tie *t, size_t i, int *exact)
{
    double code;
    if (t && t->settled[i] && ug_int8_exact_tie(v, sd, &code)) {
        if (*exact < 0) *exact = row_sums_exact(t->x, t->w, t->h, t->ld, t->ncols);
        if (*exact) return ug_c(ar, code);
    }
    return ug_div(ar, ug_c(ar, v), s);
}

/* Emits output o's selected codes among flat indices base + [0, n): v/s (code_value), 0 when zero. */
static void codes_emit(ug_ar *ar, const ug_selection *sel, int o, size_t base, size_t n, const ug_num *v, int zero,
                       ug_num s, double sd, const ug_mlaq_tie *t, int *exact)
{
    size_t b, e;
    ug_selection_range(sel, o, base, base + n, &b, &e);
    for (; b < e; b++) {
        size_t i = sel->idx[o][b] - base;
        ug_ar_emit(ar, o, b, zero ? ug_c(ar, 0.0) : code_value(ar, ug_v(v[i]), s, sd, t, i, exact));
    }
}

void ug_mlaq_quant_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, const ug_mlaq_qouts *q, const ug_num *v,
                        size_t n, size_t code_base, size_t scale_idx, const ug_mlaq_tie *tie)
{
    int finite = 1;
    ug_num amax = ug_c(ar, 0.0);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ug_v(v[i])))
            finite = 0; /* the class of a value does not depend on rounding */
        else
            amax = ug_max(ar, amax, ug_max(ar, v[i], ug_neg(ar, v[i])));
    }
    size_t sb, se;
    ug_selection_range(sel, q->scales, scale_idx, scale_idx + 1, &sb, &se);
    ug_num exact = finite ? ug_div(ar, amax, ug_c(ar, 127.0)) : ug_c(ar, NAN);
    if (sb < se) ug_ar_emit(ar, q->scales, sb, exact);
    int zero = !finite || ug_v(amax) == 0.0;                     /* the semantics: codes 0 */
    double sk = ug_tload(&c->out[q->scales], scale_idx);         /* staged: the kernel's scale */
    ug_num own = zero ? exact : ug_round(ar, exact, UG_DT_FP32); /* rounds: the scale as exported */
    int sk_ok = sk > 0 && isfinite(sk), sums_exact = -1;         /* -1: not yet known */
    codes_emit(ar, sel, q->codes, code_base, n, v, zero, sk_ok ? ug_c(ar, sk) : exact, sk_ok ? sk : NAN, tie,
               &sums_exact);
    codes_emit(ar, sel, q->view, code_base, n, v, zero, own, zero ? NAN : ug_v(own), tie, &sums_exact);
}

void ug_mlaq_q_dots(const ug_mlaq_in *m, const double *codes, const size_t *heads, size_t ng, size_t *col0,
                    int32_t *acc, int64_t *dot)
{
    size_t dq = m->dn + m->dr;
    for (size_t g = 0; g < ng; g++) col0[g] = heads[g] * dq;
    ug_int8_col_dots(codes, m->wuq8, m->N * dq, m->Lq, col0, ng, dq, acc, dot);
}

void ug_mlaq_q_head(ug_ar *ar, const ug_mlaq_in *m, const int64_t *dot, double sq, size_t n, ug_num *q)
{
    size_t dq = m->dn + m->dr;
    for (size_t c = 0; c < dq; c++) {
        size_t col = n * dq + c; /* dot: the int32 dot the spec makes exact (|sum| < 2^31 by q_lora's bound) */
        ug_num v = ug_mul(ar, ug_mul(ar, ug_c(ar, (double)dot[c]), ug_c(ar, sq)), ug_c(ar, m->wuq_s[col]));
        q[c] = ug_round(ar, v, UG_DT_BF16); /* rounds: the golden's bf16 q_b_proj */
    }
}

ug_num ug_mlaq_nope_abs_at(ug_ar *ar, const ug_mlaq_in *m, const ug_num *q, size_t n, size_t l)
{
    return ug_dot_nd(ar, q, m->wuk + n * m->dn * m->Lkv + l, m->Lkv, m->dn);
}
