/* attn_softmax.c — param checks, input builder and exact oracle of attn_softmax.
 *
 *   y[r,:] = softmax(z[r,:]),  z = cap * tanh(x * scale / cap) + mask   (cap 0: z = x*scale + mask)
 *
 * scale and cap are fp32 attributes: the oracle uses their fp32 values, as the kernel
 * does. The mask is an fp32 input built from params.mask ("none", "causal" bottom-right
 * aligned, "padding" with a per-row valid length and every third row fully masked);
 * masked entries are -inf and contribute exactly zero, so the oracle skips them. A fully
 * masked row's output is defined as zeros; special values follow the op's semantics text
 * (classify_row). In CERT the per-entry arithmetic (logit, exp(z - max), the quotient)
 * goes through the inline certified arithmetic (mp/cert_inline.h: the engine's values and
 * bounds, no interpreter call per entry); the row's sum stays one engine call (ug_sum). A
 * row selected whole with cap 0 (every row at --sample all) takes fast_row: the same values
 * with the logits, their max, z - max and the quotients in vectorised loops over arrays
 * (this file is built with -fno-math-errno -fno-trapping-math: CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
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
    *p = (softmax_params){params->rows, params->cols, params->scale, params->cap,
                          params->mask_name};
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

/* z_j before the mask, cap*tanh(x*scale/cap), in the inline certified arithmetic (CERT). */
static ug_cv fast_scaled(const softmax_params *p, double x)
{
    ug_cv zc = ug_cv_mul(ug_cv_c(x), ug_cv_c(p->scale));
    return p->cap > 0 ? ug_cv_mul(ug_cv_c(p->cap), ug_cv_tanh(ug_cv_div(zc, ug_cv_c(p->cap)))) : zc;
}

/* z_j in the arithmetic (the scalar path): cap*tanh(x*scale/cap) + mask (mask finite here). */
static ug_num logit(ug_ar *ar, const softmax_params *p, double x, double mask)
{
    ug_num z = ug_mul(ar, ug_c(ar, x), ug_c(ar, p->scale));
    if (p->cap > 0) {
        ug_num capn = ug_c(ar, p->cap);
        z = ug_mul(ar, capn, ug_tanh(ar, ug_div(ar, z, capn)));
    }
    return mask == 0.0 ? z : ug_add(ar, z, ug_c(ar, mask));
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

/* CERT: classify_row and the live logits (logit's fast formula) with their max in one
 * pass: before the mask, the fast logit's value is classify_row's z (the same double
 * operations), so the class of each entry comes from it. Returns 1 when row r is NaN;
 * else z[j] for the live j, their max *m and count *n_live, as the scalar loop gives them. */
static int fast_logits(const softmax_params *p, const ug_tensor *x, const ug_tensor *mask, size_t r, size_t n,
                       unsigned char *live, ug_num *z, ug_num *m, size_t *n_live)
{
    int nan_row = 0;
    ug_cv mx = {0.0, 0.0};
    for (size_t j = 0; j < n; j++) {
        double mk = ug_tload(mask, r * n + j);
        ug_cv zc = fast_scaled(p, ug_tload(x, r * n + j));
        live[j] = mk != -INFINITY && zc.v != -INFINITY;
        nan_row |= live[j] && (isnan(zc.v) || zc.v == INFINITY);
        if (!live[j]) continue;
        ug_cv zj = mk == 0.0 ? zc : ug_cv_add(zc, ug_cv_c(mk));
        z[j] = ug_cv_num(zj);
        mx = !(*n_live)++ ? zj : ug_cv_max(mx, zj);
    }
    *m = ug_cv_num(mx);
    return nan_row;
}

/* CERT, a row selected whole from position k: e_j / total per live entry, 0 where masked,
 * through the block emit (the values of the per-element loop below); the unsure count. */
static unsigned long emit_row(const ug_ar_sink *sink, size_t k, size_t n, const unsigned char *live, const ug_num *e,
                              ug_num total)
{
    unsigned long unsure = 0;
    ug_cv t = ug_cv_of(total);
    double qv[256], qe[256]; /* 256 entries' quotients, emitted a block at a time */
    for (size_t j0 = 0, pos = 0; j0 < n; j0 += 256) {
        size_t len = n - j0 < 256 ? n - j0 : 256;
        for (size_t j = j0; j < j0 + len; j++) {
            ug_cv q = live[j] ? ug_cv_div(ug_cv_of(e[pos++]), t) : ug_cv_c(0.0);
            qv[j - j0] = q.v, qe[j - j0] = q.e;
        }
        unsure += ug_cv_put_block(sink, k + j0, qv, qe, len);
    }
    return unsure;
}

/* CERT, cap 0, a row selected whole: fast_logits' classification over arrays: live[j]
 * (the mask is not -inf and neither is x*scale, fast_scaled's value for cap 0); *nan_row
 * whether a live logit is NaN or +inf; returns how many are live. A loop the compiler
 * vectorises (the same comparisons on the same values as fast_logits). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static size_t
live_lanes(const double *restrict x, const double *restrict mk, double scale, size_t n, unsigned char *restrict live,
           int *nan_row)
{
    size_t n_live = 0;
    int nan = 0;
    for (size_t j = 0; j < n; j++) {
        double z = x[j] * scale; /* fast_scaled's value: ug_cv_mul's v */
        int l = (mk[j] != -INFINITY) & (z != -INFINITY);
        nan |= l & ((z != z) | (z == INFINITY));
        live[j] = (unsigned char)l;
        n_live += (size_t)l;
    }
    *nan_row = nan;
    return n_live;
}

/* CERT, cap 0: fast_logits' logits over arrays, zv, ze of every entry (meaningless where
 * not live), in a loop the compiler vectorises: both sides of the mask's choice computed,
 * the chosen one the value the branch gave. The same operations on the same values. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
logit_lanes(const double *restrict x, const double *restrict mk, double scale, size_t n, double *restrict zv,
            double *restrict ze)
{
    for (size_t j = 0; j < n; j++) {
        ug_cv zc = ug_cv_mul(ug_cv_c(x[j]), ug_cv_c(scale)); /* fast_scaled, cap 0 */
        ug_cv za = ug_cv_add(zc, ug_cv_c(mk[j])), z = mk[j] == 0.0 ? zc : za;
        zv[j] = z.v, ze[j] = z.e;
    }
}

/* The live logits' max as fast_logits' ug_cv_max chain gives it, in eight interleaved
 * chains the compiler vectorises (x > a ? x : a is the hardware max): the bound is the
 * largest live bound (fmax over non-NaN bounds, which are never -0: ug_cv_make gives +0; so
 * in any order), the value the largest live value (live values are finite: fast_logits
 * sends a NaN or +inf row away and -inf is not live). The chain keeps the first of equal
 * values, so only the sign of a zero maximum can differ, and no value depends on it: the
 * max is only subtracted (z - (+0) and z - (-0) differ only for z = -0, giving -0 and +0,
 * whose exp is 1 either way with the same bound: TwoSum's error and the bounds are the same). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static ug_cv
max_lanes(const double *restrict zv, const double *restrict ze, const unsigned char *restrict live, size_t n)
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
    ug_cv m = {a[0], b[0]};
    for (int k = 1; k < 8; k++) m.v = a[k] > m.v ? a[k] : m.v, m.e = b[k] > m.e ? b[k] : m.e;
    return m;
}

/* zv[j], ze[j] -= the max (ug_cv_sub, fast_row's z - max) on every entry of a row, over arrays. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
sub_lanes(double *restrict zv, double *restrict ze, ug_cv m, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        ug_cv d = ug_cv_sub((ug_cv){zv[j], ze[j]}, m);
        zv[j] = d.v, ze[j] = d.e;
    }
}

/* CERT, cap 0, row r of x (xr) and mask (mr) selected whole from position k: the values of
 * fast_logits, the exp loop, ug_sum and emit_row, with the logits, their max, z - max and
 * the quotients over arrays (live_lanes, logit_lanes, max_lanes, sub_lanes, ug_cv_div_row:
 * vectorised; exp stays libm's, one call per live entry) and the row's sum by ug_cv_sum
 * (ug_sum's CERT formula). zbuf and ebuf hold 3n doubles each (the n numbers of z and e).
 * Returns 1 when the row is NaN (nothing emitted), else 0 with the unsure count added to
 * *unsure. Why: perf put a third of the op's engine time in the scalar per-entry loops (the
 * logit's product error, the max chain with a libm fmax call per entry, the quotient). */
static int fast_row(const softmax_params *p, const double *xr, const double *mr, size_t n, const ug_ar_sink *sink,
                    size_t k, double *zbuf, double *ebuf, unsigned char *live, unsigned long *unsure)
{
    double *zv = zbuf, *ze = zbuf + n, *ev = ebuf, *ee = ebuf + n;
    int nan_row;
    size_t n_live = live_lanes(xr, mr, p->scale, n, live, &nan_row);
    if (nan_row) return 1;
    logit_lanes(xr, mr, p->scale, n, zv, ze);
    if (n_live) sub_lanes(zv, ze, max_lanes(zv, ze, live, n), n); /* z - max (meaningless where not live) */
    for (size_t j = 0, pos = 0; j < n; j++) { /* exp(z - max), packed over the live entries */
        if (!live[j]) continue;
        ug_cv x = ug_cv_exp((ug_cv){zv[j], ze[j]});
        ev[pos] = x.v, ee[pos++] = x.e;
    }
    ug_cv t = n_live ? ug_cv_sum(ev, ee, 1, n_live) : ug_cv_c(0.0);
    ug_cv_div_row(ev, ee, t, n_live, zv, ze); /* the quotients, packed: the logits are spent */
    if (n_live == n) { /* nothing masked: packed is the row */
        *unsure += ug_cv_put_block(sink, k, zv, ze, n);
        return 0;
    }
    double qv[256], qe[256]; /* emit_row's blocks: 0 where masked */
    for (size_t j0 = 0, pos = 0; j0 < n; j0 += 256) {
        size_t len = n - j0 < 256 ? n - j0 : 256;
        for (size_t j = j0; j < j0 + len; j++) {
            int l = live[j];
            qv[j - j0] = l ? zv[pos] : 0.0, qe[j - j0] = l ? ze[pos] : 0.0; /* ug_cv_c(0.0) */
            pos += (size_t)l;
        }
        *unsure += ug_cv_put_block(sink, k + j0, qv, qe, len);
    }
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    softmax_params p;
    read_params(c, &p);
    const ug_tensor *x = ug_case_input(c, "x"), *mask = ug_case_input(c, "mask");
    size_t n = (size_t)p.cols;
    int fast = ug_ar_get_mode(ar) == UG_AR_CERT;
    ug_ar_sink *sink = ug_ar_cert_sink(ar, 0);
    unsigned long unsure = 0, emitted = 0;
    ug_num *z = malloc(n * sizeof *z), *e = malloc(n * sizeof *e);
    unsigned char *live = malloc(n);
    if (!z || !e || !live) {
        free(z);
        free(e);
        free(live);
        return -1;
    }
    for (size_t k = 0; k < sel->n[0];) {
        size_t r = sel->idx[0][k] / n, mark = ug_ar_mark(ar), n_live = 0;
        ug_num m = {0};
        if (fast && sink && !(p.cap > 0) && x->values && mask->values && ug_sel_is_run(sel, 0, k, r * n, n)) {
            /* the whole row, over arrays (z and e's memory as doubles: 3n each) */
            if (!fast_row(&p, x->values + r * n, mask->values + r * n, n, sink, k, (double *)z, (double *)e, live,
                          &unsure)) {
                emitted += n, k += n;
                continue;
            }
            for (; k < sel->n[0] && sel->idx[0][k] / n == r; k++) ug_ar_emit(ar, 0, k, ug_c(ar, NAN));
            ug_ar_release(ar, mark);
            continue;
        }
        if (fast ? fast_logits(&p, x, mask, r, n, live, z, &m, &n_live) : classify_row(&p, x, mask, r, n, live)) {
            for (; k < sel->n[0] && sel->idx[0][k] / n == r; k++) ug_ar_emit(ar, 0, k, ug_c(ar, NAN));
            continue;
        }
        for (size_t j = 0; !fast && j < n; j++) {
            if (!live[j]) continue;
            z[j] = logit(ar, &p, ug_tload(x, r * n + j), ug_tload(mask, r * n + j));
            m = !n_live++ ? z[j] : ug_max(ar, m, z[j]);
        }
        size_t live_pos = 0;
        for (size_t j = 0; j < n; j++) {
            if (!live[j]) continue;
            e[live_pos++] = fast ? ug_cv_num(ug_cv_exp(ug_cv_sub(ug_cv_of(z[j]), ug_cv_of(m))))
                                 : ug_exp(ar, ug_sub(ar, z[j], m));
        }
        ug_num total = n_live ? ug_sum(ar, e, n_live) : ug_c(ar, 0.0);
        if (sink && ug_sel_is_run(sel, 0, k, r * n, n)) { /* the whole row (--sample all): no division per element */
            unsure += emit_row(sink, k, n, live, e, total);
            emitted += n, k += n;
            ug_ar_release(ar, mark);
            continue;
        }
        /* e[] is packed over live entries: walk the row again to map j -> position */
        for (size_t j = 0, pos = 0; j < n && k < sel->n[0] && sel->idx[0][k] / n == r; j++) {
            if (sel->idx[0][k] % n == j) {
                if (fast && live[j])
                    ug_cv_emit(ar, 0, k, ug_cv_div(ug_cv_of(e[pos]), ug_cv_of(total)));
                else
                    ug_ar_emit(ar, 0, k, live[j] ? ug_div(ar, e[pos], total) : ug_c(ar, 0.0));
                k++;
            }
            pos += live[j];
        }
        ug_ar_release(ar, mark);
    }
    ug_ar_tally(ar, emitted, unsure);
    free(z);
    free(e);
    free(live);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], 16, 256, g); /* the kernel's 256-lane tiles */
}

/* Scratch for the case memory estimate: one row's arrays in the oracle (z, e, live) and in
 * the sim kernel. */
static double scratch(const ug_params *P) { return (double)UG_P(attn_softmax, P)->cols * (2 * UG_NUM_BYTES + 1 + 8); }

const ug_op_def ug_opdef_attn_softmax = {
    .op = UG_OP_ATTN_SOFTMAX, .primary = UG_STD_CERTIFIED, .build = build, .oracle = oracle, .geometry = geometry,
    .scratch = scratch};
