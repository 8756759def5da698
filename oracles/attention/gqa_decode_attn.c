/* gqa_decode_attn.c — param checks, input builder and exact oracle of
 * gqa_decode_attn (GQA decode attention with an optional sliding window):
 *
 *   o[b*S_q+i,h,:] = softmax_j( scale · q[b*S_q+i,h]·k[b,g(h),j] ) · v[b,g(h),j],   g(h) = h / (Hq/Hkv),
 *   j over [max(0, E - window), E),  E = L_b - S_q + 1 + i   (window 0: every j < E)
 *
 * S_q = q_per_step query tokens per sequence (multi-token prediction; 1 = plain decode,
 * E = L_b): token i of a step sits at position L_b - S_q + i of its sequence and sees the
 * keys up to and including itself, so each window ends at its own row's last key.
 *
 * The spec rounds nowhere but at the bf16 output: the default scale (the fp32 rounding of
 * 1/sqrt(D)) is taken as the exact 1/sqrt(D) it stands for, as before the param existed,
 * so existing cases keep their exact expected values; any other scale is its fp32 value.
 * The kernel's bf16 cast of P is its own business (pypto 0.005 / 0.005 leaves room for
 * it). Sequence lengths are a structural int32 input built from the params (an explicit
 * "context_lens" list, else "lens": "full" or "ragged" drawn from the seed); the caches hold
 * `ctx` slots per sequence, of which L_b are live. Primary standard: certified (docs/STANDARDS.md);
 * pypto stays stored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

/* The params the builder and the oracle use, read from the case's parsed params. */
typedef struct {
    long batch, heads_kv, group, dim, ctx, window, q_per_step;
    int ragged;
    double scale; /* fp32 value of params.scale */
} gqa_params;

static void read_params(const ug_case *c, gqa_params *p)
{
    const ug_params *P = &c->params;
    const ug_gqa_decode_attn_params *params = UG_P(gqa_decode_attn, P);
    *p = (gqa_params){
        params->batch, params->heads_kv, params->group,      params->dim,
        params->ctx,   params->window,   params->q_per_step, (params->lens == UG_GQA_DECODE_ATTN_LENS_RAGGED),
        params->scale};
}

/* Lengths (shared with incre_flash_attention_mla) and a scale still positive in fp32 (size
 * is the case memory budget's). */
static int check(const ug_params *P, char *err, size_t errlen)
{
    if (!(UG_P(gqa_decode_attn, P)->scale > 0)) {
        snprintf(err, errlen, "gqa_decode_attn: param scale (positive after rounding to fp32) out of range");
        return -2;
    }
    return ug_gl_attn_check_lens(P, "gqa_decode_attn", err, errlen);
}

/* Fills the seq_lens input from params.context_lens, else params.lens. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    gqa_params p;
    read_params(c, &p);
    const long *given = ug_gl_attn_given_lens(&c->params);
    ug_tensor *lens = ug_case_input_mut(c, "seq_lens");
    for (long b = 0; b < p.batch; b++) {
        long len = ug_gl_attn_seq_len(c->spec.seed, given, p.ragged, p.q_per_step, b, p.batch, p.ctx);
        ug_dtype_store(UG_DT_INT32, lens->data, (size_t)b, (double)len);
    }
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gqa_params p;
    read_params(c, &p);
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    const ug_tensor *lens = ug_case_input(c, "seq_lens");
    size_t d = (size_t)p.dim, hq = (size_t)(p.heads_kv * p.group), sq = (size_t)p.q_per_step, pos = 0;
    /* The default scale stands for the exact 1/sqrt(D) (the kernel's fp32 copy of it is
     * its own rounding); compared the way the declaration's default is made. */
    int exact_default = p.scale == (double)(float)(1.0 / sqrt((double)p.dim)); /* rounds: fp32, as the default */
    size_t ldkt, kt_base = (size_t)-1, kt_n = 0; /* the keys held transposed: from kt_base, kt_n of them */
    double *kt = ug_gl_kt_alloc(ar, d, (size_t)p.ctx, &ldkt);
    ug_num *s = malloc(2 * (size_t)p.ctx * sizeof *s);
    if (!s) return free(kt), -1;
    int rc = 0;
    while (pos < sel->n[0] && !rc) {
        size_t row = sel->idx[0][pos] / d, t = row / hq, b = t / sq, h = row % hq, kvh = h / (size_t)p.group;
        long end = ug_gl_attn_mtp_end((long)ug_tload(lens, b), p.q_per_step, (long)(t % sq));
        long start = p.window > 0 && end > p.window ? end - p.window : 0;
        size_t n = (size_t)(end - start), base = ((b * (size_t)p.heads_kv + kvh) * (size_t)p.ctx + (size_t)start) * d;
        size_t mark = ug_ar_mark(ar);
        ug_num scale = exact_default ? ug_rsqrt(ar, ug_c(ar, (double)p.dim)) : ug_c(ar, p.scale);
        if (kt && (base != kt_base || n > kt_n)) /* a group's rows share their keys */
            ug_gl_keys_transpose(k->values + base, d, d, n, kt, ldkt), kt_base = base, kt_n = n;
        rc = ug_gl_attn_emit_query_kt(ar, q->values + row * d, k->values + base, d, kt, ldkt, d, n, scale,
                                      v->values + base, d, d, s, 0, sel, &pos, row);
        ug_ar_release(ar, mark);
    }
    free(kt);
    free(s);
    return rc;
}

/* Scratch for the case memory estimate: one (batch, kv head)'s keys and values in fp32 in
 * the sim kernel; the oracle's score arrays and its keys held transposed. */
static double scratch(const ug_params *P)
{
    const ug_gqa_decode_attn_params *params = UG_P(gqa_decode_attn, P);
    double ctx = (double)params->ctx;
    return 8 * ctx * (double)params->dim + 2 * ctx * UG_NUM_BYTES + ug_gl_kt_scratch((double)params->dim, ctx);
}

const ug_op_def ug_opdef_gqa_decode_attn = {
    .decl.check = check, .build = build, .oracle = oracle, .geometry = ug_gl_attn_geometry, .scratch = scratch};
