/* sparse_flash_attention.c — operator definition, input builder and exact oracle of
 * sparse_flash_attention (sparse MLA attention over given top-k indices, TND layout):
 *
 *   o[t,n] = sum_i softmax_i(scale · q[t,n]·kv[j_i]) · kv[j_i][:512],  j_i = indices[t,i] != -1
 *
 * as in DeepSeek-V3.2: one latent kv head shared by all N query heads, K rows of 576
 * (kv_lora 512 + rope 64), V rows their first 512 dims. scale is an fp32 attribute
 * (default 576^-1/2), rounded to fp32 here as the kernel holds it; the spec rounds
 * nowhere else but at the bf16 output. The index tensor is structural: each token's valid
 * indices are distinct rows drawn from the seed; "pad" puts -1 padding at the end of a
 * token's list ("tail", the layout a top-k selector leaves for short contexts) or at
 * random slots ("scattered"), and every token keeps at least one valid index. A token
 * with no valid index would give zeros (the kernel and this oracle both define it so).
 * Primary standard: pypto, with STANDARDS.md's sparse-attention 1e-4 / 0.005 / 0.005. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "kernels/sim/attention/sparse_flash_attention.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    long tokens, heads, kv_len, topk;
    double scale;
    const char *pad;
} sfa_params;

static int read_params(const ug_spec *s, sfa_params *p, char *err, size_t errlen)
{
    if (ug_param_int(s->params, "tokens", 1, &p->tokens, err, errlen) ||
        ug_param_int(s->params, "heads", 1, &p->heads, err, errlen) ||
        ug_param_int(s->params, "kv_len", 1, &p->kv_len, err, errlen) ||
        ug_param_int(s->params, "topk", 1, &p->topk, err, errlen) ||
        ug_param_num(s->params, "scale", 1.0 / 24.0, &p->scale, err, errlen) ||
        ug_param_str(s->params, "pad", "none", &p->pad, err, errlen))
        return -2;
    const char *bad = p->tokens < 1 || p->tokens > 4096                ? "tokens (1..4096)"
                      : p->heads < 1 || p->heads > 256                  ? "heads (1..256)"
                      : p->kv_len < 1 || p->kv_len > (1L << 17)         ? "kv_len (1..2^17)"
                      : p->topk < 1 || p->topk > p->kv_len              ? "topk (1..kv_len)"
                      : !(p->scale > 0) || !((float)p->scale < INFINITY) ? "scale (a positive fp32)"
                      : strcmp(p->pad, "none") && strcmp(p->pad, "tail") && strcmp(p->pad, "scattered")
                          ? "pad (none, tail or scattered)"
                          : NULL;
    if (!bad && p->tokens * p->heads * UG_SFA_DK > (1L << 26)) bad = "tokens*heads (q over 2^26 elements)";
    if (!bad && p->kv_len * UG_SFA_DK > (1L << 26)) bad = "kv_len (kv over 2^26 elements)";
    if (bad) {
        snprintf(err, errlen, "sparse_flash_attention: param %s out of range", bad);
        return -2;
    }
    p->scale = (float)p->scale; /* fp32 attribute */
    return 0;
}

static uint32_t draw(uint64_t seed, uint32_t what, long t, long i)
{
    uint32_t w[4];
    ug_rng_words(seed, what, (uint64_t)t * 0x100000000ull + (uint64_t)i, 0, w);
    return w[0];
}

/* Token t's index list: c distinct rows (partial Fisher-Yates over perm, which holds a
 * permutation of 0..kv_len-1 on entry and keeps one on exit), then the padding. */
static void token_indices(const sfa_params *p, uint64_t seed, long t, long *perm, int32_t *out)
{
    long c = p->topk;
    if (strcmp(p->pad, "tail") == 0) c = 1 + (long)(draw(seed, 0x636e74u, t, 0) % (uint32_t)p->topk);
    for (long i = 0; i < c; i++) {
        long j = i + (long)(draw(seed, 0x69647873u, t, i) % (uint32_t)(p->kv_len - i)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        out[i] = (int32_t)perm[i];
    }
    for (long i = c; i < p->topk; i++) out[i] = -1;
    if (strcmp(p->pad, "scattered") == 0) /* a quarter of the slots after the first become -1 */
        for (long i = 1; i < p->topk; i++)
            if (draw(seed, 0x73637472u, t, i) % 4 == 0) out[i] = -1;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    sfa_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_BF16) {
        snprintf(err, errlen, "sparse_flash_attention: dtype must be bf16");
        return -2;
    }
    int64_t qs[3] = {p.tokens, p.heads, UG_SFA_DK}, ks[2] = {p.kv_len, UG_SFA_DK}, is[2] = {p.tokens, p.topk};
    int64_t os[3] = {p.tokens, p.heads, UG_SFA_DV};
    ug_tensor *it;
    if (!ug_case_add_input(c, "q", UG_DT_BF16, 3, qs, 1, err, errlen) ||
        !ug_case_add_input(c, "kv", UG_DT_BF16, 2, ks, 1, err, errlen) ||
        !(it = ug_case_add_input(c, "indices", UG_DT_INT32, 2, is, 0, err, errlen)) ||
        !ug_case_add_output(c, "o", UG_DT_BF16, 3, os, err, errlen))
        return -2;
    long *perm = malloc((size_t)p.kv_len * sizeof *perm);
    if (!perm) return -1;
    for (long i = 0; i < p.kv_len; i++) perm[i] = i;
    for (long t = 0; t < p.tokens; t++) token_indices(&p, c->spec.seed, t, perm, (int32_t *)it->data + t * p.topk);
    free(perm);
    return 0;
}

/* Gathers token t's valid kv rows (exact values, 576 each) into kd; returns how many. */
static size_t gather_keys(const ug_case *c, const sfa_params *p, size_t t, double *kd)
{
    const ug_tensor *kv = ug_case_input(c, "kv"), *it = ug_case_input(c, "indices");
    size_t n = 0;
    for (size_t i = 0; i < (size_t)p->topk; i++) {
        double j = ug_tload(it, t * (size_t)p->topk + i);
        if (j < 0) continue; /* -1: padding, no key */
        memcpy(kd + n++ * UG_SFA_DK, kv->values + (size_t)j * UG_SFA_DK, UG_SFA_DK * sizeof *kd);
    }
    return n;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    sfa_params p;
    char err[160];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *q = ug_case_input(c, "q");
    size_t pos = 0, have = (size_t)-1, n = 0;
    double *kd = malloc((size_t)p.topk * UG_SFA_DK * sizeof *kd);
    ug_num *s = malloc(2 * (size_t)p.topk * sizeof *s);
    if (!kd || !s) {
        free(kd);
        free(s);
        return -1;
    }
    while (pos < sel->n[0]) {
        size_t row = sel->idx[0][pos] / UG_SFA_DV, t = row / (size_t)p.heads;
        if (have != t) n = gather_keys(c, &p, t, kd); /* a token's heads share its keys */
        have = t;
        size_t mark = ug_ar_mark(ar);
        if (ug_gl_attn_emit_query(ar, q->values + row * UG_SFA_DK, kd, UG_SFA_DK, UG_SFA_DK, n, ug_c(ar, p.scale), kd,
                                  UG_SFA_DK, UG_SFA_DV, s, 0, sel, &pos, row)) pos = sel->n[0] + 1;
        ug_ar_release(ar, mark);
    }
    free(kd);
    free(s);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], (size_t)c->out[0].shape[1], 64, g); /* row tile: one token's heads */
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 1e-4, 0.005, 0.005}, /* STANDARDS.md: sparse attention 1e-4 / 0.005, budget 0.005 */
};

const ug_op_def ug_opdef_sparse_flash_attention = {
    .op = UG_OP_SPARSE_FLASH_ATTENTION,
    .summary = "sparse MLA attention over top-k indices (TND): o = softmax(scale·q·kv[idx]^T)·kv[idx][:512], -1 = padding",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_sparse_flash_attention_variants,
    .params_doc =
        "{\"tokens\":\"query tokens T (int 1..4096)\",\"heads\":\"query heads N (int 1..256; production 128)\","
        "\"kv_len\":\"kv rows S (int >= 1)\",\"topk\":\"index slots per token (int 1..kv_len; production 2048)\","
        "\"scale\":\"fp32 multiplier of q·k (default 576^-1/2)\","
        "\"pad\":\"none (every slot valid) | tail (seeded 1..topk valid, then -1) | scattered (about a quarter of "
        "the slots after the first are -1)\","
        "\"tensors\":\"in q[T,N,576] bf16, kv[S,576] bf16 (one latent kv head shared by all heads: K = the row, "
        "V = its first 512 dims), indices[T,topk] int32 (distinct rows of kv, -1 = padding, ignored); "
        "out o[T,N,512] bf16; a token with no valid index gives zeros\"}",
};
