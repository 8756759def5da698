/* naive_f32.c — the naive bf16/fp16 tile loops on fp32 lanes (why they give the double
 * loops' results: naive_f32.h). */
#include "oracles/mp/naive_f32.h"

#include <stdint.h>
#include <string.h>

#include "oracles/mp/tile_simd.h"

/* 32-byte vectors only: gcc 12 scalarises 64-byte integer compares in a target_clones
 * function (the range test below). */
typedef float tf8 __attribute__((vector_size(32)));
typedef uint32_t tw8 __attribute__((vector_size(32)));
typedef int32_t tx8 __attribute__((vector_size(32)));

typedef double td4 __attribute__((vector_size(32)));
typedef int64_t tl4 __attribute__((vector_size(32)));
typedef float tf4 __attribute__((vector_size(16)));
typedef int32_t tx4 __attribute__((vector_size(16)));

/* Whether fp32 g (bits u) is a value of the dtype that ug_nf_take admits; as a lane mask
 * (-1 no): low the significand bits past the dtype's, [lo, hi) the magnitudes' bits. */
#define TAKE_BAD(u, low, lo, hi)                                                                                       \
    ((((u) & (low)) != 0) | (((u)&0x7fffffff) >= (hi)) | ((((u)&0x7fffffff) != 0) & (((u)&0x7fffffff) < (lo))))

UG_TILE_CLONES static int take(ug_dtype dt, const double *x, size_t n, float *f)
{
    const int32_t low = dt == UG_DT_BF16 ? 0xffff : 0x1fff; /* fp32 significand bits past bf16's 7 or fp16's 10 */
    /* a zero or a magnitude in [2^-63, 2^63) for bf16, in [2^-24, 2^16) for fp16 (its own
     * range), so that no product of two is an fp32 subnormal: one that underflowed to zero
     * would pass the range test unseen */
    const int32_t lo = dt == UG_DT_BF16 ? 64 << 23 : 103 << 23, hi = dt == UG_DT_BF16 ? 190 << 23 : 143 << 23;
    tl4 inexact = {0};
    tx4 bad = {0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) { /* four at a time (the loop below did not vectorise) */
        td4 d;
        memcpy(&d, x + i, sizeof d);
        tf4 g = __builtin_convertvector(d, tf4);
        inexact |= __builtin_convertvector(g, td4) != d; /* NaN too */
        tx4 u = (tx4)g;
        bad |= TAKE_BAD(u, low, lo, hi);
        memcpy(f + i, &g, sizeof g);
    }
    int any = (inexact[0] | inexact[1] | inexact[2] | inexact[3] | bad[0] | bad[1] | bad[2] | bad[3]) != 0;
    for (; i < n; i++) {
        float g = (float)x[i];
        int32_t u;
        memcpy(&u, &g, sizeof u);
        any |= ((double)g != x[i]) | TAKE_BAD(u, low, lo, hi);
        f[i] = g;
    }
    return !any;
}

int ug_nf_take(ug_dtype dt, const double *x, size_t n, float *f)
{
    return (dt == UG_DT_BF16 || dt == UG_DT_FP16) && take(dt, x, n, f);
}

/* x rounded to bf16 (bf) or fp16 on its fp32 bits, round to nearest even: right where the
 * result is normal in the format below its top binade, or a zero (arith_tile.c's round4
 * on fp32 lanes); other lanes set *bad. The range test on the magnitude's bits a, in
 * [lo, lo + span) binades: a + (2^31 - lo) wraps that interval to the bottom of the signed
 * range, so one signed compare decides it (AVX2 has no unsigned one). */
#define NF_SHIFT(bf) (23 - ((bf) ? 7 : 10))
#define NF_LO(bf) ((uint32_t)(127 + ((bf) ? -126 : -14)) << 23)
#define NF_SPAN(bf) ((uint32_t)((bf) ? 253 : 29) << 23)
/* The range test's failures and the rounded bits, of bits u with magnitude bits a, for a
 * signed lane vector type TX (both widths below). */
#define NF_BAD(TX, bf, a) ~(((TX)((a) + (0x80000000u - NF_LO(bf))) < (int32_t)(0x80000000u + NF_SPAN(bf))) | ((a) == 0))
#define NF_ROUND(bf, u)                                                                                                \
    (((u) + ((((uint32_t)1 << (NF_SHIFT(bf) - 1)) - 1u) + (((u) >> NF_SHIFT(bf)) & 1u))) &                             \
     ~(((uint32_t)1 << NF_SHIFT(bf)) - 1u))

/* fp16 only (bf = 0): a lane below fp16's normal range, a multiple of 2^-24 after the exact
 * products and sums of fp16 values (ug_nf_take keeps them at least 2^-24), is rounded as
 * core/dtype.c's round_binary rounds a subnormal: 0.75 + x, whose ulp is 2^-24, then less
 * 0.75 (exact), the sign put back (a tiny negative to -0). TW, TX: the lane vector types;
 * r: the lanes' rounding so far, replaced where sub. bf16 lanes never get there (no
 * product of two admitted values falls below 2^-126) and stay flagged. */
#define NF_SUB(TX, bf, a) (((a) != 0) & ((TX)(a) < (int32_t)NF_LO(bf)) & ((TX){0} + ((bf) ? 0 : -1)))
#define NF_TINY(TW, x, u, sub, r)                                                                                      \
    (((((TW)(((x) + 0.75f) - 0.75f) & 0x7fffffffu) | ((u)&0x80000000u)) & (TW)(sub)) | ((r) & ~(TW)(sub)))

static inline __attribute__((always_inline)) tf8 round8f(int bf, tf8 x, tx8 *bad)
{
    tw8 u = (tw8)x, a = u & 0x7fffffffu;
    tx8 sub = NF_SUB(tx8, bf, a);
    *bad |= NF_BAD(tx8, bf, a) & ~sub;
    return (tf8)NF_TINY(tw8, x, u, sub, NF_ROUND(bf, u)); /* rounds: RNE; below the normal range, to 2^-24 */
}

static inline __attribute__((always_inline)) int any8(tx8 b)
{
    return (b[0] | b[1] | b[2] | b[3] | b[4] | b[5] | b[6] | b[7]) != 0;
}

static inline __attribute__((always_inline)) void store8(double *s, tf8 v)
{
    for (int l = 0; l < 8; l++) s[l] = (double)v[l]; /* exact */
}

/* The s[] of 8 lanes as fp32, and in b the lanes that are not values of the dtype (exact in
 * fp32 is enough: every one is a rounded naive result, or NaN or inf, which fail here or at
 * the first range test). */
static inline __attribute__((always_inline)) tf8 load_sums(const double *s, tx8 *b)
{
    tf8 v;
    for (int l = 0; l < 8; l++) v[l] = (float)s[l], (*b)[l] = (double)v[l] != s[l] ? -1 : 0;
    return v;
}

/* The naive sums of lanes [0, w8) (w8 a multiple of 8) over terms i < n: s[c] = rnd(s[c] +
 * rnd(x[i] * rows[i * ld + c])), left to right, from s[] (from_s) or from 0. 16 lanes at a
 * time, two blocks side by side (independent chains), then 8. A block that left the range
 * keeps its s[] and sets bad[c / 8]. */
static inline __attribute__((always_inline)) void naive_lanes(int bf, const float *x, const float *rows, size_t ld,
                                                              size_t n, size_t w8, int from_s, double *s,
                                                              unsigned char *bad)
{
    for (size_t c = 0; c < w8;) {
        int two = c + 16 <= w8;
        tx8 b0 = {0}, b1 = {0};
        tf8 s0 = {0}, s1 = {0}, v0, v1;
        if (from_s) s0 = load_sums(s + c, &b0), s1 = two ? load_sums(s + c + 8, &b1) : s1;
        if (two)
            for (size_t i = 0; i < n; i++) {
                UG_VLD(v0, rows + i * ld + c), UG_VLD(v1, rows + i * ld + c + 8);
                s0 = round8f(bf, s0 + round8f(bf, x[i] * v0, &b0), &b0); /* rounds: naive mul, naive add */
                s1 = round8f(bf, s1 + round8f(bf, x[i] * v1, &b1), &b1);
            }
        else
            for (size_t i = 0; i < n; i++) {
                UG_VLD(v0, rows + i * ld + c);
                s0 = round8f(bf, s0 + round8f(bf, x[i] * v0, &b0), &b0);
            }
        if (!(bad[c / 8] = (unsigned char)any8(b0))) store8(s + c, s0);
        if (two && !(bad[c / 8 + 1] = (unsigned char)any8(b1))) store8(s + c + 8, s1);
        c += two ? 16 : 8;
    }
}

UG_TILE_CLONES static void naive_lanes_8(int bf, const float *x, const float *rows, size_t ld, size_t n, size_t w8,
                                         int from_s, double *s, unsigned char *bad)
{
    if (bf)
        naive_lanes(1, x, rows, ld, n, w8, from_s, s, bad);
    else
        naive_lanes(0, x, rows, ld, n, w8, from_s, s, bad);
}

/* ---- 16 lanes a register, AVX-512 only ------------------------------------------------------
 * A separate function with target("arch=x86-64-v4"), picked when the CPU has it: gcc 12
 * scalarises the integer compares of 64-byte vectors inside a target_clones function, not
 * in a function compiled for the target outright. The same operations per lane as above. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define NF_V4 __attribute__((target("arch=x86-64-v4")))
typedef float tf16 __attribute__((vector_size(64)));
typedef uint32_t tw16 __attribute__((vector_size(64)));
typedef int32_t tx16 __attribute__((vector_size(64)));

#define NF_ROUND16(bf, x, bad)                                                                                         \
    __extension__({                                                                                                    \
        tf16 x_ = (x);                                                                                                 \
        tw16 u_ = (tw16)x_, a_ = u_ & 0x7fffffffu;                                                                     \
        tx16 sub_ = NF_SUB(tx16, bf, a_);                                                                              \
        (bad) |= NF_BAD(tx16, bf, a_) & ~sub_;                                                                         \
        (tf16) NF_TINY(tw16, x_, u_, sub_, NF_ROUND(bf, u_)); /* rounds: RNE; below the normal range, to 2^-24 */      \
    })

/* naive_lanes for the lanes [0, c) of whole 32-lane blocks (two registers side by side);
 * returns c, where the 8-lane loop goes on. */
static inline __attribute__((always_inline)) NF_V4 size_t lanes_v4(int bf, const float *x, const float *rows, size_t ld,
                                                                   size_t n, size_t w8, int from_s, double *s,
                                                                   unsigned char *bad)
{
    size_t c = 0;
    for (; c + 32 <= w8; c += 32) { /* named locals, not arrays: gcc kept arrays of two in memory */
        tx16 b0 = {0}, b1 = {0};
        tf16 s0 = {0}, s1 = {0}, v0, v1;
        for (int l = 0; from_s && l < 16; l++) {
            s0[l] = (float)s[c + l], b0[l] = (double)s0[l] != s[c + l] ? -1 : 0;
            s1[l] = (float)s[c + 16 + l], b1[l] = (double)s1[l] != s[c + 16 + l] ? -1 : 0;
        }
        for (size_t i = 0; i < n; i++) {
            UG_VLD(v0, rows + i * ld + c), UG_VLD(v1, rows + i * ld + c + 16);
            s0 = NF_ROUND16(bf, s0 + NF_ROUND16(bf, x[i] * v0, b0), b0); /* rounds: naive mul, naive add */
            s1 = NF_ROUND16(bf, s1 + NF_ROUND16(bf, x[i] * v1, b1), b1);
        }
        int any0 = 0, any1 = 0;
        for (int l = 0; l < 16; l++) any0 |= b0[l], any1 |= b1[l];
        bad[c / 8] = bad[c / 8 + 1] = (unsigned char)(any0 != 0);
        bad[c / 8 + 2] = bad[c / 8 + 3] = (unsigned char)(any1 != 0);
        for (int l = 0; l < 16; l++) { /* exact */
            if (!any0) s[c + l] = (double)s0[l];
            if (!any1) s[c + 16 + l] = (double)s1[l];
        }
    }
    return c;
}

NF_V4 static size_t naive_lanes_v4(int bf, const float *x, const float *rows, size_t ld, size_t n, size_t w8,
                                   int from_s, double *s, unsigned char *bad)
{
    return bf ? lanes_v4(1, x, rows, ld, n, w8, from_s, s, bad) : lanes_v4(0, x, rows, ld, n, w8, from_s, s, bad);
}

int ug_nf_wide = 1;

/* Whether the CPU runs x86-64-v4 code, by its features (gcc 11 has the target but not the
 * level name in __builtin_cpu_supports), once. */
static int cpu_v4(void)
{
    static int has = -1;
    if (has < 0)
        has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
              __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    return has;
}

/* naive_lanes, the AVX-512 blocks first where the CPU has them. */
static void naive_lanes_any(int bf, const float *x, const float *rows, size_t ld, size_t n, size_t w8, int from_s,
                            double *s, unsigned char *bad)
{
    size_t c = ug_nf_wide && cpu_v4() ? naive_lanes_v4(bf, x, rows, ld, n, w8, from_s, s, bad) : 0;
    naive_lanes_8(bf, x, rows + c, ld, n, w8 - c, from_s, s + c, bad + c / 8);
}
#else
#define naive_lanes_any naive_lanes_8
#endif

void ug_nf_scores(int bf, const float *qf, const float *ktf, size_t ldf, size_t D, size_t w, double *s,
                  unsigned char *bad)
{
    size_t w8 = w / 8 * 8;
    naive_lanes_any(bf, qf, ktf, ldf, D, w8, 0, s, bad);
    if (w8 < w) bad[w8 / 8] = 1; /* the keys past the last whole block: the caller's */
}

void ug_nf_cols(int bf, double *s, const float *xf, const float *vf, size_t ldf, size_t n, size_t w8,
                unsigned char *bad)
{
    naive_lanes_any(bf, xf, vf, ldf, n, w8, 1, s, bad);
}
