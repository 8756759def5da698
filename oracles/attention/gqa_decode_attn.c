/* gqa_decode_attn.c — param checks, input builder and exact oracle of
 * gqa_decode_attn (GQA decode attention with an optional sliding window):
 *
 *   o[b,h,:] = softmax_j( q[b,h]·k[b,g(h),j] / sqrt(D) ) · v[b,g(h),j],   g(h) = h / (Hq/Hkv),
 *   j over [max(0, L_b - window), L_b)   (window 0: every j < L_b)
 *
 * The spec rounds nowhere but at the bf16 output: 1/sqrt(D) is exact in the oracle, and
 * the kernel's bf16 cast of P is its own business (pypto 0.005 / 0.005 leaves room for
 * it). Sequence lengths are a structural int32 input built from the seed ("lens":
 * "full" or "ragged"); the caches hold `ctx` slots per sequence, of which L_b are live.
 * Primary standard: pypto. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

/* The params the builder and the oracle use, read from the case's parsed params. */
typedef struct {
    long batch, heads_kv, group, dim, ctx, window;
    int ragged;
} gqa_params;

static void read_params(const ug_case *c, gqa_params *p)
{
    const ug_params *P = &c->params;
    *p = (gqa_params){ug_p_int(P, "batch"), ug_p_int(P, "heads_kv"), ug_p_int(P, "group"), ug_p_int(P, "dim"),
                      ug_p_int(P, "ctx"),   ug_p_int(P, "window"),   ug_p_is(P, "lens", "ragged")};
}

/* Fills seq_lens from params.lens. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    gqa_params p;
    read_params(c, &p);
    ug_tensor *lens = ug_case_input_mut(c, "seq_lens");
    for (long b = 0; b < p.batch; b++)
        ug_dtype_store(UG_DT_INT32, lens->data, (size_t)b, (double)ug_gl_attn_seq_len(c->spec.seed, p.ragged, b, p.batch, p.ctx));
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gqa_params p;
    read_params(c, &p);
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    const ug_tensor *lens = ug_case_input(c, "seq_lens");
    size_t d = (size_t)p.dim, hq = (size_t)(p.heads_kv * p.group), pos = 0;
    ug_num *s = malloc(2 * (size_t)p.ctx * sizeof *s);
    if (!s) return -1;
    int rc = 0;
    while (pos < sel->n[0] && !rc) {
        size_t row = sel->idx[0][pos] / d, b = row / hq, h = row % hq, kvh = h / (size_t)p.group;
        long len = (long)ug_tload(lens, b);
        long start = p.window > 0 && len > p.window ? len - p.window : 0;
        size_t n = (size_t)(len - start), base = ((b * (size_t)p.heads_kv + kvh) * (size_t)p.ctx + (size_t)start) * d;
        size_t mark = ug_ar_mark(ar);
        ug_num scale = ug_rsqrt(ar, ug_c(ar, (double)p.dim)); /* exact 1/sqrt(D) */
        rc = ug_gl_attn_emit_query(ar, q->values + row * d, k->values + base, d, d, n, scale, v->values + base, d, d, s,
                                   0, sel, &pos, row);
        ug_ar_release(ar, mark);
    }
    free(s);
    return rc;
}

/* Scratch for the case memory estimate: one (batch, kv head)'s keys and values in fp32 in
 * the sim kernel; the oracle's score arrays. */
static double scratch(const ug_params *P)
{
    double ctx = (double)ug_p_int(P, "ctx");
    return 8 * ctx * (double)ug_p_int(P, "dim") + 2 * ctx * UG_NUM_BYTES;
}

const ug_op_def ug_opdef_gqa_decode_attn = {
    .op = UG_OP_GQA_DECODE_ATTN, .build = build, .oracle = oracle,
    .geometry = ug_gl_attn_geometry, .scratch = scratch};
