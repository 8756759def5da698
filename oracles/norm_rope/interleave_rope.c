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
 * text). The formula is written once, on mp/arith_inline.h's ugx_dot2, and every arithmetic
 * runs it: a row selected whole through a vectorised row loop in the plain ones (certified,
 * device bound, naive, f64), anything else element by element. Primary standard: certified
 * (docs/STANDARDS.md); pypto's 1e-4 / 2^-7 stays stored. */
#include <stdio.h>
#include <stdlib.h>

#include "oracles/mp/arith_inline.h"
#include "oracles/norm_rope/rope_table.h"
#include "oracles/oracle.h"
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

/* The formula, written once (mp/arith_inline.h): output (row, j)'s two-term dot product,
 * the first half e*c + o*(-s), the second half o*c + e*s (negation exact); every
 * arithmetic evaluates it, the engine choosing which. */
UG_AI ug_num rope_first(ug_arx A, double e, double o, double c, double s) { return ugx_dot2(A, e, o, c, -s); }
UG_AI ug_num rope_second(ug_arx A, double e, double o, double c, double s) { return ugx_dot2(A, o, e, c, s); }

/* The case's tensors and layout, read once. */
typedef struct {
    const ug_tensor *x, *ct, *st;
    rope_layout L;
    size_t seq, bs; /* positions; rows per batch */
} rope_ctx;

/* A row's deinterleaved x and its table entries (c1, s1 for the first half, c2, s2 for the
 * second), then its values and bounds. */
typedef struct {
    double *ev, *od, *c1, *s1, *c2, *s2, *v, *e;
} rope_row;

static int row_open(rope_row *w, size_t half)
{
    double *b = malloc(10 * half * sizeof *b); /* 6 D/2 inputs, 2 D outputs */
    *w = (rope_row){NULL};
    if (!b) return -1;
    *w = (rope_row){b, b + half, b + 2 * half, b + 3 * half, b + 4 * half, b + 5 * half, b + 6 * half, b + 8 * half};
    return 0;
}

/* Row `row` into w's inputs: table_index of column i is t1 + i, of column half + i t2 + i
 * (a row of either table layout is contiguous). */
static void row_load(rope_row *w, const rope_ctx *x, size_t row)
{
    const rope_layout *L = &x->L;
    size_t half = L->half, b = row / x->bs, s = row % x->seq;
    size_t t1 = table_index(L, b, s, 0), t2 = table_index(L, b, s, half);
    const double *xv = x->x->values ? x->x->values + row * L->d : NULL;
    for (size_t i = 0; i < half; i++) {
        w->ev[i] = xv ? xv[2 * i] : ug_tload(x->x, row * L->d + 2 * i);
        w->od[i] = xv ? xv[2 * i + 1] : ug_tload(x->x, row * L->d + 2 * i + 1);
    }
    for (size_t i = 0; i < half; i++) {
        w->c1[i] = ug_tload(x->ct, t1 + i), w->s1[i] = ug_tload(x->st, t1 + i);
        w->c2[i] = ug_tload(x->ct, t2 + i), w->s2[i] = ug_tload(x->st, t2 + i);
    }
}

/* A row's outputs from its loaded inputs, every column at once: a loop the compiler
 * vectorises in the plain arithmetics (UG_ARX_CLONES): ugx_dot2 chooses between values, not
 * code paths (cert_inline.h), and this file is compiled with -fno-math-errno
 * -fno-trapping-math (CMakeLists.txt), which change no IEEE result. */
UG_AI void rope_row_values(ug_arx A, const rope_row *w, size_t half)
{
    const double *restrict ev = w->ev, *restrict od = w->od;
    const double *restrict c1 = w->c1, *restrict s1 = w->s1, *restrict c2 = w->c2, *restrict s2 = w->s2;
    double *restrict v = w->v, *restrict e = w->e;
    for (size_t i = 0; i < half; i++) {
        ug_num y = rope_first(A, ev[i], od[i], c1[i], s1[i]);
        v[i] = y.v, e[i] = y.e;
    }
    for (size_t i = 0; i < half; i++) {
        ug_num y = rope_second(A, ev[i], od[i], c2[i], s2[i]);
        v[half + i] = y.v, e[half + i] = y.e;
    }
}
UG_ARX_CLONES(rope_row_values, (const rope_row *w, size_t half), (w, half))

/* Output element (row, j). */
UG_AI ug_num element(ug_arx A, const rope_ctx *x, size_t row, size_t j)
{
    const rope_layout *L = &x->L;
    size_t half = L->half, i = j < half ? j : j - half, t = table_index(L, row / x->bs, row % x->seq, j);
    double e = ug_tload(x->x, row * L->d + 2 * i), o = ug_tload(x->x, row * L->d + 2 * i + 1);
    double c = ug_tload(x->ct, t), sn = ug_tload(x->st, t);
    return j < half ? rope_first(A, e, o, c, sn) : rope_second(A, e, o, c, sn);
}

/* Positions *k .. of the selection that lie in *k's row, one element at a time (a sample,
 * and the MPFR arithmetics); *k moves past them. */
UG_AI void row_elements(ug_arx A, const rope_ctx *x, const ug_selection *sel, size_t *k)
{
    size_t d = x->L.d, row = sel->idx[0][*k] / d, mark = ugx_mark(A);
    for (; *k < sel->n[0] && sel->idx[0][*k] / d == row; ++*k) {
        ugx_emit(A, 0, *k, element(A, x, row, sel->idx[0][*k] % d));
        ugx_release(A, mark);
    }
}

/* A row selected whole (every row at --sample all) is computed by rope_row_values and emitted as
 * a block, its batch and position found once; any other row (and every row in the MPFR
 * arithmetics, where rope_row_values_plain declines) one element at a time. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    rope_ctx x = {ug_case_input(c, "x"), ug_case_input(c, "cos"), ug_case_input(c, "sin"), read_layout(&c->params)};
    const ug_interleave_rope_params *params = UG_P(interleave_rope, &c->params);
    x.seq = (size_t)params->s, x.bs = (size_t)params->n * x.seq; /* rows per batch */
    size_t d = x.L.d;
    rope_row w;
    int rows = row_open(&w, x.L.half) == 0 && d == 2 * x.L.half;
    for (size_t k = 0; k < sel->n[0];) {
        size_t row = sel->idx[0][k] / d;
        if (rows && ug_sel_is_run(sel, 0, k, row * d, d)) {
            row_load(&w, &x, row);
            rows = rope_row_values_plain(ar, &w, x.L.half) == 0;
            if (rows) {
                ug_ar_emit_block(ar, 0, k, w.v, w.e, d); /* rounds: the output dtype, at the emit */
                k += d;
                continue;
            }
        }
        UG_ARX_SPECIALISE(ar, row_elements, &x, sel, &k);
    }
    free(w.ev);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[3];
    g->rows = t->numel / g->cols;
    g->row_tile = 16;          /* the kernel's tile of positions */
    g->col_tile = g->cols / 2; /* the even/odd half boundary */
}

/* fp16 and bf16 only: a case of another dtype has no dtype for x and is refused. */

const ug_op_def ug_opdef_interleave_rope = {
    .decl.check = check, .build = build, .oracle = oracle, .geometry = geometry};
