/* gqa_decode_attn.c — operator definition, input builder and exact oracle of
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

#include "kernels/sim/attention/gqa_decode_attn.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long batch, heads_kv, group, dim, ctx, window;
    const char *lens;
} gqa_params;

static int read_params(const ug_spec *s, gqa_params *p, char *err, size_t errlen)
{
    if (ug_param_int(s->params, "batch", 1, &p->batch, err, errlen) ||
        ug_param_int(s->params, "heads_kv", 1, &p->heads_kv, err, errlen) ||
        ug_param_int(s->params, "group", 1, &p->group, err, errlen) ||
        ug_param_int(s->params, "dim", 128, &p->dim, err, errlen) ||
        ug_param_int(s->params, "ctx", 1, &p->ctx, err, errlen) ||
        ug_param_int(s->params, "window", 0, &p->window, err, errlen) ||
        ug_param_str(s->params, "lens", "full", &p->lens, err, errlen))
        return -2;
    const char *bad = p->batch < 1 || p->batch > 4096           ? "batch (1..4096)"
                      : p->heads_kv < 1 || p->heads_kv > 256     ? "heads_kv (1..256)"
                      : p->group < 1 || p->group > 64            ? "group (1..64)"
                      : p->dim < 1 || p->dim > 1024              ? "dim (1..1024)"
                      : p->ctx < 1 || p->ctx > (1L << 20)        ? "ctx (1..2^20)"
                      : p->window < 0 || p->window > (1L << 20)  ? "window (0..2^20)"
                      : strcmp(p->lens, "full") && strcmp(p->lens, "ragged") ? "lens (full or ragged)"
                                                                 : NULL;
    if (!bad && p->batch * p->heads_kv * p->ctx * p->dim > (1L << 26)) bad = "batch*heads_kv*ctx*dim (<= 2^26)";
    if (!bad && p->batch * p->heads_kv * p->group * p->dim > (1L << 26)) bad = "batch*heads_kv*group*dim (<= 2^26)";
    if (bad) {
        snprintf(err, errlen, "gqa_decode_attn: param %s out of range", bad);
        return -2;
    }
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    gqa_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_BF16) {
        snprintf(err, errlen, "gqa_decode_attn: dtype must be bf16");
        return -2;
    }
    int64_t qs[3] = {p.batch, p.heads_kv * p.group, p.dim}, kv[4] = {p.batch, p.heads_kv, p.ctx, p.dim};
    int64_t bs[1] = {p.batch};
    ug_tensor *lens;
    if (!ug_case_add_input(c, "q", UG_DT_BF16, 3, qs, 1, err, errlen) ||
        !ug_case_add_input(c, "k", UG_DT_BF16, 4, kv, 1, err, errlen) ||
        !ug_case_add_input(c, "v", UG_DT_BF16, 4, kv, 1, err, errlen) ||
        !(lens = ug_case_add_input(c, "seq_lens", UG_DT_INT32, 1, bs, 0, err, errlen)) ||
        !ug_case_add_output(c, "o", UG_DT_BF16, 3, qs, err, errlen))
        return -2;
    int ragged = strcmp(p.lens, "ragged") == 0;
    for (long b = 0; b < p.batch; b++)
        ug_dtype_store(UG_DT_INT32, lens->data, (size_t)b, (double)ug_gl_attn_seq_len(c->spec.seed, ragged, b, p.batch, p.ctx));
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    gqa_params p;
    char err[160];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    const ug_tensor *lens = ug_case_input(c, "seq_lens");
    size_t d = (size_t)p.dim, hq = (size_t)(p.heads_kv * p.group), pos = 0;
    ug_num *s = malloc(2 * (size_t)p.ctx * sizeof *s);
    if (!s) return -1;
    while (pos < sel->n[0]) {
        size_t row = sel->idx[0][pos] / d, b = row / hq, h = row % hq, kvh = h / (size_t)p.group;
        long len = (long)ug_tload(lens, b);
        long start = p.window > 0 && len > p.window ? len - p.window : 0;
        size_t n = (size_t)(len - start), base = ((b * (size_t)p.heads_kv + kvh) * (size_t)p.ctx + (size_t)start) * d;
        size_t mark = ug_ar_mark(ar);
        ug_num scale = ug_rsqrt(ar, ug_c(ar, (double)p.dim)); /* exact 1/sqrt(D) */
        ug_gl_attn_scores(ar, q->values + row * d, k->values + base, d, d, n, scale, s);
        ug_gl_attn_emit_row(ar, s, s + p.ctx, n, v->values + base, d, d, 0, sel, &pos, row);
        ug_ar_release(ar, mark);
    }
    free(s);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], (size_t)c->out[0].shape[1], 64, g); /* row tile: one sequence's heads */
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 0.005, 0.005, 0.005}, /* STANDARDS.md: gqa_decode_attn 0.005 / 0.005 */
};

const ug_op_def ug_opdef_gqa_decode_attn = {
    .op = UG_OP_GQA_DECODE_ATTN,
    .summary = "GQA decode attention: o = softmax(q·K^T/sqrt(D))·V per sequence, Hq heads sharing Hkv kv heads, "
               "optional sliding window",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_gqa_decode_attn_variants,
    .params_doc =
        "{\"batch\":\"sequences B (int 1..4096)\",\"heads_kv\":\"kv heads Hkv (int 1..256)\","
        "\"group\":\"query heads per kv head Hq/Hkv (int 1..64; production 1, 2, 4, 8)\","
        "\"dim\":\"head dim D (int, default 128 = production)\","
        "\"ctx\":\"kv cache slots per sequence S = longest context (int >= 1)\","
        "\"lens\":\"full (every L_b = S) | ragged (seeded L_b in 1..S, the last sequence S)\","
        "\"window\":\"sliding window: attend only the last `window` keys of each sequence; 0 = off (default)\","
        "\"tensors\":\"in q[B,Hq,D] bf16 (Hq = Hkv*group), k[B,Hkv,S,D] bf16, v[B,Hkv,S,D] bf16, "
        "seq_lens[B] int32 (1..S); out o[B,Hq,D] bf16. Query head h uses kv head h / group; scale 1/sqrt(D)\"}",
};
