/* attn_vec.c — the vectorised inner loops of the attention sim kernels (see attn_vec.h
 * for the numerics they keep).
 *
 * Written with GCC/Clang vector types of 8 floats, so each lane is one independent output
 * (a key's score, an element d of a row) and the loops over d or keys stay in their
 * declared order. On x86-64 the exported functions are also compiled for AVX2 and picked
 * at run time (target_clones): the same IEEE single-precision multiplies and adds, wider
 * (no FMA: AVX2 does not include it and -ffp-contract=off forbids contraction), so the
 * results do not depend on the machine. */
#include "kernels/sim/attention/attn_vec.h"

/* The helpers below pass 8-float vectors by value; they are always inlined, so the ABI
 * note GCC gives for such values without AVX does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8f __attribute__((vector_size(32)));
/* 16 floats: one register in the x86-64-v4 clone, two in the AVX2 one (the score blocks:
 * the same operations per lane either way). */
typedef float v16f __attribute__((vector_size(64)));

/* No clones under the sanitizers (the fuzz build): an ifunc resolver runs before they are
 * set up. */
#if defined(__SANITIZE_ADDRESS__) && !defined(UG_NO_TARGET_CLONES)
#define UG_NO_TARGET_CLONES
#endif
#if defined(__has_feature) && !defined(UG_NO_TARGET_CLONES)
#if __has_feature(address_sanitizer)
#define UG_NO_TARGET_CLONES
#endif
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(UG_NO_TARGET_CLONES)
#if __has_attribute(target_clones)
#define UG_AV_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef UG_AV_CLONES
#define UG_AV_CLONES
#endif
#define UG_AV_INLINE static inline __attribute__((always_inline))

UG_AV_INLINE v8f ld8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

UG_AV_INLINE void st8(float *p, v8f v) { memcpy(p, &v, sizeof v); }

UG_AV_INLINE v8f splat(float x) { return (v8f){x, x, x, x, x, x, x, x}; }

UG_AV_INLINE v16f ld16(const float *p)
{
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

UG_AV_INLINE void st16(float *p, v16f v) { memcpy(p, &v, sizeof v); }

UG_AV_CLONES void ug_av_stage_kt(const float *k, size_t ldk, size_t n, size_t D, float *kt, size_t ldt)
{
    size_t w = ug_av_cols(n);
    for (size_t d = 0; d < D; d++) {
        float *row = kt + d * ldt;
        for (size_t c = 0; c < n; c++) row[c] = k[c * ldk + d]; /* exact: a copy */
        for (size_t c = n; c < w; c++) row[c] = 0.0f;
    }
}

/* Scores of 4 rows x 16 keys: 4 independent 16-lane fp32 accumulators, each lane summed in
 * d order. */
UG_AV_INLINE void scores_4x16(const float *q, size_t ldq, const float *kt, size_t ldt, size_t D, float *s, size_t lds)
{
    const float *q0 = q, *q1 = q + ldq, *q2 = q + 2 * ldq, *q3 = q + 3 * ldq;
    v16f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (size_t d = 0; d < D; d++) {
        v16f k = ld16(kt + d * ldt);
        a0 += q0[d] * k; /* rounds: fp32 product, then fp32 add */
        a1 += q1[d] * k;
        a2 += q2[d] * k;
        a3 += q3[d] * k;
    }
    st16(s, a0), st16(s + lds, a1), st16(s + 2 * lds, a2), st16(s + 3 * lds, a3);
}

/* Scores of 1 row x 16 keys (the rows left over by the 4-row blocks). */
UG_AV_INLINE void scores_1x16(const float *q, const float *kt, size_t ldt, size_t D, float *s)
{
    v16f a0 = {0};
    for (size_t d = 0; d < D; d++) a0 += q[d] * ld16(kt + d * ldt); /* rounds: fp32 product, then fp32 add */
    st16(s, a0);
}

UG_AV_CLONES void ug_av_scores(const float *q, size_t ldq, size_t nr, const float *kt, size_t ldt, size_t ncols,
                               size_t D, float *s, size_t lds)
{
    size_t r = 0;
    for (; r + 4 <= nr; r += 4)
        for (size_t c = 0; c < ncols; c += UG_AV_COLS)
            scores_4x16(q + r * ldq, ldq, kt + c, ldt, D, s + r * lds + c, lds);
    for (; r < nr; r++)
        for (size_t c = 0; c < ncols; c += UG_AV_COLS) scores_1x16(q + r * ldq, kt + c, ldt, D, s + r * lds + c);
}

/* P.V of 64 consecutive d (8 accumulators), then acc*alpha + sum. */
UG_AV_INLINE void pv_64(float *acc, float alpha, const float *p, const int *live, size_t n, const float *v, size_t ldv)
{
    v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};
    for (size_t i = 0; i < n; i++) {
        size_t c = live ? (size_t)live[i] : i;
        const float *vr = v + c * ldv;
        v8f w = splat(p[c]);
        s0 += w * ld8(vr); /* rounds: fp32 product, then fp32 add, in key order */
        s1 += w * ld8(vr + 8);
        s2 += w * ld8(vr + 16);
        s3 += w * ld8(vr + 24);
        s4 += w * ld8(vr + 32);
        s5 += w * ld8(vr + 40);
        s6 += w * ld8(vr + 48);
        s7 += w * ld8(vr + 56);
    }
    v8f a = splat(alpha), sum[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
    for (int j = 0; j < 8; j++) st8(acc + 8 * j, ld8(acc + 8 * j) * a + sum[j]); /* rounds: fp32 multiply, add */
}

/* The same for 8 consecutive d. */
UG_AV_INLINE void pv_8(float *acc, float alpha, const float *p, const int *live, size_t n, const float *v, size_t ldv)
{
    v8f s0 = {0};
    for (size_t i = 0; i < n; i++) {
        size_t c = live ? (size_t)live[i] : i;
        s0 += splat(p[c]) * ld8(v + c * ldv); /* rounds: fp32 product, then fp32 add */
    }
    st8(acc, ld8(acc) * splat(alpha) + s0); /* rounds: fp32 multiply, add */
}

/* The same for one d. */
UG_AV_INLINE void pv_1(float *acc, float alpha, const float *p, const int *live, size_t n, const float *v, size_t ldv)
{
    float s0 = 0.0f;
    for (size_t i = 0; i < n; i++) {
        size_t c = live ? (size_t)live[i] : i;
        s0 += p[c] * v[c * ldv]; /* rounds: fp32 product, then fp32 add */
    }
    *acc = *acc * alpha + s0; /* rounds: fp32 multiply, add */
}

UG_AV_CLONES void ug_av_pv(float *acc, float alpha, const float *p, const int *live, size_t n, const float *v,
                           size_t ldv, size_t D)
{
    size_t d = 0;
    for (; d + 64 <= D; d += 64) pv_64(acc + d, alpha, p, live, n, v + d, ldv);
    for (; d + 8 <= D; d += 8) pv_8(acc + d, alpha, p, live, n, v + d, ldv);
    for (; d < D; d++) pv_1(acc + d, alpha, p, live, n, v + d, ldv);
}

/* ug_av_outer_rows for key c and 64 consecutive d. */
UG_AV_INLINE void outer_64(float *acc, size_t c, const float *w, size_t ldw, const long *nc, size_t nr, const float *x,
                           size_t ldx)
{
    v8f a[8];
    for (int j = 0; j < 8; j++) a[j] = ld8(acc + 8 * j);
    for (size_t r = 0; r < nr; r++) {
        if ((long)c >= nc[r]) continue; /* row r does not see key c */
        v8f b = splat(w[r * ldw + c]);
        const float *xr = x + r * ldx;
        for (int j = 0; j < 8; j++) a[j] += b * ld8(xr + 8 * j); /* rounds: fp32 product, then fp32 add, in row order */
    }
    for (int j = 0; j < 8; j++) st8(acc + 8 * j, a[j]);
}

/* The same for 8 consecutive d. */
UG_AV_INLINE void outer_8(float *acc, size_t c, const float *w, size_t ldw, const long *nc, size_t nr, const float *x,
                          size_t ldx)
{
    v8f a = ld8(acc);
    for (size_t r = 0; r < nr; r++)
        if ((long)c < nc[r]) a += splat(w[r * ldw + c]) * ld8(x + r * ldx); /* rounds: fp32 product, add */
    st8(acc, a);
}

/* The same for one d. */
UG_AV_INLINE void outer_1(float *acc, size_t c, const float *w, size_t ldw, const long *nc, size_t nr, const float *x,
                          size_t ldx)
{
    float a = *acc;
    for (size_t r = 0; r < nr; r++)
        if ((long)c < nc[r]) a += w[r * ldw + c] * x[r * ldx]; /* rounds: fp32 product, add */
    *acc = a;
}

UG_AV_CLONES void ug_av_outer_rows(float *acc, size_t nk, const float *w, size_t ldw, const long *nc, size_t nr,
                                   const float *x, size_t ldx, size_t D)
{
    size_t d = 0;
    for (; d + 64 <= D; d += 64)
        for (size_t c = 0; c < nk; c++) outer_64(acc + c * D + d, c, w, ldw, nc, nr, x + d, ldx);
    for (; d + 8 <= D; d += 8)
        for (size_t c = 0; c < nk; c++) outer_8(acc + c * D + d, c, w, ldw, nc, nr, x + d, ldx);
    for (; d < D; d++)
        for (size_t c = 0; c < nk; c++) outer_1(acc + c * D + d, c, w, ldw, nc, nr, x + d, ldx);
}
