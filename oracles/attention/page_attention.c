/* page_attention.c — operator definition, input builder and exact oracle of
 * page_attention, paged decode attention with grouped-query heads (one query token per
 * sequence):
 *
 *     o[b,h,:] = sum_t exp(s_t - m) V_b[t,g,:] / sum_t exp(s_t - m),  s_t = scale * q[b,h,:].K_b[t,g,:]
 *
 * over the tokens t < context_lens[b], g = h / (Hq/Hkv). Token t of sequence b is slot
 * t % block_size of cache block block_tables[b, t / block_size]. scale is an fp32
 * attribute (default 1/sqrt(D)); the spec rounds nothing mid-way.
 *
 * The builder makes the paging matter: the pool has the blocks the sequences need plus
 * half as many spare ones, handed out in a seeded shuffled order (so a sequence's blocks
 * are neither contiguous nor ascending); table entries past a sequence's last block are
 * 0. Every cache slot, including those past a context and the spare blocks, holds a value
 * drawn from the case's distribution, i.e. non-zero garbage that a kernel reading beyond
 * the context picks up.
 *
 * Primary standard pypto, budget 0.005, atol the silent default 1e-3 but rtol 2^-7 (the
 * attention-output rtol of STANDARDS.md) instead of 1e-3. Why: rtol 1e-3 is below half
 * a bf16 ulp (2^-9 relative), so a bf16 output one ulp from the correctly rounded value
 * already fails, and the device's cast of P to bf16 before P.V costs a few bf16 ulps
 * where o is small. Measured on the nightly plan with the correct sim kernel: 1e-3 / 1e-3
 * fails 29 of 43 bf16 cases (every fp16 case passes); 1e-3 / 2^-7 fails none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "kernels/sim/attention/page_attention.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define OP "page_attention"
#define PA_MAX_BATCH 256

typedef struct {
    long batch, hkv, group, hq, dim, bs, max_blocks, num_blocks;
    double scale;
    long ctx[PA_MAX_BATCH];
} pa_params;

static int parse_lens(const char *s, pa_params *p)
{
    p->batch = 0;
    for (;;) {
        char *end;
        if (*s < '0' || *s > '9' || p->batch == PA_MAX_BATCH) return -1;
        long v = strtol(s, &end, 10);
        if (v < 1 || v > (1L << 20)) return -1;
        p->ctx[p->batch++] = v;
        if (*end == '\0') return 0;
        if (*end != ',') return -1;
        s = end + 1;
    }
}

static int read_params(const ug_spec *s, pa_params *p, char *err, size_t errlen)
{
    const char *lens;
    double scale;
    if (ug_param_str(s->params, "context_lens", "", &lens, err, errlen) ||
        ug_param_int(s->params, "heads_kv", 1, &p->hkv, err, errlen) ||
        ug_param_int(s->params, "group", 1, &p->group, err, errlen) ||
        ug_param_int(s->params, "head_dim", 128, &p->dim, err, errlen) ||
        ug_param_int(s->params, "block_size", 16, &p->bs, err, errlen) ||
        ug_param_num(s->params, "scale", 0.0, &scale, err, errlen))
        return -2;
    if (parse_lens(lens, p)) {
        snprintf(err, errlen, "%s: param \"context_lens\" must be \"L,L,...\": 1..%d lengths of 1..2^20 (got \"%s\")",
                 OP, PA_MAX_BATCH, lens);
        return -2;
    }
    if (p->hkv < 1 || p->hkv > 64 || p->group < 1 || p->group > 64 || p->dim < 1 || p->dim > 576) {
        snprintf(err, errlen, "%s: params \"heads_kv\" and \"group\" must be 1..64, \"head_dim\" 1..576", OP);
        return -2;
    }
    if (p->bs < 1 || p->bs > 1024) {
        snprintf(err, errlen, "%s: param \"block_size\" must be 1..1024", OP);
        return -2;
    }
    p->hq = p->hkv * p->group;
    long need = 0;
    p->max_blocks = 0;
    for (long b = 0; b < p->batch; b++) {
        long n = (p->ctx[b] + p->bs - 1) / p->bs;
        need += n;
        p->max_blocks = n > p->max_blocks ? n : p->max_blocks;
    }
    p->num_blocks = need + (need + 1) / 2; /* spare blocks of garbage */
    if (p->num_blocks * p->bs * p->hkv * p->dim > (1L << 25)) {
        snprintf(err, errlen, "%s: the cache (blocks x block_size x heads_kv x head_dim) must stay <= 2^25 elements",
                 OP);
        return -2;
    }
    if (scale == 0.0) scale = 1.0 / sqrt((double)p->dim);
    if (!isfinite(scale) || scale <= 0.0 || !isfinite((float)scale)) {
        snprintf(err, errlen, "%s: param \"scale\" must be a finite fp32 value > 0", OP);
        return -2;
    }
    p->scale = (float)scale; /* fp32 attribute */
    return 0;
}

/* Block ids 0..num_blocks-1 in a seeded shuffled order (Fisher-Yates on Philox words). */
static void shuffled_blocks(uint64_t seed, long n, long *perm)
{
    for (long i = 0; i < n; i++) perm[i] = i;
    for (long i = n - 1; i > 0; i--) {
        uint32_t w[4];
        ug_rng_words(seed, 0x626c6b73u, (uint64_t)i, 0, w);
        long j = (long)(w[0] % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static int build(ug_case *c, char *err, size_t errlen)
{
    pa_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    ug_dtype dt = c->spec.dtype;
    if (dt != UG_DT_BF16 && dt != UG_DT_FP16) {
        snprintf(err, errlen, "%s: dtype must be bf16 or fp16", OP);
        return -2;
    }
    int64_t qs[3] = {p.batch, p.hq, p.dim}, cs[4] = {p.num_blocks, p.bs, p.hkv, p.dim};
    int64_t ts[2] = {p.batch, p.max_blocks}, ls[1] = {p.batch};
    ug_tensor *bt, *cl;
    if (!ug_case_add_input(c, "q", dt, 3, qs, 1, err, errlen) ||
        !ug_case_add_input(c, "key_cache", dt, 4, cs, 1, err, errlen) ||
        !ug_case_add_input(c, "value_cache", dt, 4, cs, 1, err, errlen) ||
        !(bt = ug_case_add_input(c, "block_tables", UG_DT_INT32, 2, ts, 0, err, errlen)) ||
        !(cl = ug_case_add_input(c, "context_lens", UG_DT_INT32, 1, ls, 0, err, errlen)) ||
        !ug_case_add_output(c, "o", dt, 3, qs, err, errlen))
        return -2;
    long *perm = malloc((size_t)p.num_blocks * sizeof *perm), next = 0;
    if (!perm) return -1;
    shuffled_blocks(c->spec.seed, p.num_blocks, perm);
    for (long b = 0; b < p.batch; b++) {
        ug_dtype_store(UG_DT_INT32, cl->data, (size_t)b, (double)p.ctx[b]);
        long n = (p.ctx[b] + p.bs - 1) / p.bs;
        for (long i = 0; i < p.max_blocks; i++) /* exact: small integers */
            ug_dtype_store(UG_DT_INT32, bt->data, (size_t)(b * p.max_blocks + i), i < n ? (double)perm[next++] : 0.0);
    }
    free(perm);
    return 0;
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    pa_params p;
    char err[256];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *q = ug_case_input(c, "q"), *kc = ug_case_input(c, "key_cache");
    const ug_tensor *vc = ug_case_input(c, "value_cache"), *bt = ug_case_input(c, "block_tables");
    size_t D = (size_t)p.dim, maxctx = 1;
    for (long b = 0; b < p.batch; b++) maxctx = (size_t)p.ctx[b] > maxctx ? (size_t)p.ctx[b] : maxctx;
    ug_num *e = malloc(maxctx * sizeof *e);
    double *vg = malloc(maxctx * D * sizeof *vg); /* the row's values gathered token-major */
    if (!e || !vg) {
        free(e);
        free(vg);
        return -1;
    }
    ug_num sc = ug_c(ar, p.scale);
    size_t pos = 0, base = ug_ar_mark(ar);
    while (pos < sel->n[0]) {
        size_t r = sel->idx[0][pos] / D, mark = ug_ar_mark(ar);
        long b = (long)r / p.hq, g = (long)r % p.hq / p.group, n = p.ctx[b];
        const double *qr = q->values + r * D;
        ug_num m = {0};
        for (long t = 0; t < n; t++) {
            long phys = (long)bt->values[b * p.max_blocks + t / p.bs];
            size_t at = (((size_t)phys * (size_t)p.bs + (size_t)(t % p.bs)) * (size_t)p.hkv + (size_t)g) * D;
            memcpy(vg + (size_t)t * D, vc->values + at, D * sizeof *vg);
            e[t] = ug_mul(ar, ug_dot_d(ar, qr, 1, kc->values + at, 1, D), sc);
            m = t ? ug_max(ar, m, e[t]) : e[t];
        }
        for (long t = 0; t < n; t++) e[t] = ug_exp(ar, ug_sub(ar, e[t], m));
        ug_num total = ug_sum(ar, e, (size_t)n);
        for (; pos < sel->n[0] && sel->idx[0][pos] / D == r; pos++) {
            size_t d = sel->idx[0][pos] % D;
            ug_ar_emit(ar, 0, pos, ug_div(ar, ug_dot_nd(ar, e, vg + d, D, (size_t)n), total));
        }
        ug_ar_release(ar, mark);
    }
    ug_ar_release(ar, base);
    free(e);
    free(vg);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[2];
    g->rows = t->numel / g->cols;
    g->row_tile = (size_t)t->shape[1]; /* rows are (sequence, q head): one sequence per tile */
    g->col_tile = 64;
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 1e-3, 0x1p-7, 0.005}, /* default atol 1e-3, rtol 2^-7: see the file header */
};

const ug_op_def ug_opdef_page_attention = {
    .op = UG_OP_PAGE_ATTENTION,
    .summary = "paged decode attention with GQA: per-sequence context lengths, shuffled block tables",
    .dtypes = "bf16,fp16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_page_attention_variants,
    .params_doc = "{\"context_lens\":\"per sequence context length, e.g. \\\"1,17,300\\\" (B = 1..256 entries, each "
                  "1..2^20)\",\"heads_kv\":\"Hkv (int 1..64)\",\"group\":\"query heads per kv head G (int 1..64); "
                  "Hq = G*Hkv, query head h reads kv head h/G\",\"head_dim\":\"D (int 1..576)\","
                  "\"block_size\":\"tokens per cache block BS (int 1..1024)\","
                  "\"scale\":\"fp32 score multiplier (default 1/sqrt(D))\","
                  "\"tensors\":\"in q[B,Hq,D] dtype (one decode token per sequence), key_cache[NB,BS,Hkv,D] and "
                  "value_cache[NB,BS,Hkv,D] dtype (NB = the blocks needed plus half as many spare, every slot "
                  "filled), block_tables[B,MB] int32 (MB = max blocks per sequence; row b lists b's blocks in "
                  "token order, 0 past its last), context_lens[B] int32; out o[B,Hq,D] dtype\"}",
};
