/* attn_softmax.c — param checks, input builder and exact oracle of attn_softmax.
 *
 *   y[r,:] = softmax(z[r,:]),  z = cap * tanh(x * scale / cap) + mask   (cap 0: z = x*scale + mask)
 *
 * scale and cap are fp32 attributes: the oracle uses their fp32 values, as the kernel
 * does. The mask is an fp32 input built from params.mask ("none", "causal" bottom-right
 * aligned, "padding" with a per-row valid length and every third row fully masked);
 * masked entries are -inf and contribute exactly zero, so the oracle skips them. A fully
 * masked row's output is defined as zeros; special values follow the op's semantics text
 * (classify_row). The formula is written once, on arith_inline.h's primitives, and every
 * arithmetic runs it (one copy per arithmetic, UG_ARX_SPECIALISE): the logits, their max,
 * exp(z - max), the row's sum (one engine call, ugx_sum) and the quotients. A row selected
 * whole (every row at --sample all) takes its quotients over arrays and the block emit
 * (softmax_emit_row), and with cap 0 also its logits, their max and z - max (the row pass,
 * row_exps_lanes): the same numbers, in loops the compiler vectorises, in every plain
 * arithmetic (this file is built with -fno-math-errno -fno-trapping-math: CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "oracles/mp/arith_inline.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

/* The params the oracle and the builder use, read from the case's parsed params. */
typedef struct {
    long rows, cols;
    double scale, cap; /* fp32 values */
    const char *mask;
} softmax_params;

static void read_params(const ug_case *c, softmax_params *p)
{
    const ug_params *P = &c->params;
    const ug_attn_softmax_params *params = UG_P(attn_softmax, P);
    *p = (softmax_params){params->rows, params->cols, params->scale, params->cap, params->mask_name};
}

static int masked(const softmax_params *p, uint64_t seed, long r, long j)
{
    if (strcmp(p->mask, "causal") == 0) return j > r + (p->cols - p->rows);
    if (strcmp(p->mask, "padding") == 0) {
        if (r % 3 == 2) return 1;
        uint32_t w[4];
        ug_rng_words(seed, 0x6d61736bu, (uint64_t)r, 0, w);
        return j >= 1 + (long)(w[0] % (uint32_t)p->cols);
    }
    return 0;
}

/* Fills the mask (0 or -inf) from params.mask. */
static int build(ug_case *c, char *err, size_t errlen)
{
    softmax_params p;
    read_params(c, &p);
    ug_tensor *mask = ug_case_input_mut(c, "mask");
    for (long r = 0; r < p.rows; r++)
        for (long j = 0; j < p.cols; j++)
            ug_dtype_store(UG_DT_FP32, mask->data, (size_t)(r * p.cols + j),
                           masked(&p, c->spec.seed, r, j) ? -INFINITY : 0.0);
    return 0;
}

/* The formula, written once (mp/arith_inline.h): every arithmetic evaluates these functions,
 * the engine choosing which (exact, certified, device bound, naive, f64). */

/* x*scale: the logit before the cap and the mask. rounds: the product. */
UG_AI ug_num scaled(ug_arx A, double x, double scale) { return ugx_mul(A, ugx_c(A, x), ugx_c(A, scale)); }

/* z + mask (the mask finite here; a zero adds nothing). rounds: the sum. */
UG_AI ug_num plus_mask(ug_arx A, ug_num z, double mask) { return mask == 0.0 ? z : ugx_add(A, z, ugx_c(A, mask)); }

/* z_j: cap*tanh(x*scale/cap) + mask, x*scale + mask with cap 0. rounds: each primitive. */
UG_AI ug_num logit(ug_arx A, const softmax_params *p, double x, double mask)
{
    ug_num z = scaled(A, x, p->scale);
    if (p->cap > 0) {
        ug_num capn = ugx_c(A, p->cap);
        z = ugx_mul(A, capn, ugx_tanh(A, ugx_div(A, z, capn)));
    }
    return plus_mask(A, z, mask);
}

/* Special values, as the contract states: an entry is live unless masked or its logit is
 * -inf; a NaN or +inf live logit makes the whole row NaN (exp(z - max) is NaN there).
 * Returns 1 when row r is NaN; fills live[]. Decided in double: the class of a logit
 * (NaN, +-inf, finite) does not depend on rounding. */
static int classify_row(const softmax_params *p, const ug_tensor *x, const ug_tensor *mask, size_t r, size_t n,
                        unsigned char *live)
{
    int nan_row = 0;
    for (size_t j = 0; j < n; j++) {
        double z = ug_tload(x, r * n + j) * p->scale;
        if (p->cap > 0) z = p->cap * tanh(z / p->cap);
        live[j] = ug_tload(mask, r * n + j) != -INFINITY && z != -INFINITY;
        nan_row |= live[j] && (isnan(z) || z == INFINITY);
    }
    return nan_row;
}

/* The oracle's state: the case, and one row's arrays (n numbers each in z and e, n values
 * and bounds in zv and ze). z is allocated by the first row that goes entry by entry (the
 * row pass holds its logits in zv, ze). */
typedef struct {
    softmax_params p;
    const ug_tensor *x, *mask;
    size_t n;
    ug_num *z, *e;
    double *zv, *ze; /* the row pass's logits, values and bounds */
    unsigned char *live;
} softmax_ctx;

/* Row r's exponentials exp(z_j - max) into c->e, packed over its live entries, one entry at
 * a time: the logits (logit) and their max by ugx_max in order, then the exponentials.
 * Returns -1 when the row is NaN (classify_row), -3 out of memory, else the live count,
 * with *total their sum (ugx_sum; 0 when none is live). rounds: z - max, exp, the sum. */
UG_AI long row_exps(ug_arx A, softmax_ctx *c, size_t r, ug_num *total)
{
    size_t n = c->n, n_live = 0, pos = 0;
    if (!c->z && !(c->z = malloc(n * sizeof *c->z))) return -3;
    if (classify_row(&c->p, c->x, c->mask, r, n, c->live)) return -1;
    ug_num m = {0};
    for (size_t j = 0; j < n; j++) {
        if (!c->live[j]) continue;
        c->z[j] = logit(A, &c->p, ug_tload(c->x, r * n + j), ug_tload(c->mask, r * n + j));
        m = !n_live++ ? c->z[j] : ugx_max(A, m, c->z[j]);
    }
    for (size_t j = 0; j < n; j++)
        if (c->live[j]) c->e[pos++] = ugx_exp(A, ugx_sub(A, c->z[j], m));
    *total = n_live ? ugx_sum(A, c->e, n_live) : ugx_c(A, 0.0);
    return (long)n_live;
}

/* The row pass (cap 0, row r selected whole, the inputs as arrays): row_exps' numbers, with
 * the classification, the logits, their max and z - max in loops over arrays that the
 * compiler vectorises (this file is built with -fno-math-errno -fno-trapping-math:
 * CMakeLists.txt; no IEEE result changes), in every plain arithmetic (UG_ARX_CLONES); exp
 * stays libm's, one call per live entry. Why the row pass: perf put a third of the op's
 * engine time in the scalar per-entry loops (the logit's product error, the max chain
 * with a libm fmax call per entry, the quotient), and the device bound's and naive
 * values' loops went through the engine's out-of-line primitives entry by entry. */
#define SM_BLOCK 256 /* the quotients' block (softmax_emit_row) */

/* classify_row for cap 0 over arrays (the same comparisons on the same values): live[j]
 * (the mask is not -inf and neither is x*scale); *nan_row whether a live logit is NaN or
 * +inf; returns how many are live. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static size_t
live_lanes(const double *restrict x, const double *restrict mk, double scale, size_t n, unsigned char *restrict live,
           int *nan_row)
{
    size_t n_live = 0;
    int nan = 0;
    for (size_t j = 0; j < n; j++) {
        double z = x[j] * scale; /* classify_row's z, cap 0 */
        int l = (mk[j] != -INFINITY) & (z != -INFINITY);
        nan |= l & ((z != z) | (z == INFINITY));
        live[j] = (unsigned char)l;
        n_live += (size_t)l;
    }
    *nan_row = nan;
    return n_live;
}

/* logit (cap 0) of n entries into zv, ze (meaningless where not live): both sides of the
 * mask's choice computed, the chosen one the value the branch gave. rounds: the product,
 * the mask's sum (logit's). */
UG_AI void softmax_logit_lanes(ug_arx A, const double *restrict x, const double *restrict mk, double scale, size_t n,
                               double *restrict zv, double *restrict ze)
{
    for (size_t j = 0; j < n; j++) {
        ug_num z = plus_mask(A, scaled(A, x[j], scale), mk[j]);
        zv[j] = z.v, ze[j] = z.e;
    }
}
UG_ARX_CLONES(softmax_logit_lanes,
              (const double *restrict x, const double *restrict mk, double scale, size_t n, double *restrict zv,
               double *restrict ze),
              (x, mk, scale, n, zv, ze))

/* *m (start: {-inf, 0}) raised to the max of the live logits among n, so that over a row's
 * blocks it ends as row_exps' ugx_max chain gives it: eight interleaved chains (x > a ? x :
 * a is the hardware max). In every plain arithmetic ugx_max keeps the larger value (the
 * first of equal ones) and the larger bound (CERT and DEVICE: fmax; NAIVE and F64: every
 * bound is 0), so the chain's bound is the largest live bound (bounds are never NaN nor
 * -0: in any order) and its value the largest live value. Only the sign of a zero maximum
 * can differ, and no value depends on it: the max is only subtracted (z - (+0) and z -
 * (-0) differ only for z = -0, giving -0 and +0, whose exp is 1 either way with the same
 * bound). A NaN live logit (NAIVE only: the scale rounded to inf, times x = 0) may make the
 * chain's choice differ, but then its exp, the row's sum and every live quotient are NaN
 * whichever max is subtracted. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
max_lanes(const double *restrict zv, const double *restrict ze, const unsigned char *restrict live, size_t n, ug_num *m)
{
    double a[8], b[8];
    for (int k = 0; k < 8; k++) a[k] = -INFINITY, b[k] = 0.0; /* below any live value; bounds are >= 0 */
    size_t j0 = 0;
    for (; j0 + 8 <= n; j0 += 8)
        for (int k = 0; k < 8; k++) {
            double z = live[j0 + k] ? zv[j0 + k] : -INFINITY, e = live[j0 + k] ? ze[j0 + k] : 0.0;
            a[k] = z > a[k] ? z : a[k], b[k] = e > b[k] ? e : b[k];
        }
    for (int k = 0; j0 + (size_t)k < n; k++) {
        double z = live[j0 + k] ? zv[j0 + k] : -INFINITY, e = live[j0 + k] ? ze[j0 + k] : 0.0;
        a[k] = z > a[k] ? z : a[k], b[k] = e > b[k] ? e : b[k];
    }
    for (int k = 0; k < 8; k++) m->v = a[k] > m->v ? a[k] : m->v, m->e = b[k] > m->e ? b[k] : m->e;
}

/* zv[j], ze[j] -= m (row_exps' z - max) on n entries, over arrays. rounds: the difference. */
UG_AI void softmax_sub_lanes(ug_arx A, double *restrict zv, double *restrict ze, ug_num m, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        ug_num d = ugx_sub(A, (ug_num){zv[j], ze[j], NULL}, m);
        zv[j] = d.v, ze[j] = d.e;
    }
}
UG_ARX_CLONES(softmax_sub_lanes, (double *restrict zv, double *restrict ze, ug_num m, size_t n), (zv, ze, m, n))

/* row_exps for row r by the row pass: the row's logits once into c->zv, c->ze, their max,
 * z - max, then exp per live entry. Returns row_exps' result, or -2 when the row pass does
 * not run (the MPFR arithmetics). */
UG_AI long row_exps_lanes(ug_arx A, const softmax_ctx *c, size_t r, ug_num *total)
{
    size_t n = c->n, pos = 0;
    const double *xr = c->x->values + r * n, *mr = c->mask->values + r * n;
    int nan_row;
    size_t n_live = live_lanes(xr, mr, c->p.scale, n, c->live, &nan_row);
    ug_num m = {-INFINITY, 0.0, NULL};
    if (nan_row) return -1;
    if (n_live) {
        if (softmax_logit_lanes_plain(A.ar, xr, mr, c->p.scale, n, c->zv, c->ze)) return -2;
        max_lanes(c->zv, c->ze, c->live, n, &m);
        softmax_sub_lanes_plain(A.ar, c->zv, c->ze, m, n); /* z - max (meaningless where not live) */
        for (size_t j = 0; j < n; j++)                     /* exp(z - max), packed over the live entries */
            if (c->live[j]) c->e[pos++] = ugx_exp(A, (ug_num){c->zv[j], c->ze[j], NULL});
    }
    *total = n_live ? ugx_sum(A, c->e, n_live) : ugx_c(A, 0.0);
    return (long)n_live;
}

/* A row of n entries selected whole from position k, e packed over its live entries: e_j /
 * t per live entry, 0 where masked, SM_BLOCK entries at a time: the quotients over arrays,
 * then the block emit (ug_ar_emit_block). rounds: the quotient. */
UG_AI void softmax_emit_row(ug_arx A, const unsigned char *restrict live, const ug_num *restrict e, ug_num t, size_t n,
                            size_t k)
{
    double qv[SM_BLOCK], qe[SM_BLOCK], v[SM_BLOCK], ve[SM_BLOCK];
    ug_num zero = ugx_c(A, 0.0);
    for (size_t j0 = 0, pos = 0; j0 < n; j0 += SM_BLOCK) {
        size_t len = n - j0 < SM_BLOCK ? n - j0 : SM_BLOCK, cnt = 0;
        for (size_t j = 0; j < len; j++) cnt += live[j0 + j];
        for (size_t i = 0; i < cnt; i++) { /* the block's live quotients, packed */
            ug_num q = ugx_div(A, e[pos + i], t);
            qv[i] = q.v, qe[i] = q.e;
        }
        pos += cnt;
        if (cnt == len) { /* nothing masked: packed is the block */
            ug_ar_emit_block(A.ar, 0, k + j0, qv, qe, len);
            continue;
        }
        for (size_t j = 0, p = 0; j < len; j++) {
            int l = live[j0 + j];
            v[j] = l ? qv[p] : zero.v, ve[j] = l ? qe[p] : zero.e;
            p += (size_t)l;
        }
        ug_ar_emit_block(A.ar, 0, k + j0, v, ve, len);
    }
}
UG_ARX_CLONES(softmax_emit_row,
              (const unsigned char *restrict live, const ug_num *restrict e, ug_num t, size_t n, size_t k),
              (live, e, t, n, k))

/* Row r's selected elements from position *k on (past them on return), n_live and total
 * from row_exps (or its row pass): e_j / total per live entry, 0 where masked; a row
 * selected whole (every row at --sample all) through softmax_emit_row in the plain arithmetics,
 * else one element at a time. */
UG_AI void row_emit(ug_arx A, const softmax_ctx *c, const ug_selection *sel, size_t r, ug_num total, size_t *k)
{
    size_t n = c->n;
    if (ug_sel_is_run(sel, 0, *k, r * n, n) && !softmax_emit_row_plain(A.ar, c->live, c->e, total, n, *k)) {
        *k += n;
        return;
    }
    /* e[] is packed over live entries: walk the row again to map j -> position */
    for (size_t j = 0, pos = 0; j < n && *k < sel->n[0] && sel->idx[0][*k] / n == r; j++) {
        if (sel->idx[0][*k] % n == j) {
            ugx_emit(A, 0, *k, c->live[j] ? ugx_div(A, c->e[pos], total) : ugx_c(A, 0.0));
            ++*k;
        }
        pos += c->live[j];
    }
}

/* Every selected row: its exponentials by the row pass where it applies (cap 0, the row
 * selected whole), else entry by entry; then its quotients. A NaN row emits NaN. */
UG_AI void rows(ug_arx A, softmax_ctx *c, const ug_selection *sel, int *rc)
{
    size_t n = c->n;
    int lanes = !(c->p.cap > 0) && c->x->values && c->mask->values;
    for (size_t k = 0; k < sel->n[0];) {
        size_t r = sel->idx[0][k] / n, mark = ugx_mark(A);
        ug_num total;
        long n_live = lanes && ug_sel_is_run(sel, 0, k, r * n, n) ? row_exps_lanes(A, c, r, &total) : -2;
        if (n_live == -2) n_live = row_exps(A, c, r, &total);
        if (n_live == -3) {
            *rc = -1;
            return;
        }
        if (n_live < 0) /* a NaN row */
            for (; k < sel->n[0] && sel->idx[0][k] / n == r; k++) ugx_emit(A, 0, k, ugx_c(A, NAN));
        else
            row_emit(A, c, sel, r, total, &k);
        ugx_release(A, mark);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    softmax_ctx x;
    read_params(c, &x.p);
    x.x = ug_case_input(c, "x"), x.mask = ug_case_input(c, "mask");
    x.n = (size_t)x.p.cols;
    x.z = NULL, x.e = malloc(x.n * sizeof *x.e);
    x.zv = malloc(2 * x.n * sizeof *x.zv), x.ze = x.zv ? x.zv + x.n : NULL;
    x.live = malloc(x.n);
    int rc = x.e && x.live && x.zv ? 0 : -1;
    if (!rc) UG_ARX_SPECIALISE(ar, rows, &x, sel, &rc);
    free(x.z);
    free(x.e);
    free(x.zv);
    free(x.live);
    return rc;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 256, g); /* the kernel's 256-lane tiles */
}

/* Scratch for the case memory estimate: one row's arrays in the oracle (z, e, live) and in
 * the sim kernel. */
static double scratch(const ug_params *P) { return (double)UG_P(attn_softmax, P)->cols * (2 * UG_NUM_BYTES + 1 + 8); }

const ug_op_def ug_opdef_attn_softmax = {.build = build, .oracle = oracle, .geometry = geometry, .scratch = scratch};
