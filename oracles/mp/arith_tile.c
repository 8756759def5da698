/* arith_tile.c — the dot products of attention rows many at a time, bit for bit as one at a
 * time (arith.h: ug_dot_d_tile, ug_dot_nd_cols, ug_dot_nd_cols_tile), and many tokens' rows
 * times one weight's columns (ug_dot_d_rows: the prologs' x.W).
 *
 * Why: an attention oracle evaluates, per query row, the scores q.k_j of all its keys and
 * the weighted sums sum_j w_j v_jd of all its columns, in each arithmetic; one ug_dot_d per
 * key reads a strided key and pays a call and a mode switch per product, and one row at a
 * time streams every key and value row through the cache again. Here the plain arithmetics
 * (CERT, NAIVE, DEVICE, F64) run as vector loops over keys (scores: over K^T, transposed
 * once) or over columns (weighted sums), several query rows over a chunk of keys that stays
 * in cache. Each output still sees exactly its own operations in its own order: the score
 * of key j is ug_dot_d's left-to-right sum over i (value, magnitudes, and in CERT for D <=
 * 64 the exactness of every product and addition, an AND over i that any grouping
 * computes); a weighted sum is ug_dot_nd's left-to-right sum over keys. So the numbers,
 * bounds included, are the scalar primitives' (tests/test_attn_row_oracle.c compares every
 * one). The MPFR arithmetics go element by element through the scalar primitives. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mp/arith.h"
#include "oracles/mp/arith_inline.h"
#include "oracles/mp/arith_engine_private.h"
#include "oracles/mp/cert_block.h"
#include "oracles/mp/cert_inline.h"
#include "oracles/mp/naive_f32.h"
#include "oracles/mp/tile_simd.h"

#define KEY_CHUNK 128 /* keys whose K^T columns or V rows stay in cache across a tile's rows */
#define COL_CHUNK 64  /* columns of one weighted-sum accumulator */

typedef double tv4 __attribute__((vector_size(32)));
typedef uint64_t tu4 __attribute__((vector_size(32)));
typedef int64_t ti4 __attribute__((vector_size(32)));
/* Eight lanes: one register in the x86-64-v4 clone, two in the avx2 one (the same
 * operations per lane either way), for the loops of products and sums only: gcc 12
 * scalarises the 64-byte vectors' integer compares in a target_clones function (round4's
 * range test), so the naive loops stay on tv4. */
typedef double tv8 __attribute__((vector_size(64)));
typedef uint64_t tu8 __attribute__((vector_size(64)));

static int is_mp(ug_ar_mode m) { return m == UG_AR_EXACT || m == UG_AR_MPFR_SEQ; }
/* |x| of four lanes (a macro, not a function: clang refuses a 256-bit vector argument in
 * the non-AVX clones, inline or not) */
#define vabs(x) ((tv4)((tu4)(x) & (tu4){~(1ull << 63), ~(1ull << 63), ~(1ull << 63), ~(1ull << 63)}))

/* The naive rounding of four doubles to bf16 (bf = 1) or fp16 on the bits
 * (ug_dtype_round_normal_bits), right where ug_dtype_round_fast takes that path: a value
 * normal in the format below its top binade, or a zero (the same bits, sign kept, as
 * ug_dtype_round gives: common in the naive gradient, where dP - Delta rounds to 0). Lanes
 * outside these set *bad, and the caller recomputes its block (subnormals: round4_sub;
 * overflow, NaN: through ug_dtype_round_fast). */
static inline __attribute__((always_inline)) tv4 round4(int bf, tv4 x, ti4 *bad)
{
    const int shift = 52 - (bf ? 7 : 10);
    const uint64_t lo = (uint64_t)(1023 + (bf ? -126 : -14)), span = bf ? 253 : 29; /* e in [emin, emax) */
    tu4 u = (tu4)x;
    *bad |= ~((((u >> 52) & 0x7ffu) - lo < span) | ((u << 1) == 0)); /* a zero keeps its bits, as there */
    return (tv4)((u + ((((uint64_t)1 << (shift - 1)) - 1u) + ((u >> shift) & 1u))) &
                 ~(((uint64_t)1 << shift) - 1u)); /* rounds: RNE */
}

/* round4, and a value below the format's normal range rounded as core/dtype.c's round_binary
 * rounds it: c + x - c with c = 1.5 * 2^(emin-mant+52) (RNE to the subnormal grid), the sign
 * put back (a tiny negative to -0). Only the top binade, overflow and NaN set *bad. Dearer
 * than round4 by a blend: the retry of a block round4 flagged (cols_naive_bits), not the
 * first pass. */
static inline __attribute__((always_inline)) tv4 round4_sub(int bf, tv4 x, ti4 *bad)
{
    const uint64_t lo = (uint64_t)(1023 + (bf ? -126 : -14)), sign = (uint64_t)1 << 63;
    const uint64_t cu = ((lo - (uint64_t)(bf ? 7 : 10) + 52) << 52) | ((uint64_t)1 << 51);
    tu4 u = (tu4)x, e = (u >> 52) & 0x7ffu;
    ti4 sub = (e < lo) & ((u << 1) != 0), normal_bad = {0};
    tu4 normal = (tu4)round4(bf, x, &normal_bad);
    *bad |= normal_bad & ~sub;
    tv4 c;
    memcpy(&c, (tu4[]){{cu, cu, cu, cu}}, sizeof c);
    tu4 tiny = ((tu4)((c + x) - c) & ~sign) | (u & sign); /* rounds: RNE to the subnormal grid; copysign */
    return (tv4)(((tu4)sub & tiny) | (~(tu4)sub & normal));
}

static inline __attribute__((always_inline)) int any4(ti4 b) { return (b[0] | b[1] | b[2] | b[3]) != 0; }

#define vabs8(x) ((tv8)((tu8)(x) & ~(tu8){0} >> 1))

/* ---- scores: ug_dot_d of one row q against keys j0.. of K^T ------------------------------------- */

/* Value and magnitude sums (s, a) of w keys, 8 at a time: CERT without tracking, DEVICE, F64. */
UG_TILE_CLONES static void scores_plain(const double *q, const double *Kt, size_t ldk, size_t D, size_t w, double *s,
                                        double *a)
{
    size_t j = 0;
    for (; j + 16 <= w; j += 16) { /* two independent chains; a shared loop with a flag measured slower */
        tv8 s0 = {0}, s1 = {0}, a0 = {0}, a1 = {0}, k0, k1;
        for (size_t i = 0; i < D; i++) {
            UG_VLD(k0, Kt + i * ldk + j), UG_VLD(k1, Kt + i * ldk + j + 8);
            tv8 p0 = q[i] * k0, p1 = q[i] * k1;
            s0 += p0, s1 += p1, a0 += vabs8(p0), a1 += vabs8(p1);
        }
        UG_VST(s + j, s0), UG_VST(s + j + 8, s1), UG_VST(a + j, a0), UG_VST(a + j + 8, a1);
    }
    for (; j + 8 <= w; j += 8) {
        tv8 s0 = {0}, a0 = {0}, k0;
        for (size_t i = 0; i < D; i++) {
            UG_VLD(k0, Kt + i * ldk + j);
            tv8 p0 = q[i] * k0;
            s0 += p0, a0 += vabs8(p0);
        }
        UG_VST(s + j, s0), UG_VST(a + j, a0);
    }
    for (; j < w; j++) {
        double sj = 0.0, aj = 0.0;
        for (size_t i = 0; i < D; i++) {
            double p = q[i] * Kt[i * ldk + j];
            sj += p, aj += fabs(p);
        }
        s[j] = sj, a[j] = aj;
    }
}

/* One step of ug_cv_dot_d's exactness test (narrowness aside, decided per row and key):
 * nonzero where the product p = x y under- or overflowed the exact range, or t = s + p is
 * not finite or not exact. */
/* A statement macro (clang refuses 256-bit vector arguments in the non-AVX clones):
 * bad |= the test for the step x*y = p, t = s + p. */
#define INEXACT4(bad, x, y, p, s, t)                                                                                   \
    do {                                                                                                               \
        tv4 bb_ = (t) - (s), err_ = ((s) - ((t)-bb_)) + ((p)-bb_), ap_ = vabs(p);                                      \
        (bad) |= (err_ != 0.0) | ~(vabs(t) <= 0x1.fffffffffffffp1023);                                                 \
        if ((x) != 0.0) (bad) |= ~(((y) == 0.0) | ((ap_ >= 0x1p-960) & (ap_ <= 0x1p960)));                             \
    } while (0)

/* scores_plain with CERT's exactness tracking (D <= 64): bad[j] nonzero where some step of
 * key j was inexact. */
UG_TILE_CLONES static void scores_tracked(const double *q, const double *Kt, size_t ldk, size_t D, size_t w, double *s,
                                          double *a, int64_t *bad)
{
    size_t j = 0;
    for (; j + 4 <= w; j += 4) {
        tv4 s0 = {0}, a0 = {0}, k0;
        ti4 b0 = {0};
        for (size_t i = 0; i < D; i++) {
            UG_VLD(k0, Kt + i * ldk + j);
            tv4 p0 = q[i] * k0, t0 = s0 + p0;
            INEXACT4(b0, q[i], k0, p0, s0, t0);
            s0 = t0, a0 += vabs(p0);
        }
        UG_VST(s + j, s0), UG_VST(a + j, a0), UG_VST(bad + j, b0);
    }
    for (; j < w; j++) {
        double sj = 0.0, aj = 0.0, x, y;
        int64_t bj = 0;
        for (size_t i = 0; i < D; i++) {
            x = q[i], y = Kt[i * ldk + j];
            double p = x * y, t = sj + p;
            bj |= !((x == 0.0 || y == 0.0 || (fabs(p) >= 0x1p-960 && fabs(p) <= 0x1p960)) && isfinite(t) &&
                    ug_cv_two_sum_err(sj, p, t) == 0.0);
            sj = t, aj += fabs(p);
        }
        s[j] = sj, a[j] = aj, bad[j] = bj;
    }
}

/* NAIVE, one key: every product and partial sum rounded to dt, left to right. */
static double score_naive1(ug_dtype dt, const double *q, const double *kc, size_t ldk, size_t D)
{
    double s = 0.0;
    for (size_t i = 0; i < D; i++)
        s = ug_dtype_round_fast(dt, s + ug_dtype_round_fast(dt, q[i] * kc[i * ldk])); /* rounds: naive */
    return s;
}

/* NAIVE for bf16 (bf) or fp16, 8 keys at a time on the bits; a block that leaves the bits'
 * range anywhere is redone key by key. */
static inline __attribute__((always_inline)) void scores_naive_bits(int bf, const double *q, const double *Kt,
                                                                    size_t ldk, size_t D, size_t w, double *s)
{
    ug_dtype dt = bf ? UG_DT_BF16 : UG_DT_FP16;
    size_t j = 0;
    for (; j + 8 <= w; j += 8) {
        tv4 s0 = {0}, s1 = {0}, k0, k1;
        ti4 bad = {0};
        for (size_t i = 0; i < D; i++) {
            UG_VLD(k0, Kt + i * ldk + j), UG_VLD(k1, Kt + i * ldk + j + 4);
            s0 = round4(bf, s0 + round4(bf, q[i] * k0, &bad), &bad); /* rounds: naive mul, naive add */
            s1 = round4(bf, s1 + round4(bf, q[i] * k1, &bad), &bad);
        }
        UG_VST(s + j, s0), UG_VST(s + j + 4, s1);
        for (size_t l = 0; any4(bad) && l < 8; l++) s[j + l] = score_naive1(dt, q, Kt + j + l, ldk, D);
    }
    for (; j < w; j++) s[j] = score_naive1(dt, q, Kt + j, ldk, D);
}

UG_TILE_CLONES static void scores_naive(ug_dtype dt, const double *q, const double *Kt, size_t ldk, size_t D, size_t w,
                                        double *s)
{
    if (dt == UG_DT_BF16)
        scores_naive_bits(1, q, Kt, ldk, D, w, s);
    else if (dt == UG_DT_FP16)
        scores_naive_bits(0, q, Kt, ldk, D, w, s);
    else
        for (size_t j = 0; j < w; j++) s[j] = score_naive1(dt, q, Kt + j, ldk, D);
}

/* Whether every bit pattern a CERT product test calls narrow (ug_cv_narrow) is: x[i*sx], i < n. */
static int all_narrow(const double *x, size_t sx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ug_cv_narrow(x[i * sx])) return 0;
    return 1;
}

/* The scores of row q against w keys (K^T columns j0..) as ug_dot_d returns them. sc holds
 * scratch for 2w doubles and w int64. */
static void scores_row(ug_ar *ar, const double *q, const double *Kt, size_t ldk, size_t D, size_t w,
                       const unsigned char *knarrow, double *sc, ug_num *out)
{
    ug_ar_mode mode = ar->mode;
    double *s = sc, *a = sc + w;
    int64_t *bad = (int64_t *)(sc + 2 * w);
    if (mode == UG_AR_NAIVE) {
        scores_naive(ar->naive_dt, q, Kt, ldk, D, w, s);
        for (size_t j = 0; j < w; j++) out[j] = (ug_num){s[j], 0.0, NULL};
        return;
    }
    int track = mode == UG_AR_CERT && D <= 64, qn = track && all_narrow(q, 1, D);
    if (track)
        scores_tracked(q, Kt, ldk, D, w, s, a, bad);
    else
        scores_plain(q, Kt, ldk, D, w, s, a);
    /* the bounds' factors, once (a division each: per key they were the loop's cost) */
    double g_cert = ug_cv_gamma_n(D + 2), g_dev = ugx_gamma32(D), tiny = (double)D * UG_CV_TINY;
    double eta = 2.0 * (double)D * UG_DEV_ETA; /* D mul, D-1 add */
    if (mode == UG_AR_CERT)
        for (size_t j = 0; j < w; j++) {
            int exact = track && qn && knarrow[j] && !bad[j];
            out[j] = ug_cv_num(ug_cv_make(s[j], exact ? 0.0 : g_cert * a[j] + tiny));
        }
    else if (mode == UG_AR_DEVICE)
        for (size_t j = 0; j < w; j++) out[j] = ugx_num_dev(s[j], g_dev * a[j] + eta);
    else
        for (size_t j = 0; j < w; j++) out[j] = (ug_num){s[j], 0.0, NULL};
}

/* Whether NAIVE takes the fp32 lanes (naive_f32.h) for a tile of m rows: bf16 or fp16, and
 * rows enough to repay copying each chunk of keys or values to fp32 once. */
static int naive_f32(ug_ar *ar, size_t m)
{
    ug_dtype dt = ar->naive_dt;
    return ar->mode == UG_AR_NAIVE && (dt == UG_DT_BF16 || dt == UG_DT_FP16) && m >= 4;
}

/* The naive scores of the m rows against keys [0, w) of Kt on fp32 lanes: the chunk's keys
 * copied once (ktf, D x KEY_CHUNK), each row's q (qf); a row or chunk whose values are not
 * all the dtype's, or a block of keys that left the range, goes the double way, whose
 * every key equals score_naive1. 0 when the chunk's keys are not the dtype's (nothing done). */
static int scores_chunk_f32(ug_dtype dt, const double *Q, size_t ldq, size_t m, const double *Kt, size_t ldk, size_t D,
                            size_t w, float *ktf, float *qf, double *s, ug_num *out, size_t ldo)
{
    unsigned char bad[KEY_CHUNK / 8 + 1];
    for (size_t i = 0; i < D; i++)
        if (!ug_nf_take(dt, Kt + i * ldk, w, ktf + i * KEY_CHUNK)) return 0;
    for (size_t r = 0; r < m; r++) {
        const double *q = Q + r * ldq;
        if (!ug_nf_take(dt, q, D, qf)) {
            scores_naive(dt, q, Kt, ldk, D, w, s);
        } else {
            ug_nf_scores(dt == UG_DT_BF16, qf, ktf, KEY_CHUNK, D, w, s, bad);
            for (size_t j = 0; j < w; j++)
                if (bad[j / 8]) s[j] = score_naive1(dt, q, Kt + j, ldk, D); /* out of range: in double */
        }
        for (size_t j = 0; j < w; j++) out[r * ldo + j] = (ug_num){s[j], 0.0, NULL};
    }
    return 1;
}

void ug_dot_d_tile(ug_ar *ar, const double *Q, size_t ldq, size_t m, const double *Kt, size_t ldk, size_t D, size_t n,
                   ug_num *out, size_t ldo)
{
    if (is_mp(ar->mode)) {
        for (size_t r = 0; r < m; r++)
            for (size_t j = 0; j < n; j++) out[r * ldo + j] = ug_dot_d(ar, Q + r * ldq, 1, Kt + j, ldk, D);
        return;
    }
    int f32 = naive_f32(ar, m);
    double *sc = malloc(3 * KEY_CHUNK * sizeof *sc);
    float *ktf = f32 ? malloc((KEY_CHUNK + 1) * D * sizeof *ktf) : NULL;
    unsigned char knarrow[KEY_CHUNK];
    if (!sc || (f32 && !ktf)) abort(); /* as the arithmetic's own pool: the oracle cannot go on without memory */
    for (size_t j0 = 0; j0 < n; j0 += KEY_CHUNK) {
        size_t w = n - j0 < KEY_CHUNK ? n - j0 : KEY_CHUNK;
        int track = ar->mode == UG_AR_CERT && D <= 64; /* only CERT's tracking asks */
        if (f32 &&
            scores_chunk_f32(ar->naive_dt, Q, ldq, m, Kt + j0, ldk, D, w, ktf, ktf + KEY_CHUNK * D, sc, out + j0, ldo))
            continue;
        for (size_t j = 0; track && j < w; j++) knarrow[j] = (unsigned char)all_narrow(Kt + j0 + j, ldk, D);
        for (size_t r = 0; r < m; r++) scores_row(ar, Q + r * ldq, Kt + j0, ldk, D, w, knarrow, sc, out + r * ldo + j0);
    }
    free(sc);
    free(ktf);
}

/* ---- many rows times a weight's columns: ug_dot_d_cols for m rows at once --------------------- */

#define ROW_TERMS 128 /* rows of B (terms) whose 64 columns stay in cache across the m rows */

/* The running sums (value s, magnitudes a) of rows r < m over 64 columns, terms i0..i1 added
 * left to right as ug_dot_d does: CERT untracked, DEVICE, F64. */
UG_TILE_CLONES static void rows_plain(const double *X, size_t ldx, size_t m, const double *B, size_t ldb, size_t i0,
                                      size_t i1, double *s, double *a)
{
    for (size_t r = 0; r < m; r++)
        for (size_t c = 0; c < 64; c += 8) {
            tv4 s0, s1, a0, a1, b0, b1;
            UG_VLD(s0, s + r * 64 + c), UG_VLD(s1, s + r * 64 + c + 4), UG_VLD(a0, a + r * 64 + c),
                UG_VLD(a1, a + r * 64 + c + 4);
            for (size_t i = i0; i < i1; i++) {
                double x = X[r * ldx + i];
                UG_VLD(b0, B + i * ldb + c), UG_VLD(b1, B + i * ldb + c + 4);
                tv4 p0 = x * b0, p1 = x * b1;
                s0 += p0, s1 += p1, a0 += vabs(p0), a1 += vabs(p1);
            }
            UG_VST(s + r * 64 + c, s0), UG_VST(s + r * 64 + c + 4, s1), UG_VST(a + r * 64 + c, a0),
                UG_VST(a + r * 64 + c + 4, a1);
        }
}

/* NAIVE for bf16 (bf) or fp16: every product and partial sum rounded on the bits; bad[r*8 + c/8]
 * is set where a lane left the bits' range (the caller redoes those columns). */
static inline __attribute__((always_inline)) void rows_naive_bits(int bf, const double *X, size_t ldx, size_t m,
                                                                  const double *B, size_t ldb, size_t i0, size_t i1,
                                                                  double *s, int64_t *bad)
{
    for (size_t r = 0; r < m; r++)
        for (size_t c = 0; c < 64; c += 8) {
            tv4 s0, s1, b0, b1;
            ti4 bd = {0};
            UG_VLD(s0, s + r * 64 + c), UG_VLD(s1, s + r * 64 + c + 4);
            for (size_t i = i0; i < i1; i++) {
                double x = X[r * ldx + i];
                UG_VLD(b0, B + i * ldb + c), UG_VLD(b1, B + i * ldb + c + 4);
                s0 = round4(bf, s0 + round4(bf, x * b0, &bd), &bd); /* rounds: naive mul, naive add */
                s1 = round4(bf, s1 + round4(bf, x * b1, &bd), &bd);
            }
            UG_VST(s + r * 64 + c, s0), UG_VST(s + r * 64 + c + 4, s1);
            bad[r * 8 + c / 8] |= any4(bd);
        }
}

UG_TILE_CLONES static void rows_naive(int bf, const double *X, size_t ldx, size_t m, const double *B, size_t ldb,
                                      size_t i0, size_t i1, double *s, int64_t *bad)
{
    if (bf)
        rows_naive_bits(1, X, ldx, m, B, ldb, i0, i1, s, bad);
    else
        rows_naive_bits(0, X, ldx, m, B, ldb, i0, i1, s, bad);
}

/* Columns [c0, c0 + 64) of B for the m rows: sums over ROW_TERMS terms at a time, so each
 * chunk of B serves every row from cache; the sums go on in ug_dot_d's order. sc: 2*64*m
 * doubles and 8*m int64. */
static void rows_chunk64(ug_ar *ar, const double *X, size_t ldx, size_t m, const double *B, size_t ldb, size_t n,
                         double *sc, ug_num *out, size_t ldo)
{
    ug_ar_mode mode = ar->mode;
    ug_dtype dt = ar->naive_dt;
    double *s = sc, *a = sc + 64 * m;
    int64_t *bad = (int64_t *)(sc + 128 * m);
    memset(sc, 0, 128 * m * sizeof *sc);
    memset(bad, 0, 8 * m * sizeof *bad);
    for (size_t i0 = 0; i0 < n; i0 += ROW_TERMS) {
        size_t i1 = n - i0 < ROW_TERMS ? n : i0 + ROW_TERMS;
        if (mode == UG_AR_NAIVE)
            rows_naive(dt == UG_DT_BF16, X, ldx, m, B, ldb, i0, i1, s, bad);
        else
            rows_plain(X, ldx, m, B, ldb, i0, i1, s, a);
    }
    double g_dev = ugx_gamma32(n); /* once, not per column */
    for (size_t r = 0; r < m; r++)
        for (size_t c = 0; c < 64; c++) {
            double v = s[r * 64 + c];
            if (mode == UG_AR_NAIVE) {
                if (bad[r * 8 + c / 8]) v = score_naive1(dt, X + r * ldx, B + c, ldb, n); /* redone left to right */
                out[r * ldo + c] = (ug_num){v, 0.0, NULL};
            } else if (mode == UG_AR_CERT) { /* ug_cv_dot_d past 64 terms: no exactness tracking */
                out[r * ldo + c] = ug_cv_num(ug_cv_make(v, ug_cv_dot_err(n, a[r * 64 + c])));
            } else if (mode == UG_AR_DEVICE) {
                out[r * ldo + c] = ugx_num_dev(v, g_dev * a[r * 64 + c] + 2.0 * (double)n * UG_DEV_ETA);
            } else {
                out[r * ldo + c] = (ug_num){v, 0.0, NULL};
            }
        }
}

/* ---- one row times many columns: ug_dot_d_cols -------------------------------------------------- */

/* The 64-column loop below (dot_d_cols64) is also compiled for AVX2 and picked at run time, as
 * lightning_indexer_quant's head dots are: lanes are columns, each column's own IEEE
 * operations in its own order (no contraction: -ffp-contract=off), so every instruction
 * set gives the same bits. No clones under the sanitizers, whose set-up an ifunc resolver
 * would precede. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define COLS_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef COLS_CLONES
#define COLS_CLONES
#endif

/* The sums of dot_d_cols_chunk for 64 columns, unrounded: a constant trip count and no
 * aliasing, so GCC's -O2 vectoriser takes it (lanes are columns: each column's own IEEE
 * operations in its own order, bit for bit those of the scalar loop). */
COLS_CLONES static void dot_d_cols64(const double *restrict a, const double *restrict B, size_t ldb, size_t n,
                                     double *restrict s, double *restrict abs_sum)
{
    for (size_t i = 0; i < n; i++) {
        const double *restrict row = B + i * ldb;
        double av = a[i];
        for (size_t c = 0; c < 64; c++) {
            double p = av * row[c];
            s[c] += p;
            abs_sum[c] += fabs(p);
        }
    }
}

/* NAIVE fp32's sums for 64 columns: every product and partial sum rounded to fp32 by the
 * hardware conversion (ug_dtype_round_fast's fp32 case, bit for bit), vectorised as above. */
COLS_CLONES static void dot_d_cols64_naive_f32(const double *restrict a, const double *restrict B, size_t ldb, size_t n,
                                               double *restrict s)
{
    for (size_t i = 0; i < n; i++) {
        const double *restrict row = B + i * ldb;
        double av = a[i];
        for (size_t c = 0; c < 64; c++) s[c] = (double)(float)(s[c] + (double)(float)(av * row[c])); /* rounds: naive */
    }
}

/* ug_dot_d_cols, plain arithmetics (CERT past 64 terms, F64, NAIVE, DEVICE), for columns
 * [c0, c0 + w) of B, w <= 64: ug_dot_d's loop with its two running sums kept per column,
 * rows outermost (one contiguous pass over B's rows); each column sees the operations of
 * ug_dot_d in its order, and the same bound. */
static void dot_d_cols_chunk(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t c0, size_t w,
                             ug_num *out)
{
    double s[64] = {0}, abs_sum[64] = {0};
    if (ar->mode == UG_AR_NAIVE && ar->naive_dt == UG_DT_FP32 && w == 64) {
        dot_d_cols64_naive_f32(a, B + c0, ldb, n, s);                   /* its number ignores abs_sum */
    } else if (ar->mode == UG_AR_NAIVE && ar->naive_dt == UG_DT_FP32) { /* fewer columns: 8 at a time, as below */
        for (size_t i = 0; i < n; i++) {
            const double *row = B + i * ldb + c0;
            size_t c = 0;
            for (; c + 8 <= w; c += 8)
                for (size_t k = c; k < c + 8; k++)
                    s[k] = (double)(float)(s[k] + (double)(float)(a[i] * row[k])); /* rounds: naive, as above */
            for (; c < w; c++) s[c] = (double)(float)(s[c] + (double)(float)(a[i] * row[c]));
        }
    } else if (ar->mode == UG_AR_NAIVE) {
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < w; c++) {
                double p = ug_dtype_round_fast(ar->naive_dt, a[i] * B[i * ldb + c0 + c]); /* rounds: naive mul */
                s[c] = ug_dtype_round_fast(ar->naive_dt, s[c] + p);                       /* rounds: naive add */
                abs_sum[c] += fabs(p);
            }
    } else if (w == 64) {
        dot_d_cols64(a, B + c0, ldb, n, s, abs_sum);
    } else { /* fewer than 64 columns: 8 at a time (a constant trip count the vectoriser takes), then the rest */
        for (size_t i = 0; i < n; i++) {
            const double *row = B + i * ldb + c0;
            size_t c = 0;
            for (; c + 8 <= w; c += 8)
                for (size_t k = c; k < c + 8; k++) {
                    double p = a[i] * row[k];
                    s[k] += p;
                    abs_sum[k] += fabs(p);
                }
            for (; c < w; c++) {
                double p = a[i] * row[c];
                s[c] += p;
                abs_sum[c] += fabs(p);
            }
        }
    }
    for (size_t c = 0; c < w; c++) {
        if (ar->mode == UG_AR_CERT) /* ug_cv_dot_d past 64 terms: no exactness tracking */
            out[c] = ug_cv_num(ug_cv_make(s[c], ug_cv_dot_err(n, abs_sum[c])));
        else if (UG_AR_IS_DEV(ar))
            out[c] = ugx_num_dev(s[c], ugx_gamma32(n) * abs_sum[c] + 2.0 * (double)n * UG_DEV_ETA);
        else
            out[c] = (ug_num){s[c], 0.0, NULL};
    }
}

/* ug_dot_d_cols in CERT for short sums (n <= 64, exactness tracked): cert_block.c's
 * ug_cv_dot_d_cols, ug_cv_dot_d's value and bound per column in one vectorised pass over B's
 * rows instead of a strided scalar dot each; 0 (nothing written) without memory for its sums. */
static int cert_short_cols(const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out)
{
    ug_cv_cols_work w;
    int ok = ug_cv_cols_open(&w, ncols) == 0;
    if (ok) {
        ug_cv_dot_d_cols(a, 1, B, ldb, n, ncols, &w.acc, w.out);
        for (size_t c = 0; c < ncols; c++) out[c] = ug_cv_num(w.out[c]);
    }
    ug_cv_cols_close(&w);
    return ok;
}

/* ug_dot_d_cols chunk by chunk of 64 columns: every arithmetic, each column's own operations
 * in ug_dot_d's order. ug_dot_d_cols sends the naive bf16/fp16 sums past 64 terms to the
 * rows' vector form (ug_dot_d_rows) and the rest here. */
static void dot_d_cols_each(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols,
                            ug_num *out)
{
    if (ar->mode == UG_AR_EXACT) {
        ug_mp_dot_d_cols(ar, a, B, ldb, n, ncols, out);
        return;
    }
    if (ar->mode == UG_AR_CERT && n <= 64 && cert_short_cols(a, B, ldb, n, ncols, out)) return;
    if (UG_AR_IS_MP(ar) ||
        (ar->mode == UG_AR_CERT && n <= 64)) { /* MPFR_SEQ per column; CERT tracks short sums' exactness */
        for (size_t c = 0; c < ncols; c++) out[c] = ug_dot_d(ar, a, 1, B + c, ldb, n);
        return;
    }
    for (size_t c0 = 0; c0 < ncols; c0 += 64)
        dot_d_cols_chunk(ar, a, B, ldb, n, c0, ncols - c0 < 64 ? ncols - c0 : 64, out + c0);
}

/* NAIVE bf16/fp16's last columns [c0, ncols), fewer than 64: copied beside zero columns into
 * one chunk of 64 (lanes are columns, so each keeps its numbers; a padded lane is dropped),
 * where column by column they would take dot_d_cols_each's scalar rounding loop. Returns
 * ncols, or c0 when there is no memory for the copy (the caller goes column by column). */
static size_t naive_tail(ug_ar *ar, const double *X, size_t ldx, size_t m, const double *B, size_t ldb, size_t n,
                         size_t c0, size_t ncols, double *sc, ug_num *out, size_t ldo)
{
    size_t w = ncols - c0;
    double *bp = calloc(n * 64, sizeof *bp);
    ug_num *op = malloc(m * 64 * sizeof *op);
    if (bp && op) {
        for (size_t i = 0; i < n; i++) memcpy(bp + i * 64, B + i * ldb + c0, w * sizeof *bp);
        rows_chunk64(ar, X, ldx, m, bp, 64, n, sc, op, 64);
        for (size_t r = 0; r < m; r++) memcpy(out + r * ldo + c0, op + r * 64, w * sizeof *op);
        c0 = ncols;
    }
    free(bp), free(op);
    return c0;
}

void ug_dot_d_rows(ug_ar *ar, const double *X, size_t ldx, size_t m, const double *B, size_t ldb, size_t n,
                   size_t ncols, ug_num *out, size_t ldo)
{
    ug_ar_mode mode = ar->mode;
    ug_dtype dt = ar->naive_dt;
    int blocked = !is_mp(mode) && n > 64 && (mode != UG_AR_NAIVE || dt == UG_DT_BF16 || dt == UG_DT_FP16);
    size_t c0 = 0;
    double *sc = blocked ? malloc((136 * m + 1) * sizeof *sc) : NULL;
    if (blocked && !sc) abort(); /* as the arithmetic's own pool: the oracle cannot go on without memory */
    for (; blocked && c0 + 64 <= ncols; c0 += 64) rows_chunk64(ar, X, ldx, m, B + c0, ldb, n, sc, out + c0, ldo);
    if (blocked && mode == UG_AR_NAIVE && c0 < ncols)
        c0 = naive_tail(ar, X, ldx, m, B, ldb, n, c0, ncols, sc, out, ldo);
    free(sc);
    if (c0 < ncols) /* the rest (or every column: MPFR, CERT's tracked short sums, other naive dtypes) */
        for (size_t r = 0; r < m; r++) dot_d_cols_each(ar, X + r * ldx, B + c0, ldb, n, ncols - c0, out + r * ldo + c0);
}

void ug_dot_d_cols(ug_ar *ar, const double *a, const double *B, size_t ldb, size_t n, size_t ncols, ug_num *out)
{
    size_t c0 = 0;
    if (ar->mode == UG_AR_NAIVE && n > 64 && (ar->naive_dt == UG_DT_BF16 || ar->naive_dt == UG_DT_FP16)) {
        c0 = ncols; /* the naive sums on fp32 lanes, 64 columns at a time (ug_dot_d_rows, one row) */
        ug_dot_d_rows(ar, a, n, 1, B, ldb, n, ncols, out, ncols);
    }
    if (c0 < ncols) dot_d_cols_each(ar, a, B + c0, ldb, n, ncols - c0, out + c0);
}

/* ---- weighted sums: ug_dot_nd of one row's weights against the columns of V ------------------- */

/* ug_dot_nd's three running sums for COL_CHUNK columns: value, magnitudes, input bounds. */
typedef struct {
    double s[COL_CHUNK], a[COL_CHUNK], e[COL_CHUNK];
} cols_acc;

/* NAIVE sums of columns c0+c .. c0+c+nc over rows [i0, i1), one column at a time. */
static void cols_naive1(ug_dtype dt, cols_acc *acc, const ug_num *x, const double *V, size_t ldv, size_t i0, size_t i1,
                        size_t c0, size_t c, size_t nc)
{
    for (size_t k = c; k < c + nc; k++)
        for (size_t i = i0; i < i1; i++)
            acc->s[k] = ug_dtype_round_fast(
                dt, acc->s[k] + ug_dtype_round_fast(dt, x[i].v * V[i * ldv + c0 + k])); /* rounds: naive */
}

/* NAIVE sums of the 8 columns c0+c.. for bf16 (bf) or fp16 on the bits, with round4 (sub 0)
 * or round4_sub; 0 when a lane left the range (acc untouched), else 1. */
static inline __attribute__((always_inline)) int cols_naive_try(int bf, int sub, cols_acc *acc, const ug_num *x,
                                                                const double *V, size_t ldv, size_t i0, size_t i1,
                                                                size_t c0, size_t c)
{
    tv4 s0, s1, v0, v1;
    ti4 bad = {0};
    UG_VLD(s0, acc->s + c), UG_VLD(s1, acc->s + c + 4);
    for (size_t i = i0; i < i1; i++) {
        const double *row = V + i * ldv + c0 + c;
        UG_VLD(v0, row), UG_VLD(v1, row + 4);
        if (sub)
            s0 = round4_sub(bf, s0 + round4_sub(bf, x[i].v * v0, &bad), &bad), /* rounds: naive mul, naive add */
                s1 = round4_sub(bf, s1 + round4_sub(bf, x[i].v * v1, &bad), &bad);
        else
            s0 = round4(bf, s0 + round4(bf, x[i].v * v0, &bad), &bad), /* rounds: naive mul, naive add */
                s1 = round4(bf, s1 + round4(bf, x[i].v * v1, &bad), &bad);
    }
    if (any4(bad)) return 0;
    UG_VST(acc->s + c, s0), UG_VST(acc->s + c + 4, s1);
    return 1;
}

/* NAIVE sums of the 8 columns c0+c.. for bf16 (bf) or fp16: a block that leaves the normal
 * range (softmax weights below 2^-14 in fp16 are common) is redone with round4_sub, and one
 * that overflows column by column from where it started. */
static inline __attribute__((always_inline)) void cols_naive_bits(int bf, cols_acc *acc, const ug_num *x,
                                                                  const double *V, size_t ldv, size_t i0, size_t i1,
                                                                  size_t c0, size_t c)
{
    if (!cols_naive_try(bf, 0, acc, x, V, ldv, i0, i1, c0, c) && !cols_naive_try(bf, 1, acc, x, V, ldv, i0, i1, c0, c))
        cols_naive1(bf ? UG_DT_BF16 : UG_DT_FP16, acc, x, V, ldv, i0, i1, c0, c, 8);
}

/* Adds rows [i0, i1) of V's columns c0..c0+w (w <= COL_CHUNK) to acc: per block of 8
 * columns the sums stay in registers over the rows, and each column sees ug_dot_nd's
 * operations in its order. NAIVE keeps only the values (its result). */
UG_TILE_CLONES static void cols_add(ug_ar_mode mode, ug_dtype dt, cols_acc *acc, const ug_num *x, const double *V,
                                    size_t ldv, size_t i0, size_t i1, size_t c0, size_t w)
{
    size_t c = 0;
    for (; c + 8 <= w; c += 8) {
        if (mode == UG_AR_NAIVE) {
            if (dt == UG_DT_BF16)
                cols_naive_bits(1, acc, x, V, ldv, i0, i1, c0, c);
            else if (dt == UG_DT_FP16)
                cols_naive_bits(0, acc, x, V, ldv, i0, i1, c0, c);
            else
                cols_naive1(dt, acc, x, V, ldv, i0, i1, c0, c, 8);
            continue;
        }
        tv8 s0, a0, e0, v0;
        UG_VLD(s0, acc->s + c), UG_VLD(a0, acc->a + c), UG_VLD(e0, acc->e + c);
        for (size_t i = i0; i < i1; i++) {
            double xv = x[i].v, xe = x[i].e;
            UG_VLD(v0, V + i * ldv + c0 + c);
            tv8 p0 = xv * v0;
            s0 += p0, a0 += vabs8(p0), e0 += xe * vabs8(v0);
        }
        UG_VST(acc->s + c, s0), UG_VST(acc->a + c, a0), UG_VST(acc->e + c, e0);
    }
    if (mode == UG_AR_NAIVE) {
        cols_naive1(dt, acc, x, V, ldv, i0, i1, c0, c, w - c);
        return;
    }
    for (; c < w; c++)
        for (size_t i = i0; i < i1; i++) {
            double xv = x[i].v, y = V[i * ldv + c0 + c], p = xv * y;
            acc->s[c] += p, acc->a[c] += fabs(p), acc->e[c] += x[i].e * fabs(y);
        }
}

/* NAIVE bf16/fp16 weighted sums on fp32 lanes (naive_f32.h): a chunk of V's rows copied
 * once (vf, KEY_CHUNK x ncols), each row's weights (xf). */
typedef struct {
    float *vf, *xf;
    double *xd;
} cols_f32;

static int cols_f32_open(cols_f32 *f, size_t ncols)
{
    f->vf = malloc((KEY_CHUNK * ncols + KEY_CHUNK) * sizeof *f->vf + KEY_CHUNK * sizeof *f->xd);
    if (!f->vf) return -1;
    f->xf = f->vf + KEY_CHUNK * ncols;
    f->xd = (double *)(void *)(f->xf + KEY_CHUNK); /* KEY_CHUNK is even: 8-byte aligned */
    return 0;
}

/* Copies rows [i0, i0 + rows) of V to f->vf; 0 when one value is not the dtype's. */
static int cols_f32_take_v(cols_f32 *f, ug_dtype dt, const double *V, size_t ldv, size_t i0, size_t rows, size_t ncols)
{
    for (size_t i = 0; i < rows; i++)
        if (!ug_nf_take(dt, V + (i0 + i) * ldv, ncols, f->vf + i * ncols)) return 0;
    return 1;
}

/* Terms [i0, i1) of one row's weights x added to its accumulators acc[0..nch) on fp32 lanes;
 * a block of 8 columns that left the range, and the columns past the last whole block,
 * the double way (cols_naive1, which every lane equals). 0 when a weight is not the
 * dtype's (nothing done). */
static int cols_f32_row(cols_f32 *f, ug_dtype dt, cols_acc *acc, const ug_num *x, const double *V, size_t ldv,
                        size_t i0, size_t i1, size_t ncols)
{
    unsigned char bad[COL_CHUNK / 8];
    for (size_t i = i0; i < i1; i++) f->xd[i - i0] = x[i].v;
    if (!ug_nf_take(dt, f->xd, i1 - i0, f->xf)) return 0;
    for (size_t c0 = 0, k = 0; c0 < ncols; c0 += COL_CHUNK, k++) {
        size_t w = ncols - c0 < COL_CHUNK ? ncols - c0 : COL_CHUNK, w8 = w / 8 * 8;
        ug_nf_cols(dt == UG_DT_BF16, acc[k].s, f->xf, f->vf + c0, ncols, i1 - i0, w8, bad);
        for (size_t c = 0; c < w8; c += 8)
            if (bad[c / 8]) cols_naive1(dt, &acc[k], x, V, ldv, i0, i1, c0, c, 8);
        if (w8 < w) cols_naive1(dt, &acc[k], x, V, ldv, i0, i1, c0, w8, w - w8);
    }
    return 1;
}

/* The w numbers ug_dot_nd gives for the accumulated columns of n terms. */
static void cols_out(ug_ar_mode mode, const cols_acc *acc, size_t n, size_t w, ug_num *out)
{
    double g_cert = ug_cv_gamma_n(n + 2), g_dev = ugx_gamma32(n); /* once, not per column */
    for (size_t c = 0; c < w; c++) {
        double s = acc->s[c], a = acc->a[c], e = acc->e[c];
        if (mode == UG_AR_CERT) /* ug_dot_nd's bound: exact zero products and exact inputs give an exact zero */
            out[c] = ug_cv_num(ug_cv_make(s, a == 0.0 && e == 0.0 ? 0.0 : e + g_cert * a + (double)n * UG_CV_TINY));
        else if (mode == UG_AR_DEVICE)
            out[c] = ugx_num_dev(s, e + g_dev * a + 2.0 * (double)n * UG_DEV_ETA);
        else
            out[c] = (ug_num){s, 0.0, NULL};
    }
}

/* Whether every x is exact (CERT bound 0): then ug_dot_nd may prove a sum exact, which the
 * chunked loop does not try, so such rows go through ug_dot_nd itself. */
static int all_exact(const ug_num *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i].e != 0.0) return 0;
    return 1;
}

/* Whether row weights x of n terms go column by column through ug_dot_nd. */
static int by_column(ug_ar *ar, const ug_num *x, size_t n)
{
    ug_ar_mode mode = ar->mode;
    return is_mp(mode) || (mode == UG_AR_CERT && all_exact(x, n));
}

/* ug_dot_nd(ar, x, V + c, ldv, n) for the ncols columns c: in CERT (exact weights, whose
 * sums ug_dot_nd may prove exact) cert_block.c's exactness-tracked column sums in one
 * pass over V's rows, bit for bit ug_dot_nd's; in MPFR column by column. */
static void row_by_column(ug_ar *ar, const ug_num *x, size_t n, const double *V, size_t ldv, size_t ncols, ug_num *out)
{
    ug_cv_cols_work w = {0};
    if (!is_mp(ar->mode) && ug_cv_cols_open(&w, ncols) == 0) {
        ug_cv_dot_nd_cols(x, V, ldv, n, ncols, &w.acc, w.out);
        for (size_t c = 0; c < ncols; c++) out[c] = ug_cv_num(w.out[c]);
    } else {
        for (size_t c = 0; c < ncols; c++) out[c] = ug_dot_nd(ar, x, V + c, ldv, n);
    }
    ug_cv_cols_close(&w);
}

void ug_dot_nd_cols(ug_ar *ar, const ug_num *x, const double *V, size_t ldv, size_t n, size_t ncols, ug_num *out)
{
    ug_dot_nd_cols_tile(ar, x, 0, &n, 1, V, ldv, ncols, out, 0);
}

void ug_dot_nd_cols_tile(ug_ar *ar, const ug_num *X, size_t ldx, const size_t *n, size_t m, const double *V, size_t ldv,
                         size_t ncols, ug_num *out, size_t ldo)
{
    ug_ar_mode mode = ar->mode;
    ug_dtype dt = ar->naive_dt;
    size_t nch = (ncols + COL_CHUNK - 1) / COL_CHUNK, nmax = 0;
    cols_acc *acc = calloc(m * nch != 0 ? m * nch : 1, sizeof *acc);
    unsigned char *skip = calloc(m ? m : 1, 1);
    if (!acc || !skip) abort(); /* as the arithmetic's own pool */
    for (size_t r = 0; r < m; r++) {
        nmax = n[r] > nmax ? n[r] : nmax;
        if ((skip[r] = (unsigned char)by_column(ar, X + r * ldx, n[r])))
            row_by_column(ar, X + r * ldx, n[r], V, ldv, ncols, out + r * ldo);
    }
    cols_f32 f = {0};
    if (naive_f32(ar, m) && cols_f32_open(&f, ncols)) abort(); /* as the arithmetic's own pool */
    for (size_t i0 = 0; i0 < nmax; i0 += KEY_CHUNK) {          /* a chunk of V's rows, for every row of the tile */
        int vf = f.vf && cols_f32_take_v(&f, dt, V, ldv, i0, nmax - i0 < KEY_CHUNK ? nmax - i0 : KEY_CHUNK, ncols);
        for (size_t r = 0; r < m; r++) {
            size_t i1 = i0 + KEY_CHUNK < n[r] ? i0 + KEY_CHUNK : n[r];
            if (skip[r] || i0 >= i1) continue;
            if (vf && cols_f32_row(&f, dt, &acc[r * nch], X + r * ldx, V, ldv, i0, i1, ncols)) continue;
            for (size_t k = 0; k < nch; k++)
                cols_add(mode, dt, &acc[r * nch + k], X + r * ldx, V, ldv, i0, i1, k * COL_CHUNK,
                         ncols - k * COL_CHUNK < COL_CHUNK ? ncols - k * COL_CHUNK : COL_CHUNK);
        }
    }
    free(f.vf);
    for (size_t r = 0; r < m; r++)
        for (size_t k = 0; !skip[r] && k < nch; k++)
            cols_out(mode, &acc[r * nch + k], n[r],
                     ncols - k * COL_CHUNK < COL_CHUNK ? ncols - k * COL_CHUNK : COL_CHUNK,
                     out + r * ldo + k * COL_CHUNK);
    free(acc);
    free(skip);
}
