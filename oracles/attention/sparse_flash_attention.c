/* sparse_flash_attention.c — param checks, input builder and exact oracle of
 * sparse_flash_attention (sparse MLA attention over given top-k indices, TND layout):
 *
 *   o[t,n] = sum_i softmax_i(scale · q[t,n]·kv[j_i]) · kv[j_i][:512],  j_i = indices[t,i] != -1
 *   softmax_max[t,n] = m = max_i s_i,  softmax_sum[t,n] = sum_i exp(s_i - m),  s_i = scale · q[t,n]·kv[j_i]
 *       (optional outputs: the reference test's softmax_max / softmax_sum, natural exp, scaled scores)
 *
 * as in DeepSeek-V3.2: one latent kv head shared by all N query heads, K rows of 576
 * (params kv_lora 512 + rope 64, fixed), V rows their first 512 dims. scale is an fp32 attribute
 * (default 576^-1/2), rounded to fp32 here as the kernel holds it; the spec rounds
 * nowhere else but at the bf16 output. The index tensor is structural: each token's valid
 * indices are distinct rows drawn from the seed; "pad" puts -1 padding at the end of a
 * token's list ("tail", the layout a top-k selector leaves for short contexts) or at
 * random slots ("scattered"), and every token keeps at least one valid index. A token
 * with no valid index would give zeros (the kernel and this oracle both define it so).
 * params.seqlens packs several sequences (the reference's TND layout): a token reads only
 * its first e = min(w, topk) slots, w its causal window in its own sequence's kv rows, and
 * its indices are absolute rows of that window (sfa_window); the default "0" is one
 * sequence whose window is all kv_len rows and e = topk, the op as it was before seqlens.
 * Primary standard: pypto, with docs/STANDARDS.md's sparse-attention 1e-4 / 0.005 / 0.005; the
 * optional max and sum carry the reference test's 1e-3 / 1e-2. Their certified bound is the
 * DEVICE evaluation of the row o comes from (attn_rows.c): max the fp32 scores' dot bound,
 * sum the exp bound and the any-order sum's gamma_n. */
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
    long tokens, heads, kv_len, topk, dk, dv;
    double scale; /* fp32 value */
    const char *pad;
    const long *seq; /* params.seqlens as q0,kv0,q1,kv1,...; nseq 0 for the default "0" */
    size_t nseq;
} sfa_params;

/* The sequences params.seqlens lists: their count (0 for the default "0"), *seq the pairs. */
static size_t read_seqlens(const ug_params *P, const long **seq)
{
    size_t n = ug_plist_get(UG_P(sparse_flash_attention, P)->seqlens, seq);
    return n == 1 && (*seq)[0] == 0 && (*seq)[1] == 0 ? 0 : n;
}

static void read_params(const ug_case *c, sfa_params *p)
{
    const ug_params *P = &c->params;
    const ug_sparse_flash_attention_params *params = UG_P(sparse_flash_attention, P);
    *p = (sfa_params){params->tokens, params->heads,   params->kv_len, params->topk,
                      params->dk,     params->kv_lora, params->scale,  params->pad_name};
    p->nseq = read_seqlens(P, &p->seq);
}

/* Token t's window: kv rows off..off+w-1 it may index, e the slots it reads, first 1 when t
 * opens its sequence. Default: one sequence, w = kv_len, e = topk. */
typedef struct {
    long off, w, e;
    int first;
} sfa_window;

static sfa_window window_of(const sfa_params *p, long t)
{
    if (!p->nseq) return (sfa_window){0, p->kv_len, p->topk, t == 0};
    long q0 = 0, k0 = 0;
    size_t b = 0;
    while (b + 1 < p->nseq && t >= q0 + p->seq[2 * b]) q0 += p->seq[2 * b], k0 += p->seq[2 * b + 1], b++;
    long w = p->seq[2 * b + 1] - p->seq[2 * b] + 1 + (t - q0); /* the causal window, >= 1 (q_b <= kv_b) */
    return (sfa_window){k0, w, w < p->topk ? w : p->topk, t == q0};
}

/* Sums of seqlens against tokens and kv_len, 1 <= q_b <= kv_b. */
static int check_seqlens(const ug_params *P, char *err, size_t errlen)
{
    const long *seq;
    size_t n = read_seqlens(P, &seq);
    long sq = 0, sk = 0;
    for (size_t b = 0; b < n; b++) {
        if (seq[2 * b] < 1 || seq[2 * b + 1] < seq[2 * b]) {
            snprintf(err, errlen,
                     "sparse_flash_attention: param seqlens entry %zu (%ld:%ld) out of range: each "
                     "sequence needs 1 <= q_b <= kv_b",
                     b, seq[2 * b], seq[2 * b + 1]);
            return -2;
        }
        sq += seq[2 * b], sk += seq[2 * b + 1];
    }
    const ug_sparse_flash_attention_params *params = UG_P(sparse_flash_attention, P);
    if (n && (sq != params->tokens || sk != params->kv_len)) {
        snprintf(err, errlen, "sparse_flash_attention: param seqlens sums to %ld:%ld, tokens:kv_len is %ld:%ld", sq, sk,
                 params->tokens, params->kv_len);
        return -2;
    }
    return 0;
}

/* topk within kv_len, seqlens consistent (size is the case memory budget's). */
static int check(const ug_params *P, char *err, size_t errlen)
{
    const ug_sparse_flash_attention_params *params = UG_P(sparse_flash_attention, P);
    if (params->topk > params->kv_len) {
        snprintf(err, errlen, "sparse_flash_attention: param topk (1..kv_len) out of range");
        return -2;
    }
    return check_seqlens(P, err, errlen);
}

static uint32_t draw(uint64_t seed, uint32_t what, long t, long i)
{
    uint32_t w[4];
    ug_rng_words(seed, what, (uint64_t)t * 0x100000000ull + (uint64_t)i, 0, w);
    return w[0];
}

/* Token t's index list: c of its e read slots hold distinct rows of its window (partial
 * Fisher-Yates over perm, which holds a permutation of 0..w-1 in its first w entries on
 * entry and keeps one on exit: windows only grow within a sequence), then the padding;
 * the unread slots from e on hold off - 1 as the reference leaves them (its -1 padding
 * shifted by the sequence's first row: -1 in the first sequence, the previous sequence's
 * last row in later ones). */
static void token_indices(const sfa_params *p, uint64_t seed, long t, sfa_window win, long *perm, int32_t *out)
{
    long c = win.e;
    if (strcmp(p->pad, "tail") == 0) c = 1 + (long)(draw(seed, 0x636e74u, t, 0) % (uint32_t)win.e);
    for (long i = 0; i < c; i++) {
        long j = i + (long)(draw(seed, 0x69647873u, t, i) % (uint32_t)(win.w - i)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        out[i] = (int32_t)(win.off + perm[i]);
    }
    for (long i = c; i < p->topk; i++) out[i] = i < win.e ? -1 : (int32_t)(win.off - 1);
    if (strcmp(p->pad, "scattered") == 0) /* a quarter of the read slots after the first become -1 */
        for (long i = 1; i < win.e; i++)
            if (draw(seed, 0x73637472u, t, i) % 4 == 0) out[i] = -1;
}

/* actual_q_len / actual_kv_len: the prefix sums of seqlens (present only with seqlens). */
static void build_prefix_sums(ug_case *c, const sfa_params *p)
{
    ug_tensor *aq = ug_case_input_mut(c, "actual_q_len"), *ak = ug_case_input_mut(c, "actual_kv_len");
    int32_t q = 0, k = 0;
    for (size_t b = 0; aq && ak && b < p->nseq; b++) {
        ((int32_t *)aq->data)[b] = q += (int32_t)p->seq[2 * b];
        ((int32_t *)ak->data)[b] = k += (int32_t)p->seq[2 * b + 1];
    }
}

/* Fills indices from params.pad, the windows and the seed (perm restarts with each sequence). */
static int build(ug_case *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    sfa_params p;
    read_params(c, &p);
    build_prefix_sums(c, &p);
    ug_tensor *it = ug_case_input_mut(c, "indices");
    long *perm = malloc((size_t)p.kv_len * sizeof *perm);
    if (!perm) return -1;
    for (long t = 0; t < p.tokens; t++) {
        sfa_window win = window_of(&p, t);
        for (long i = 0; win.first && i < p.kv_len - win.off; i++) perm[i] = i;
        token_indices(&p, c->spec.seed, t, win, perm, (int32_t *)it->data + t * p.topk);
    }
    free(perm);
    return 0;
}

/* Gathers the kv rows token t's read slots name (exact values, 576 each) into kd; returns how many. */
static size_t gather_keys(const ug_case *c, const sfa_params *p, size_t t, double *kd)
{
    const ug_tensor *kv = ug_case_input(c, "kv"), *it = ug_case_input(c, "indices");
    size_t n = 0, e = (size_t)window_of(p, (long)t).e;
    for (size_t i = 0; i < e; i++) {
        double j = ug_tload(it, t * (size_t)p->topk + i);
        if (j < 0) continue; /* -1: padding, no key */
        memcpy(kd + n++ * (size_t)p->dk, kv->values + (size_t)j * (size_t)p->dk, (size_t)p->dk * sizeof *kd);
    }
    return n;
}

/* 1 when output out's next selected element (*pos) lies in row `row` of elements per_row each. */
static int wants_row(const ug_selection *sel, int out, size_t pos, size_t row, size_t per_row)
{
    return out < sel->n_out && pos < sel->n[out] && sel->idx[out][pos] / per_row == row;
}

/* Output indices: 0 o [T,N,kv_lora], 1 softmax_max, 2 softmax_sum [T,N]; row r = t*N + n of all. */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    sfa_params p;
    read_params(c, &p);
    const ug_tensor *q = ug_case_input(c, "q");
    size_t pos[3] = {0, 0, 0}, have = (size_t)-1, n = 0, dk = (size_t)p.dk, dv = (size_t)p.dv;
    size_t topk = (size_t)p.topk, ldkt;
    double *kd = malloc(topk * dk * sizeof *kd);
    double *kt = ug_gl_kt_alloc(ar, dk, topk, &ldkt); /* the keys transposed: all scores at once */
    ug_num *s = malloc(2 * topk * sizeof *s);
    int rc = kd && s ? 0 : -1;
    for (size_t row = 0; !rc && row < (size_t)(p.tokens * p.heads); row++) {
        int want_max = wants_row(sel, 1, pos[1], row, 1), want_sum = wants_row(sel, 2, pos[2], row, 1);
        if (!wants_row(sel, 0, pos[0], row, dv) && !want_max && !want_sum) continue;
        size_t t = row / (size_t)p.heads;
        if (have != t) { /* a token's heads share its keys */
            n = gather_keys(c, &p, t, kd);
            if (kt) ug_gl_keys_transpose(kd, dk, dk, n, kt, ldkt);
        }
        have = t;
        size_t mark = ug_ar_mark(ar);
        ug_num max_sum[2];
        rc = ug_gl_attn_emit_query_max_sum(ar, q->values + row * dk, kd, dk, kt, ldkt, dk, n, ug_c(ar, p.scale), kd, dk,
                                           dv, s, 0, sel, &pos[0], row, max_sum);
        if (!rc && want_max) ug_ar_emit(ar, 1, pos[1]++, max_sum[0]);
        if (!rc && want_sum) ug_ar_emit(ar, 2, pos[2]++, max_sum[1]);
        ug_ar_release(ar, mark);
    }
    free(kd);
    free(kt);
    free(s);
    return rc;
}

/* o: the decode family's sampling geometry; softmax_max and softmax_sum [T,N]: a token's
 * heads are one kernel row (its core computes them together). */
static void geometry(const ug_case *c, int out, ug_geom *g)
{
    if (out == 0)
        ug_gl_attn_geometry(c, out, g);
    else
        ug_geom_last_dim(&c->out[out], 1, 64, g);
}

/* Scratch for the case memory estimate: the sim kernel's fp32 keys of one row and its row
 * max and sum of one token; the builder's permutation of the pool; the oracle's keys of one
 * row in fp64 and its score arrays. */
static double scratch(const ug_params *P)
{
    const ug_sparse_flash_attention_params *params = UG_P(sparse_flash_attention, P);
    double topk = (double)params->topk;
    return 8 * (double)params->kv_len + 12 * topk * (double)params->dk + ug_gl_kt_scratch((double)params->dk, topk) +
           2 * topk * UG_NUM_BYTES + 8 * (double)params->heads;
}

const ug_op_def ug_opdef_sparse_flash_attention = {
    .decl.check = check, .build = build, .oracle = oracle, .geometry = geometry, .scratch = scratch};
