/* indexer_prolog_fp8.c — check, builder and exact oracle shared by
 * lightning_indexer_prolog_quant_fp8 and lightning_indexer_prolog_quant_mxfp8:
 *     q path:  v = Hadamard(RoPE_half(q[t,h]))                 (q: dequantised bf16 input)
 *     k path:  v = Hadamard(RoPE_half(LayerNorm(x[t].W_k; gamma, beta)))  -> cache[slot[t]]
 *              (params.k_norm = rmsnorm: RMSNorm(x[t].W_k; gamma) instead, beta unread)
 *     weights[t,h] = (x[t].W_proj[:,h]) / sqrt(H*D)
 *     Hadamard(v) = H_D v / sqrt(D) (Sylvester order), each v quantised per row (fp8:
 *     scale = amax/448) or per 32-block (MXFP8: scale = 2^(floor(log2 amax)-8), E8M0),
 *     codes = e4m3(v/scale), saturating.
 * The simplification: q enters already dequantised (bf16) instead of q_i8*W_qb_i8; RoPE,
 * Hadamard and the quantisation are kept. Everything before the quantisation is exact in
 * the oracle (Hadamard as the butterfly on exact numbers, LayerNorm exact). Codes follow
 * the staged rule of docs/OPERATORS.md: the kernel exports its scales, so each code's exact
 * pre-rounding value is v/scale_kernel (boundary-aware compare, budget 1 quantum, the
 * reference suite's atol 1 for quantised codes), and the scales are judged on their own
 * (fp32 numerically, 1e-3/1e-3; E8M0 exactly). An E8M0 scale whose exact amax lies within
 * 2^-12 (relative) of the power of two separating it from the kernel's scale accepts the
 * kernel's scale: fp32 noise in amax may legally pick either binade there.
 * A kernel scale that is not positive and finite is replaced by the exact scale for its
 * codes (the scale compare reports it). A block holding a NaN or +-inf value has a NaN
 * scale and NaN codes (the ops' semantics text, UG_LIP8_SEMANTICS). */
#include "oracles/prolog/indexer_prolog_fp8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"

#define MX_BLOCK 32
#define MX_NEAR 0x1p-12

enum { O_Q8, O_QS, O_KC, O_KS, O_W };

/* The params the oracle and the builder use, read from the case's parsed params. */
typedef struct {
    long tokens, hidden, heads, d, rope, blocks, block_size, pad, pos;
    double eps, base; /* eps: fp32 value */
    int rms;          /* params.k_norm == rmsnorm: no mean subtraction, no beta */
} lip_params;

static void read_params(const ug_case *c, lip_params *p)
{
    const ug_params *P = &c->params;
    *p = (lip_params){ug_p_int(P, "tokens"), ug_p_int(P, "hidden"),     ug_p_int(P, "heads"),
                      ug_p_int(P, "d"),      ug_p_int(P, "rope"),       ug_p_int(P, "blocks"),
                      ug_p_int(P, "block_size"), ug_p_int(P, "pad"),    ug_p_int(P, "pos"),
                      ug_p_num(P, "eps"),    ug_p_num(P, "rope_base"),
                      !strcmp(ug_p_str(P, "k_norm"), "rmsnorm")};
}

/* The format is the op's identity: the MXFP8 op quantises in 32-blocks, the fp8 op per row. */
static int is_mx(const ug_case *c) { return c->def->op == UG_OP_LIGHTNING_INDEXER_PROLOG_QUANT_MXFP8; }

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

int ug_lip8_check(const ug_params *P, char *err, size_t errlen)
{
    long tokens = ug_p_int(P, "tokens"), d = ug_p_int(P, "d"), rope = ug_p_int(P, "rope"),
         blocks = ug_p_int(P, "blocks"), block_size = ug_p_int(P, "block_size"), pad = ug_p_int(P, "pad");
    double base = ug_p_num(P, "rope_base");
    const char *bad = NULL;
    if (d != 32 && d != 64 && d != 128) bad = "\"d\" must be 32, 64 or 128";
    else if (!is_pow2(rope) || rope > d) bad = "\"rope\" must be a power of two in [2, d]";
    else if (blocks * block_size > (1L << 24)) /* slot ids are int32; the sim kernel loads them as fp32 */
        bad = "\"blocks\"*\"block_size\" must be <= 2^24 (slot ids exact in fp32)";
    else if (pad > tokens) bad = "\"pad\" must be in [0, tokens]";
    else if (tokens - pad > blocks * block_size) bad = "the cache (\"blocks\"*\"block_size\") holds fewer slots than tokens";
    else if (!(base > 1 && base < 1e9)) bad = "\"rope_base\" must be in (1, 1e9)";
    if (!bad) return 0;
    snprintf(err, errlen, "%s: %s", P->decl->op, bad);
    return -2;
}

/* The sim kernel's fp32 copies of w_k and w_proj and its row buffers; the builder's slot
 * permutation (int32) and the oracle's slot writers (long) over the whole cache. */
double ug_lip8_scratch(const ug_params *P)
{
    double hid = (double)ug_p_int(P, "hidden"), heads = (double)ug_p_int(P, "heads"), d = (double)ug_p_int(P, "d"),
           slots = (double)ug_p_int(P, "blocks") * (double)ug_p_int(P, "block_size");
    return 4 * (hid * (d + heads + 1) + 5 * d + 2 * heads + d) + 12 * slots + 2 * d * UG_NUM_BYTES;
}

/* cos/sin of (pos+t)*base^(-2i/R): base^(-2/R) by log2(R/2) square roots, powers by
 * products and sin/cos from ug_det_sincos2pi, so the table is the same on every machine. */
static void fill_rope(const lip_params *p, ug_tensor *cs, ug_tensor *sn)
{
    size_t half = (size_t)p->rope / 2;
    double ratio = 1.0 / p->base;
    for (long m = p->rope / 2; m > 1; m /= 2) ratio = sqrt(ratio);
    for (long t = 0; t < p->tokens; t++) {
        double f = 1.0;
        for (size_t i = 0; i < half; i++, f *= ratio) {
            double u = (double)(p->pos + t) * f / 6.283185307179586, s = 0.0, c = 1.0;
            if (u != floor(u)) ug_det_sincos2pi(u - floor(u), &s, &c); /* angle 0: exactly (0, 1) */
            ug_dtype_store(cs->dtype, cs->data, (size_t)t * half + i, c); /* rounds: bf16 table */
            ug_dtype_store(sn->dtype, sn->data, (size_t)t * half + i, s);
        }
    }
}

/* Distinct random slots for the real tokens, -1 for the trailing pad tokens. */
static int fill_slots(const lip_params *p, uint64_t seed, ug_tensor *slots)
{
    size_t n = (size_t)(p->blocks * p->block_size);
    int32_t *perm = malloc(n * sizeof *perm), *out = slots->data;
    if (!perm) return -1;
    for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
    for (long t = 0; t < p->tokens; t++) {
        if (t >= p->tokens - p->pad) {
            out[t] = -1;
            continue;
        }
        uint32_t w[4];
        ug_rng_words(seed, 0x736c6f74u, (uint64_t)t, 0, w);
        size_t pick = (size_t)t + (size_t)(w[0] % (uint32_t)(n - (size_t)t));
        int32_t tmp = perm[t];
        perm[t] = perm[pick];
        perm[pick] = tmp;
        out[t] = perm[t];
    }
    free(perm);
    return 0;
}

int ug_lip8_build(ug_case *c, char *err, size_t errlen)
{
    lip_params p;
    read_params(c, &p);
    if (!ug_p_is(&c->params, "tables", "given")) /* given tables are drawn */
        fill_rope(&p, ug_case_input_mut(c, "cos"), ug_case_input_mut(c, "sin"));
    if (fill_slots(&p, c->spec.seed, ug_case_input_mut(c, "slot_mapping"))) {
        snprintf(err, errlen, "out of memory building slot_mapping");
        return -1;
    }
    return 0;
}

/* Positions [*b, *e) of output o's selected elements with flat index in [lo, hi). */
static void sel_range(const ug_selection *sel, int o, size_t lo, size_t hi, size_t *b, size_t *e)
{
    size_t l = 0, h = sel->n[o];
    while (l < h) {
        size_t m = (l + h) / 2;
        if (sel->idx[o][m] < lo) l = m + 1;
        else h = m;
    }
    *b = *e = l;
    while (*e < sel->n[o] && sel->idx[o][*e] < hi) (*e)++;
}

/* The RoPE tables of a case: position tables [T, R/2] serve both halves of the rotation;
 * given tables [T, R] (params.tables given) keep one column per rotated element. */
typedef struct {
    const ug_tensor *cs, *sn;
    size_t half;
    int given;
} rope_tables;

/* The dense transform of a row when params.hadamard is given (NULL: the butterfly). */
static const ug_tensor *dense_hadamard(const ug_case *c, const char *name)
{
    return ug_p_is(&c->params, "hadamard", "given") ? ug_case_input(c, name) : NULL;
}

/* u = v.H (u[j] = sum_i v[i] H[i,j]), exact: the given dense transform, not normalised. */
static void dense_transform(ug_ar *ar, ug_num *v, size_t d, const ug_tensor *h)
{
    ug_num *u = v + d; /* the caller's row buffer holds 2d numbers */
    for (size_t j = 0; j < d; j++) u[j] = ug_dot_nd(ar, v, h->values + j, d, d);
    for (size_t j = 0; j < d; j++) v[j] = u[j];
}

/* RoPE_half on v[0..R) then the transform (normalised Hadamard, or the given dense h), in
 * place, in arithmetic ar; v holds 2d numbers (the second d are scratch). */
static void rope_hadamard(ug_ar *ar, ug_num *v, size_t d, const rope_tables *rt, size_t t, const ug_tensor *h)
{
    size_t half = rt->half, w = rt->given ? 2 * half : half;
    for (size_t i = 0; i < half; i++) {
        size_t lo = t * w + i, hi = rt->given ? lo + half : lo;
        ug_num c = ug_c(ar, ug_tload(rt->cs, lo)), s = ug_c(ar, ug_tload(rt->sn, lo));
        ug_num ch = ug_c(ar, ug_tload(rt->cs, hi)), sh = ug_c(ar, ug_tload(rt->sn, hi));
        ug_num a = v[i], b = v[i + half];
        v[i] = ug_sub(ar, ug_mul(ar, a, c), ug_mul(ar, b, s));
        v[i + half] = ug_add(ar, ug_mul(ar, b, ch), ug_mul(ar, a, sh));
    }
    if (h) {
        dense_transform(ar, v, d, h);
        return;
    }
    for (size_t len = 1; len < d; len <<= 1)
        for (size_t i = 0; i < d; i += 2 * len)
            for (size_t j = i; j < i + len; j++) {
                ug_num a = v[j], b = v[j + len];
                v[j] = ug_add(ar, a, b);
                v[j + len] = ug_sub(ar, a, b);
            }
    ug_num inv = ug_rsqrt(ar, ug_c(ar, (double)d));
    for (size_t i = 0; i < d; i++) v[i] = ug_mul(ar, v[i], inv);
}

static ug_num absmax(ug_ar *ar, const ug_num *v, size_t n)
{
    ug_num m = ug_c(ar, 0.0);
    for (size_t i = 0; i < n; i++) m = ug_max(ar, m, ug_max(ar, v[i], ug_neg(ar, v[i])));
    return m;
}

/* Whether every value of a quantisation block is finite (the class of an exact value
 * does not depend on rounding). */
static int block_finite(const ug_num *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(ug_v(v[i]))) return 0;
    return 1;
}

/* The exact E8M0 scale of a block, or the kernel's where fp32 noise may pick its binade. */
static ug_num mx_scale(ug_ar *ar, ug_num amax, double kernel)
{
    double a = ug_v(amax);
    if (a == 0.0) return ug_c(ar, 0x1p-127);
    double exact = ug_dtype_round(UG_DT_E8M0, a / 256.0);
    if ((kernel == 2 * exact || kernel == 0.5 * exact) && fabs(a / (fmax(kernel, exact) * 256.0) - 1.0) <= MX_NEAR)
        return ug_c(ar, kernel);
    return ug_div(ar, amax, ug_c(ar, 256.0)); /* the sink rounds down to the power of two */
}

/* One quantised output: its codes, its scales and the view of the codes judged against the
 * oracle's own scale (judged output index, -1 when the selection has none). */
typedef struct {
    int codes, scales, view;
} quant_outs;

/* Emits output o's selected codes among flat indices base + [lo, hi): v/s (NaN when s is
 * NaN, a block with a NaN or inf; 0 in an all-zero block). */
static void codes_emit(ug_ar *ar, const ug_selection *sel, int o, size_t base, size_t lo, size_t hi,
                       const ug_num *v, int zero, ug_num s)
{
    if (o < 0 || o >= sel->n_out) return;
    size_t b, e;
    sel_range(sel, o, base + lo, base + hi, &b, &e);
    for (; b < e; b++) {
        size_t j = sel->idx[o][b] - base;
        ug_ar_emit(ar, o, b, isnan(ug_v(s)) ? s : zero ? ug_c(ar, 0.0) : ug_div(ar, v[j], s));
    }
}

/* Whether any element of row `row` (d codes, ns scales) is selected in q. */
static int row_wanted(const ug_selection *sel, const quant_outs *q, size_t row, size_t d, size_t ns)
{
    size_t b, e;
    const int os[3] = {q->codes, q->scales, q->view};
    for (int i = 0; i < 3; i++) {
        if (os[i] < 0 || os[i] >= sel->n_out) continue;
        size_t w = os[i] == q->scales ? ns : d;
        sel_range(sel, os[i], row * w, (row + 1) * w, &b, &e);
        if (b < e) return 1;
    }
    return 0;
}

/* Emits the selected codes and scales of one quantised row v[0..d) (row index row). The
 * codes are judged twice: against v/scale_kernel (consistency: the staged rule) and, in the
 * view, against v/scale_oracle, the oracle's own scale rounded as the kernel must export it
 * (accuracy: a scale off by 1.8 % moves codes off by as much). */
static void quant_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, int mx, const ug_num *v,
                       size_t d, size_t row, const quant_outs *q)
{
    size_t block = mx ? MX_BLOCK : d, ns = d / block, sb, se;
    for (size_t blk = 0; blk < ns; blk++) {
        size_t lo = blk * block, hi = lo + block, base = row * d;
        sel_range(sel, q->scales, row * ns + blk, row * ns + blk + 1, &sb, &se);
        if (!block_finite(v + lo, block)) { /* the semantics: a NaN block */
            if (sb < se) ug_ar_emit(ar, q->scales, sb, ug_c(ar, NAN));
            codes_emit(ar, sel, q->codes, base, lo, hi, v, 0, ug_c(ar, NAN));
            codes_emit(ar, sel, q->view, base, lo, hi, v, 0, ug_c(ar, NAN));
            continue;
        }
        ug_num amax = absmax(ar, v + lo, block);
        double sk = ug_tload(&c->out[q->scales], row * ns + blk); /* staged: the kernel's scale */
        ug_num exact = mx ? mx_scale(ar, amax, sk) : ug_div(ar, amax, ug_c(ar, 448.0));
        if (sb < se) ug_ar_emit(ar, q->scales, sb, exact);
        int zero = ug_v(amax) == 0.0;
        ug_num own = ug_round(ar, exact, mx ? UG_DT_E8M0 : UG_DT_FP32); /* rounds: the exported scale */
        ug_num s = sk > 0 && isfinite(sk) ? ug_c(ar, sk) : mx ? own : exact;
        codes_emit(ar, sel, q->codes, base, lo, hi, v, zero, s);
        codes_emit(ar, sel, q->view, base, lo, hi, v, zero, own);
    }
}

typedef struct {
    lip_params p;
    const ug_tensor *q, *x, *wk, *gm, *bt, *wp, *slots, *hq, *hk; /* hq/hk NULL: butterfly */
    rope_tables rt;
    int mx;
    quant_outs qo, ko; /* q codes/scales/view, k cache codes/scales/view */
} lip_ctx;

static void q_rows(const lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t, ug_num *v)
{
    size_t d = (size_t)k->p.d, H = (size_t)k->p.heads, ns = k->mx ? d / MX_BLOCK : 1;
    for (size_t h = 0; h < H; h++) {
        size_t row = t * H + h;
        if (!row_wanted(sel, &k->qo, row, d, ns)) continue;
        size_t mark = ug_ar_mark(ar);
        for (size_t i = 0; i < d; i++) v[i] = ug_c(ar, ug_tload(k->q, row * d + i));
        rope_hadamard(ar, v, d, &k->rt, t, k->hq);
        quant_emit(c, ar, sel, k->mx, v, d, row, &k->qo);
        ug_ar_release(ar, mark);
    }
}

static void weights_row(const lip_ctx *k, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t H = (size_t)k->p.heads, hid = (size_t)k->p.hidden, b, e;
    sel_range(sel, O_W, t * H, (t + 1) * H, &b, &e);
    if (b == e) return;
    size_t mark = ug_ar_mark(ar);
    ug_num cst = ug_rsqrt(ar, ug_c(ar, (double)(H * (size_t)k->p.d)));
    for (; b < e; b++) {
        size_t h = sel->idx[O_W][b] - t * H;
        ug_ar_emit(ar, O_W, b, ug_mul(ar, ug_dot_d(ar, k->x->values + t * hid, 1, k->wp->values + h, H, hid), cst));
    }
    ug_ar_release(ar, mark);
}

/* The k row of token t (written to slot): LayerNorm(x.W_k) (or RMSNorm with k_norm rmsnorm:
 * v*rstd*gamma with rstd from the mean of squares, the reference suite's k norm), RoPE,
 * Hadamard, quantised. */
static void k_row(const lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t, size_t slot,
                  ug_num *v, ug_num *sq)
{
    size_t d = (size_t)k->p.d, hid = (size_t)k->p.hidden, ns = k->mx ? d / MX_BLOCK : 1;
    if (!row_wanted(sel, &k->ko, slot, d, ns)) return;
    size_t mark = ug_ar_mark(ar);
    for (size_t i = 0; i < d; i++) v[i] = ug_dot_d(ar, k->x->values + t * hid, 1, k->wk->values + i, d, hid);
    ug_num dn = ug_c(ar, (double)d);
    if (!k->p.rms) {
        ug_num mean = ug_div(ar, ug_sum(ar, v, d), dn);
        for (size_t i = 0; i < d; i++) v[i] = ug_sub(ar, v[i], mean);
    }
    for (size_t i = 0; i < d; i++) sq[i] = ug_mul(ar, v[i], v[i]);
    ug_num rstd = ug_rsqrt(ar, ug_add(ar, ug_div(ar, ug_sum(ar, sq, d), dn), ug_c(ar, k->p.eps)));
    for (size_t i = 0; i < d; i++) {
        v[i] = ug_mul(ar, ug_mul(ar, v[i], rstd), ug_c(ar, ug_tload(k->gm, i)));
        if (!k->p.rms) v[i] = ug_add(ar, v[i], ug_c(ar, ug_tload(k->bt, i)));
    }
    rope_hadamard(ar, v, d, &k->rt, t, k->hk);
    quant_emit(c, ar, sel, k->mx, v, d, slot, &k->ko);
    ug_ar_release(ar, mark);
}

/* Cache slots no token writes: code 0, scale 0 (fp8) or 2^-127 (MX). */
static void empty_slots(const lip_ctx *k, ug_ar *ar, const ug_selection *sel, const long *writer)
{
    size_t d = (size_t)k->p.d, ns = k->mx ? d / MX_BLOCK : 1;
    for (size_t i = 0; i < sel->n[O_KC]; i++)
        if (writer[sel->idx[O_KC][i] / d] < 0) ug_ar_emit(ar, O_KC, i, ug_c(ar, 0.0));
    int kv = k->ko.view;
    for (size_t i = 0; kv >= 0 && kv < sel->n_out && i < sel->n[kv]; i++)
        if (writer[sel->idx[kv][i] / d] < 0) ug_ar_emit(ar, kv, i, ug_c(ar, 0.0));
    for (size_t i = 0; i < sel->n[O_KS]; i++)
        if (writer[sel->idx[O_KS][i] / ns] < 0)
            ug_ar_emit(ar, O_KS, i, ug_c(ar, k->mx ? 0x1p-127 : 0.0));
}

int ug_lip8_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    lip_ctx k;
    read_params(c, &k.p);
    k.mx = is_mx(c);
    k.q = ug_case_input(c, "q"), k.x = ug_case_input(c, "x"), k.wk = ug_case_input(c, "w_k");
    k.gm = ug_case_input(c, "ln_gamma"), k.bt = ug_case_input(c, "ln_beta"), k.wp = ug_case_input(c, "w_proj");
    k.slots = ug_case_input(c, "slot_mapping");
    k.rt = (rope_tables){ug_case_input(c, "cos"), ug_case_input(c, "sin"), (size_t)k.p.rope / 2,
                         ug_p_is(&c->params, "tables", "given")};
    k.hq = dense_hadamard(c, "hadamard_q"), k.hk = dense_hadamard(c, "hadamard_k");
    k.qo = (quant_outs){O_Q8, O_QS, ug_case_judged_find(c, "q_fp8@oracle_scale")};
    k.ko = (quant_outs){O_KC, O_KS, ug_case_judged_find(c, "k_cache@oracle_scale")};
    size_t d = (size_t)k.p.d, n_slots = (size_t)(k.p.blocks * k.p.block_size);
    ug_num *v = malloc(2 * d * sizeof *v);
    long *writer = malloc(n_slots * sizeof *writer);
    if (!v || !writer) {
        free(v);
        free(writer);
        return -1;
    }
    for (size_t s = 0; s < n_slots; s++) writer[s] = -1;
    for (size_t t = 0; t < (size_t)k.p.tokens; t++) {
        long slot = (long)ug_tload(k.slots, t);
        if (slot >= 0) writer[slot] = (long)t;
        q_rows(&k, c, ar, sel, t, v);
        weights_row(&k, ar, sel, t);
        if (slot >= 0) k_row(&k, c, ar, sel, t, (size_t)slot, v, v + d);
    }
    empty_slots(&k, ar, sel, writer);
    free(v);
    free(writer);
    return 0;
}

void ug_lip8_geometry(const ug_case *c, int out, ug_geom *g)
{
    const ug_tensor *t = &c->out[out];
    g->cols = (size_t)t->shape[t->ndim - 1];
    g->rows = t->numel / (g->cols ? g->cols : 1);
    g->row_tile = 16;
    g->col_tile = 32; /* the MX block */
}
