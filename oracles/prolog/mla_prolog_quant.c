/* mla_prolog_quant.c — param checks, input builder and exact oracle of mla_prolog_quant,
 * the DeepSeek-V3.2 MLA prolog with an int8 q up-projection and an int8 paged kv cache
 * (declaration: mla_prolog_quant.json; the per-token math lives in mla_prolog_quant_core.h,
 * reused by the fused mla_indexer_prolog_quant):
 *     c_q = bf16(RMSNorm(bf16(x.W_dq))) -> q_norm (int8), q_norm_scale (fp32, amax/127)
 *     q   = bf16((q_norm.W_uq_i8)*q_norm_scale*w_uq_scale), per head [nope | rope]
 *     q_nope_abs = q_nope.W_uk[n];  q_rope = RoPE(q_rope)
 *     kv  = bf16(x.W_dkv); c_kv = bf16(RMSNorm(kv[:kv_lora])) -> int8 codes + one fp32
 *     scale per kv_group elements into kv_cache / kv_scale at slot_mapping[t];
 *     kr_cache[slot] = RoPE(kv[kv_lora:])
 * Facts from hicann/pypto-gym tests/ops/deepseek_v32_exp/test_mla_prolog_quant.py (the
 * is_quant_b tests): the golden casts q_a_proj, kv_a_proj, both RMSNorm outputs and
 * q_b_proj to bf16 (spec roundings here), quantises per token (c_q) and per group of
 * kv_lora/4 = 128 (c_kv) with 127/amax, dequant scale fp32 [t,1] and [blocks, bs, 1, 4];
 * w_uq_scale fp32 per channel; eps 1e-5 passed to the kernel; RoPE by
 * apply_rotary_pos_emb_v2 (rope_layout interleaved_to_half here). Its compare rules are the
 * declaration's reference_* fields. Staged rule (docs/STANDARDS.md): the query path after
 * the quantisation continues from the kernel's q_norm and q_norm_scale; codes are judged
 * against the value over the kernel's scale (consistency) and over the oracle's own fp32
 * scale (views). Primary: pypto. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/oracle.h"
#include "oracles/prolog/mla_prolog_quant_core.h"
#include "oracles/verdict.h"

enum { O_QN, O_QR, O_Q8, O_QS, O_KC, O_KS, O_KR };

int ug_mlaq_check(const ug_params *P, char *err, size_t errlen)
{
    long T = ug_p_int(P, "tokens"), dr = ug_p_int(P, "d_rope"), bs = ug_p_int(P, "block_size"),
         nb = ug_p_int(P, "blocks"), Lkv = ug_p_int(P, "kv_lora"), g = ug_p_int(P, "kv_group");
    char msg[160];
    msg[0] = 0;
    if (dr % 2) snprintf(msg, sizeof msg, "param \"d_rope\" = %ld must be even", dr);
    else if (Lkv % g) snprintf(msg, sizeof msg, "param \"kv_lora\" = %ld must be a multiple of \"kv_group\" = %ld", Lkv, g);
    else if (nb < (T + bs - 1) / bs)
        snprintf(msg, sizeof msg, "param \"blocks\" = %ld must be >= ceil(tokens/block_size) = %ld (a slot per token)",
                 nb, (T + bs - 1) / bs);
    if (!msg[0]) return 0;
    snprintf(err, errlen, "%s: %s", P->decl->op, msg);
    return -2;
}

int ug_mlaq_build(ug_case *c, char *err, size_t errlen)
{
    const ug_params *P = &c->params;
    long T = ug_p_int(P, "tokens"), bs = ug_p_int(P, "block_size"), dr = ug_p_int(P, "d_rope");
    if (ug_mla_fill_slots(c->spec.seed, T, ug_p_int(P, "blocks") * bs, bs, ug_p_str(P, "slots"),
                          ug_case_input_mut(c, "slot_mapping")))
        return snprintf(err, errlen, "mla_prolog_quant: out of memory"), -1;
    ug_mla_fill_rope(c->spec.seed, T, dr, ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"));
    return 0;
}

typedef struct {
    ug_mlaq_in in;
    size_t T, S;
    ug_mlaq_qouts qo, ko;
    ug_num *row, *sq; /* [max(Lq, Lkv+dr)], [max(Lq, Lkv)] */
    double *codes;    /* one token's kernel codes [Lq] */
    size_t *heads, *col0; /* [N]: a token's heads with a selected q element, their first w_uq columns */
    int32_t *acc;     /* [N*(dn+dr)]: the int dots' partial sums */
    int64_t *dot;     /* [N*(dn+dr)]: the int dots of those heads */
} mlaq_ctx;

static void read_in(const ug_case *c, ug_mlaq_in *m)
{
    const ug_params *P = &c->params;
    *m = (ug_mlaq_in){(size_t)ug_p_int(P, "h"),       (size_t)ug_p_int(P, "q_lora"), (size_t)ug_p_int(P, "heads"),
                      (size_t)ug_p_int(P, "kv_lora"), (size_t)ug_p_int(P, "d_nope"), (size_t)ug_p_int(P, "d_rope"),
                      (size_t)ug_p_int(P, "kv_group"), ug_p_num(P, "eps"),
                      ug_p_is(P, "rope_layout", "interleaved_to_half")};
    m->x = ug_case_input(c, "x")->values, m->wdq = ug_case_input(c, "w_dq")->values;
    m->gq = ug_case_input(c, "gamma_q")->values, m->wuq = ug_case_input(c, "w_uq")->values;
    m->wuq8 = ug_case_input(c, "w_uq")->data; /* int8 (the op's declaration) */
    m->wuq_s = ug_case_input(c, "w_uq_scale")->values, m->wuk = ug_case_input(c, "w_uk")->values;
    m->wdkv = ug_case_input(c, "w_dkv")->values, m->gkv = ug_case_input(c, "gamma_kv")->values;
    m->cs = ug_case_input(c, "cos")->values, m->sn = ug_case_input(c, "sin")->values;
}

static int any_sel(const ug_selection *sel, int o, size_t lo, size_t hi)
{
    size_t b, e;
    ug_mlaq_sel_range(sel, o, lo, hi, &b, &e);
    return b < e;
}

/* q_norm, its scale and view of token t. */
static void token_quant(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t Lq = k->in.Lq;
    if (!any_sel(sel, O_Q8, t * Lq, (t + 1) * Lq) && !any_sel(sel, O_QS, t, t + 1) &&
        !any_sel(sel, k->qo.view, t * Lq, (t + 1) * Lq))
        return;
    size_t mark = ug_ar_mark(ar);
    ug_mlaq_cq(ar, &k->in, t, k->row, k->sq);
    ug_mlaq_quant_emit(c, ar, sel, &k->qo, k->row, Lq, t * Lq, t);
    ug_ar_release(ar, mark);
}

/* Token t's heads with a selected q_nope_abs or q_rope element, into k->heads. */
static size_t query_heads(mlaq_ctx *k, const ug_selection *sel, size_t t)
{
    size_t N = k->in.N, Lkv = k->in.Lkv, dr = k->in.dr, nh = 0;
    for (size_t n = 0; n < N; n++) {
        size_t row = t * N + n;
        if (any_sel(sel, O_QN, row * Lkv, (row + 1) * Lkv) || any_sel(sel, O_QR, row * dr, (row + 1) * dr))
            k->heads[nh++] = n;
    }
    return nh;
}

/* q_nope_abs and q_rope of token t, from the kernel's q_norm and q_norm_scale: the int dots
 * of every wanted head in one pass over w_uq, then each head. */
static void token_query(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    const ug_mlaq_in *m = &k->in;
    size_t N = m->N, Lkv = m->Lkv, dr = m->dr, Lq = m->Lq, dq = m->dn + dr, b0, e0, b1, e1;
    size_t nh = query_heads(k, sel, t);
    if (!nh) return;
    double sq = ug_tload(&c->out[O_QS], t);
    for (size_t j = 0; j < Lq; j++) k->codes[j] = ug_tload(&c->out[O_Q8], t * Lq + j);
    ug_mlaq_q_dots(m, k->codes, k->heads, nh, k->col0, k->acc, k->dot);
    for (size_t g = 0; g < nh; g++) {
        size_t n = k->heads[g], row = t * N + n;
        ug_mlaq_sel_range(sel, O_QN, row * Lkv, (row + 1) * Lkv, &b0, &e0);
        ug_mlaq_sel_range(sel, O_QR, row * dr, (row + 1) * dr, &b1, &e1);
        size_t mark = ug_ar_mark(ar);
        ug_mlaq_q_head(ar, m, k->dot + g * dq, sq, n, k->row);
        for (; b0 < e0; b0++) ug_ar_emit(ar, O_QN, b0, ug_mlaq_nope_abs_at(ar, m, k->row, n, sel->idx[O_QN][b0] - row * Lkv));
        for (; b1 < e1; b1++)
            ug_ar_emit(ar, O_QR, b1,
                       ug_mla_rope_at(ar, k->row + m->dn, m->cs + t * dr, m->sn + t * dr, dr, sel->idx[O_QR][b1] - row * dr,
                                      m->rope_inter));
        ug_ar_release(ar, mark);
    }
}

/* The selected elements of cache slot s (codes, scales, view, rope) as their inputs. */
static void slot_untouched(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t s)
{
    size_t Lkv = k->in.Lkv, G = Lkv / k->in.group, dr = k->in.dr, b, e;
    const int os[4] = {O_KC, k->ko.view, O_KS, O_KR};
    const ug_tensor *src[4] = {ug_case_input(c, "kv_cache_in"), ug_case_input(c, "kv_cache_in"),
                               ug_case_input(c, "kv_scale_in"), ug_case_input(c, "kr_cache_in")};
    const size_t w[4] = {Lkv, Lkv, G, dr};
    for (int i = 0; i < 4; i++) {
        ug_mlaq_sel_range(sel, os[i], s * w[i], (s + 1) * w[i], &b, &e);
        for (; b < e; b++) ug_ar_emit(ar, os[i], b, ug_c(ar, src[i]->values[sel->idx[os[i]][b]]));
    }
}

/* Slot s written by token t: c_kv quantised per group, k_rope. */
static void slot_written(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t s, size_t t)
{
    const ug_mlaq_in *m = &k->in;
    size_t Lkv = m->Lkv, g = m->group, G = Lkv / g, dr = m->dr, b, e, mark = ug_ar_mark(ar);
    ug_mlaq_kv(ar, m, t, k->row, k->sq);
    for (size_t gi = 0; gi < G; gi++) {
        size_t base = s * Lkv + gi * g;
        if (any_sel(sel, O_KC, base, base + g) || any_sel(sel, O_KS, s * G + gi, s * G + gi + 1) ||
            any_sel(sel, k->ko.view, base, base + g))
            ug_mlaq_quant_emit(c, ar, sel, &k->ko, k->row + gi * g, g, base, s * G + gi);
    }
    ug_mlaq_sel_range(sel, O_KR, s * dr, (s + 1) * dr, &b, &e);
    for (; b < e; b++)
        ug_ar_emit(ar, O_KR, b,
                   ug_mla_rope_at(ar, k->row + Lkv, m->cs + t * dr, m->sn + t * dr, dr, sel->idx[O_KR][b] - s * dr,
                                  m->rope_inter));
    ug_ar_release(ar, mark);
}

/* Marks in want[S] every slot with a selected element in a cache output. */
static void mark_slots(const mlaq_ctx *k, const ug_selection *sel, unsigned char *want)
{
    const int os[4] = {O_KC, k->ko.view, O_KS, O_KR};
    const size_t w[4] = {k->in.Lkv, k->in.Lkv, k->in.Lkv / k->in.group, k->in.dr};
    for (int i = 0; i < 4; i++)
        for (size_t j = 0; os[i] >= 0 && os[i] < sel->n_out && j < sel->n[os[i]]; j++) want[sel->idx[os[i]][j] / w[i]] = 1;
}

static void caches(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, const long *writer,
                   unsigned char *want)
{
    mark_slots(k, sel, want);
    for (size_t s = 0; s < k->S; s++) {
        if (!want[s]) continue;
        if (writer[s] < 0) slot_untouched(k, c, ar, sel, s);
        else slot_written(k, c, ar, sel, s, (size_t)writer[s]);
    }
}

int ug_mlaq_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    mlaq_ctx k;
    read_in(c, &k.in);
    const ug_params *P = &c->params;
    k.T = (size_t)ug_p_int(P, "tokens"), k.S = (size_t)(ug_p_int(P, "blocks") * ug_p_int(P, "block_size"));
    k.qo = (ug_mlaq_qouts){O_Q8, O_QS, ug_case_judged_find(c, "q_norm@oracle_scale")};
    k.ko = (ug_mlaq_qouts){O_KC, O_KS, ug_case_judged_find(c, "kv_cache@oracle_scale")};
    size_t nrow = k.in.Lq > k.in.Lkv + k.in.dr ? k.in.Lq : k.in.Lkv + k.in.dr;
    if (k.in.dn + k.in.dr > nrow) nrow = k.in.dn + k.in.dr;
    k.row = malloc(2 * nrow * sizeof *k.row);
    k.codes = malloc(k.in.Lq * sizeof *k.codes);
    size_t nq = k.in.N * (k.in.dn + k.in.dr);
    k.heads = malloc(2 * k.in.N * sizeof *k.heads), k.acc = malloc(nq * sizeof *k.acc), k.dot = malloc(nq * sizeof *k.dot);
    long *writer = malloc(k.S * sizeof *writer);
    unsigned char *want = calloc(k.S, 1);
    int rc = k.row && k.codes && k.heads && k.acc && k.dot && writer && want ? 0 : -1;
    if (!rc) {
        k.col0 = k.heads + k.in.N;
        k.sq = k.row + nrow;
        const double *slot = ug_case_input(c, "slot_mapping")->values;
        for (size_t s = 0; s < k.S; s++) writer[s] = -1;
        for (size_t t = 0; t < k.T; t++) {
            if (slot[t] >= 0) writer[(size_t)slot[t]] = (long)t; /* the builder's slots are distinct */
            token_quant(&k, c, ar, sel, t);
            token_query(&k, c, ar, sel, t);
        }
        caches(&k, c, ar, sel, writer, want);
    }
    free(k.row), free(k.codes), free(k.heads), free(k.acc), free(k.dot), free(writer), free(want);
    return rc;
}

/* Rows: (token, head) for the q outputs, tokens for q_norm, slots for the caches (the
 * slots of the first and last written tokens, whose neighbours an off-by-one or off-by-a-
 * block scatter reaches, are hot); q_norm_scale is one row of tokens. */
void ug_mlaq_geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[t->ndim - 1];
    g->rows = t->numel / (g->cols ? g->cols : 1);
    g->row_tile = out < O_Q8 ? 16 * (size_t)t->shape[1] : 16;
    g->col_tile = out == O_KS ? 4 : 128;
    if (out < O_KC) return;
    g->row_tile = (size_t)t->shape[1]; /* the block */
    const ug_tensor *slots = ug_case_input(c, "slot_mapping");
    size_t first = SIZE_MAX, last = SIZE_MAX;
    for (size_t i = 0; i < slots->numel; i++) {
        double s = ug_tload(slots, i);
        if (s < 0) continue;
        if (first == SIZE_MAX) first = (size_t)s;
        last = (size_t)s;
    }
    if (first == SIZE_MAX) return;
    ug_geom_hot(g, first, 1);
    ug_geom_hot(g, last, 1);
    size_t bs = (size_t)t->shape[1];
    if (first + bs < g->rows) ug_geom_hot(g, first + bs, 0);
}

/* Scratch: the sim kernel's int8 transposed w_uq and fp32 transposed w_dq, w_uk, w_dkv
 * plus a staging buffer (the largest fp32 weight), its rows and the c_q of every token;
 * the builder's slot permutation and the oracle's writer map, slot marks and codes row. */
double ug_mlaq_scratch(const ug_params *P)
{
    double h = (double)ug_p_int(P, "h"), Lq = (double)ug_p_int(P, "q_lora"), N = (double)ug_p_int(P, "heads"),
           Lkv = (double)ug_p_int(P, "kv_lora"), dn = (double)ug_p_int(P, "d_nope"), dr = (double)ug_p_int(P, "d_rope");
    double wdq = h * Lq, wuq = N * (dn + dr) * Lq, wuk = N * Lkv * dn, wdkv = h * (Lkv + dr);
    double stage = fmax(fmax(wdq, wuq), fmax(wuk, wdkv));
    double tb = 16; /* the sim kernel's TOKEN_BLOCK: its x or q_norm rows, outputs, q_b rows, int32 dots */
    double block = 4 * tb * (fmax(h, Lq) + 2 * dr + N * (Lkv + dr) + (dn + dr) + 1 + wuq / Lq + Lq / 2 + 1) + tb * Lq;
    return 3 * wuq /* packed int16 w_uq and its int8 load */ + block +
           4 * (wdq + wuk + wdkv + stage + 4 * (h + Lq + Lkv + dr + N * (dn + dr))) +
           17 * (double)ug_p_int(P, "blocks") * (double)ug_p_int(P, "block_size") +
           4 * (double)ug_p_int(P, "tokens") * Lq + 8 * Lq; /* the kernel's c_q of every token, the oracle's codes */
}

const ug_op_def ug_opdef_mla_prolog_quant = {
    .op = UG_OP_MLA_PROLOG_QUANT, .decl.check = ug_mlaq_check, .build = ug_mlaq_build, .oracle = ug_mlaq_oracle,
    .geometry = ug_mlaq_geometry, .scratch = ug_mlaq_scratch};
