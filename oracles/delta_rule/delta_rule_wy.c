/* delta_rule_wy.c — the chunked WY form of the gated delta rule written once with the
 * arith primitives, so that UG_AR_DEVICE gives chunked_gated_delta_rule's certified bound B:
 * the first-order bound of a device that computes these stages in fp32.
 *
 * Why a second algorithm. The op's exact value (EXACT, CERT) is the recurrence shared with
 * gated_delta_rule (delta_rule_ref.c), so a wrong WY step cannot cancel against a kernel's.
 * But a bound propagated through the recurrence bounds a device running the recurrence;
 * the op's device runs the chunked form, which rounds elsewhere (the cumulative log-decay
 * G in fp32, whose absolute error grows with |G| and enters every e^{G_r - G_c}; the
 * triangular solve; chunk-level products). With that bound a correct kernel needed c = 8
 * and still failed at the reference suite's draws (gates down to -37). Here B follows the
 * device's own stages; only the bound is used, never these values.
 *
 * Stages, per value head h (qk head hk) and chunk of n <= L tokens (L = params.chunk, the
 * last chunk T mod L), r, c, m indexing the chunk's tokens; every product, sum, exp and
 * rsqrt rounded to fp32 and every reduction in any order (arith.h, UG_AR_DEVICE):
 *   k^, q^    qk_norm l2: x * rsqrt(||x||^2 + qk_eps); given: x. Q_r = q^_r * scale
 *   G_r       g_0 + ... + g_r, each G_r a reduction of its own (a scan, a matmul by a
 *             triangular ones matrix or a running sum: any order)
 *   D[r][c]   e^{G_r - G_c} for c < r; D[r][r] = 1 (G_r - G_r is exactly 0)
 *   A[r][c]   (beta_r (k^_r.k^_c)) D[r][c] for c < r
 *   T         (I + A)^{-1} by forward substitution: T[r][r] = 1, T[r][c] = -sum_{c<=m<r} A[r][m] T[m][c]
 *   W_r       sum_{c<=r} T[r][c] ((beta_c e^{G_c}) k^_c)                 [n x Dk]
 *   U_r[i]    sum_{c<=r} T[r][c] (beta_c v_c[i])  -  W_r.s_i              s_i: carried state row i
 *   P[r][c]   (Q_r.k^_c) D[r][c] for c <= r
 *   o_r[i]    e^{G_r} (Q_r.s_i) + sum_{c<=r} P[r][c] U_c[i]               one reduction
 *   s_i       e^{G_{n-1}} s_i + sum_c U_c[i] (D[n-1][c] k^_c)             one reduction; carried on
 * the stages and groupings of kernels/sim/delta_rule/chunked_gated_delta_rule.c.
 *
 * Sequences (params.seqlens): each sequence is chunked on its own from its first token (its
 * last chunk its length mod L), from its own h0 rows, and ends in its own ht rows; no chunk
 * holds tokens of two sequences and no state passes between them.
 *
 * Rows. Row i of the state meets only row i (U_c[i], o_r[i] and the new s_i read s_i and
 * v[., i]), while G, D, A, T, W, P and D k^ depend on the head alone: per chunk they are
 * formed once, then each selected row is carried through them.
 *
 * Special values: inputs load as NaN when not finite, as the kernels load them; the bound
 * of an element whose exact value is NaN is never read (verdict.c skips it), and the
 * stages are causal in the tokens, so a NaN reaches exactly the elements the op's
 * special-value rule makes NaN. */
#include "oracles/delta_rule/delta_rule_wy.h"
#include "oracles/mp/arith_inline.h"

#include <math.h>
#include <stdlib.h>

/* Working arrays: one chunk of one head (L tokens at most), and the head's carried rows. */
typedef struct {
    const ug_tensor *q, *k, *v, *g, *beta, *h0;
    ug_delta_params p;
    size_t L, dk, dv;
    ug_num one;
    ug_num *G, *eG, *B, *BV, *U; /* L each: G_r, e^{G_r}, beta_r; beta_c v_c[i], U_c[i] of one row */
    ug_num *Q, *K, *BK, *W, *KD; /* L x Dk: Q_r, k^_r, beta_r e^{G_r} k^_r, W_r, D[n-1][r] k^_r */
    ug_num *D, *A, *T, *P;       /* L x L, lower triangle */
    ug_num *terms;               /* one reduction's terms: max(L, Dk) + 2 */
    ug_num *S;                   /* Dv x Dk: the head's carried state rows */
} wy_ws;

static int ws_alloc(wy_ws *w, const ug_case *c, ug_ar *ar)
{
    ug_delta_read_params(&c->params, &w->p);
    w->q = ug_case_input(c, "q");
    w->k = ug_case_input(c, "k");
    w->v = ug_case_input(c, "v");
    w->g = ug_case_input(c, "g");
    w->beta = ug_case_input(c, "beta");
    w->h0 = ug_case_input(c, "h0");
    w->L = (size_t)ug_p_int(&c->params, "chunk");
    w->dk = (size_t)w->p.dk;
    w->dv = (size_t)w->p.dv;
    w->one = ug_c(ar, 1.0);
    size_t L = w->L, dk = w->dk, nt = (L > dk ? L : dk) + 2;
    size_t n = 5 * L + 5 * L * dk + 4 * L * L + nt + w->dv * dk;
    if (!(w->G = malloc(n * sizeof *w->G))) return -1;
    ug_num *x = w->G + L;
    ug_num **one_l[] = {&w->eG, &w->B, &w->BV, &w->U}, **l_dk[] = {&w->Q, &w->K, &w->BK, &w->W, &w->KD},
           **l_l[] = {&w->D, &w->A, &w->T, &w->P};
    for (size_t i = 0; i < 4; i++, x += L) *one_l[i] = x;
    for (size_t i = 0; i < 5; i++, x += L * dk) *l_dk[i] = x;
    for (size_t i = 0; i < 4; i++, x += L * L) *l_l[i] = x;
    w->terms = x;
    w->S = x + nt;
    return 0;
}

/* An input value as a kernel loads it: a non-finite value becomes NaN. */
UG_AI ug_num load(ug_arx A, double x) { return ugx_c(A, isfinite(x) ? x : NAN); }

/* x.y of two rows of n computed numbers: n rounded products, one reduction. */
UG_AI ug_num dot(ug_arx A, const ug_num *x, const ug_num *y, size_t n, ug_num *terms)
{
    for (size_t j = 0; j < n; j++) terms[j] = ugx_mul(A, x[j], y[j]);
    return ugx_sum(A, terms, n);
}

/* Row x (Dk values of tensor t at off) as the op uses it: q^ or k^, times mul (rounded)
 * unless mul is NULL. */
UG_AI void load_qk_row(wy_ws *w, ug_arx A, const ug_tensor *t, size_t off, const ug_num *mul, ug_num *x)
{
    ug_num r = w->p.qk_l2 ? ug_delta_l2_recip(A.ar, t->values + off, w->dk, w->p.qk_eps) : w->one;
    for (size_t j = 0; j < w->dk; j++) {
        x[j] = load(A, t->values[off + j]);
        if (w->p.qk_l2) x[j] = ugx_mul(A, x[j], r);
        if (mul) x[j] = ugx_mul(A, x[j], *mul);
    }
}

/* Q, k^, beta, G and e^G of chunk [t0, t0+n) of head h (qk head hk). */
UG_AI void chunk_load(wy_ws *w, ug_arx A, size_t h, size_t hk, size_t t0, size_t n)
{
    size_t hv = (size_t)w->p.hv, hqk = (size_t)w->p.hqk, dk = w->dk;
    ug_num scale = ugx_c(A, w->p.scale);
    for (size_t r = 0; r < n; r++) {
        size_t t = t0 + r, tk = (t * hqk + hk) * dk;
        load_qk_row(w, A, w->q, tk, &scale, w->Q + r * dk);
        load_qk_row(w, A, w->k, tk, NULL, w->K + r * dk);
        w->B[r] = load(A, w->beta->values[t * hv + h]);
        for (size_t m = 0; m <= r; m++) w->terms[m] = load(A, w->g->values[(t0 + m) * hv + h]);
        w->G[r] = ugx_sum(A, w->terms, r + 1); /* any order: G_r on its own */
        w->eG[r] = ugx_exp(A, w->G[r]);
        ug_num bg = ugx_mul(A, w->B[r], w->eG[r]);
        for (size_t j = 0; j < dk; j++) w->BK[r * dk + j] = ugx_mul(A, bg, w->K[r * dk + j]);
    }
}

/* D, A and P (lower triangles), then T = (I + A)^{-1} by forward substitution. */
UG_AI void chunk_matrices(wy_ws *w, ug_arx A, size_t n)
{
    size_t L = w->L, dk = w->dk;
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c <= r; c++) {
            ug_num d = c == r ? w->one : ugx_exp(A, ugx_sub(A, w->G[r], w->G[c]));
            w->D[r * L + c] = d;
            if (c < r)
                w->A[r * L + c] =
                    ugx_mul(A, ugx_mul(A, w->B[r], dot(A, w->K + r * dk, w->K + c * dk, dk, w->terms)), d);
            w->P[r * L + c] = ugx_mul(A, dot(A, w->Q + r * dk, w->K + c * dk, dk, w->terms), d);
        }
    for (size_t r = 0; r < n; r++) {
        w->T[r * L + r] = w->one;
        for (size_t c = 0; c < r; c++) {
            for (size_t m = c; m < r; m++) w->terms[m - c] = ugx_mul(A, w->A[r * L + m], w->T[m * L + c]);
            w->T[r * L + c] = ugx_neg(A, ugx_sum(A, w->terms, r - c));
        }
    }
}

/* W = T (beta e^G k^) and the decayed keys D[n-1][c] k^_c of the state update. */
UG_AI void chunk_keys(wy_ws *w, ug_arx A, size_t n)
{
    size_t L = w->L, dk = w->dk;
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < dk; j++) {
            for (size_t c = 0; c <= r; c++) w->terms[c] = ugx_mul(A, w->T[r * L + c], w->BK[c * dk + j]);
            w->W[r * dk + j] = ugx_sum(A, w->terms, r + 1);
        }
    for (size_t c = 0; c < n; c++)
        for (size_t j = 0; j < dk; j++) w->KD[c * dk + j] = ugx_mul(A, w->D[(n - 1) * L + c], w->K[c * dk + j]);
}

/* Carries state row s (= row i of head h) through chunk [t0, t0+n), emitting its selected
 * o elements. */
UG_AI void carry_row(wy_ws *w, ug_arx A, const ug_selection *sel, size_t h, size_t i, size_t t0, size_t n, ug_num *s)
{
    size_t L = w->L, dk = w->dk, dv = w->dv, hv = (size_t)w->p.hv;
    ug_num *terms = w->terms;
    for (size_t c = 0; c < n; c++) w->BV[c] = ugx_mul(A, w->B[c], load(A, w->v->values[((t0 + c) * hv + h) * dv + i]));
    for (size_t r = 0; r < n; r++) {
        ug_num ws = dot(A, w->W + r * dk, s, dk, terms);
        for (size_t c = 0; c <= r; c++) terms[c] = ugx_mul(A, w->T[r * L + c], w->BV[c]);
        w->U[r] = ugx_sub(A, ugx_sum(A, terms, r + 1), ws);
    }
    for (size_t r = 0; r < n; r++) {
        long pos = ug_selection_find(sel, 0, ((t0 + r) * hv + h) * dv + i);
        if (pos < 0) continue;
        ug_num qs = dot(A, w->Q + r * dk, s, dk, terms);
        terms[0] = ugx_mul(A, w->eG[r], qs);
        for (size_t c = 0; c <= r; c++) terms[1 + c] = ugx_mul(A, w->P[r * L + c], w->U[c]);
        ugx_emit(A, 0, (size_t)pos, ugx_sum(A, terms, r + 2));
    }
    for (size_t j = 0; j < dk; j++) {
        terms[0] = ugx_mul(A, w->eG[n - 1], s[j]);
        for (size_t c = 0; c < n; c++) terms[1 + c] = ugx_mul(A, w->U[c], w->KD[c * dk + j]);
        s[j] = ugx_sum(A, terms, n + 1);
    }
}

/* Chunk [t0, t0+n) of head h (qk head hk): its stages, then each state row that needs it
 * carried through (the formula above, inline in the arithmetic A: UG_ARX_SPECIALISE). */
UG_AI void chunk_pass(ug_arx A, wy_ws *w, const ug_selection *sel, size_t h, size_t hk, size_t t0, size_t n,
                      const long *need)
{
    chunk_load(w, A, h, hk, t0, n);
    chunk_matrices(w, A, n);
    chunk_keys(w, A, n);
    for (size_t i = 0; i < w->dv; i++)
        if (need[i] >= (long)t0) carry_row(w, A, sel, h, i, t0, n, w->S + i * w->dk);
}

/* The head's carried state rows from h0 (rows row0 + i), those that are needed. */
UG_AI void load_state(ug_arx A, wy_ws *w, size_t row0, const long *need)
{
    for (size_t i = 0; i < w->dv; i++) {
        const double *h0_row = w->h0->values + (row0 + i) * w->dk;
        for (size_t j = 0; need[i] >= 0 && j < w->dk; j++) w->S[i * w->dk + j] = load(A, h0_row[j]);
    }
}

/* Every selected element of head h of sequence b, tokens [first, end), its state rows
 * (b*Hv + h)*Dv + i; need[i] is row i's last needed token (-1: none). */
static void head(wy_ws *w, ug_ar *ar, const ug_selection *sel, size_t b, size_t h, size_t first, size_t end,
                 const long *need)
{
    size_t dk = w->dk, dv = w->dv, hk = h / (size_t)(w->p.hv / w->p.hqk), row0 = (b * (size_t)w->p.hv + h) * dv;
    long last = -1;
    for (size_t i = 0; i < dv; i++)
        if (need[i] > last) last = need[i];
    UG_ARX_SPECIALISE(ar, load_state, w, row0, need);
    for (size_t t0 = first; (long)t0 <= last; t0 += w->L) {
        size_t n = end - t0 < w->L ? end - t0 : w->L; /* the sequence's last chunk: its length mod L */
        UG_ARX_SPECIALISE(ar, chunk_pass, w, sel, h, hk, t0, n, need);
    }
    for (size_t i = 0; i < dv; i++) {
        size_t r = row0 + i, lo, hi;
        if (need[i] != (long)end - 1) continue;
        ug_selection_range(sel, 1, r * dk, (r + 1) * dk, &lo, &hi);
        for (size_t pos = lo; pos < hi; pos++) ug_ar_emit(ar, 1, pos, w->S[i * dk + sel->idx[1][pos] % dk]);
    }
}

int ug_delta_wy_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    size_t mark = ug_ar_mark(ar);
    wy_ws w;
    if (ws_alloc(&w, c, ar)) return -1;
    size_t hv = (size_t)w.p.hv, per_seq = hv * w.dv;
    long *need = malloc(w.p.seqs * per_seq * sizeof *need);
    if (!need) {
        free(w.G);
        return -1;
    }
    ug_delta_rows_needed(sel, &w.p, need);
    for (size_t b = 0, first = 0; b < w.p.seqs; b++) {
        size_t end = first + (size_t)ug_delta_seq_len(&w.p, b);
        for (size_t h = 0; h < hv; h++) head(&w, ar, sel, b, h, first, end, need + b * per_seq + h * w.dv);
        first = end;
    }
    free(need);
    free(w.G);
    ug_ar_release(ar, mark);
    return 0;
}
