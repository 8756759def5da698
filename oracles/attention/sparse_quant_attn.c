/* sparse_quant_attn.c — params, checks, builder and exact oracle shared by
 * sparse_flash_attention_quant and sparse_attention_antiquant (see sparse_quant_attn.h for
 * the math both follow).
 *
 * The builder lays the cache out the way a serving engine leaves it and the reference
 * suite builds it: the blocks of every sequence a seeded shuffle of the pool (out of
 * order; blocks nobody owns and slots past L_b hold drawn values that must not be read),
 * block-table entries past a sequence's last block -1, and per query row c = min(vis, topk)
 * distinct positions of its visible prefix (shuffled; pick "edges" takes the positions
 * next to a block boundary first), padded per params.pad, the slots from c on left 0 as
 * the reference leaves them (never read: the count rule). */
#include "oracles/attention/sparse_quant_attn.h"

#include "oracles/attention/reference_golden.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "oracles/attention/attn_rows.h"

#define SQA_GROUP 128 /* quantisation group: elements of the nope part per scale */

void ug_sqa_read_params(const ug_params *P, ug_sqa_params *p)
{
    *p = (ug_sqa_params){.batch = ug_p_int(P, "batch"),
                         .sq = ug_p_int(P, "q_per_step"),
                         .heads = ug_p_int(P, "heads"),
                         .ctx = ug_p_int(P, "ctx"),
                         .bs = ug_p_int(P, "block_size"),
                         .topk = ug_p_int(P, "topk"),
                         .lora = ug_p_int(P, "kv_lora"),
                         .rope = ug_p_int(P, "rope"),
                         .dk = ug_p_int(P, "dk"),
                         .group = SQA_GROUP,
                         .groups = ug_p_int(P, "groups"),
                         .max_blocks = ug_p_int(P, "max_blocks"),
                         .num_blocks = ug_p_int(P, "num_blocks"),
                         .scale = ug_p_num(P, "scale"),
                         .ragged = ug_p_is(P, "lens", "ragged"),
                         .given = ug_gl_attn_given_lens(P),
                         .pad = ug_p_str(P, "pad"),
                         .pick = ug_p_str(P, "pick")};
}

/* Blocks the sequences need at most: sum of ceil(L_b/BS) for given lengths, else every
 * sequence at ctx (ragged lengths are drawn up to ctx). */
static long blocks_needed(const ug_params *P)
{
    long bs = ug_p_int(P, "block_size"), need = 0;
    const long *given = ug_gl_attn_given_lens(P);
    for (long b = 0; b < ug_p_int(P, "batch"); b++) need += ((given ? given[b] : ug_p_int(P, "ctx")) + bs - 1) / bs;
    return need;
}

int ug_sqa_check(const ug_params *P, const char *op, char *err, size_t errlen)
{
    int rc = ug_gl_attn_check_lens(P, op, err, errlen);
    if (rc) return rc;
    long need = blocks_needed(P);
    if (ug_p_int(P, "num_blocks") < need) {
        snprintf(err, errlen,
                 "%s: param num_blocks %ld out of range: the block table would point past the cache (the sequences "
                 "need %ld blocks)",
                 op, ug_p_int(P, "num_blocks"), need);
        return -2;
    }
    return 0;
}

static uint32_t draw(uint64_t seed, uint32_t what, uint64_t a, uint64_t b)
{
    uint32_t w[4];
    ug_rng_words(seed, what, a * 0x100000000ull + b, 0, w);
    return w[0];
}

/* Sequence lengths and a block table whose blocks are a seeded shuffle of the pool. */
static int build_blocks(const ug_sqa_params *p, uint64_t seed, long *lens, long *table)
{
    long *perm = malloc((size_t)p->num_blocks * sizeof *perm);
    if (!perm) return -1;
    for (long i = 0; i < p->num_blocks; i++) perm[i] = i;
    for (long i = p->num_blocks - 1; i > 0; i--) { /* Fisher-Yates, seeded */
        long j = (long)(draw(seed, 0x626c6b73u, 0, (uint64_t)i) % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    long next = 0;
    for (long b = 0; b < p->batch; b++) {
        lens[b] = ug_gl_attn_seq_len(seed, p->given, p->ragged, p->sq, b, p->batch, p->ctx);
        for (long i = 0; i < p->max_blocks; i++) table[b * p->max_blocks + i] = i * p->bs < lens[b] ? perm[next++] : -1;
    }
    free(perm);
    return 0;
}

/* perm[0..vis): the visible positions, for pick "edges" those next to a block boundary
 * (offset 0 or BS-1 in their block) first; returns how many come first. */
static long order_positions(const ug_sqa_params *p, long vis, long *perm)
{
    long ne = 0, n = 0;
    int edges = strcmp(p->pick, "edges") == 0;
    for (long q = 0; q < vis; q++)
        if (edges && (q % p->bs == 0 || q % p->bs == p->bs - 1)) perm[ne++] = q;
    n = ne;
    for (long q = 0; q < vis; q++)
        if (!edges || !(q % p->bs == 0 || q % p->bs == p->bs - 1)) perm[n++] = q;
    return ne;
}

/* Query row r's index list (vis visible positions): c distinct positions by a partial
 * seeded Fisher-Yates (the edge positions drawn first), then the padding. */
static void row_indices(const ug_sqa_params *p, uint64_t seed, long r, long vis, long *perm, int32_t *out)
{
    long c = vis < p->topk ? vis : p->topk, ne = order_positions(p, vis, perm);
    for (long i = 0; i < c; i++) {
        long hi = i < ne ? ne : vis; /* slot i draws from perm[i..hi): the edge positions first */
        long j = i + (long)(draw(seed, 0x69647873u, (uint64_t)r, (uint64_t)i) % (uint32_t)(hi - i)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        out[i] = (int32_t)perm[i];
    }
    long valid = c;
    if (strcmp(p->pad, "tail") == 0) valid = 1 + (long)(draw(seed, 0x636e74u, (uint64_t)r, 0) % (uint32_t)c);
    for (long i = valid; i < c; i++) out[i] = -1;
    if (strcmp(p->pad, "scattered") == 0) /* about a quarter of the slots after the first become -1 */
        for (long i = 1; i < c; i++)
            if (draw(seed, 0x73637472u, (uint64_t)r, (uint64_t)i) % 4 == 0) out[i] = -1;
    for (long i = c; i < p->topk; i++) out[i] = 0; /* past the count: never read */
}

int ug_sqa_build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ug_sqa_params p;
    ug_sqa_read_params(&c->params, &p);
    long nb = p.batch * p.max_blocks;
    long *lens = malloc((size_t)(p.batch + nb + p.ctx) * sizeof *lens), *table = lens + p.batch, *perm = table + nb;
    int32_t *rows = malloc((size_t)p.topk * sizeof *rows);
    if (!lens || !rows || build_blocks(&p, c->spec.seed, lens, table)) {
        free(lens);
        free(rows);
        return -1;
    }
    ug_tensor *tt = ug_case_input_mut(c, "block_table"), *lt = ug_case_input_mut(c, "seq_lens");
    ug_tensor *it = ug_case_input_mut(c, "topk_indices");
    for (long i = 0; i < nb; i++) ug_dtype_store(UG_DT_INT32, tt->data, (size_t)i, (double)table[i]);
    for (long b = 0; b < p.batch; b++) {
        ug_dtype_store(UG_DT_INT32, lt->data, (size_t)b, (double)lens[b]);
        for (long i = 0; i < p.sq; i++) {
            long r = b * p.sq + i;
            row_indices(&p, c->spec.seed, r, ug_gl_attn_mtp_end(lens[b], p.sq, i), perm, rows);
            for (long k = 0; k < p.topk; k++) ug_dtype_store(UG_DT_INT32, it->data, (size_t)(r * p.topk + k), rows[k]);
        }
    }
    free(lens);
    free(rows);
    return 0;
}

double ug_sqa_dequant(double code, double scale)
{
    /* code * scale is exact in double (8 by 24 significant bits); the spec rounds it to
     * fp32 (ug_dtype_round's FP32 rule is this cast), then to bf16: RNE on the binary32
     * bits, the same value as ug_dtype_round(UG_DT_BF16, .) for every float (inf on
     * overflow, subnormals on bf16's grid, NaN kept), a hundred times faster
     * (test_op_sparse_flash_attention_quant compares the two). */
    float f = (float)(code * scale);
    if (f != f) return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Decodes the live keys of query row r (count rule, -1 skipped) into kd; returns how many. */
static size_t gather_keys(const ug_case *c, const ug_sqa_params *p, size_t r, ug_sqa_decode_fn decode, double *kd)
{
    const ug_tensor *it = ug_case_input(c, "topk_indices"), *tt = ug_case_input(c, "block_table");
    const ug_tensor *lt = ug_case_input(c, "seq_lens");
    size_t b = r / (size_t)p->sq, n = 0, topk = (size_t)p->topk;
    long vis = ug_gl_attn_mtp_end((long)ug_tload(lt, b), p->sq, (long)(r % (size_t)p->sq));
    size_t cnt = (size_t)(vis < p->topk ? vis : p->topk);
    for (size_t s = 0; s < cnt; s++) {
        long pos = (long)ug_tload(it, r * topk + s);
        if (pos < 0) continue; /* -1: padding */
        size_t blk = (size_t)ug_tload(tt, b * (size_t)p->max_blocks + (size_t)(pos / p->bs));
        decode(c, p, blk * (size_t)p->bs + (size_t)(pos % p->bs), kd + n++ * (size_t)p->dk);
    }
    return n;
}

int ug_sqa_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel, ug_sqa_decode_fn decode)
{
    ug_sqa_params p;
    ug_sqa_read_params(&c->params, &p);
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    size_t pos = 0, have = (size_t)-1, n = 0, dk = (size_t)p.dk, lora = (size_t)p.lora, rope = (size_t)p.rope;
    size_t topk = (size_t)p.topk, ldkt;
    double *kd = malloc((topk + 1) * dk * sizeof *kd), *qd = kd + topk * dk;
    double *kt = ug_gl_kt_alloc(ar, dk, topk, &ldkt); /* the keys transposed: all scores at once */
    ug_num *s = malloc(2 * topk * sizeof *s);
    int rc = kd && s ? 0 : -1;
    while (!rc && pos < sel->n[0]) {
        size_t row = sel->idx[0][pos] / lora, r = row / (size_t)p.heads;
        if (have != r) { /* a query row's heads share its keys */
            n = gather_keys(c, &p, r, decode, kd);
            if (kt) ug_gl_keys_transpose(kd, dk, dk, n, kt, ldkt);
        }
        have = r;
        memcpy(qd, qn->values + row * lora, lora * sizeof *qd);
        memcpy(qd + lora, qr->values + row * rope, rope * sizeof *qd);
        size_t mark = ug_ar_mark(ar);
        rc = ug_gl_attn_emit_query_kt(ar, qd, kd, dk, kt, ldkt, dk, n, ug_c(ar, p.scale), kd, dk, lora, s, 0, sel, &pos,
                                      row);
        ug_ar_release(ar, mark);
    }
    free(kd);
    free(kt);
    free(s);
    return rc;
}

int ug_sqa_reference_golden(const ug_case *c, const ug_selection *sel, double **out, ug_sqa_decode_fn decode, char *err,
                            size_t errlen)
{
    if (!out[0]) return 0;
    ug_sqa_params p;
    ug_sqa_read_params(&c->params, &p);
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    size_t pos = 0, have = (size_t)-1, have_row = (size_t)-1, n = 0, dk = (size_t)p.dk, lora = (size_t)p.lora,
           rope = (size_t)p.rope;
    double *kd = malloc(((size_t)p.topk + 1) * dk * sizeof *kd), *qd = kd ? kd + (size_t)p.topk * dk : NULL;
    float *w = malloc(((size_t)p.topk + lora) * sizeof *w), *o = w ? w + p.topk : NULL;
    int ok = 0;
    if (!kd || !w) {
        free(kd), free(w);
        snprintf(err, errlen, "out of memory for the reference golden");
        return -1;
    }
    for (; pos < sel->n[0]; pos++) {
        size_t row = sel->idx[0][pos] / lora, r = row / (size_t)p.heads;
        if (have != r) n = gather_keys(c, &p, r, decode, kd); /* a query row's heads share its keys */
        have = r;
        if (have_row != row) {
            memcpy(qd, qn->values + row * lora, lora * sizeof *qd);
            memcpy(qd + lora, qr->values + row * rope, rope * sizeof *qd);
            ok = ug_golden_attn_row(qd, kd, dk, dk, kd, dk, lora, n, (float)p.scale, c->spec.dtype, w, o) == 0;
            have_row = row;
        }
        out[0][pos] = ok ? ug_dtype_round(c->out[0].dtype, o[sel->idx[0][pos] % lora]) : NAN; /* rounds: bf16 */
    }
    free(kd);
    free(w);
    return 0;
}

double ug_sqa_scratch(const ug_params *P, double extra)
{
    double topk = (double)ug_p_int(P, "topk"), dk = (double)ug_p_int(P, "dk"), b = (double)ug_p_int(P, "batch");
    double mb = (double)ug_p_int(P, "max_blocks"), ctx = (double)ug_p_int(P, "ctx");
    double heads = (double)ug_p_int(P, "heads");
    double builder = 8 * ((double)ug_p_int(P, "num_blocks") + b + b * mb + ctx) + 4 * topk;
    double oracle = 8 * (topk + 1) * dk + ug_gl_kt_scratch(dk, topk) + 2 * topk * UG_NUM_BYTES +
                    4 * (topk + 512); /* the keys, transposed, the scores; + the reference golden's */
    double kernel = 4 * (topk * dk + heads * (dk + 512)) + 4 * (8 * heads + 2 * 128 + heads * 512 + (dk + heads) * 128);
    return builder + oracle + kernel + extra;
}
