/* incre_flash_attention_mla.c — param checks, input builder and exact oracle of
 * incre_flash_attention_mla (MLA decode attention over a paged latent cache):
 *
 *   s_j = (q_nope[b,h]·c_kv[j] + q_rope[b,h]·k_rope[j]) · (kv_lora + rope)^-1/2,   o[b,h] = softmax(s)·c_kv
 *
 * over the L_b keys of sequence b, key j in physical block block_table[b][j / BS], slot
 * j % BS, kv head h / (Hq/n_kv). With S_q = q_per_step query tokens per step (multi-token
 * prediction), q and o hold rows b*S_q + i and row i sees only the first L_b - S_q + 1 + i
 * keys (the tokens up to itself); S_q = 1 is plain decode. The dims default to production (params kv_lora 512
 * and rope 64, fixed), so a q·k is the production 576-long reduction; kv_lora (the latent dim) is a param
 * because the reference suite also runs 128 (scale 192^-1/2); heads, batch and contexts are scaled down. The cache is built the way a serving engine leaves it: the
 * blocks in use handed out from a seeded permutation of the first (blocks in use + 1)
 * physical blocks (non-contiguous, out of order), the rest spares no sequence owns (the
 * cache holds batch*ceil(ctx/BS) + 1 blocks, enough for every sequence at full length),
 * unused table entries -1, and the slots after L_b in a sequence's last block holding
 * random stale rows that must not be read. The spec rounds only at the bf16 output: the
 * scale (kv_lora + rope)^-1/2 is the exact real in the oracle (1/24 at production). Primary standard: pypto (1e-4 / 2^-7). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "op_params.h"

/* The params the builder and the oracle use, read from the case's parsed params. */
typedef struct {
    long batch, heads, n_kv, block_size, ctx, kv_lora, rope, dk, max_blocks, q_per_step;
    int ragged;
    const long *given; /* params.context_lens when it lists the lengths, else NULL */
} mla_params;

static void read_params(const ug_case *c, mla_params *p)
{
    const ug_params *P = &c->params;
    const ug_incre_flash_attention_mla_params *params = UG_P(incre_flash_attention_mla, P);
    *p = (mla_params){params->batch,
                      params->heads,
                      params->n_kv,
                      params->block_size,
                      params->ctx,
                      params->kv_lora,
                      params->rope,
                      params->dk,
                      params->max_blocks,
                      params->q_per_step,
                      (params->lens == UG_INCRE_FLASH_ATTENTION_MLA_LENS_RAGGED),
                      ug_gl_attn_given_lens(P)};
}

/* Heads divide among the kv heads; lengths as gqa_decode_attn's (size is the case memory
 * budget's). */
static int check(const ug_params *P, char *err, size_t errlen)
{
    const ug_incre_flash_attention_mla_params *params = UG_P(incre_flash_attention_mla, P);
    if (params->heads % params->n_kv) {
        snprintf(err, errlen, "incre_flash_attention_mla: param heads (a multiple of n_kv) out of range");
        return -2;
    }
    return ug_gl_attn_check_lens(P, "incre_flash_attention_mla", err, errlen);
}

/* Writes seq_lens and a block table whose blocks come from a seeded permutation of the
 * first (blocks in use + 1) physical blocks. */
static int mla_blocks(const mla_params *p, uint64_t seed, long *lens, long *table)
{
    long nb = 1, maxb = p->max_blocks;
    for (long b = 0; b < p->batch; b++) {
        lens[b] = ug_gl_attn_seq_len(seed, p->given, p->ragged, p->q_per_step, b, p->batch, p->ctx);
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
        for (long i = 0; i < maxb; i++) table[b * maxb + i] = i * p->block_size < lens[b] ? perm[next++] : -1;
    free(perm);
    return 0;
}

/* Fills seq_lens and block_table from params.context_lens or params.lens, and the seed. */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    mla_params p;
    read_params(c, &p);
    long *lens = malloc((size_t)(p.batch + p.batch * p.max_blocks) * sizeof *lens), *table = lens + p.batch;
    if (!lens || mla_blocks(&p, c->spec.seed, lens, table)) {
        free(lens);
        return -1;
    }
    ug_tensor *tt = ug_case_input_mut(c, "block_table"), *lt = ug_case_input_mut(c, "seq_lens");
    for (long i = 0; i < p.batch * p.max_blocks; i++)
        ug_dtype_store(UG_DT_INT32, tt->data, (size_t)i, (double)table[i]);
    for (long b = 0; b < p.batch; b++) ug_dtype_store(UG_DT_INT32, lt->data, (size_t)b, (double)lens[b]);
    free(lens);
    return 0;
}

/* Gathers the n keys of (b, kv head g) as rows of dk exact values: c_kv ‖ k_rope. */
static void gather_keys(const ug_case *c, const mla_params *p, size_t b, size_t g, size_t n, double *kd)
{
    const ug_tensor *ck = ug_case_input(c, "c_kv"), *kr = ug_case_input(c, "k_rope");
    const ug_tensor *tt = ug_case_input(c, "block_table");
    size_t bsz = (size_t)p->block_size, maxb = (size_t)p->max_blocks, lora = (size_t)p->kv_lora, rope = (size_t)p->rope;
    for (size_t j = 0; j < n; j++) {
        size_t blk = (size_t)ug_tload(tt, b * maxb + j / bsz);
        size_t slot = (blk * bsz + j % bsz) * (size_t)p->n_kv + g;
        memcpy(kd + j * p->dk, ck->values + slot * lora, lora * sizeof *kd);
        memcpy(kd + j * p->dk + lora, kr->values + slot * rope, rope * sizeof *kd);
    }
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    mla_params p;
    read_params(c, &p);
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    const ug_tensor *lens = ug_case_input(c, "seq_lens");
    size_t group = (size_t)(p.heads / p.n_kv), pos = 0, have = (size_t)-1, dk = (size_t)p.dk, lora = (size_t)p.kv_lora;
    size_t ldkt;
    double *kd = malloc(((size_t)p.ctx * dk + dk) * sizeof *kd), *qd = kd + (size_t)p.ctx * dk;
    double *kt = ug_gl_kt_alloc(ar, dk, (size_t)p.ctx, &ldkt); /* the keys transposed: all scores at once */
    ug_num *s = malloc(2 * (size_t)p.ctx * sizeof *s);
    int rc = kd && s ? 0 : -1;
    while (!rc && pos < sel->n[0]) {
        size_t row = sel->idx[0][pos] / lora, t = row / (size_t)p.heads, sq = (size_t)p.q_per_step, b = t / sq;
        size_t g = row % (size_t)p.heads / group, len = (size_t)ug_tload(lens, b);
        /* rows of one kv head share their keys; an MTP row reads a prefix of them */
        if (have != b * 2 + g) {
            gather_keys(c, &p, b, g, len, kd);
            if (kt) ug_gl_keys_transpose(kd, dk, dk, len, kt, ldkt);
        }
        have = b * 2 + g;
        size_t n = (size_t)ug_gl_attn_mtp_end((long)len, p.q_per_step, (long)(t % sq));
        memcpy(qd, qn->values + row * lora, lora * sizeof *qd);
        memcpy(qd + lora, qr->values + row * (size_t)p.rope, (size_t)p.rope * sizeof *qd);
        size_t mark = ug_ar_mark(ar);
        ug_num scale = ug_rsqrt(ar, ug_c(ar, (double)p.dk)); /* dk^-1/2: exact 1/24 at 576, else at ar's precision */
        rc = ug_gl_attn_emit_query_kt(ar, qd, kd, dk, kt, ldkt, dk, n, scale, kd, dk, lora, s, 0, sel, &pos, row);
        ug_ar_release(ar, mark);
    }
    free(kd);
    free(kt);
    free(s);
    return rc;
}

/* Scratch for the case memory estimate: the sim kernel's fp32 keys of one row; the
 * builder's block permutation and tables; the oracle's keys of one row in fp64 and its
 * score arrays. */
static double scratch(const ug_params *P)
{
    const ug_incre_flash_attention_mla_params *params = UG_P(incre_flash_attention_mla, P);
    double ctx = (double)params->ctx, dk = (double)params->dk, b = (double)params->batch,
           mb = (double)params->max_blocks;
    return 4 * mb * (double)params->block_size * dk + 8 * ((double)params->num_blocks + b + b * mb) +
           8 * (ctx + 1) * dk + ug_gl_kt_scratch(dk, ctx) + 2 * ctx * UG_NUM_BYTES; /* the keys, also transposed */
}

const ug_op_def ug_opdef_incre_flash_attention_mla = {
    .decl.check = check, .build = build, .oracle = oracle, .geometry = ug_gl_attn_geometry, .scratch = scratch};
