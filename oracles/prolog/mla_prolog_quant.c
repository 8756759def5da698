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
 * scale (views). Primary: certified (docs/STANDARDS.md "Which rule carries each op's
 * precision claim"): a correct kernel's legal bf16 flip of kv moves a kr_cache value past
 * pypto's 1e-3 rule, which allows no failure in an 80-element cache (plan seed 141421, case
 * 00219dfde5ebefb2), where certified passes; certified catches every mutant pypto does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/oracle.h"
#include "oracles/prolog/mla_prolog_quant_core.h"

enum { O_QN, O_QR, O_Q8, O_QS, O_KC, O_KS, O_KR };

int ug_mlaq_check(const ug_params *P, char *err, size_t errlen)
{
    long T = ug_p_int(P, "tokens"), dr = ug_p_int(P, "d_rope"), bs = ug_p_int(P, "block_size"),
         nb = ug_p_int(P, "blocks"), Lkv = ug_p_int(P, "kv_lora"), g = ug_p_int(P, "kv_group");
    char msg[160];
    msg[0] = 0;
    if (dr % 2)
        snprintf(msg, sizeof msg, "param \"d_rope\" = %ld must be even", dr);
    else if (Lkv % g)
        snprintf(msg, sizeof msg, "param \"kv_lora\" = %ld must be a multiple of \"kv_group\" = %ld", Lkv, g);
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
    ug_num *row, *sq;       /* [max(Lq, Lkv+dr)], [max(Lq, Lkv)] */
    unsigned char *settled; /* [max(Lq, Lkv)]: the row's values every correct device holds (the tie rule) */
    double *codes;          /* one token's kernel codes [Lq] */
    size_t *heads, *col0;   /* [N]: a token's heads with a selected q element, their first w_uq columns */
    int32_t *acc;           /* [N*(dn+dr)]: the int dots' partial sums */
    int64_t *dot;           /* [N*(dn+dr)]: the int dots of those heads */
    /* the token block (plain arithmetics): tokens [blk0, blk0 + blkn), their x.W_dq and
     * x.W_dkv taken together (bq, bkv) when most of the block wants them */
    size_t blk0, blkn;
    ug_num *bdq, *bdkv; /* [TOKEN_BLOCK][Lq], [TOKEN_BLOCK][Lkv+dr] */
    int bq, bkv;
    /* the block's queries taken head by head (plain arithmetics, most of the block wanted) */
    int bqry;
    ug_num *bqr, *bx,
        *bout; /* q_b rows [TOKEN_BLOCK][N][dn+dr]; a head's whole rows [TOKEN_BLOCK][dn]; their q_nope_abs */
    size_t *bterms, *brow; /* [TOKEN_BLOCK]: dn each; the block rows of those whole rows */
    unsigned char *bwant;  /* [TOKEN_BLOCK][N]: the (token, head) rows with a selected element */
} mlaq_ctx;

#define TOKEN_BLOCK 16 /* tokens whose x rows share each pass over W_dq and W_dkv */

static void read_in(const ug_case *c, ug_mlaq_in *m)
{
    const ug_params *P = &c->params;
    *m = (ug_mlaq_in){(size_t)ug_p_int(P, "h"),
                      (size_t)ug_p_int(P, "q_lora"),
                      (size_t)ug_p_int(P, "heads"),
                      (size_t)ug_p_int(P, "kv_lora"),
                      (size_t)ug_p_int(P, "d_nope"),
                      (size_t)ug_p_int(P, "d_rope"),
                      (size_t)ug_p_int(P, "kv_group"),
                      ug_p_num(P, "eps"),
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
    ug_selection_range(sel, o, lo, hi, &b, &e);
    return b < e;
}

/* q_norm, its scale and view of token t. */
static int quant_wanted(const mlaq_ctx *k, const ug_selection *sel, size_t t);

static void token_quant(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t Lq = k->in.Lq;
    if (!quant_wanted(k, sel, t)) return;
    size_t mark = ug_ar_mark(ar);
    const ug_mlaq_in *m = &k->in;
    ug_mlaq_cq(ar, m, t, k->bq ? k->bdq + (t - k->blk0) * Lq : NULL, k->row, k->sq, k->settled);
    ug_mlaq_tie tie = {k->settled, m->x + t * m->h, m->wdq, m->h, Lq, Lq};
    ug_mlaq_quant_emit(c, ar, sel, &k->qo, k->row, Lq, t * Lq, t, &tie);
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

/* Token t's int dots of every wanted head (k->heads, nh of them) in one pass over w_uq, and
 * its q_norm_scale. */
static double token_dots(mlaq_ctx *k, const ug_case *c, size_t t, size_t nh)
{
    const ug_mlaq_in *m = &k->in;
    for (size_t j = 0; j < m->Lq; j++) k->codes[j] = ug_tload(&c->out[O_Q8], t * m->Lq + j);
    ug_mlaq_q_dots(m, k->codes, k->heads, nh, k->col0, k->acc, k->dot);
    return ug_tload(&c->out[O_QS], t);
}

/* Row (t, n)'s selected q_nope_abs and q_rope elements from its q_b row q; nope: the row's
 * Lkv dots already taken, or NULL (then element by element). */
static void emit_query_row(const mlaq_ctx *k, ug_ar *ar, const ug_selection *sel, size_t t, size_t n, const ug_num *q,
                           const ug_num *nope)
{
    const ug_mlaq_in *m = &k->in;
    size_t Lkv = m->Lkv, dr = m->dr, row = t * m->N + n, b0, e0, b1, e1;
    ug_selection_range(sel, O_QN, row * Lkv, (row + 1) * Lkv, &b0, &e0);
    ug_selection_range(sel, O_QR, row * dr, (row + 1) * dr, &b1, &e1);
    for (; b0 < e0; b0++) {
        size_t l = sel->idx[O_QN][b0] - row * Lkv;
        ug_ar_emit(ar, O_QN, b0, nope ? nope[l] : ug_mlaq_nope_abs_at(ar, m, q, n, l));
    }
    for (; b1 < e1; b1++)
        ug_ar_emit(ar, O_QR, b1,
                   ug_mla_rope_at(ar, q + m->dn, m->cs + t * dr, m->sn + t * dr, dr, sel->idx[O_QR][b1] - row * dr,
                                  m->rope_inter));
}

/* Whether most of row (t, n)'s q_nope_abs is selected: its Lkv dots then go in one pass
 * over the head's W_uk (ug_dot_nd_cols: ug_mlaq_nope_abs_at's numbers, bit for bit). */
static int nope_whole(const mlaq_ctx *k, const ug_selection *sel, size_t row)
{
    size_t Lkv = k->in.Lkv, b, e;
    ug_selection_range(sel, O_QN, row * Lkv, (row + 1) * Lkv, &b, &e);
    return (e - b) * 4 >= Lkv;
}

/* q_nope_abs and q_rope of token t, from the kernel's q_norm and q_norm_scale: the int dots
 * of every wanted head in one pass over w_uq, then each head. */
static void token_query(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    const ug_mlaq_in *m = &k->in;
    if (k->bqry && t >= k->blk0 && t < k->blk0 + k->blkn) return; /* done with its block */
    size_t dq = m->dn + m->dr, nh = query_heads(k, sel, t);
    if (!nh) return;
    double sq = token_dots(k, c, t, nh);
    for (size_t g = 0; g < nh; g++) {
        size_t n = k->heads[g], mark = ug_ar_mark(ar);
        ug_mlaq_q_head(ar, m, k->dot + g * dq, sq, n, k->row);
        int whole = nope_whole(k, sel, t * m->N + n);
        if (whole) ug_dot_nd_cols(ar, k->row, m->wuk + n * m->dn * m->Lkv, m->Lkv, m->dn, m->Lkv, k->sq);
        emit_query_row(k, ar, sel, t, n, k->row, whole ? k->sq : NULL);
        ug_ar_release(ar, mark);
    }
}

/* The block's queries head by head (plain arithmetics: no arena numbers to release): every
 * wanted row's q_b row first, then per head the rows most of whose q_nope_abs is selected
 * in one ug_dot_nd_cols_tile over the head's W_uk (read once for the block's rows, not once
 * a row), the rest element by element. */
static void block_query(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    const ug_mlaq_in *m = &k->in;
    size_t N = m->N, dn = m->dn, dq = dn + m->dr, Lkv = m->Lkv;
    memset(k->bwant, 0, k->blkn * N);
    for (size_t r = 0; r < k->blkn; r++) {
        size_t t = k->blk0 + r, nh = query_heads(k, sel, t);
        if (!nh) continue;
        double sq = token_dots(k, c, t, nh);
        for (size_t g = 0; g < nh; g++) {
            ug_mlaq_q_head(ar, m, k->dot + g * dq, sq, k->heads[g], k->bqr + (r * N + k->heads[g]) * dq);
            k->bwant[r * N + k->heads[g]] = 1;
        }
    }
    for (size_t n = 0; n < N; n++) {
        size_t nw = 0;
        for (size_t r = 0; r < k->blkn; r++)
            if (k->bwant[r * N + n] && nope_whole(k, sel, (k->blk0 + r) * N + n)) {
                memcpy(k->bx + nw * dn, k->bqr + (r * N + n) * dq, dn * sizeof *k->bx);
                k->bterms[nw] = dn, k->brow[nw++] = r;
            }
        if (nw) ug_dot_nd_cols_tile(ar, k->bx, dn, k->bterms, nw, m->wuk + n * dn * Lkv, Lkv, Lkv, k->bout, Lkv);
        for (size_t r = 0, w = 0; r < k->blkn; r++) {
            if (!k->bwant[r * N + n]) continue;
            int whole = w < nw && k->brow[w] == r;
            emit_query_row(k, ar, sel, k->blk0 + r, n, k->bqr + (r * N + n) * dq, whole ? k->bout + w * Lkv : NULL);
            w += whole;
        }
    }
}

/* The selected elements of cache slot s (codes, scales, view, rope) as their inputs, handed
 * over UNTOUCHED_CHUNK at a time (ug_emit_values). */
#define UNTOUCHED_CHUNK 256
static void slot_untouched(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t s)
{
    size_t Lkv = k->in.Lkv, G = Lkv / k->in.group, dr = k->in.dr, b, e;
    const int os[4] = {O_KC, k->ko.view, O_KS, O_KR};
    const ug_tensor *src[4] = {ug_case_input(c, "kv_cache_in"), ug_case_input(c, "kv_cache_in"),
                               ug_case_input(c, "kv_scale_in"), ug_case_input(c, "kr_cache_in")};
    const size_t w[4] = {Lkv, Lkv, G, dr};
    double x[UNTOUCHED_CHUNK];
    for (int i = 0; i < 4; i++) {
        ug_selection_range(sel, os[i], s * w[i], (s + 1) * w[i], &b, &e);
        for (size_t n; b < e; b += n) {
            n = e - b < UNTOUCHED_CHUNK ? e - b : UNTOUCHED_CHUNK;
            for (size_t j = 0; j < n; j++) x[j] = src[i]->values[sel->idx[os[i]][b + j]];
            ug_emit_values(ar, os[i], b, x, n);
        }
    }
}

/* Slot s written by token t: c_kv quantised per group, k_rope. */
static void slot_written(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t s, size_t t)
{
    const ug_mlaq_in *m = &k->in;
    size_t Lkv = m->Lkv, g = m->group, G = Lkv / g, dr = m->dr, b, e, mark = ug_ar_mark(ar);
    ug_mlaq_kv(ar, m, t, k->bkv ? k->bdkv + (t - k->blk0) * (Lkv + dr) : NULL, k->row, k->sq, k->settled);
    for (size_t gi = 0; gi < G; gi++) {
        size_t base = s * Lkv + gi * g;
        ug_mlaq_tie tie = {k->settled + gi * g, m->x + t * m->h, m->wdkv, m->h, Lkv + dr, Lkv};
        if (any_sel(sel, O_KC, base, base + g) || any_sel(sel, O_KS, s * G + gi, s * G + gi + 1) ||
            any_sel(sel, k->ko.view, base, base + g))
            ug_mlaq_quant_emit(c, ar, sel, &k->ko, k->row + gi * g, g, base, s * G + gi, &tie);
    }
    ug_selection_range(sel, O_KR, s * dr, (s + 1) * dr, &b, &e);
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
        for (size_t j = 0; os[i] >= 0 && os[i] < sel->n_out && j < sel->n[os[i]]; j++)
            want[sel->idx[os[i]][j] / w[i]] = 1;
}

/* The cache slots no token writes: their selected elements as the inputs. */
static void untouched_slots(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, const long *writer,
                            const unsigned char *want)
{
    for (size_t s = 0; s < k->S; s++)
        if (want[s] && writer[s] < 0) slot_untouched(k, c, ar, sel, s);
}

/* Whether token t's q_norm, its scale or its view has a selected element. */
static int quant_wanted(const mlaq_ctx *k, const ug_selection *sel, size_t t)
{
    size_t Lq = k->in.Lq;
    return any_sel(sel, O_Q8, t * Lq, (t + 1) * Lq) || any_sel(sel, O_QS, t, t + 1) ||
           any_sel(sel, k->qo.view, t * Lq, (t + 1) * Lq);
}

/* A new block from token t when t is outside the last one: x.W_dq of its tokens taken
 * together when at least half want their q_norm, x.W_dkv when at least half write a wanted
 * slot; only in the plain arithmetics (MPFR numbers live in the arena, row by row). The
 * numbers are ug_dot_d_cols' for each token, bit for bit (ug_dot_d_rows). */
static void token_block(mlaq_ctx *k, ug_ar *ar, const ug_selection *sel, const double *slot, const unsigned char *want,
                        size_t t)
{
    if (k->blkn && t >= k->blk0 && t < k->blk0 + k->blkn) return;
    const ug_mlaq_in *m = &k->in;
    size_t n = k->T - t < TOKEN_BLOCK ? k->T - t : TOKEN_BLOCK, wq = 0, wkv = 0, w = m->Lkv + m->dr;
    k->blk0 = t, k->blkn = n, k->bq = k->bkv = 0;
    if (!ug_ar_plain(ar)) return;
    for (size_t r = t; r < t + n; r++) {
        wq += quant_wanted(k, sel, r);
        wkv += slot[r] >= 0 && want[(size_t)slot[r]];
    }
    if (wq * 2 >= n) ug_dot_d_rows(ar, m->x + t * m->h, m->h, n, m->wdq, m->Lq, m->h, m->Lq, k->bdq, m->Lq);
    if (wkv * 2 >= n) ug_dot_d_rows(ar, m->x + t * m->h, m->h, n, m->wdkv, w, m->h, w, k->bdkv, w);
    k->bq = wq * 2 >= n, k->bkv = wkv * 2 >= n;
}

/* The block's queries together when at least half its (token, head) rows are wanted. */
static void block_queries(mlaq_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    size_t wanted = 0;
    k->bqry = 0;
    if (!ug_ar_plain(ar)) return;
    for (size_t r = 0; r < k->blkn; r++) wanted += query_heads(k, sel, k->blk0 + r);
    if (wanted * 2 < k->blkn * k->in.N) return;
    block_query(k, c, ar, sel);
    k->bqry = 1;
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
    k.settled = malloc(nrow);
    k.codes = malloc(k.in.Lq * sizeof *k.codes);
    size_t nq = k.in.N * (k.in.dn + k.in.dr);
    k.heads = malloc(2 * k.in.N * sizeof *k.heads), k.acc = malloc(nq * sizeof *k.acc),
    k.dot = malloc(nq * sizeof *k.dot);
    long *writer = malloc(k.S * sizeof *writer);
    unsigned char *want = calloc(k.S, 1);
    size_t nb = TOKEN_BLOCK * (k.in.Lq + k.in.Lkv + k.in.dr + nq + k.in.dn + k.in.Lkv);
    k.bdq = malloc(nb * sizeof *k.bdq);
    if (k.bdq) {
        k.bdkv = k.bdq + TOKEN_BLOCK * k.in.Lq, k.bqr = k.bdkv + TOKEN_BLOCK * (k.in.Lkv + k.in.dr);
        k.bx = k.bqr + TOKEN_BLOCK * nq, k.bout = k.bx + TOKEN_BLOCK * k.in.dn;
    }
    k.bterms = malloc(2 * TOKEN_BLOCK * sizeof *k.bterms);
    k.brow = k.bterms ? k.bterms + TOKEN_BLOCK : NULL;
    k.bwant = malloc(TOKEN_BLOCK * k.in.N);
    k.blkn = 0, k.bqry = 0;
    int rc =
        k.row && k.settled && k.codes && k.heads && k.acc && k.dot && writer && want && k.bdq && k.bterms && k.bwant
            ? 0
            : -1;
    if (!rc) {
        k.col0 = k.heads + k.in.N;
        k.sq = k.row + nrow;
        const double *slot = ug_case_input(c, "slot_mapping")->values;
        for (size_t s = 0; s < k.S; s++) writer[s] = -1;
        mark_slots(&k, sel, want);
        for (size_t t = 0; t < k.T; t++) {
            if (!k.blkn || t >= k.blk0 + k.blkn) {
                token_block(&k, ar, sel, slot, want, t);
                block_queries(&k, c, ar, sel);
            }
            token_quant(&k, c, ar, sel, t);
            token_query(&k, c, ar, sel, t);
            if (slot[t] < 0) continue;
            writer[(size_t)slot[t]] = (long)t; /* the builder's slots are distinct */
            if (want[(size_t)slot[t]]) slot_written(&k, c, ar, sel, (size_t)slot[t], t);
        }
        untouched_slots(&k, c, ar, sel, writer, want);
    }
    free(k.row), free(k.settled), free(k.codes), free(k.heads), free(k.acc), free(k.dot), free(writer), free(want),
        free(k.bdq);
    free(k.bterms), free(k.bwant);
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
    double tb = 16; /* the sim kernel's and the oracle's TOKEN_BLOCK */
    double block = 4 * tb * (fmax(h, Lq) + 2 * dr + N * (Lkv + dr) + (dn + dr) + 1 + wuq / Lq + Lq / 2 + 1) + tb * Lq +
                   (double)sizeof(ug_num) * tb * (Lq + Lkv + dr + wuq / Lq + dn + Lkv); /* the oracle's block rows */
    return 3 * wuq /* packed int16 w_uq and its int8 load */ + block +
           4 * (wdq + wuk + wdkv + stage + 4 * (h + Lq + Lkv + dr + N * (dn + dr))) +
           17 * (double)ug_p_int(P, "blocks") * (double)ug_p_int(P, "block_size") +
           4 * (double)ug_p_int(P, "tokens") * Lq + 8 * Lq; /* the kernel's c_q of every token, the oracle's codes */
}

const ug_op_def ug_opdef_mla_prolog_quant = {.decl.check = ug_mlaq_check,
                                             .build = ug_mlaq_build,
                                             .oracle = ug_mlaq_oracle,
                                             .geometry = ug_mlaq_geometry,
                                             .scratch = ug_mlaq_scratch};
