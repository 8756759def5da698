/* incre_flash_attention_mla.c — operator definition, input builder and exact oracle of
 * incre_flash_attention_mla (MLA decode attention over a paged latent cache):
 *
 *   s_j = (q_nope[b,h]·c_kv[j] + q_rope[b,h]·k_rope[j]) · 576^-1/2,   o[b,h] = softmax(s)·c_kv
 *
 * over the L_b keys of sequence b, key j in physical block block_table[b][j / BS], slot
 * j % BS, kv head h / (Hq/n_kv). The dims stay at production (kv_lora 512, rope 64), so
 * every q·k is the production 576-long reduction; heads, batch and contexts are scaled
 * down. The cache is built the way a serving engine leaves it: blocks handed out from a
 * seeded permutation (non-contiguous, out of order), one spare block no sequence owns,
 * unused table entries -1, and the slots after L_b in a sequence's last block holding
 * random stale rows that must not be read. The spec rounds only at the bf16 output:
 * 576^-1/2 = 1/24 is exact in the oracle. Primary standard: pypto (1e-4 / 2^-7). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "kernels/sim/attention/incre_flash_attention_mla.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

#define DK (UG_MLA_KV_LORA + UG_MLA_ROPE)

typedef struct {
    long batch, heads, n_kv, block_size, ctx;
    const char *lens;
} mla_params;

static int read_params(const ug_spec *s, mla_params *p, char *err, size_t errlen)
{
    if (ug_param_int(s->params, "batch", 1, &p->batch, err, errlen) ||
        ug_param_int(s->params, "heads", 1, &p->heads, err, errlen) ||
        ug_param_int(s->params, "n_kv", 1, &p->n_kv, err, errlen) ||
        ug_param_int(s->params, "block_size", 128, &p->block_size, err, errlen) ||
        ug_param_int(s->params, "ctx", 1, &p->ctx, err, errlen) ||
        ug_param_str(s->params, "lens", "full", &p->lens, err, errlen))
        return -2;
    const char *bad = p->batch < 1 || p->batch > 1024                 ? "batch (1..1024)"
                      : p->heads < 1 || p->heads > 256                 ? "heads (1..256)"
                      : p->n_kv != 1 && p->n_kv != 2                   ? "n_kv (1 or 2)"
                      : p->heads % p->n_kv                             ? "heads (a multiple of n_kv)"
                      : p->block_size < 1 || p->block_size > 1024      ? "block_size (1..1024)"
                      : p->ctx < 1 || p->ctx > (1L << 18)              ? "ctx (1..2^18)"
                      : strcmp(p->lens, "full") && strcmp(p->lens, "ragged") ? "lens (full or ragged)"
                                                                       : NULL;
    if (!bad && p->batch * ((p->ctx + p->block_size - 1) / p->block_size + 1) * p->block_size * p->n_kv * DK > (1L << 26))
        bad = "batch*ctx*n_kv (cache over 2^26 elements)";
    if (!bad && p->batch * p->heads * DK > (1L << 26)) bad = "batch*heads (q over 2^26 elements)";
    if (bad) {
        snprintf(err, errlen, "incre_flash_attention_mla: param %s out of range", bad);
        return -2;
    }
    return 0;
}

/* Writes seq_lens and a block table whose blocks come from a seeded permutation of the
 * cache; returns the number of physical blocks (sum of blocks in use, plus one spare). */
static long mla_blocks(const mla_params *p, uint64_t seed, long *lens, long *table, long maxb)
{
    long nb = 1;
    for (long b = 0; b < p->batch; b++) {
        lens[b] = ug_gl_attn_seq_len(seed, strcmp(p->lens, "ragged") == 0, b, p->batch, p->ctx);
        nb += (lens[b] + p->block_size - 1) / p->block_size;
    }
    long *perm = malloc((size_t)nb * sizeof *perm);
    if (!perm) return -1;
    for (long i = 0; i < nb; i++) perm[i] = i;
    for (long i = nb - 1; i > 0; i--) { /* Fisher-Yates, seeded */
        uint32_t w[4];
        ug_rng_words(seed, 0x626c6b73u, (uint64_t)i, 0, w);
        long j = (long)(w[0] % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    long next = 0;
    for (long b = 0; b < p->batch; b++)
        for (long i = 0; i < maxb; i++)
            table[b * maxb + i] = i * p->block_size < lens[b] ? perm[next++] : -1;
    free(perm);
    return nb;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    mla_params p;
    if (read_params(&c->spec, &p, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_BF16) {
        snprintf(err, errlen, "incre_flash_attention_mla: dtype must be bf16");
        return -2;
    }
    long maxb = (p.ctx + p.block_size - 1) / p.block_size;
    long *lens = malloc((size_t)(p.batch + p.batch * maxb) * sizeof *lens), *table = lens + p.batch;
    if (!lens) return -1;
    long nb = mla_blocks(&p, c->spec.seed, lens, table, maxb);
    int64_t qn[3] = {p.batch, p.heads, UG_MLA_KV_LORA}, qr[3] = {p.batch, p.heads, UG_MLA_ROPE};
    int64_t ck[4] = {nb, p.block_size, p.n_kv, UG_MLA_KV_LORA}, kr[4] = {nb, p.block_size, p.n_kv, UG_MLA_ROPE};
    int64_t ts[2] = {p.batch, maxb}, bs[1] = {p.batch};
    ug_tensor *tt = NULL, *lt = NULL;
    int rc = nb < 0 ? -1 : 0;
    if (!rc && (!ug_case_add_input(c, "q_nope", UG_DT_BF16, 3, qn, 1, err, errlen) ||
                !ug_case_add_input(c, "q_rope", UG_DT_BF16, 3, qr, 1, err, errlen) ||
                !ug_case_add_input(c, "c_kv", UG_DT_BF16, 4, ck, 1, err, errlen) ||
                !ug_case_add_input(c, "k_rope", UG_DT_BF16, 4, kr, 1, err, errlen) ||
                !(tt = ug_case_add_input(c, "block_table", UG_DT_INT32, 2, ts, 0, err, errlen)) ||
                !(lt = ug_case_add_input(c, "seq_lens", UG_DT_INT32, 1, bs, 0, err, errlen)) ||
                !ug_case_add_output(c, "o", UG_DT_BF16, 3, qn, err, errlen)))
        rc = -2;
    for (long i = 0; !rc && i < p.batch * maxb; i++) ug_dtype_store(UG_DT_INT32, tt->data, (size_t)i, (double)table[i]);
    for (long b = 0; !rc && b < p.batch; b++) ug_dtype_store(UG_DT_INT32, lt->data, (size_t)b, (double)lens[b]);
    free(lens);
    return rc;
}

/* Gathers the n keys of (b, kv head g) as rows of 576 exact values: c_kv ‖ k_rope. */
static void gather_keys(const ug_case *c, const mla_params *p, size_t b, size_t g, size_t n, double *kd)
{
    const ug_tensor *ck = ug_case_input(c, "c_kv"), *kr = ug_case_input(c, "k_rope");
    const ug_tensor *tt = ug_case_input(c, "block_table");
    size_t bsz = (size_t)p->block_size, maxb = tt->numel / (size_t)p->batch;
    for (size_t j = 0; j < n; j++) {
        size_t blk = (size_t)ug_tload(tt, b * maxb + j / bsz);
        size_t slot = (blk * bsz + j % bsz) * (size_t)p->n_kv + g;
        memcpy(kd + j * DK, ck->values + slot * UG_MLA_KV_LORA, UG_MLA_KV_LORA * sizeof *kd);
        memcpy(kd + j * DK + UG_MLA_KV_LORA, kr->values + slot * UG_MLA_ROPE, UG_MLA_ROPE * sizeof *kd);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    mla_params p;
    char err[160];
    if (read_params(&c->spec, &p, err, sizeof err)) return -2;
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    const ug_tensor *lens = ug_case_input(c, "seq_lens");
    size_t group = (size_t)(p.heads / p.n_kv), pos = 0, have = (size_t)-1;
    double *kd = malloc(((size_t)p.ctx * DK + DK) * sizeof *kd), *qd = kd + (size_t)p.ctx * DK;
    ug_num *s = malloc(2 * (size_t)p.ctx * sizeof *s);
    if (!kd || !s) {
        free(kd);
        free(s);
        return -1;
    }
    while (pos < sel->n[0]) {
        size_t row = sel->idx[0][pos] / UG_MLA_KV_LORA, b = row / (size_t)p.heads, g = row % (size_t)p.heads / group;
        size_t n = (size_t)ug_tload(lens, b);
        if (have != b * 2 + g) gather_keys(c, &p, b, g, n, kd); /* rows of one kv head share their keys */
        have = b * 2 + g;
        memcpy(qd, qn->values + row * UG_MLA_KV_LORA, UG_MLA_KV_LORA * sizeof *qd);
        memcpy(qd + UG_MLA_KV_LORA, qr->values + row * UG_MLA_ROPE, UG_MLA_ROPE * sizeof *qd);
        size_t mark = ug_ar_mark(ar);
        ug_num scale = ug_rsqrt(ar, ug_c(ar, (double)DK)); /* exact 576^-1/2 = 1/24 */
        if (ug_gl_attn_emit_query(ar, qd, kd, DK, DK, n, scale, kd, DK, UG_MLA_KV_LORA, s, 0, sel, &pos, row)) pos = sel->n[0] + 1;
        ug_ar_release(ar, mark);
    }
    free(kd);
    free(s);
    return 0;
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], (size_t)c->out[0].shape[1], 64, g); /* row tile: one sequence's heads */
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 1e-4, 0x1p-7, 0.005}, /* STANDARDS.md: incre_flash_attention_mla 1e-4 / 2^-7 */
};

const ug_op_def ug_opdef_incre_flash_attention_mla = {
    .op = UG_OP_INCRE_FLASH_ATTENTION_MLA,
    .summary = "MLA decode over a paged cache: o = softmax((q_nope·c_kv^T + q_rope·k_rope^T)/sqrt(576))·c_kv",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 1,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_incre_flash_attention_mla_variants,
    .params_doc =
        "{\"batch\":\"sequences B (int 1..1024)\",\"heads\":\"query heads Hq (int 1..256, a multiple of n_kv; "
        "production 128)\",\"n_kv\":\"kv heads (1 or 2); query head h reads kv head h / (Hq/n_kv)\","
        "\"block_size\":\"paged cache block size BS (int 1..1024, default 128 = production)\","
        "\"ctx\":\"longest context (int >= 1); the table has MB = ceil(ctx/BS) entries per sequence\","
        "\"lens\":\"full (every L_b = ctx) | ragged (seeded L_b in 1..ctx, the last sequence ctx)\","
        "\"tensors\":\"in q_nope[B,Hq,512] bf16, q_rope[B,Hq,64] bf16, c_kv[NB,BS,n_kv,512] bf16, "
        "k_rope[NB,BS,n_kv,64] bf16 (NB = blocks in use + 1 spare, handed out shuffled), "
        "block_table[B,MB] int32 (physical block of each logical block, -1 unused), seq_lens[B] int32 (1..MB*BS); "
        "out o[B,Hq,512] bf16. Scale 576^-1/2; the value rows are c_kv\"}",
};
