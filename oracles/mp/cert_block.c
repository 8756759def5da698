/* cert_block.c — the CERT emit (cert_inline.h's ug_cv_put) over a block of elements, in a
 * loop the compiler vectorises.
 *
 * Why: once an elementwise oracle computes its values and bounds by the inline certified
 * arithmetic, the emit's two or three roundings per element to the output dtype are its
 * main cost. Here they run on whole blocks: fp32 by the hardware conversion, bf16 and fp16
 * on the bits (dtype.h's ug_dtype_round_normal_bits) for values normal in the format below
 * its top binade; every other element (zeros, the format's subnormals, overflow, NaN, the
 * other dtypes) takes ug_cv_put itself. The same decisions and values as ug_cv_put, bit for
 * bit. Built with -fno-math-errno -fno-trapping-math (CMakeLists.txt: both sides of a
 * choice evaluated; no IEEE result changes); the block loop has an AVX2 clone. The column
 * dot products below are the same kind of loop: cert_inline.h's formulas over arrays. */
#include "oracles/mp/cert_block.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mp/cert_inline.h"

#define BLK 64  /* lanes per vector pass: a row shorter than a block pads less */
#define SHORT 8 /* a tail this short goes through ug_cv_put itself */

/* ug_cv_next_down without branches (the same result for every x). */
static inline double next_down(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u += x > 0.0 ? (uint64_t)-1 : (uint64_t)1;
    double y;
    memcpy(&y, &u, sizeof y);
    y = x == 0.0 ? -0x1p-1074 : y;
    return (x != x) | (x == -INFINITY) ? x : y;
}

/* x rounded to the format: mant 0 = fp32 (hardware), else bf16/fp16 on the bits, *ok = 0
 * where those bits would be wrong (x outside [2^emin, 2^emax)): ug_dtype_round_fast's cases. */
static inline double round_lane(double x, int mant, int emin, int emax, int64_t *ok)
{
    if (!mant) {
        *ok = 1;
        return (double)(float)x; /* rounds: hardware RNE to binary32 */
    }
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int64_t ex = (int64_t)((u >> 52) & 0x7ffu) - 1023;
    *ok = (ex >= emin) & (ex < emax);
    u = ug_dtype_round_normal_bits(u, mant); /* rounds: RNE */
    double r;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* The rule of ug_cv_round on BLK lanes, as ug_cv_put stores it: g, gs (the value) and un
 * (1 where unsure) of each lane, and slow where a rounding needs ug_cv_round. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
round_block(const double *restrict v, const double *restrict e, int mant, int emin, int emax, double *restrict g,
            double *restrict gs, int64_t *restrict un, int64_t *restrict slow)
{
    for (int i = 0; i < BLK; i++) {
        int64_t ok_v, ok_lo, ok_hi;
        double near = round_lane(v[i], mant, emin, emax, &ok_v);                      /* rounds: the output's dtype */
        double lo = round_lane(next_down(v[i] - e[i]), mant, emin, emax, &ok_lo);     /* rounds: interval end */
        double hi = round_lane(-next_down(-(v[i] + e[i])), mant, emin, emax, &ok_hi); /* rounds: interval end */
        int64_t exact = e[i] == 0.0;
        int64_t s = ug_cv_finite(v[i]) & ug_cv_finite(e[i]) & (lo == hi);
        int64_t sure = exact ? v[i] == v[i] : s;
        un[i] = !sure;
        g[i] = exact ? near : s & (lo != 0.0) ? lo : near;
        gs[i] = v[i];
        slow[i] = (ok_v == 0) | ((exact == 0) & ((ok_lo & ok_hi) == 0));
    }
}

/* round_block where every bound is 0 (exact values: input sums, products proved exact): the
 * value's rounding alone, the same g, gs, un and slow as round_block gives on such lanes
 * (exact: sure where v is not NaN, g the rounding of v, slow where that rounding's bits are
 * out of range), without the interval ends' two roundings. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
round_exact_block(const double *restrict v, int mant, int emin, int emax, double *restrict g, double *restrict gs,
                  int64_t *restrict un, int64_t *restrict slow)
{
    for (int i = 0; i < BLK; i++) {
        int64_t ok_v;
        g[i] = round_lane(v[i], mant, emin, emax, &ok_v); /* rounds: the output's dtype */
        gs[i] = v[i];
        un[i] = !(v[i] == v[i]);
        slow[i] = ok_v == 0;
    }
}

/* Whether e[0..BLK) are all +-0, on the bits (a NaN's are nonzero): a loop that vectorises,
 * where e[i] != 0.0 compiles to a flag test per lane. */
static int all_zero(const double *e)
{
    uint64_t nz = 0;
    for (int i = 0; i < BLK; i++) {
        uint64_t u;
        memcpy(&u, e + i, sizeof u);
        nz |= u << 1; /* the sign bit dropped */
    }
    return nz == 0;
}

/* round_block's flags on BLK lanes: uz[i] = un[i] as bytes, *any_slow whether a lane is slow;
 * returns how many lanes are unsure and not slow. A loop of its own: with the doubles' lanes
 * the byte stores and these sums kept round_block from vectorising. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static int64_t flags_block(const int64_t *restrict un,
                                                                                        const int64_t *restrict slow,
                                                                                        unsigned char *restrict uz,
                                                                                        int64_t *restrict any_slow)
{
    int64_t n = 0, any = 0;
    for (int i = 0; i < BLK; i++) {
        uz[i] = (unsigned char)un[i];
        n += un[i] & (slow[i] ^ 1);
        any |= slow[i];
    }
    *any_slow = any;
    return n;
}

unsigned long ug_cv_put_block(const ug_ar_sink *s, size_t k0, const double *v, const double *e, size_t n)
{
    int bf = s->dt == UG_DT_BF16, fast = s->dt == UG_DT_FP32 || bf || s->dt == UG_DT_FP16;
    int mant = s->dt == UG_DT_FP32 ? 0 : bf ? 7 : 10, emin = bf ? -126 : -14, emax = bf ? 127 : 15;
    double pv[BLK], pe[BLK], g[BLK], gs[BLK];
    unsigned char uz[BLK];
    int64_t slow[BLK], un[BLK];
    unsigned long unsure = 0;
    for (size_t i0 = 0; i0 < n; i0 += BLK) {
        size_t len = n - i0 < BLK ? n - i0 : BLK, k = k0 + i0;
        const double *bv = v + i0, *be = e + i0;
        if (!fast || len < SHORT) {
            for (size_t i = 0; i < len; i++) unsure += ug_cv_put(s, k + i, (ug_cv){bv[i], be[i]});
            continue;
        }
        int whole = len == BLK; /* then the lanes go straight to the sink */
        if (!whole) {           /* the tail, padded with exact zeros */
            memset(pv, 0, sizeof pv), memset(pe, 0, sizeof pe);
            memcpy(pv, bv, len * sizeof *pv), memcpy(pe, be, len * sizeof *pe);
            bv = pv, be = pe;
        }
        int64_t any_slow;
        if (all_zero(be))
            round_exact_block(bv, mant, emin, emax, whole ? s->g + k : g, whole ? s->gstar + k : gs, un, slow);
        else
            round_block(bv, be, mant, emin, emax, whole ? s->g + k : g, whole ? s->gstar + k : gs, un, slow);
        unsure += (unsigned long)flags_block(un, slow, whole && s->unsure ? s->unsure + k : uz, &any_slow);
        if (!whole) {
            memcpy(s->g + k, g, len * sizeof *g), memcpy(s->gstar + k, gs, len * sizeof *gs);
            if (s->unsure) memcpy(s->unsure + k, uz, len);
        }
        for (size_t i = 0; any_slow && i < len; i++) /* ug_cv_put replaces what the block stored there */
            if (slow[i]) unsure += ug_cv_put(s, k + i, (ug_cv){bv[i], be[i]});
    }
    return unsure;
}

/* ---- dot products of many columns at once ---- */

/* Row i of B into the running sums of every column: p = x*B[i][c], s += p, |p| summed, the
 * input error x_e |B[i][c]| summed, and ex[c] &= each term's exactness (x_ok: x exact and
 * of <= 26 bits; track 0: not tracked) — ug_cv_dot_step's test on every term, so the same
 * flag as the branch that stops testing once it fails. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
cols_row(double x, double xe, int64_t x_ok, int track, const double *restrict row, size_t ncols, ug_cv_cols *restrict a)
{
    if (!track) {
        for (size_t c = 0; c < ncols; c++) {
            double y = row[c], p = x * y;
            a->s[c] += p, a->abs_sum[c] += fabs(p), a->e[c] += xe * fabs(y);
        }
        return;
    }
    for (size_t c = 0; c < ncols; c++) {
        double y = row[c], p = x * y, t = a->s[c] + p;
        a->exact[c] &= x_ok & ug_cv_term_exact(x, y, a->s[c], p, t);
        a->s[c] = t, a->abs_sum[c] += fabs(p), a->e[c] += xe * fabs(y);
    }
}

int ug_cv_cols_open(ug_cv_cols_work *w, size_t ncols)
{
    size_t n = ncols ? ncols : 1;
    _Static_assert(sizeof(ug_cv) == 2 * sizeof(double) && sizeof(int64_t) == sizeof(double), "8-byte slots");
    double *d = malloc(n * 6 * sizeof *d); /* s, abs_sum, e; exact; out (two each) */
    w->acc = (ug_cv_cols){d, d ? d + n : NULL, d ? d + 2 * n : NULL, d ? (int64_t *)(void *)(d + 3 * n) : NULL};
    w->out = d ? (ug_cv *)(void *)(d + 4 * n) : NULL;
    return d ? 0 : -1;
}

void ug_cv_cols_close(ug_cv_cols_work *w)
{
    free(w->acc.s);
    w->acc.s = NULL, w->out = NULL;
}

static void cols_start(ug_cv_cols *a, size_t ncols, int64_t exact)
{
    for (size_t c = 0; c < ncols; c++) a->s[c] = a->abs_sum[c] = a->e[c] = 0.0, a->exact[c] = exact;
}

void ug_cv_dot_d_cols(const double *x, size_t sx, const double *B, size_t ldb, size_t n, size_t ncols, ug_cv_cols *a,
                      ug_cv *out)
{
    int track = n <= 64; /* ug_cv_dot_d(.., track_long 0) */
    cols_start(a, ncols, track);
    for (size_t i = 0; i < n; i++) cols_row(x[i * sx], 0.0, ug_cv_narrow(x[i * sx]), track, B + i * ldb, ncols, a);
    for (size_t c = 0; c < ncols; c++)
        out[c] = ug_cv_make(a->s[c], a->exact[c] ? 0.0 : ug_cv_dot_err(n, a->abs_sum[c]));
}

void ug_cv_dot_nd_cols(const ug_num *x, const double *B, size_t ldb, size_t n, size_t ncols, ug_cv_cols *a, ug_cv *out)
{
    cols_start(a, ncols, 1);
    for (size_t i = 0; i < n; i++)
        cols_row(x[i].v, x[i].e, (x[i].e == 0.0) & ug_cv_narrow(x[i].v), 1, B + i * ldb, ncols, a);
    for (size_t c = 0; c < ncols; c++) {
        ug_cv_acc acc = {a->s[c], a->abs_sum[c], a->e[c], (int)a->exact[c]};
        out[c] = ug_cv_dot_nd_end(&acc, n);
    }
}
