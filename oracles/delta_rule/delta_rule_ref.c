/* delta_rule_ref.c — the recurrent gated delta rule, the oracle shared by
 * gated_delta_rule and chunked_gated_delta_rule, with their param check, q/k builder and
 * special-value rule (UG_DELTA_SEMANTICS).
 *
 * Row structure. Row i of S_t (value index i, length Dk) depends only on row i of
 * S_{t-1}:  s_t = a_t s_{t-1} + beta_t (v_t[i] - a_t s_{t-1}.k_t) k_t,  a_t = e^{g_t}
 * (the same as e^{g_t} S_{t-1}(I - beta_t k_t k_t^T) + beta_t v_t k_t^T), and
 * o_t[i] = scale * s_t.q_t. So a selected element of o or ht costs one row's evolution,
 * O(T*Dk), not the whole state's: the oracle evolves only the rows its selection needs.
 *
 * Certified bounds. Componentwise interval propagation through this recurrence wraps:
 * |I - beta k k^T| has spectral radius 1 + beta, so the bound would grow like (1+beta)^T
 * even though the true error does not (||a (I - beta k k^T)||_2 <= 1 for a <= 1 and
 * beta ||k||^2 <= 2). The certified arithmetic therefore evaluates the step on the previous
 * row taken as exact, which gives the step's own rounding bound rho_j per component (from
 * the arith primitives themselves), and carries the row's error as one 2-norm bound:
 *   E_t = ||M_t||_2 E_{t-1} + ||rho||_2,  ||M_t||_2 = a_t max(1, |1 - beta_t ||k_t||^2|),
 * which bounds every component. The op computes E_t; the arithmetic decides whether it
 * carries it (mp/arith_inline.h's ugx_rec_in, ugx_rec_set: the certified one does; every
 * other arithmetic evaluates the same step with its numbers as they are).
 *
 * The step is written once, on arith_inline.h's primitives: the engine runs one copy of the
 * row evolution per arithmetic (UG_ARX_SPECIALISE), the plain ones inline, so the device
 * bound and the naive values cost about what the certified values do.
 *
 * qk_norm = l2 (the reference suite's use_qk_l2norm_in_kernel, eps 1e-6 inside the sqrt):
 * k^ = r_k k with r_k = 1/sqrt(||k||^2 + eps), and likewise q. The step is evaluated as
 *   s <- a s + (beta r_k (v - a r_k s.k)) k,   o = scale r_q s.q
 * so k stays an exact input and only the scalar r_k carries the norm's rounding (CERT);
 * the 2-norm bound then uses beta r_k^2 ||k||^2 for beta ||k^||^2.
 *
 * Sequences (chunked_gated_delta_rule's params.seqlens): the tokens hold several sequences
 * back to back, each with its own initial and final state (h0, ht rows (b*Hv + h)*Dv + i);
 * a state row is then (sequence, head, value row), evolved over its own sequence's tokens
 * only, so nothing is carried from one sequence to the next. */
#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/mp/arith_inline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ug_delta_read_params(const ug_params *P, ug_delta_params *p)
{
    *p = (ug_delta_params){ug_p_int(P, "tokens"),
                           ug_p_int(P, "hv"),
                           ug_p_int(P, "hqk"),
                           ug_p_int(P, "dk"),
                           ug_p_int(P, "dv"),
                           ug_p_num(P, "scale"),
                           !strcmp(ug_p_str(P, "qk_norm"), "l2"),
                           ug_p_num(P, "qk_eps"),
                           1,
                           NULL};
    if (!ug_p_has(P, "seqlens")) return;
    size_t n = ug_p_list(P, "seqlens", &p->seqlens);
    if (n == 1 && p->seqlens[0] == 0)
        p->seqlens = NULL; /* the default "0": one sequence of all tokens */
    else
        p->seqs = n;
}

long ug_delta_seq_len(const ug_delta_params *p, size_t b) { return p->seqlens ? p->seqlens[b] : p->tokens; }

/* Given sequence lengths: each at least 1, summing to tokens. */
static int check_seqlens(const ug_params *P, const ug_delta_params *p, char *err, size_t errlen)
{
    long sum = 0;
    for (size_t b = 0; b < p->seqs; b++) {
        if (p->seqlens[b] < 1) {
            snprintf(err, errlen,
                     "%s: param \"seqlens\" entry %zu is %ld: every sequence needs at least 1 token "
                     "(\"0\" alone means one sequence of all tokens)",
                     P->decl->op, b, p->seqlens[b]);
            return -2;
        }
        sum += p->seqlens[b];
    }
    if (sum != p->tokens) {
        snprintf(err, errlen,
                 "%s: param \"seqlens\" sums to %ld tokens, \"tokens\" is %ld (the sequences are "
                 "packed along the tokens)",
                 P->decl->op, sum, p->tokens);
        return -2;
    }
    return 0;
}

int ug_delta_check(const ug_params *P, char *err, size_t errlen)
{
    ug_delta_params p;
    ug_delta_read_params(P, &p);
    if (p.seqlens && check_seqlens(P, &p, err, errlen)) return -2;
    if (p.hv % p.hqk) {
        snprintf(err, errlen, "%s: param \"hv\" (%ld) must be a multiple of \"hqk\" (%ld)", P->decl->op, p.hv, p.hqk);
        return -2;
    }
    if (!(p.qk_eps > 0)) { /* eps 0 would make an all-zero q or k row 0/0 under qk_norm l2 */
        snprintf(err, errlen, "%s: param \"qk_eps\" must be > 0", P->decl->op);
        return -2;
    }
    return 0;
}

/* Rewrites each length-n row of t as row / ||row||_2 (rounds: to t's dtype). */
static void normalise_rows(ug_tensor *t, size_t n)
{
    for (size_t r = 0; r < t->numel / n; r++) {
        double ss = 0.0;
        for (size_t j = 0; j < n; j++) {
            double x = ug_dtype_load(t->dtype, t->data, r * n + j);
            ss += x * x;
        }
        if (!(ss > 0.0)) continue; /* an all-zero row stays zero */
        double inv = 1.0 / sqrt(ss);
        for (size_t j = 0; j < n; j++)
            ug_dtype_store(t->dtype, t->data, r * n + j, ug_dtype_load(t->dtype, t->data, r * n + j) * inv);
    }
}

int ug_delta_build(ug_case *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    size_t dk = (size_t)ug_p_int(&c->params, "dk");
    if (!strcmp(ug_p_str(&c->params, "qk_norm"), "l2")) return 0; /* the op normalises: inputs stay raw */
    normalise_rows(ug_case_input_mut(c, "q"), dk);
    normalise_rows(ug_case_input_mut(c, "k"), dk);
    return 0;
}

/* Upper bound of ||M||_2 = a max(1, |1 - beta ||k||^2|) for a step (a's own bound included);
 * r2 is an upper bound of r_k^2 (1 when k is used as given). */
UG_AI double step_norm_bound(ug_num a, double beta, const double *k, size_t dk, double r2)
{
    double kk = 0.0;
    for (size_t j = 0; j < dk; j++) kk += k[j] * k[j];
    kk *= 1.0 + (double)(dk + 2) * 0x1p-52;       /* upward: dk roundings */
    if (r2 != 1.0) kk *= r2 * (1.0 + 0x1p-51);    /* upward; given q/k keep the old bound */
    double w = fabs(beta) * kk * (1.0 + 0x1p-50); /* upward */
    double f = w - 1.0 > 1.0 ? (w - 1.0) * (1.0 + 0x1p-50) : 1.0;
    if (beta < 0) f = (1.0 + w) * (1.0 + 0x1p-50); /* |1 + |beta| kk| */
    return (fabs(a.v) + a.e) * f * (1.0 + 0x1p-50);
}

/* The row's 2-norm bound after a step: ||M||_2 E + ||rho||_2 with rho the new row's own
 * bounds (the step on the previous row taken as exact), rounded upward; +inf past double. */
UG_AI double step_error(const ug_num *nxt, size_t dk, double norm, double E)
{
    double rho2 = 0.0;
    for (size_t j = 0; j < dk; j++) rho2 += nxt[j].e * nxt[j].e;
    double e = (norm * E + sqrt(rho2) * (1.0 + 0x1p-50)) * (1.0 + 0x1p-48);
    return isfinite(e) ? e : INFINITY;
}

/* One step of a row: nxt <- a s + beta (v - a s.k) k, with k scaled by *rk when rk is
 * given (qk_norm l2), on the previous row s as the recurrence reads it (ugx_rec_in, into
 * in: dk numbers). Returns the new row's carried 2-norm bound from E, the previous row's
 * (ugx_rec_set: the certified arithmetic's; see the file header). */
UG_AI double row_step(ug_arx A, const ug_num *s, ug_num *nxt, ug_num *in, const double *k, const ug_num *rk, size_t dk,
                      double g, double beta, double v, double E)
{
    for (size_t j = 0; j < dk; j++) in[j] = ugx_rec_in(A, s[j]);
    ug_num a = ugx_exp(A, ugx_c(A, g));
    ug_num sk = ug_dot_nd(A.ar, in, k, 1, dk);
    if (rk) sk = ugx_mul(A, sk, *rk);
    ug_num c = ugx_mul(A, ugx_c(A, beta), ugx_sub(A, ugx_c(A, v), ugx_mul(A, a, sk)));
    if (rk) c = ugx_mul(A, c, *rk);
    for (size_t j = 0; j < dk; j++) nxt[j] = ugx_add(A, ugx_mul(A, a, in[j]), ugx_mul(A, c, ugx_c(A, k[j])));
    double r2 = rk ? (fabs(rk->v) + rk->e) * (fabs(rk->v) + rk->e) : 1.0;
    return ugx_rec_set(A, nxt, dk, step_error(nxt, dk, step_norm_bound(a, beta, k, dk, r2), E));
}

void ug_delta_rows_needed(const ug_selection *sel, const ug_delta_params *p, long *need)
{
    size_t hv = (size_t)p->hv, dv = (size_t)p->dv, dk = (size_t)p->dk, per_seq = hv * dv;
    for (size_t r = 0; r < p->seqs * per_seq; r++) need[r] = -1;
    size_t b = 0;
    long end = ug_delta_seq_len(p, 0);       /* one past sequence b's last token */
    for (size_t k = 0; k < sel->n[0]; k++) { /* o[t, h, i], t ascending: state row (b*hv + h)*dv + i */
        size_t idx = sel->idx[0][k], t = idx / per_seq, r = b * per_seq + idx % per_seq;
        while ((long)t >= end) end += ug_delta_seq_len(p, ++b), r += per_seq;
        if ((long)t > need[r]) need[r] = (long)t;
    }
    b = 0, end = ug_delta_seq_len(p, 0);
    for (size_t k = 0; k < sel->n[1]; k++) { /* ht[b*hv + h, i, j], ascending */
        size_t r = sel->idx[1][k] / dk;
        while (r >= (b + 1) * per_seq) end += ug_delta_seq_len(p, ++b);
        need[r] = end - 1;
    }
}

ug_num ug_delta_l2_recip(ug_ar *ar, const double *x, size_t n, double eps)
{
    return ug_rsqrt(ar, ug_add(ar, ug_dot_d(ar, x, 1, x, 1, n), ug_c(ar, eps)));
}

static int all_finite(const double *x, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (!isfinite(x[j])) return 0;
    return 1;
}

/* The inputs and params a row's evolution reads. */
typedef struct {
    const ug_delta_params *p;
    const ug_tensor *q, *k, *v, *g, *beta, *h0;
    ug_num one;
    double *ve; /* 2 dk doubles: a row's values and bounds, for a block emit */
} delta_ctx;

/* o[t, h, i] of state row s (token t's, after its step) at selection position pos, with q
 * at tq: scale r_q s.q (NaN where q is not finite). */
UG_AI void emit_o(ug_arx A, const delta_ctx *x, const ug_num *s, const double *tq, size_t pos)
{
    size_t dk = (size_t)x->p->dk;
    if (!all_finite(tq, dk)) {
        ugx_emit(A, 0, pos, ugx_c(A, NAN));
        return;
    }
    ug_num sq = ug_dot_nd(A.ar, s, tq, 1, dk);
    if (x->p->qk_l2) sq = ugx_mul(A, sq, ug_delta_l2_recip(A.ar, tq, dk, x->p->qk_eps));
    ugx_emit(A, 0, pos, ugx_mul(A, sq, ugx_c(A, x->p->scale)));
}

/* Row r's selected ht elements from its final state s: a row selected whole in one block
 * in the plain arithmetics (ug_ar_emit_block: ug_ar_emit's numbers), else one at a time. */
UG_AI void emit_ht(ug_arx A, const delta_ctx *x, const ug_selection *sel, size_t r, const ug_num *s, int nan_row)
{
    size_t dk = (size_t)x->p->dk, pos = ug_selection_lower_bound(sel, 1, r * dk);
    if (!nan_row && ug_ar_plain(A.ar) && ug_sel_is_run(sel, 1, pos, r * dk, dk)) {
        for (size_t j = 0; j < dk; j++) x->ve[j] = s[j].v, x->ve[dk + j] = s[j].e;
        ug_ar_emit_block(A.ar, 1, pos, x->ve, x->ve + dk, dk);
        return;
    }
    for (; pos < sel->n[1] && sel->idx[1][pos] / dk == r; pos++)
        ugx_emit(A, 1, pos, nan_row ? ugx_c(A, NAN) : s[sel->idx[1][pos] % dk]);
}

/* Evolves state row r = (b, h, i) of the sequence of tokens [first, end) to token last,
 * emitting its selected o and ht elements. Special values (UG_DELTA_SEMANTICS): once a
 * non-finite input the row depends on has been read, the row is NaN from that token on; o
 * is also NaN where q is non-finite. */
UG_AI void evolve_row(ug_arx A, const delta_ctx *x, const ug_selection *sel, size_t r, long first, long end, long last,
                      ug_num *s, ug_num *nxt, ug_num *tmp)
{
    const ug_delta_params *p = x->p;
    size_t hv = (size_t)p->hv, dv = (size_t)p->dv, dk = (size_t)p->dk, hqk = (size_t)p->hqk;
    size_t h = r / dv % hv, i = r % dv, hk = h / (hv / hqk), mark = ugx_mark(A);
    int nan_row = !all_finite(x->h0->values + r * dk, dk);
    for (size_t j = 0; j < dk; j++) s[j] = ugx_c(A, x->h0->values[r * dk + j]);
    double E = 0.0;
    for (long t = first; t <= last; t++) {
        size_t tk = ((size_t)t * hqk + hk) * dk, th = (size_t)t * hv + h;
        const double *kt = x->k->values + tk;
        nan_row |= !all_finite(kt, dk) || !isfinite(x->g->values[th]) || !isfinite(x->beta->values[th]) ||
                   !isfinite(x->v->values[th * dv + i]);
        long pos = ug_selection_find(sel, 0, th * dv + i);
        if (nan_row) { /* the row is NaN for good: nothing left to evolve */
            if (pos >= 0) ugx_emit(A, 0, (size_t)pos, ugx_c(A, NAN));
            continue;
        }
        ug_num rk = p->qk_l2 ? ug_delta_l2_recip(A.ar, kt, dk, p->qk_eps) : (ug_num){0};
        E = row_step(A, s, nxt, tmp, kt, p->qk_l2 ? &rk : NULL, dk, x->g->values[th], x->beta->values[th],
                     x->v->values[th * dv + i], E);
        if (pos >= 0) emit_o(A, x, nxt, x->q->values + tk, (size_t)pos);
        /* keep the pool flat: the new row moves down into the old row's slots (the copies
         * are written below the first slot they read; in the plain arithmetics the same
         * numbers, with their bounds) */
        ugx_release(A, mark);
        for (size_t j = 0; j < dk; j++) {
            double e = nxt[j].e;
            s[j] = ugx_mul(A, nxt[j], x->one); /* exact: times one */
            s[j].e = e;
        }
    }
    if (last == end - 1) emit_ht(A, x, sel, r, s, nan_row);
    ugx_release(A, mark);
}

/* The state rows the selection needs (need[r] >= 0), each evolved over its sequence. */
UG_AI void evolve_rows(ug_arx A, const delta_ctx *x, const ug_selection *sel, const long *need, ug_num *s)
{
    size_t per_seq = (size_t)(x->p->hv * x->p->dv), rows = x->p->seqs * per_seq, dk = (size_t)x->p->dk;
    long first = 0;
    for (size_t r = 0; r < rows; r++) {
        long end = first + ug_delta_seq_len(x->p, r / per_seq);
        if (need[r] >= 0) evolve_row(A, x, sel, r, first, end, need[r], s, s + dk, s + 2 * dk);
        if ((r + 1) % per_seq == 0) first = end; /* the next sequence's rows */
    }
}

int ug_delta_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_delta_params p;
    ug_delta_read_params(&c->params, &p);
    size_t rows = p.seqs * (size_t)(p.hv * p.dv), dk = (size_t)p.dk;
    long *need = malloc(rows * sizeof *need);
    ug_num *s = malloc(3 * dk * sizeof *s);
    double *ve = malloc(2 * dk * sizeof *ve);
    if (!need || !s || !ve) {
        free(need);
        free(s);
        free(ve);
        return -1;
    }
    ug_delta_rows_needed(sel, &p, need);
    size_t mark = ug_ar_mark(ar);
    delta_ctx x = {&p,
                   ug_case_input(c, "q"),
                   ug_case_input(c, "k"),
                   ug_case_input(c, "v"),
                   ug_case_input(c, "g"),
                   ug_case_input(c, "beta"),
                   ug_case_input(c, "h0"),
                   ug_c(ar, 1.0),
                   ve};
    UG_ARX_SPECIALISE(ar, evolve_rows, &x, sel, need, s);
    ug_ar_release(ar, mark);
    free(need);
    free(s);
    free(ve);
    return 0;
}

void ug_delta_geometry(const ug_case *c, int out, ug_geom *g, size_t tok_tile, size_t col_tile)
{
    const ug_tensor *t = &c->out[out];
    g->rows = (size_t)(t->shape[0] * t->shape[1]);
    g->cols = (size_t)t->shape[2];
    /* o rows are (token, head): tok_tile tokens per row tile; ht rows are (head, i): one head */
    g->row_tile = out == 0 ? tok_tile * (size_t)t->shape[1] : (size_t)t->shape[1];
    g->col_tile = col_tile;
}
