/* glm_reference_golden.c — the reference test's own golden of the GLM paged decode
 * attention over caches (glm_attention_fusion's o; reference_golden.h says what the test
 * computes and why; core/ops.h, ug_op_def.reference_golden, how the judge uses it).
 *
 * One query row at a time over the keys of its (sequence, kv head), gathered exactly from
 * the caches the op judges against (the fusion's own written caches), the selection's rows
 * arriving sorted so a (sequence, kv head) is gathered once. Every value is rounded where
 * the test's torch code rounds: fp32 after each operation, bf16 at its cast of P, the
 * output dtype at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracles/attention/reference_golden.h"

/* One row as attn_golden.py's ifa_flash_torch forms it: scores s[0..n) (fp32, scaled),
 * tiles of `tile` keys combined online, unnormalised P cast to bf16 before P.V (values
 * column-major: column d at vt + d*ldc), its sum kept from the fp32 P; o[d] = acc / l in
 * fp32. 0, or -1 when the sum is not finite or 0 (no golden). */
static int online_tiles_row(float *s, size_t n, size_t tile, const double *vt, size_t ldc, size_t D, float *o)
{
    float m = -INFINITY, l = 0.0f;
    for (size_t j0 = 0; j0 < n; j0 += tile) {
        size_t nt = n - j0 < tile ? n - j0 : tile;
        float mt = -INFINITY;
        for (size_t j = 0; j < nt; j++) mt = fmaxf(mt, s[j0 + j]);
        float mn = fmaxf(m, mt), u = j0 ? expf(m - mn) : 0.0f, sl = 0.0f; /* rounds: fp32 */
        for (size_t j = 0; j < nt; j++) {
            float p = expf(s[j0 + j] - mn);                   /* rounds: fp32 */
            sl += p;                                          /* rounds: fp32, the unrounded p */
            s[j0 + j] = (float)ug_dtype_round(UG_DT_BF16, p); /* rounds: the test's cast of P */
        }
        l = l * u + sl; /* rounds: fp32 (u is 0 on the first tile) */
        for (size_t d = 0; d < D; d++) {
            float pv = 0.0f;
            for (size_t j = 0; j < nt; j++) pv += s[j0 + j] * (float)vt[d * ldc + j0 + j]; /* rounds: fp32 */
            o[d] = j0 ? o[d] * u + pv : pv;                                                /* rounds: fp32 */
        }
        m = mn;
    }
    if (!n || !isfinite(l) || l == 0.0f) return -1;
    for (size_t d = 0; d < D; d++) o[d] /= l; /* rounds: fp32 */
    return 0;
}

/* A row's golden o[0..D) into o: fp32 scores q.k_j (the test's fp32 matmul of bf16 values)
 * times the fp32 scale, then the online tiles. w: n floats of scratch. */
static int golden_row(const double *q, const double *kg, const double *vt, size_t ldc, size_t D, size_t n, size_t tile,
                      float scale, float *w, float *o)
{
    for (size_t j = 0; j < n; j++) {
        double dot = 0.0; /* products of bf16 values are exact; the sum is an fp32 matmul's, near enough */
        for (size_t d = 0; d < D; d++) dot += q[d] * kg[j * D + d];
        w[j] = (float)dot * scale; /* rounds: fp32 score, fp32 scale */
        if (!isfinite(w[j])) return -1;
    }
    return online_tiles_row(w, n, tile, vt, ldc, D, o);
}

double ug_gl_paged_reference_golden_scratch(long maxlen, long dim)
{
    return 8 * (2 * (double)maxlen + 1) * (double)dim + 4 * ((double)maxlen + (double)dim);
}

int ug_gl_paged_reference_golden(const ug_gl_paged *p, size_t tile, const ug_selection *sel, int out, ug_dtype odt,
                                 double *gold, char *err, size_t errlen)
{
    size_t D = (size_t)p->dim, maxlen = 1;
    for (long b = 0; b < p->batch; b++) maxlen = (size_t)p->lens[b] > maxlen ? (size_t)p->lens[b] : maxlen;
    double *kg = malloc((2 * maxlen + 1) * D * sizeof *kg);
    float *w = malloc((maxlen + D) * sizeof *w);
    if (!kg || !w) {
        free(kg), free(w);
        snprintf(err, errlen, "out of memory for the reference golden");
        return -1;
    }
    double *vt = kg + maxlen * D, *qr = vt + maxlen * D;
    float *o = w + maxlen;
    long have_b = -1, have_g = -1; /* the (sequence, kv head) gathered: rows arrive sorted */
    size_t pos = 0;
    while (pos < sel->n[out]) {
        size_t r = sel->idx[out][pos] / D;
        long tok = (long)r / p->hq, b = tok / p->sq, g = (long)r % p->hq / (p->hq / p->hkv);
        size_t len = (size_t)p->lens[b];
        if (b != have_b || g != have_g) ug_gl_paged_gather(p, b, g, (long)len, kg, vt, 1, len), have_b = b, have_g = g;
        for (size_t d = 0; d < D; d++) qr[d] = ug_tload(p->q, r * D + d);
        long n = ug_gl_attn_mtp_end(p->lens[b], p->sq, tok % p->sq); /* row i: its causal prefix */
        int ok = golden_row(qr, kg, vt, len, D, (size_t)n, tile, (float)p->scale, w, o) == 0;
        for (; pos < sel->n[out] && sel->idx[out][pos] / D == r; pos++)
            gold[pos] = ok ? ug_dtype_round(odt, o[sel->idx[out][pos] % D]) : NAN; /* rounds: the output dtype */
    }
    free(kg);
    free(w);
    return 0;
}
