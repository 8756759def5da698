/* sparse_quant_rows.c — the shared sim kernel body of the two sparse int8-cache MLA
 * attentions (see sparse_quant_rows.h).
 *
 * Device model: one core per query row (b, i) walks slots 0..c-1 of its top-k list,
 * c = min(L_b - S_q + 1 + i, topk), skips -1 slots, maps each position through the block
 * table and decodes the cache slot into fp32 (codes times fp32 group scale, cast to bf16
 * as the cube reads bf16; rope bf16 widened exactly), packing the valid keys; then all
 * heads of the row go through the keys in 128-key tiles (ug_gl_attn_rows: one fp32 dot
 * over 576 dims, online softmax, P kept in fp32 for P·V, fp32 accumulation) and o is
 * rounded once to bf16.
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set;
 * the semantics leave the summation order free and let a device cast P to bf16 before P·V):
 * legal_tile16, the online softmax on 16-key tiles (every row past 16 keys rescaled);
 * legal_reversed, the gathered keys walked last to first (every sum and the running max in
 * reverse slot order); legal_p_bf16, each weight exp(s - m) cast to bf16 before P·V, the
 * sum l kept in fp32 (the reference kernel's bf16 P); legal_fn_ulps, every exp (weights and
 * rescale factors) UG_SIM_FN_ULPS fp32 ulps off libm's (ug_sim_fn_ulps). */
#include "kernels/sim/attention/sparse_quant_rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/attention/attn_vec.h"

#define SQK_TILE 128

float ug_sqk_dequant(float code, float scale)
{
    return ug_av_round_bf16(code * scale); /* rounds: fp32 product, then bf16 */
}

static int read_params(const ulpgym_call *call, ug_sqk *k, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    k->sq = ug_p_int(&p, "q_per_step"), k->topk = ug_p_int(&p, "topk");
    k->lora = ug_p_int(&p, "kv_lora"), k->rope = ug_p_int(&p, "rope"), k->dk = k->lora + k->rope;
    k->groups = ug_p_int(&p, "groups");
    k->scale = (float)ug_p_num(&p, "scale"); /* exact: an fp32 value */
    ug_params_free(&p);
    return 0;
}

int ug_sqk_open(const ulpgym_call *call, const char *op, const char *cache_names, ug_sqk *k, char *err, size_t errlen)
{
    k->op = op;
    if (read_params(call, k, err, errlen)) return -2;
    const ulpgym_tensor **slots[] = {&k->qn, &k->qr, &k->idx, &k->table, &k->lens, &k->o};
    if (ug_sim_bind(call, "q_nope q_rope topk_indices block_table seq_lens o", slots, err, errlen)) return -2;
    const ulpgym_tensor **cs[] = {&k->cache[0], &k->cache[1], &k->cache[2]};
    if (ug_sim_bind(call, cache_names, cs, err, errlen)) return -2;
    k->batch = k->lens->shape[0], k->heads = k->qn->shape[1], k->maxb = k->table->shape[1];
    k->nblocks = k->cache[0]->shape[0], k->bs = k->cache[0]->shape[1];
    long rows = k->batch * k->sq;
    if (k->qn->shape[0] != rows || k->qn->shape[2] != k->lora || k->qr->shape[0] != rows ||
        k->qr->shape[1] != k->heads || k->qr->shape[2] != k->rope || k->o->shape[0] != rows ||
        k->o->shape[1] != k->heads || k->o->shape[2] != k->lora || k->idx->shape[0] != rows ||
        k->idx->shape[1] != k->topk || k->table->shape[0] != k->batch || k->idx->dtype != ULPGYM_INT32 ||
        k->table->dtype != ULPGYM_INT32 || k->lens->dtype != ULPGYM_INT32) {
        snprintf(err, errlen,
                 "%s: tensor shapes disagree (q_nope [B*S_q,N,512], q_rope [B*S_q,N,64], "
                 "topk_indices [B*S_q,topk] int32, block_table [B,MB] int32, o [B*S_q,N,512])",
                 op);
        return -2;
    }
    return 0;
}

/* Decodes the valid keys of query row r into kf; returns how many, or -2 (err set). */
static long gather_row(const ug_sqk *k, long r, float *kf, char *err, size_t errlen)
{
    const int32_t *idx = (const int32_t *)k->idx->data + r * k->topk, *table = k->table->data;
    long b = r / k->sq, len = ((const int32_t *)k->lens->data)[b];
    if (len < k->sq || len > k->maxb * k->bs) {
        snprintf(err, errlen, "%s: seq_lens[%ld] = %ld outside %ld..%ld", k->op, b, len, k->sq, k->maxb * k->bs);
        return -2;
    }
    long vis = ug_gl_mtp_end(len, k->sq, r % k->sq);
    if ((k->bug == UG_VAR_MUT_MTP_LEN_OFF_BY_ONE) && k->sq > 1 && vis < len) vis++; /* bug: one position too many */
    long cnt = vis < k->topk ? vis : k->topk, n = 0;
    for (long s = 0; s < cnt; s++) {
        long pos = idx[s];
        if (pos == -1 && (k->bug == UG_VAR_MUT_PAD_AS_ZERO)) pos = 0; /* bug: padding read as position 0 */
        if (pos == -1) continue;
        if (pos < 0 || pos >= vis) {
            snprintf(err, errlen, "%s: topk_indices[%ld][%ld] = %ld outside -1..%ld", k->op, r, s, pos, vis - 1);
            return -2;
        }
        long blk = table[b * k->maxb + pos / k->bs];
        if (blk < 0 || blk >= k->nblocks) {
            snprintf(err, errlen, "%s: block_table[%ld][%ld] = %ld outside 0..%ld", k->op, b, pos / k->bs, blk,
                     k->nblocks - 1);
            return -2;
        }
        k->decode(k, (size_t)(blk * k->bs + pos % k->bs), kf + (size_t)(n++ * k->dk));
    }
    return n;
}

/* Loads the heads of query row r as [q_nope ‖ q_rope] rows of dk. */
static void load_q(const ug_sqk *k, long r, float *qf)
{
    for (long h = 0; h < k->heads; h++) {
        size_t row = (size_t)(r * k->heads + h);
        ug_sim_load(k->qn, row * (size_t)k->lora, (size_t)k->lora, qf + (size_t)(h * k->dk));
        ug_sim_load(k->qr, row * (size_t)k->rope, (size_t)k->rope, qf + (size_t)(h * k->dk + k->lora));
    }
}

int ug_sqk_run(const ug_sqk *k, char *err, size_t errlen)
{
    size_t dk = (size_t)k->dk, dv = (size_t)k->lora, nh = (size_t)k->heads;
    size_t tile = k->bug == UG_VAR_LEGAL_TILE16 ? 16 : SQK_TILE; /* legal: 16-key tiles */
    float *kf = malloc(((size_t)k->topk * dk + nh * (dk + dv)) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH(tile, dk, dv, nh) * sizeof *scratch);
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *qf = kf + (size_t)k->topk * dk, *of = qf + nh * dk;
    float scale = k->bug == UG_VAR_MUT_SCALE_512 ? (float)(1.0 / sqrt((double)dv)) : k->scale; /* bug: 512^-1/2 */
    ug_gl_attn_cfg cfg = {dk, dv, dk, dk, tile, scale, k->bug == UG_VAR_MUT_LOCAL_MAX ? UG_GL_ATTN_BUG_LOCAL_MAX : 0};
    if (k->bug == UG_VAR_MUT_RUNNING_MAX_ZERO) cfg.flags |= UG_GL_ATTN_BUG_MAX_ZERO; /* bug: running max from 0 */
    if (k->bug == UG_VAR_LEGAL_P_BF16) cfg.flags |= UG_GL_ATTN_P_BF16;   /* legal: rounds: bf16 P before P·V */
    if (k->bug == UG_VAR_LEGAL_FN_ULPS) cfg.flags |= UG_GL_ATTN_FN_ULPS; /* legal: each exp 3 fp32 ulps off */
    int rc = 0;
    for (long r = 0; r < k->batch * k->sq && !rc; r++) {
        long n = gather_row(k, r, kf, err, errlen);
        if (n < 0) {
            rc = -2;
            break;
        }
        if (k->bug == UG_VAR_LEGAL_REVERSED)
            ug_sim_reverse_rows(kf, (size_t)n, dk); /* legal: the same keys, last to first */
        load_q(k, r, qf);
        ug_gl_attn_rows(&cfg, qf, dk, nh, kf, kf, (size_t)n, of, dv, scratch); /* V = the dequantised part */
        ug_sim_store(k->o, (size_t)r * nh * dv, nh * dv, of);                  /* rounds: bf16 output */
    }
    free(kf);
    free(scratch);
    return rc;
}
