/* page_attention.c — sim kernel and planted-bug mutants for page_attention, paged decode
 * attention with grouped-query heads and S_q = q_per_step query tokens per sequence:
 *     o[b*S_q+i,h,:] = softmax_t(scale * q[b*S_q+i,h,:].K_b[t, h/G, :]) . V_b[t, h/G, :],
 *     t < context_lens[b] - S_q + 1 + i  (MTP row i sees the tokens up to itself; S_q = 1: all)
 * where token t of sequence b lives in cache block block_tables[b, t / block_size] at slot
 * t % block_size, and G = Hq / Hkv query heads share one kv head.
 *
 * Device model: one (sequence, kv head) per core; the G query heads of the group are the
 * rows of a small tile; the kernel walks the sequence's blocks in order (one block = one
 * key tile, the last one partial), with fp32 scores times the fp32 scale, an online
 * softmax (running max and sum in fp32, the accumulator rescaled by exp(m_old - m_new)),
 * and P cast to the input dtype for the P.V matmul (fp32 accumulation); o = acc * (1/l)
 * is rounded once to the dtype. The block table's row stride is its second dimension.
 * Special values as the op's semantics state: the row max propagates NaN, a -inf score
 * weighs 0 and is left out of P.V (NaN/inf in its V never leaks in), and a row with no
 * weighted token gives o = 0. */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"

typedef enum { MUT_NONE, MUT_TABLE_STRIDE, MUT_FULL_LAST_BLOCK, MUT_KV_HEAD_MAP, MUT_MTP_NO_OFFSET } pa_bug;

typedef struct {
    long hq, hkv, dim, bs, table_stride;
    float scale;
    int dt;
    const float *kc, *vc;
    pa_bug bug;
} pa_ctx;

/* One query row (head h, values qr) over a sequence's blocks: writes the D outputs. */
static void pa_row(const pa_ctx *x, const float *qr, const float *table, long ctx, long g, float *acc, float *s,
                   float *out)
{
    size_t D = (size_t)x->dim;
    float m = -INFINITY, l = 0.0f;
    for (size_t d = 0; d < D; d++) acc[d] = 0.0f;
    long nblocks = (ctx + x->bs - 1) / x->bs;
    for (long i = 0; i < nblocks; i++) {
        long phys = (long)table[i], n = ctx - i * x->bs < x->bs ? ctx - i * x->bs : x->bs;
        if (x->bug == MUT_FULL_LAST_BLOCK) n = x->bs; /* bug: the partial last block read as full */
        const float *kb = x->kc + ((size_t)phys * (size_t)x->bs * (size_t)x->hkv + (size_t)g) * D;
        const float *vb = x->vc + ((size_t)phys * (size_t)x->bs * (size_t)x->hkv + (size_t)g) * D;
        size_t slot = (size_t)x->hkv * D; /* distance between slots of one kv head */
        float tm = -INFINITY, *pr = s + x->bs; /* s: scores, pr: rounded P */
        for (long c = 0; c < n; c++) {
            float dot = 0.0f;
            for (size_t d = 0; d < D; d++) dot += qr[d] * kb[(size_t)c * slot + d]; /* rounds: fp32 acc */
            s[c] = dot * x->scale; /* rounds: fp32 */
            tm = isnan(tm) || isnan(s[c]) ? NAN : fmaxf(tm, s[c]); /* NaN propagates */
        }
        float m_new = isnan(m) || isnan(tm) ? NAN : fmaxf(m, tm);
        if (m_new == -INFINITY) continue; /* no weighted token yet */
        float alpha = m == -INFINITY ? 0.0f : expf(m - m_new); /* rounds: fp32 */
        float ts = 0.0f;
        for (long c = 0; c < n; c++) {
            float p = s[c] == -INFINITY ? 0.0f : expf(s[c] - m_new); /* rounds: fp32 */
            ts += p; /* rounds: fp32 */
            pr[c] = ug_sim_round_to(x->dt, p); /* rounds: P cast to the input dtype for P.V */
        }
        l = l * alpha + ts; /* rounds: fp32 */
        for (size_t d = 0; d < D; d++) {
            float pv = 0.0f;
            for (long c = 0; c < n; c++)
                if (s[c] != -INFINITY) pv += pr[c] * vb[(size_t)c * slot + d]; /* rounds: fp32 acc */
            acc[d] = acc[d] * alpha + pv; /* rounds: fp32 */
        }
        m = m_new;
    }
    float inv = l == 0.0f ? 0.0f : 1.0f / l; /* rounds: fp32 reciprocal */
    for (size_t d = 0; d < D; d++) out[d] = acc[d] * inv; /* rounds: fp32 */
}

static int pa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *q, *kc, *vc, *bt, *cl, *o, **slots[] = {&q, &kc, &vc, &bt, &cl, &o};
    if (ug_sim_bind(call, "q key_cache value_cache block_tables context_lens o", slots, err, errlen)) return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    pa_ctx x = {.hq = q->shape[1],
                .dim = q->shape[2],
                .bs = kc->shape[1],
                .hkv = kc->shape[2],
                .table_stride = bt->shape[1],
                .dt = q->dtype,
                .bug = bug};
    double scale = ug_p_num(&p, "scale"); /* exact: an fp32 value; 0 is the 1/sqrt(D) sentinel */
    x.scale = scale == 0.0 ? (float)(1.0 / sqrt((double)x.dim)) : (float)scale; /* rounds: fp32 */
    long sq = ug_p_int(&p, "q_per_step");
    ug_params_free(&p);
    size_t B = (size_t)cl->shape[0], D = (size_t)x.dim, nq = (size_t)q->shape[0] * (size_t)x.hq * D;
    size_t ncache = (size_t)kc->shape[0] * (size_t)x.bs * (size_t)x.hkv * D, ntab = B * (size_t)x.table_stride;
    float *buf = malloc((2 * nq + 2 * ncache + ntab + B + D + 2 * (size_t)x.bs) * sizeof *buf);
    if (!buf) return -1;
    float *qf = buf, *of = qf + nq, *kf = of + nq, *vf = kf + ncache, *tab = vf + ncache, *ctx = tab + ntab;
    float *acc = ctx + B, *s = acc + D;
    ug_sim_load(q, 0, nq, qf);
    ug_sim_load(kc, 0, ncache, kf);
    ug_sim_load(vc, 0, ncache, vf);
    ug_sim_load(bt, 0, ntab, tab);
    ug_sim_load(cl, 0, B, ctx);
    x.kc = kf, x.vc = vf;
    long stride = x.table_stride, maxctx = 0;
    for (size_t b = 0; b < B; b++) maxctx = (long)ctx[b] > maxctx ? (long)ctx[b] : maxctx;
    if (bug == MUT_TABLE_STRIDE) stride = maxctx / x.bs; /* bug: floor(max_ctx / block_size), not the ceiling */
    long group = x.hq / x.hkv;
    for (size_t b = 0; b < B; b++)
        for (long i = 0; i < sq; i++) {
            long len = ug_gl_mtp_end((long)ctx[b], sq, i); /* MTP row i: the tokens up to itself */
            if (bug == MUT_MTP_NO_OFFSET) len = (long)ctx[b]; /* bug: no causal offset, the whole context */
            for (long h = 0; h < x.hq; h++) {
                long g = bug == MUT_KV_HEAD_MAP ? h % x.hkv : h / group; /* bug: heads interleaved over kv heads */
                size_t row = ((b * (size_t)sq + (size_t)i) * (size_t)x.hq + (size_t)h) * D;
                pa_row(&x, qf + row, tab + b * (size_t)stride, len, g, acc, s, of + row);
            }
        }
    ug_sim_store(o, 0, nq, of);
    free(buf);
    return 0;
}

const ug_kernel_variant ug_variants_page_attention[] = {
    {"sim", "paged decode, one block per key tile, fp32 online softmax, P cast to the input dtype for P.V", pa_kernel,
     0, MUT_NONE},
    {"mut_table_stride",
     "block-table row stride floor(max_ctx/block_size) instead of its width: rows shift when max_ctx % block_size != 0",
     pa_kernel, 0, MUT_TABLE_STRIDE},
    {"mut_full_last_block", "the partial last block read as full: stale cache slots past the context join the softmax",
     pa_kernel, 0, MUT_FULL_LAST_BLOCK},
    {"mut_kv_head_map", "query head h reads kv head h % Hkv instead of h / (Hq/Hkv)", pa_kernel, 0, MUT_KV_HEAD_MAP},
    {"mut_mtp_no_offset",
     "multi-token step without the causal offset: every query row sees the whole context (shows when q_per_step > 1)",
     pa_kernel, 0, MUT_MTP_NO_OFFSET},
    {NULL, NULL, NULL},
};
