/* sparse_flash_attention.c — sim kernel and planted-bug mutants for sparse_flash_attention
 * (DeepSeek-style sparse MLA attention over given top-k indices, TND layout):
 *     o[t,n] = softmax_i( scale · q[t,n]·kv[idx[t,i]] ) · kv[idx[t,i]][:512]   over idx[t,i] != -1
 * K rows are the 576-wide latent+rope rows, V rows their first 512 dims.
 *
 * Device model: one core per token gathers the token's selected kv rows (bf16, widened
 * exactly to fp32; -1 slots skipped, so the valid keys are packed) once for all heads,
 * then walks them in blocks of 64 keys: one fp32 dot over 576 dims, online softmax,
 * P kept in fp32 for P·V (see incre_flash_attention_mla.c: a bf16 P does not fit the
 * 1e-4 / 0.005 tolerance against the exact oracle), fp32 accumulation, o rounded once to
 * bf16. A token with no valid index gives zeros. The online softmax's final running max and
 * sum of each row are also written, where the caller passes them, as the optional fp32
 * softmax_max and softmax_sum (the reference test's).
 *
 * Several sequences (actual_q_len / actual_kv_len passed, prefix sums): the core walks the
 * sequences as the reference kernel does, token t = Q[b-1] + i of sequence b reads only its
 * first e = min(w, topk) slots, w = kv_b - q_b + 1 + i its causal window, and refuses an
 * index outside -1 and the window's rows K[b-1]..K[b-1]+w-1.
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set):
 * the online softmax on 16-key blocks; two passes (one block holding all the token's keys:
 * the row max first, then one pass of exp, sum and P·V, nothing rescaled); the gathered keys
 * walked last to first (every sum and the running max in reverse slot order). */
#include <stdio.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_tiles.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define SFA_BLOCK 64

typedef struct {
    const ulpgym_tensor *q, *kv, *idx, *o, *mx, *sm; /* mx, sm: the optional softmax_max, softmax_sum (or NULL) */
    const ulpgym_tensor *aq, *ak; /* actual_q_len, actual_kv_len (prefix sums), or NULL: one sequence */
    long t, n, s, topk;
    long dk, dv; /* params kv_lora + rope (576) and kv_lora (512) */
    float scale; /* the fp32 attribute */
} sfa_view;

/* Token t's window: kv rows off..off+w-1 its read slots may name, e the slots it reads. */
typedef struct {
    long off, w, e;
} sfa_win;

/* Finds the tensors and checks their shapes: q [T,N,576], kv [S,576], indices [T,topk], o [T,N,512]. */
static int sfa_open(const ulpgym_call *call, sfa_view *v, char *err, size_t errlen)
{
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_sparse_flash_attention_params *params = UG_P(sparse_flash_attention, &p);
    v->scale = (float)params->scale; /* exact: an fp32 value */
    v->dv = params->kv_lora, v->dk = v->dv + params->rope;
    ug_params_free(&p);
    const ulpgym_tensor **slots[] = {&v->q, &v->kv, &v->idx, &v->o, &v->mx, &v->sm, &v->aq, &v->ak};
    if (ug_sim_bind(call, "q kv indices o softmax_max? softmax_sum? actual_q_len? actual_kv_len?", slots, err, errlen))
        return -2;
    v->t = v->q->shape[0], v->n = v->q->shape[1], v->s = v->kv->shape[0], v->topk = v->idx->shape[1];
    if (v->q->shape[2] != v->dk || v->kv->shape[1] != v->dk || v->idx->shape[0] != v->t ||
        v->idx->dtype != ULPGYM_INT32 || v->o->shape[0] != v->t || v->o->shape[1] != v->n || v->o->shape[2] != v->dv) {
        snprintf(err, errlen,
                 "sparse_flash_attention: tensor shapes disagree (q [T,N,576], kv [S,576], "
                 "indices [T,topk] int32, o [T,N,512])");
        return -2;
    }
    if ((v->aq != NULL) != (v->ak != NULL) ||
        (v->aq && (v->aq->ndim != 1 || v->ak->ndim != 1 || v->aq->shape[0] != v->ak->shape[0] ||
                   v->aq->dtype != ULPGYM_INT32 || v->ak->dtype != ULPGYM_INT32))) {
        snprintf(err, errlen, "sparse_flash_attention: actual_q_len and actual_kv_len go together, int32 [batch] each");
        return -2;
    }
    return 0;
}

/* Token t's window from the prefix sums (the whole kv, every slot, without them); -2 when the
 * sums disagree with the tensors or leave t no window. */
static int sfa_window(const sfa_view *v, long t, sfa_win *w, char *err, size_t errlen)
{
    *w = (sfa_win){0, v->s, v->topk};
    if (!v->aq) return 0;
    const int32_t *aq = (const int32_t *)v->aq->data, *ak = (const int32_t *)v->ak->data;
    long b = 0, nb = v->aq->shape[0];
    while (b < nb && t >= aq[b]) b++;
    long q0 = b ? aq[b - 1] : 0, k0 = b ? ak[b - 1] : 0;
    if (b == nb || ak[b] > v->s || ak[b] <= k0) {
        snprintf(err, errlen,
                 "sparse_flash_attention: actual_q_len / actual_kv_len give token %ld no sequence "
                 "inside q [%ld] and kv [%ld]",
                 t, v->t, v->s);
        return -2;
    }
    w->off = k0, w->w = (ak[b] - k0) - (aq[b] - q0) + 1 + (t - q0);
    if (w->w < 1) w->w = 0; /* a token before its sequence's first row reads nothing */
    w->e = w->w < v->topk ? w->w : v->topk;
    return 0;
}

/* Gathers the rows token t's read slots name into kf; returns how many, or -2 on a bad index. */
static long sfa_gather(const sfa_view *v, long t, sfa_win win, ug_variant_code bug, float *kf, char *err, size_t errlen)
{
    const int32_t *idx = (const int32_t *)v->idx->data + t * v->topk;
    long n = 0;
    if (bug == UG_VAR_MUT_SEQ_KV_OFFSET && win.w <= v->topk && v->aq) { /* bug: the short window read from kv row 0, */
        for (n = 0; n < win.w; n++)                                     /* not from its sequence's first row */
            ug_sim_load(v->kv, (size_t)(n * v->dk), (size_t)v->dk, kf + (size_t)(n * v->dk));
        return n;
    }
    for (long i = 0; i < win.e; i++) {
        long j = idx[i];
        int pad_bug = j == -1 && bug == UG_VAR_MUT_PAD_AS_ZERO;
        if (pad_bug) j = 0; /* bug: padding read as row 0 (even outside the token's window) */
        if (j == -1) continue;
        if (!pad_bug && bug != UG_VAR_MUT_ALL_SLOTS && (j < win.off || j >= win.off + win.w)) {
            snprintf(err, errlen, "sparse_flash_attention: indices[%ld][%ld] = %ld outside -1 and rows %ld..%ld", t, i,
                     j, win.off, win.off + win.w - 1);
            return -2;
        }
        ug_sim_load(v->kv, (size_t)(j * v->dk), (size_t)v->dk, kf + (size_t)(n++ * v->dk));
    }
    return n;
}

/* Stores token t's row max and sum (mf, lf: one per head) where the caller passed the
 * optional outputs; the planted bugs of those two outputs act here. */
static void sfa_store_max_sum(const sfa_view *v, long t, ug_variant_code bug, float *mf, float *lf)
{
    for (long h = 0; h < v->n; h++) {
        if (bug == UG_VAR_MUT_MAX_UNSCALED) mf[h] /= v->scale; /* bug: the max of q·k before the scale (rounds: fp32) */
        if (bug == UG_VAR_MUT_SUM_RECIP)
            lf[h] = lf[h] > 0.0f ? 1.0f / lf[h] : 0.0f; /* bug: the reciprocal o is scaled by */
    }
    if (v->mx) ug_sim_store(v->mx, (size_t)(t * v->n), (size_t)v->n, mf);
    if (v->sm) ug_sim_store(v->sm, (size_t)(t * v->n), (size_t)v->n, lf);
}

/* Keys per block: SFA_BLOCK, or a legal variant's (two passes: every slot, topk keys). */
static size_t sfa_block(const sfa_view *v, ug_variant_code bug)
{
    return bug == UG_VAR_LEGAL_TILE16     ? 16
           : bug == UG_VAR_LEGAL_TWO_PASS ? (size_t)(v->topk > 0 ? v->topk : 1)
                                          : SFA_BLOCK;
}

static int sfa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    sfa_view v;
    if (sfa_open(call, &v, err, errlen)) return -2;
    size_t dk = (size_t)v.dk, dv = (size_t)v.dv;
    size_t nh = (size_t)v.n;
    float *kf = malloc(((size_t)v.topk * dk + nh * (dk + dv + 2)) * sizeof *kf);
    float *scratch = malloc(UG_GL_ATTN_ROWS_SCRATCH(sfa_block(&v, bug), dk, dv, nh) * sizeof *scratch);
    if (!kf || !scratch) {
        free(kf);
        free(scratch);
        return -1;
    }
    float *qf = kf + (size_t)v.topk * dk, *of = qf + nh * dk, *mf = of + nh * dv, *lf = mf + nh;
    ug_gl_attn_cfg cfg = {dk, dv, dk, dk, sfa_block(&v, bug), v.scale, 0, mf, lf};
    if (bug == UG_VAR_MUT_LOCAL_MAX) cfg.flags |= UG_GL_ATTN_BUG_LOCAL_MAX;
    if (bug == UG_VAR_MUT_SCALE_AFTER_SOFTMAX) cfg.flags |= UG_GL_ATTN_BUG_SCALE_AFTER;
    int rc = 0;
    for (long t = 0; t < v.t && !rc; t++) {
        sfa_win win;
        long n = sfa_window(&v, t, &win, err, errlen) ? -2 : 0;
        if (bug == UG_VAR_MUT_ALL_SLOTS) win.e = v.topk; /* bug: every slot read, the count rule ignored */
        if (!n) n = sfa_gather(&v, t, win, bug, kf, err, errlen);
        if (n < 0) {
            rc = -2;
            break;
        }
        if (bug == UG_VAR_LEGAL_REVERSED)
            ug_sim_reverse_rows(kf, (size_t)n, dk);         /* legal: the same keys, last to first */
        ug_sim_load(v.q, (size_t)t * nh * dk, nh * dk, qf); /* the token's heads share its selected rows */
        ug_gl_attn_rows(&cfg, qf, dk, nh, kf, kf, (size_t)n, of, dv, scratch); /* V = first 512 dims of each row */
        ug_sim_store(v.o, (size_t)t * nh * dv, nh * dv, of);                   /* rounds: bf16 output */
        sfa_store_max_sum(&v, t, bug, mf, lf);
    }
    free(kf);
    free(scratch);
    return rc;
}

const ug_kernel_fn ug_sim_sparse_flash_attention = sfa_kernel;
