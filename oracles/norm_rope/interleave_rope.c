/* interleave_rope.c — param checks, table builder and exact oracle of
 * interleave_rope: RoPE on interleaved (GPT-J) pairs of x[B,N,S,D], results written in
 * split-half layout:
 *     y[b,n,s,i]       = x[b,n,s,2i]   * cos[s,i] - x[b,n,s,2i+1] * sin[s,i]
 *     y[b,n,s,D/2 + i] = x[b,n,s,2i+1] * cos[s,i] + x[b,n,s,2i]   * sin[s,i]
 * With params.tables positions, cos/sin are inputs [S, D/2] in the case dtype (as
 * torch_npu's npu_interleave_rope takes them in x's dtype), filled deterministically for
 * positions pos0..pos0+S-1 with theta = pos * base^(-2i/D) (rope_table.h). With tables
 * given (the reference suite's), cos/sin [B, 1, cs_s, D] are drawn inputs whose first
 * half pairs with the even results and second half with the odd ones, cs_s = S or 1
 * (broadcast over the sequence). The oracle reads the stored values either way. Each
 * output is a two-term dot product of exact values: ug_dot_d sums it exactly and the
 * only rounding is the output's; special values follow IEEE rules through it (the semantics
 * text). Primary standard: certified (docs/STANDARDS.md); pypto's 1e-4 / 2^-7 stays stored. */
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/norm_rope/rope_table.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

static int given_tables(const ug_params *P)
{
    return UG_P(interleave_rope, P)->tables == UG_INTERLEAVE_ROPE_TABLES_GIVEN;
}

/* What ranges cannot say: d even, base strictly inside (1, 1e12); given tables have S
 * rows or one broadcast row. */
static int check(const ug_params *P, char *err, size_t errlen)
{
    if (ug_rope_check(P, "interleave_rope", err, errlen)) return -2;
    const ug_interleave_rope_params *params = UG_P(interleave_rope, P);
    long cs = params->cs_s, seq = params->s;
    if (given_tables(P) && cs != 1 && cs != seq) {
        snprintf(err, errlen, "interleave_rope: param \"cs_s\" must be 1 or s (%ld), got %ld", seq, cs);
        return -2;
    }
    return 0;
}

/* Fills cos/sin [S, D/2] for positions pos0 .. pos0+S-1 (given tables are drawn). */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (given_tables(&c->params)) return 0;
    const ug_interleave_rope_params *params = UG_P(interleave_rope, &c->params);
    long seq = params->s, pos0 = params->pos0;
    long *pos = malloc((size_t)seq * sizeof *pos);
    if (!pos) return -1;
    for (long i = 0; i < seq; i++) pos[i] = pos0 + i;
    ug_rope_fill_table(ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"), pos, (size_t)seq,
                       (size_t)params->d / 2, params->base);
    free(pos);
    return 0;
}

/* The layout of the cos/sin tables, read from the params once per case. */
typedef struct {
    size_t d, half, cs; /* head dim, D/2, rows of given tables */
    int given;
} rope_layout;

static rope_layout read_layout(const ug_params *P)
{
    const ug_interleave_rope_params *params = UG_P(interleave_rope, P);
    size_t d = (size_t)params->d;
    return (rope_layout){d, d / 2, (size_t)params->cs_s, given_tables(P)};
}

/* Index into cos/sin of output column j (pair j mod D/2) at batch b, position s: position
 * tables [S, D/2] serve both halves; given tables [B, 1, cs_s, D] keep column j itself, in
 * row s, or row 0 when cs_s = 1. */
static size_t table_index(const rope_layout *L, size_t b, size_t s, size_t j)
{
    if (!L->given) return s * L->half + (j < L->half ? j : j - L->half);
    return (b * L->cs + (L->cs == 1 ? 0 : s)) * L->d + j;
}

/* Output element (row, j)'s two terms: a·w, the first half e*c + o*(-s), the second half
 * o*c + e*s (negation exact). */
static void rope_terms(const ug_tensor *x, const ug_tensor *ct, const ug_tensor *st, size_t d, size_t half, size_t row,
                       size_t j, size_t t, double a[2], double w[2])
{
    size_t i = j < half ? j : j - half;
    double e = ug_tload(x, row * d + 2 * i), o = ug_tload(x, row * d + 2 * i + 1);
    double cs = ug_tload(ct, t), sn = ug_tload(st, t);
    a[0] = j < half ? e : o, a[1] = j < half ? o : e;
    w[0] = cs, w[1] = j < half ? -sn : sn;
}

/* CERT, row `row` (batch b, position s) selected whole from position k: its first half
 * e*c + o*(-s) and second half o*c + e*s (rope_terms' pairs, in that order) for every
 * column by ug_cv_dot2 over the row's deinterleaved x and its table entries, then emitted
 * as a block. buf: 6 D/2 + 2 D doubles. Returns the unsure count. */
static unsigned long fast_row(const ug_ar_sink *sink, size_t k, const ug_tensor *x, const ug_tensor *ct,
                              const ug_tensor *st, const rope_layout *L, size_t row, size_t b, size_t s, double *buf)
{
    size_t d = L->d, half = L->half;
    double *ev = buf, *od = ev + half, *c1 = od + half, *ns1 = c1 + half, *c2 = ns1 + half, *s2 = c2 + half;
    double *v = s2 + half, *e = v + d;
    for (size_t i = 0; i < half; i++) {
        size_t t1 = table_index(L, b, s, i), t2 = table_index(L, b, s, half + i);
        ev[i] = ug_tload(x, row * d + 2 * i), od[i] = ug_tload(x, row * d + 2 * i + 1);
        c1[i] = ug_tload(ct, t1), ns1[i] = -ug_tload(st, t1); /* negation exact */
        c2[i] = ug_tload(ct, t2), s2[i] = ug_tload(st, t2);
    }
    ug_cv_dot2(ev, od, c1, ns1, half, v, e);
    ug_cv_dot2(od, ev, c2, s2, half, v + half, e + half);
    return ug_cv_put_block(sink, k, v, e, d);
}

/* In CERT the two-term dot product goes through the inline certified arithmetic
 * (mp/cert_inline.h: ug_dot_d's value and bound, no interpreter call per element); a row
 * selected whole (every row at --sample all) is emitted by one loop over its columns, its
 * batch and position found once. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_tensor *x = ug_case_input(c, "x"), *ct = ug_case_input(c, "cos"), *st = ug_case_input(c, "sin");
    ug_ar_sink *sink = ug_ar_cert_sink(ar, 0);
    rope_layout L = read_layout(&c->params);
    const ug_interleave_rope_params *params = UG_P(interleave_rope, &c->params);
    size_t d = L.d, half = L.half, seq = (size_t)params->s;
    size_t bs = (size_t)params->n * seq; /* rows per batch */
    unsigned long unsure = 0, emitted = 0;
    double a[2], w[2], *buf = sink && d == 2 * half ? malloc((6 * half + 2 * d) * sizeof *buf) : NULL;
    for (size_t k = 0; k < sel->n[0];) {
        size_t idx = sel->idx[0][k], row = idx / d, s = row % seq;
        if (buf && ug_sel_is_run(sel, 0, k, row * d, d)) {
            unsure += fast_row(sink, k, x, ct, st, &L, row, row / bs, s, buf);
            emitted += d, k += d;
            continue;
        }
        size_t j = idx % d;
        rope_terms(x, ct, st, d, half, row, j, table_index(&L, row / bs, s, j), a, w);
        if (sink) {
            ug_cv_emit(ar, 0, k++, ug_cv_dot_d(a, 1, w, 1, 2, 0));
            continue;
        }
        size_t mark = ug_ar_mark(ar);
        ug_ar_emit(ar, 0, k++, ug_dot_d(ar, a, 1, w, 1, 2));
        ug_ar_release(ar, mark);
    }
    ug_ar_tally(ar, emitted, unsure);
    free(buf);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[3];
    g->rows = t->numel / g->cols;
    g->row_tile = 16;         /* the kernel's tile of positions */
    g->col_tile = g->cols / 2; /* the even/odd half boundary */
}

/* fp16 and bf16 only: a case of another dtype has no dtype for x and is refused. */

const ug_op_def ug_opdef_interleave_rope = {
    .op = UG_OP_INTERLEAVE_ROPE, .primary = UG_STD_CERTIFIED, .decl.check = check, .build = build, .oracle = oracle,
    .geometry = geometry};
