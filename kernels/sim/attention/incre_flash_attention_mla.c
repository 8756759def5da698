/* incre_flash_attention_mla.c — sim kernel and planted-bug mutants for
 * incre_flash_attention_mla (MLA decode over a paged cache):
 *     s_j = (q_nope·c_kv[j] + q_rope·k_rope[j]) · (kv_lora + rope)^-1/2,   o = softmax(s) · c_kv
 * where key j of sequence b lives in block block_table[b][j / block_size], slot
 * j % block_size, and query head h reads kv head h / (Hq/n_kv). S_q = q_per_step query
 * tokens per sequence (rows b*S_q + i of q and o); row i sees the first L - S_q + 1 + i
 * keys (multi-token prediction; S_q = 1 is plain decode).
 *
 * Device model: one core per (sequence, kv head) gathers the sequence's live cache rows
 * through the block table (the last block only up to seq_lens[b]) into one fp32 row of
 * kv_lora + rope (576 at production) per key (c_kv ‖ k_rope, bf16 widened exactly), then serves
 * the group's query heads in tiles of 128 keys: one fp32 dot over all those dims, the scale
 * (kv_lora + rope)^-1/2 held in fp32, online softmax, P kept in fp32
 * for P·V, fp32 accumulation, o rounded once to bf16. P stays fp32 because a bf16 P
 * (up to 2^-9 relative per weight) is more than the op's pypto 1e-4 / 2^-7 leaves on flat
 * rows: with it, 75 of the 90 plan cases fail against the exact oracle.
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set):
 * the online softmax on 16-key tiles; two passes (one tile holding all the row's keys: its
 * max first, then one pass of exp, sum and P·V, nothing rescaled); the row's keys walked
 * last to first (every sum and the running max in reverse key order). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define MLA_TILE 128

typedef struct {
    const ulpgym_tensor *qn, *qr, *ckv, *kr, *table, *lens, *o;
    long b, sq, hq, nkv, nblocks, bs, maxb;
    long lora, rope, dk; /* params kv_lora (production 512), rope (64); dk = their sum */
} mla_view;

static int dims_are(const ulpgym_tensor *t, int n, const int64_t *want)
{
    for (int i = 0; i < n; i++)
        if (t->shape[i] != want[i]) return 0;
    return 1;
}

/* Finds the tensors and checks that their shapes agree. */
static int mla_open(const ulpgym_call *call, mla_view *m, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_incre_flash_attention_mla_params *params = UG_P(incre_flash_attention_mla, &p);
    m->lora = params->kv_lora, m->rope = params->rope, m->dk = m->lora + m->rope;
    m->sq = params->q_per_step;
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&m->qn, &m->qr, &m->ckv, &m->kr, &m->table, &m->lens, &m->o};
    if (ug_sim_bind(call, "q_nope q_rope c_kv k_rope block_table seq_lens o", slots, err, errlen)) return -2;
    m->b = m->lens->shape[0], m->hq = m->qn->shape[1];
    m->nblocks = m->ckv->shape[0], m->bs = m->ckv->shape[1], m->nkv = m->ckv->shape[2];
    m->maxb = m->table->shape[1];
    int64_t qn[3] = {m->b * m->sq, m->hq, m->lora}, qr[3] = {m->b * m->sq, m->hq, m->rope};
    int64_t ck[4] = {m->nblocks, m->bs, m->nkv, m->lora}, kr[4] = {m->nblocks, m->bs, m->nkv, m->rope};
    if (!dims_are(m->qn, 3, qn) || !dims_are(m->qr, 3, qr) || !dims_are(m->ckv, 4, ck) || !dims_are(m->kr, 4, kr) ||
        !dims_are(m->o, 3, qn) || m->table->shape[0] != m->b || m->lens->shape[0] != m->b || m->nkv < 1 ||
        m->hq % m->nkv || m->table->dtype != ULPGYM_INT32 || m->lens->dtype != ULPGYM_INT32) {
        snprintf(err, errlen,
                 "incre_flash_attention_mla: tensor shapes disagree (q_nope [B*S_q,Hq,kv_lora], "
                 "q_rope [B*S_q,Hq,rope], c_kv [NB,BS,n_kv,kv_lora], k_rope [NB,BS,n_kv,rope], "
                 "block_table [B,MB], Hq %% n_kv == 0)");
        return -2;
    }
    return 0;
}

/* Gathers the n live keys of (b, kv head g) into kf (n rows of kv_lora + rope); -2 on a bad table entry. */
static int mla_gather(const mla_view *m, long b, long g, long n, float *kf, char *err, size_t errlen)
{
    const int32_t *table = m->table->data;
    for (long j = 0; j < n; j++) {
        long blk = table[b * m->maxb + j / m->bs];
        if (blk < 0 || blk >= m->nblocks) {
            snprintf(err, errlen, "incre_flash_attention_mla: block_table[%ld][%ld] = %ld outside 0..%ld", b, j / m->bs,
                     blk, m->nblocks - 1);
            return -2;
        }
        size_t slot = (size_t)((blk * m->bs + j % m->bs) * m->nkv + g);
        ug_sim_load(m->ckv, slot * m->lora, m->lora, kf + j * m->dk);
        ug_sim_load(m->kr, slot * m->rope, m->rope, kf + j * m->dk + m->lora);
    }
    return 0;
}

/* Keys per tile: MLA_TILE, or a legal variant's (two passes: every cache slot, cap keys). */
static size_t mla_tile(long cap, ug_variant_code bug)
{
    return bug == UG_VAR_LEGAL_TILE16 ? 16 : bug == UG_VAR_LEGAL_TWO_PASS ? (size_t)(cap > 0 ? cap : 1) : MLA_TILE;
}

/* Serves the query heads of kv head g of sequence b, every query row of the step, from
 * its n gathered keys: row i reads the first ug_gl_mtp_end(n, S_q, i) of them. The heads
 * of one query row share those keys and are computed together (ug_gl_attn_rows).
 * rk: legal_reversed's copy of a row's keys, last to first. */
static void mla_heads(const mla_view *m, const ug_gl_attn_cfg *cfg, long b, long g, long n, const float *kf, float *qf,
                      float *of, float *scratch, ug_variant_code bug, float *rk)
{
    long group = m->hq / m->nkv;
    for (long i = 0; i < m->sq; i++) {
        size_t row0 = (size_t)((b * m->sq + i) * m->hq + g * group);
        for (long r = 0; r < group; r++) {
            ug_sim_load(m->qn, (row0 + (size_t)r) * m->lora, m->lora, qf + (size_t)r * m->dk);
            ug_sim_load(m->qr, (row0 + (size_t)r) * m->rope, m->rope, qf + (size_t)r * m->dk + m->lora);
        }
        long keys = bug == UG_VAR_MUT_MTP_NO_OFFSET ? n : ug_gl_mtp_end(n, m->sq, i); /* bug: no causal offset */
        if (keys < 0) keys = 0; /* only mut_drop_partial_block cuts n below S_q */
        const float *kr = kf;
        if (bug == UG_VAR_LEGAL_REVERSED) { /* legal: the same keys, last to first */
            for (long j = 0; j < keys; j++) memcpy(rk + j * m->dk, kf + (keys - 1 - j) * m->dk, m->dk * sizeof *rk);
            kr = rk;
        }
        ug_gl_attn_rows(cfg, qf, m->dk, (size_t)group, kr, kr, (size_t)keys, of, m->lora, scratch); /* V = c_kv part */
        ug_sim_store(m->o, row0 * m->lora, (size_t)group * m->lora, of); /* rounds: bf16 output */
    }
}

static int mla_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    mla_view m;
    if (mla_open(call, &m, err, errlen)) return -2;
    const int32_t *lens = m.lens->data;
    long cap = m.maxb * m.bs;
    size_t group = (size_t)(m.hq / m.nkv);
    size_t nrev = bug == UG_VAR_LEGAL_REVERSED ? (size_t)cap * m.dk : 0; /* legal_reversed's reversed key rows */
    float *kf = malloc(((size_t)cap * m.dk + group * (m.dk + m.lora) + nrev) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH(mla_tile(cap, bug), m.dk, m.lora, group) * sizeof *scratch);
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *qf = kf + (size_t)cap * m.dk, *of = qf + group * m.dk, *rk = of + group * m.lora;
    /* bugs: mut_scale_512 leaves out the rope dims, mut_scale_576 hard-codes the production dims */
    double dk = bug == UG_VAR_MUT_SCALE_512 ? m.lora : bug == UG_VAR_MUT_SCALE_576 ? 576 : m.dk;
    ug_gl_attn_cfg cfg = {m.dk, m.lora, m.dk, m.dk, mla_tile(cap, bug), (float)(1.0 / sqrt(dk)), 0};
    int rc = 0;
    for (long b = 0; b < m.b && !rc; b++) {
        long len = lens[b];
        if (len < m.sq || len > cap) {
            snprintf(err, errlen, "incre_flash_attention_mla: seq_lens[%ld] = %ld outside %ld..%ld (q_per_step..slots)",
                     b, len, m.sq, cap);
            rc = -2;
            break;
        }
        if (bug == UG_VAR_MUT_DROP_PARTIAL_BLOCK) len -= len % m.bs; /* bug: only whole blocks are read */
        for (long g = 0; g < m.nkv && !rc; g++) {
            rc = mla_gather(&m, b, g, len, kf, err, errlen);
            if (!rc) mla_heads(&m, &cfg, b, g, len, kf, qf, of, scratch, bug, rk);
        }
    }
    free(kf);
    free(scratch);
    return rc;
}

const ug_kernel_fn ug_sim_incre_flash_attention_mla = mla_kernel;
