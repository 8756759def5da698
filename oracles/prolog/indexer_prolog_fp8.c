/* indexer_prolog_fp8.c — check, builder and exact oracle shared by the three lightning
 * indexer prologs, lightning_indexer_prolog_quant (int8), _fp8 and _mxfp8; the quantiser is
 * the op's format (ug_lip_format), everything else is one pipeline:
 *     q path:  v = Hadamard(RoPE_half(q[t,h]))   fp8/MX: q is a dequantised bf16 input;
 *              int8: q[t,h,i] = (q_norm[t].w_qb[:,h*D+i]) * q_norm_scale[t] * w_qb_scale[h*D+i]
 *              (exact int32 dot, exact products)
 *     k path:  v = Hadamard(RoPE_half(LayerNorm(x[t].W_k; gamma, beta)))  -> cache[slot[t]]
 *              (params.k_norm = rmsnorm: RMSNorm(x[t].W_k; gamma) instead, beta unread)
 *     weights[t,h] = (x[t].W_proj[:,h]) / sqrt(H*D)   (int8: rounded once to fp16, as the
 *              spec's output; overflow to +-inf is the spec's)
 *     Hadamard(v) = H_D v / sqrt(D) (Sylvester order), each v quantised per row (fp8:
 *     scale = amax/448; int8: scale = amax/127, exported as fp16) or per 32-block (MXFP8:
 *     scale = 2^(floor(log2 amax)-8), E8M0), codes = e4m3(v/scale), saturating, or
 *     int8 rne(v/scale).
 * The fp8 ops' simplification: q enters already dequantised (bf16); the int8 op keeps the
 * reference's q_norm.w_qb dequantisation. Everything before the quantisation is exact in
 * the oracle (Hadamard as the butterfly on exact numbers, LayerNorm exact). Codes follow
 * the staged rule of docs/OPERATORS.md: the kernel exports its scales, so each code's exact
 * pre-rounding value is v/scale_kernel (boundary-aware compare, budget 1 quantum, the
 * reference suite's atol 1 for quantised codes), and the scales are judged on their own
 * (fp32 numerically, 1e-3/1e-3; E8M0 exactly). An E8M0 scale whose exact amax lies within
 * 2^-12 (relative) of the power of two separating it from the kernel's scale accepts the
 * kernel's scale: fp32 noise in amax may legally pick either binade there.
 * A kernel scale that is not positive and finite is replaced by the exact scale for its
 * codes (the scale compare reports it); int8: an fp16 scale below the normal range
 * (2^-14) too, since the kernel quantised with its fp32 scale and a subnormal fp16 scale
 * has lost the precision the codes carry. A block holding a NaN or +-inf value has a NaN
 * scale and NaN codes (int8: codes 0, int8 holds no NaN; the ops' semantics text).
 * Per-token entry points (ug_lip_open / ug_lip_token / ug_lip_close, the header) let a
 * fused op run this oracle over its own outputs, found by name.
 * Speed, not values: in the plain arithmetics the tokens go in blocks of TOKEN_BLOCK whose
 * x.W_k, x.W_proj (ug_dot_d_rows) and int8 q dots (ug_i8_gemm) are taken together when
 * most of the block is selected, so each weight is read once a block instead of once a
 * token; the numbers are the per-token ones bit for bit. */
#include "oracles/prolog/indexer_prolog_fp8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/int8_gemm.h"
#include "core/philox.h"
#include "oracles/mp/int8_dot.h"

#define MX_BLOCK 32
#define MX_NEAR 0x1p-12
#define FP16_MIN_NORMAL 0x1p-14

/* The params the oracle and the builder use (the header's ug_lip_params). */
typedef ug_lip_params lip_params;

static void read_params(const ug_case *c, lip_params *p)
{
    const ug_params *P = &c->params;
    *p = (lip_params){ug_p_int(P, "tokens"),
                      ug_p_int(P, "hidden"),
                      ug_p_int(P, "heads"),
                      ug_p_int(P, "d"),
                      ug_p_int(P, "rope"),
                      ug_p_int(P, "blocks"),
                      ug_p_int(P, "block_size"),
                      ug_p_int(P, "pad"),
                      ug_p_int(P, "pos"),
                      ug_p_num(P, "eps"),
                      ug_p_num(P, "rope_base"),
                      !strcmp(ug_p_str(P, "k_norm"), "rmsnorm"),
                      ug_p_is(P, "tables", "given"),
                      ug_p_is(P, "hadamard", "given")};
}

/* The format is the op's identity: the MXFP8 op quantises in 32-blocks, the fp8 and int8
 * ops per row. */
ug_lip_format ug_lip_format_of(ug_op op)
{
    return op == UG_OP_LIGHTNING_INDEXER_PROLOG_QUANT_MXFP8 ? UG_LIP_MX
           : op == UG_OP_LIGHTNING_INDEXER_PROLOG_QUANT_FP8 ? UG_LIP_FP8
                                                            : UG_LIP_INT8;
}

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

int ug_lip8_check(const ug_params *P, char *err, size_t errlen)
{
    long tokens = ug_p_int(P, "tokens"), d = ug_p_int(P, "d"), rope = ug_p_int(P, "rope"),
         blocks = ug_p_int(P, "blocks"), block_size = ug_p_int(P, "block_size"), pad = ug_p_int(P, "pad");
    double base = ug_p_num(P, "rope_base");
    const char *bad = NULL;
    if (d != 32 && d != 64 && d != 128)
        bad = "\"d\" must be 32, 64 or 128";
    else if (!is_pow2(rope) || rope > d)
        bad = "\"rope\" must be a power of two in [2, d]";
    else if (blocks * block_size > (1L << 24)) /* slot ids are int32; the sim kernel loads them as fp32 */
        bad = "\"blocks\"*\"block_size\" must be <= 2^24 (slot ids exact in fp32)";
    else if (pad > tokens)
        bad = "\"pad\" must be in [0, tokens]";
    else if (tokens - pad > blocks * block_size)
        bad = "the cache (\"blocks\"*\"block_size\") holds fewer slots than tokens";
    else if (!(base > 1 && base < 1e9))
        bad = "\"rope_base\" must be in (1, 1e9)";
    if (!bad) return 0;
    snprintf(err, errlen, "%s: %s", P->decl->op, bad);
    return -2;
}

double ug_lip8_kernel_block_bytes(double hid, double H, double D, double L)
{
    double tb = 32, n = D > H ? D : H;                  /* the sim kernel's TOKEN_BLOCK */
    double x = 4 * tb * (hid + H + D + n) + 12 * H * D; /* and the token's q rows, their transform and its tile */
    if (L == 0) return x;
    return x + 3 * L * H * D + tb * (L + 4 * H * D + 4 * (L / 2 + 1)); /* packed int16 w_qb + its int8 load */
}

/* The sim kernel's fp32 copies of w_k and w_proj, its row buffers and token block; the
 * builder's slot permutation (int32) and the oracle's slot writers (long) over the whole
 * cache. */
double ug_lip8_scratch(const ug_params *P)
{
    double hid = (double)ug_p_int(P, "hidden"), heads = (double)ug_p_int(P, "heads"), d = (double)ug_p_int(P, "d"),
           slots = (double)ug_p_int(P, "blocks") * (double)ug_p_int(P, "block_size");
    return 4 * (hid * (d + heads) + 5 * d + 2 * heads + d) + ug_lip8_kernel_block_bytes(hid, heads, d, 0) + 12 * slots +
           2 * d * UG_NUM_BYTES;
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
            if (u != floor(u)) ug_det_sincos2pi(u - floor(u), &s, &c);    /* angle 0: exactly (0, 1) */
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

void ug_lip_params_read(const ug_case *c, ug_lip_params *p) { read_params(c, p); }

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

/* The RoPE tables of a case: position tables [T, R/2] serve both halves of the rotation;
 * given tables [T, R] (params.tables given) keep one column per rotated element. */
typedef struct {
    const ug_tensor *cs, *sn;
    size_t half;
    int given;
} rope_tables;

/* The dense transform of a row when params.hadamard is given (NULL: the butterfly). */
static const ug_tensor *dense_hadamard(const ug_case *c, const lip_params *p, const char *name)
{
    return p->given_hadamard ? ug_case_input(c, name) : NULL;
}

/* u = v.H (u[j] = sum_i v[i] H[i,j]), exact: the given dense transform, not normalised. */
static void dense_transform(ug_ar *ar, ug_num *v, size_t d, const ug_tensor *h)
{
    ug_num *u = v + d;                            /* the caller's row buffer holds 2d numbers */
    ug_dot_nd_cols(ar, v, h->values, d, d, d, u); /* ug_dot_nd per column, one pass over h's rows */
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
 * oracle's own scale (judged output indices, -1 when the case judges none). */
typedef struct {
    int codes, scales, view;
} quant_outs;

static int judged(const ug_selection *sel, int o) { return o >= 0 && o < sel->n_out; }

/* Emits output o's selected codes among flat indices base + [lo, hi): v/s (NaN when s is
 * NaN, a block with a NaN or inf; 0 in an all-zero block). */
static void codes_emit(ug_ar *ar, const ug_selection *sel, int o, size_t base, size_t lo, size_t hi, const ug_num *v,
                       int zero, ug_num s)
{
    if (!judged(sel, o)) return;
    size_t b, e;
    ug_selection_range(sel, o, base + lo, base + hi, &b, &e);
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
        if (!judged(sel, os[i])) continue;
        size_t w = os[i] == q->scales ? ns : d;
        ug_selection_range(sel, os[i], row * w, (row + 1) * w, &b, &e);
        if (b < e) return 1;
    }
    return 0;
}

/* The exact scale of a finite block: E8M0 (or the kernel's neighbour, mx_scale), amax/448
 * (fp8) or amax/127 (int8). */
static ug_num block_scale(ug_ar *ar, ug_lip_format fmt, ug_num amax, double kernel)
{
    if (fmt == UG_LIP_MX) return mx_scale(ar, amax, kernel);
    return ug_div(ar, amax, ug_c(ar, fmt == UG_LIP_FP8 ? 448.0 : 127.0));
}

/* Whether the kernel's exported scale can stand for the scale its codes were made with:
 * positive and finite; int8 also not an fp16 subnormal (the codes came from fp32 127/amax). */
static int kernel_scale_usable(ug_lip_format fmt, double sk)
{
    return isfinite(sk) && (fmt == UG_LIP_INT8 ? sk >= FP16_MIN_NORMAL : sk > 0);
}

/* Emits the selected codes and scales of one quantised row v[0..d) (row index row). The
 * codes are judged twice: against v/scale_kernel (consistency: the staged rule) and, in the
 * view, against v/scale_oracle, the oracle's own scale rounded as the kernel must export it
 * (fp8: fp32, MX: E8M0; int8: fp32, the scale its quantiser multiplies by before the fp16
 * export) (accuracy: a scale off by 1.8 % moves codes off by as much). */
static void quant_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, ug_lip_format fmt, const ug_num *v,
                       size_t d, size_t row, const quant_outs *q)
{
    int mx = fmt == UG_LIP_MX, i8 = fmt == UG_LIP_INT8;
    size_t block = mx ? MX_BLOCK : d, ns = d / block, sb, se;
    for (size_t blk = 0; blk < ns; blk++) {
        size_t lo = blk * block, hi = lo + block, base = row * d;
        ug_selection_range(sel, q->scales, row * ns + blk, row * ns + blk + 1, &sb, &se);
        if (!block_finite(v + lo, block)) { /* the semantics: a NaN block (int8 codes 0: no NaN code) */
            ug_num code = ug_c(ar, i8 ? 0.0 : NAN);
            if (sb < se) ug_ar_emit(ar, q->scales, sb, ug_c(ar, NAN));
            codes_emit(ar, sel, q->codes, base, lo, hi, v, i8, code);
            codes_emit(ar, sel, q->view, base, lo, hi, v, i8, code);
            continue;
        }
        ug_num amax = absmax(ar, v + lo, block);
        double sk = ug_tload(&c->out[q->scales], row * ns + blk); /* staged: the kernel's scale */
        ug_num exact = block_scale(ar, fmt, amax, sk);
        if (sb < se) /* int8 rounds: the spec's fp16 scale (overflow to +inf is the spec's) */
            ug_ar_emit(ar, q->scales, sb, i8 ? ug_round(ar, exact, UG_DT_FP16) : exact);
        int zero = ug_v(amax) == 0.0;
        ug_num own = ug_round(ar, exact, mx ? UG_DT_E8M0 : UG_DT_FP32); /* rounds: the quantiser's scale */
        if (!zero && ug_v(own) == 0.0) own = exact; /* amax below 2^-150 of the divisor: fp32 holds no scale */
        ug_num s = kernel_scale_usable(fmt, sk) ? ug_c(ar, sk) : mx ? own : exact;
        codes_emit(ar, sel, q->codes, base, lo, hi, v, zero, s);
        codes_emit(ar, sel, q->view, base, lo, hi, v, zero, own);
    }
}

struct ug_lip_ctx {
    lip_params p;
    ug_lip_format fmt;
    const ug_tensor *q, *x, *wk, *gm, *bt, *wp, *slots, *hq, *hk; /* hq/hk NULL: butterfly */
    const ug_tensor *qn, *qns, *wqb, *wqs;                        /* int8's q source, else NULL */
    rope_tables rt;
    quant_outs qo, ko; /* q codes/scales/view, k cache codes/scales/view */
    int wo;            /* weights */
    ug_num *v;         /* a row and its scratch: 2d (or the heads' weight dots: H) */
    long *writer;      /* the token writing each cache slot, -1 for none */
    double *qrow;      /* int8 in a fused op: the token's q_norm codes [L] (a kernel output), else NULL */
    size_t *heads;     /* a token's heads with a selected q element */
    size_t *col0;      /* int8: their first columns in w_qb */
    int64_t *qdot;     /* int8: their integer dots, d a head */
    int32_t *qacc;     /* int8: the dots' int32 partial sums */
    /* the token block (plain arithmetics): tokens [blk0, blk0 + blkn) */
    size_t blk0, blkn;
    int blk_x, blk_q; /* its x.W taken (kd, wd) / its int8 q dots taken (bq) */
    ug_num *kd, *wd;  /* x.W_k [TB*d], x.W_proj [TB*H] */
    int8_t *ba;       /* int8: the block's q_norm codes [TB*L] */
    int32_t *bq, *bp; /* int8: their dots with every w_qb column [TB*H*d]; ug_i8_gemm's scratch */
    ug_i8_packed wqp; /* int8: w_qb packed, on first use */
};

#define TOKEN_BLOCK 32

/* q[t,h,:] exact: the bf16 input (fp8, MX) or the int8 dequantisation
 * dot[i] * q_norm_scale[t] * w_qb_scale[col], col = h*D + i (dot: the head's int8 dots). */
static void q_source(const ug_lip_ctx *k, ug_ar *ar, size_t t, size_t h, const int64_t *dot, ug_num *v)
{
    size_t d = (size_t)k->p.d, row = t * (size_t)k->p.heads + h;
    if (!k->qn) {
        for (size_t i = 0; i < d; i++) v[i] = ug_c(ar, ug_tload(k->q, row * d + i));
        return;
    }
    ug_num sq = ug_c(ar, ug_tload(k->qns, t));
    for (size_t i = 0; i < d; i++)
        v[i] = ug_mul(ar, ug_mul(ar, ug_c(ar, (double)dot[i]), sq), ug_c(ar, ug_tload(k->wqs, h * d + i)));
}

/* Token t's heads with a selected q element (into k->heads); int8: their dots (k->qdot). */
static size_t q_heads(const ug_lip_ctx *k, const ug_selection *sel, size_t t)
{
    size_t d = (size_t)k->p.d, H = (size_t)k->p.heads, ns = k->fmt == UG_LIP_MX ? d / MX_BLOCK : 1, nh = 0;
    for (size_t h = 0; h < H; h++)
        if (row_wanted(sel, &k->qo, t * H + h, d, ns)) k->heads[nh++] = h;
    if (!k->qn || !nh) return nh;
    size_t L = (size_t)k->qn->shape[1];
    const double *a = k->qrow; /* a kernel output (no fp64 values): decoded */
    if (a)
        for (size_t j = 0; j < L; j++) k->qrow[j] = ug_tload(k->qn, t * L + j);
    else
        a = k->qn->values + t * L;
    if (k->blk_q) { /* the block's dots: every column */
        const int32_t *bq = k->bq + (t - k->blk0) * H * d;
        for (size_t w = 0; w < nh; w++)
            for (size_t i = 0; i < d; i++) k->qdot[w * d + i] = bq[k->heads[w] * d + i];
        return nh;
    }
    for (size_t w = 0; w < nh; w++) k->col0[w] = k->heads[w] * d;
    /* w_qb is int8 (the op's declaration): read in row order, every wanted head at once */
    ug_int8_col_dots(a, k->wqb->data, (size_t)k->wqb->shape[1], L, k->col0, nh, d, k->qacc, k->qdot);
    return nh;
}

static void q_rows(const ug_lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t d = (size_t)k->p.d, H = (size_t)k->p.heads, nh = q_heads(k, sel, t);
    for (size_t w = 0; w < nh; w++) {
        size_t h = k->heads[w], row = t * H + h;
        size_t mark = ug_ar_mark(ar);
        q_source(k, ar, t, h, k->qdot + w * d, k->v);
        rope_hadamard(ar, k->v, d, &k->rt, t, k->hq);
        quant_emit(c, ar, sel, k->fmt, k->v, d, row, &k->qo);
        ug_ar_release(ar, mark);
    }
}

static void weights_row(const ug_lip_ctx *k, ug_ar *ar, const ug_selection *sel, size_t t)
{
    size_t H = (size_t)k->p.heads, hid = (size_t)k->p.hidden, b, e;
    int o = k->wo;
    if (!judged(sel, o)) return;
    ug_selection_range(sel, o, t * H, (t + 1) * H, &b, &e);
    if (b == e) return;
    size_t mark = ug_ar_mark(ar);
    ug_num cst = ug_rsqrt(ar, ug_c(ar, (double)(H * (size_t)k->p.d)));
    const double *x = k->x->values + t * hid;
    int all = (e - b) * 4 >= H; /* most heads wanted: every head's dot in one row-order pass over w_proj */
    const ug_num *dots = k->blk_x ? k->wd + (t - k->blk0) * H : k->v;
    if (all && !k->blk_x) ug_dot_d_cols(ar, x, k->wp->values, H, hid, H, k->v);
    for (; b < e; b++) {
        size_t h = sel->idx[o][b] - t * H;
        ug_num w = ug_mul(ar, all || k->blk_x ? dots[h] : ug_dot_d(ar, x, 1, k->wp->values + h, H, hid), cst);
        ug_ar_emit(ar, o, b, k->fmt == UG_LIP_INT8 ? ug_round(ar, w, UG_DT_FP16) : w); /* int8 rounds: fp16 output */
    }
    ug_ar_release(ar, mark);
}

/* The k row of token t (written to slot): LayerNorm(x.W_k) (or RMSNorm with k_norm rmsnorm:
 * v*rstd*gamma with rstd from the mean of squares, the reference suite's k norm), RoPE,
 * Hadamard, quantised. */
static void k_row(const ug_lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t, size_t slot)
{
    size_t d = (size_t)k->p.d, hid = (size_t)k->p.hidden, ns = k->fmt == UG_LIP_MX ? d / MX_BLOCK : 1;
    ug_num *v = k->v, *sq = k->v + d; /* sq: the transform's scratch, free until then */
    if (!row_wanted(sel, &k->ko, slot, d, ns)) return;
    size_t mark = ug_ar_mark(ar);
    if (k->blk_x)
        memcpy(v, k->kd + (t - k->blk0) * d, d * sizeof *v);
    else
        ug_dot_d_cols(ar, k->x->values + t * hid, k->wk->values, d, hid, d, v);
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
    quant_emit(c, ar, sel, k->fmt, v, d, slot, &k->ko);
    ug_ar_release(ar, mark);
}

/* Emits 0 for output o's selected elements in cache slots no token writes (w elements a slot). */
static void empty_emit(ug_ar *ar, const ug_selection *sel, int o, size_t w, const long *writer, double value)
{
    for (size_t i = 0; judged(sel, o) && i < sel->n[o]; i++)
        if (writer[sel->idx[o][i] / w] < 0) ug_ar_emit(ar, o, i, ug_c(ar, value));
}

/* Cache slots no token writes: code 0, scale 0 (fp8, int8) or 2^-127 (MX). */
static void empty_slots(const ug_lip_ctx *k, ug_ar *ar, const ug_selection *sel)
{
    size_t d = (size_t)k->p.d, ns = k->fmt == UG_LIP_MX ? d / MX_BLOCK : 1;
    empty_emit(ar, sel, k->ko.codes, d, k->writer, 0.0);
    empty_emit(ar, sel, k->ko.view, d, k->writer, 0.0);
    empty_emit(ar, sel, k->ko.scales, ns, k->writer, k->fmt == UG_LIP_MX ? 0x1p-127 : 0.0);
}

/* The output names of each format (the fp8 and MX ops share theirs). */
static const ug_lip_names *own_names(ug_lip_format fmt)
{
    static const ug_lip_names f8 = {
        "q_fp8", "q_scale", "k_cache", "k_scale", "weights", "q_fp8@oracle_scale", "k_cache@oracle_scale"};
    static const ug_lip_names i8 = {
        "q_i8", "q_scale", "k_cache", "k_scale", "weights", "q_i8@oracle_scale", "k_cache@oracle_scale"};
    return fmt == UG_LIP_INT8 ? &i8 : &f8;
}

static void bind_inputs(ug_lip_ctx *k, const ug_case *c)
{
    k->x = ug_case_input(c, "x"), k->wk = ug_case_input(c, "w_k");
    k->gm = ug_case_input(c, "ln_gamma"), k->bt = ug_case_input(c, "ln_beta"), k->wp = ug_case_input(c, "w_proj");
    k->slots = ug_case_input(c, "slot_mapping");
    k->rt = (rope_tables){ug_case_input(c, "cos"), ug_case_input(c, "sin"), (size_t)k->p.rope / 2, k->p.given_tables};
    k->hq = dense_hadamard(c, &k->p, "hadamard_q"), k->hk = dense_hadamard(c, &k->p, "hadamard_k");
    if (k->fmt == UG_LIP_INT8) {
        k->q = NULL;
        k->qn = ug_case_input(c, "q_norm"), k->qns = ug_case_input(c, "q_norm_scale");
        k->wqb = ug_case_input(c, "w_qb"), k->wqs = ug_case_input(c, "w_qb_scale");
    } else {
        k->q = ug_case_input(c, "q");
        k->qn = k->qns = k->wqb = k->wqs = NULL;
    }
}

ug_lip_ctx *ug_lip_open(const ug_case *c, ug_lip_format fmt, const ug_lip_names *names)
{
    return ug_lip_open_ex(c, fmt, names, NULL, NULL, NULL);
}

ug_lip_ctx *ug_lip_open_ex(const ug_case *c, ug_lip_format fmt, const ug_lip_names *names, const ug_lip_params *p,
                           const ug_tensor *q_norm, const ug_tensor *q_norm_scale)
{
    ug_lip_ctx *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    if (p)
        k->p = *p;
    else
        read_params(c, &k->p);
    k->fmt = fmt;
    if (!names) names = own_names(fmt);
    bind_inputs(k, c);
    if (fmt == UG_LIP_INT8 && q_norm) { /* a fused op: q_norm is its own output, the kernel's codes */
        k->qn = q_norm, k->qns = q_norm_scale;
        k->qrow = malloc((size_t)q_norm->shape[1] * sizeof *k->qrow);
        if (!k->qrow) {
            ug_lip_close(k, NULL, NULL);
            return NULL;
        }
    }
    k->qo = (quant_outs){ug_case_judged_find(c, names->q_codes), ug_case_judged_find(c, names->q_scale),
                         ug_case_judged_find(c, names->q_view)};
    k->ko = (quant_outs){ug_case_judged_find(c, names->k_cache), ug_case_judged_find(c, names->k_scale),
                         ug_case_judged_find(c, names->k_view)};
    k->wo = ug_case_judged_find(c, names->weights);
    size_t d = (size_t)k->p.d, n_slots = (size_t)(k->p.blocks * k->p.block_size);
    size_t H = (size_t)k->p.heads;
    k->v = malloc((2 * d > H ? 2 * d : H) * sizeof *k->v); /* a row + scratch, or a token's head weights */
    k->heads = malloc(H * sizeof *k->heads);
    k->col0 = malloc(H * sizeof *k->col0);
    k->qdot = malloc(H * d * sizeof *k->qdot);
    k->qacc = malloc(H * d * sizeof *k->qacc);
    k->writer = malloc(n_slots * sizeof *k->writer);
    k->kd = malloc(TOKEN_BLOCK * (d + H) * sizeof *k->kd);
    k->wd = k->kd ? k->kd + TOKEN_BLOCK * d : NULL;
    if (k->qn) {
        size_t L = (size_t)k->qn->shape[1];
        k->ba = malloc(TOKEN_BLOCK * L + 1);
        k->bq = malloc(TOKEN_BLOCK * H * d * sizeof *k->bq);
        k->bp = malloc(TOKEN_BLOCK * (L / 2 + 1) * sizeof *k->bp);
    }
    if (!k->v || !k->heads || !k->col0 || !k->qdot || !k->qacc || !k->writer || !k->kd ||
        (k->qn && (!k->ba || !k->bq || !k->bp))) {
        ug_lip_close(k, NULL, NULL);
        return NULL;
    }
    for (size_t s = 0; s < n_slots; s++) k->writer[s] = -1;
    return k;
}

/* The block's int8 q dots with every w_qb column (w_qb packed on first use); -1 when out of
 * memory for the packing (the per-token dots stay). */
static int block_q(ug_lip_ctx *k)
{
    size_t L = (size_t)k->qn->shape[1], n = (size_t)k->wqb->shape[1];
    if (!k->wqp.p && ug_i8_pack(k->wqb->data, n, L, n, &k->wqp)) return -1;
    for (size_t r = 0; r < k->blkn; r++)
        for (size_t j = 0; j < L; j++) /* codes in [-128, 127]: exact */
            k->ba[r * L + j] =
                (int8_t)(k->qrow ? ug_tload(k->qn, (k->blk0 + r) * L + j) : k->qn->values[(k->blk0 + r) * L + j]);
    ug_i8_gemm(k->ba, L, k->blkn, &k->wqp, k->bq, n, k->bp);
    return 0;
}

/* A new block from token t when t is past the last one: its products taken together where
 * at least half its tokens want them (the x.W's: a weight or k element selected; the q dots:
 * a quarter of the heads), and only in the plain arithmetics (MPFR numbers live in the
 * arena, row by row). */
static void token_block(ug_lip_ctx *k, ug_ar *ar, const ug_selection *sel, size_t t)
{
    if (k->blkn && t >= k->blk0 && t < k->blk0 + k->blkn) return;
    size_t d = (size_t)k->p.d, H = (size_t)k->p.heads, hid = (size_t)k->p.hidden, T = (size_t)k->p.tokens;
    size_t ns = k->fmt == UG_LIP_MX ? d / MX_BLOCK : 1, m = T - t < TOKEN_BLOCK ? T - t : TOKEN_BLOCK;
    k->blk0 = t, k->blkn = m, k->blk_x = k->blk_q = 0;
    if (!ug_ar_plain(ar)) return;
    size_t want_x = 0, want_q = 0;
    for (size_t r = t; r < t + m; r++) {
        size_t b = 0, e = 0, nh = 0;
        long slot = (long)ug_tload(k->slots, r);
        if (judged(sel, k->wo)) ug_selection_range(sel, k->wo, r * H, (r + 1) * H, &b, &e);
        want_x += e > b || (slot >= 0 && row_wanted(sel, &k->ko, (size_t)slot, d, ns));
        for (size_t h = 0; k->qn && h < H; h++) nh += row_wanted(sel, &k->qo, r * H + h, d, ns);
        want_q += nh * 4 >= H;
    }
    if (want_x * 2 >= m) {
        ug_dot_d_rows(ar, k->x->values + t * hid, hid, m, k->wk->values, d, hid, d, k->kd, d);
        ug_dot_d_rows(ar, k->x->values + t * hid, hid, m, k->wp->values, H, hid, H, k->wd, H);
        k->blk_x = 1;
    }
    if (k->qn && want_q * 2 >= m) k->blk_q = block_q(k) == 0;
}

void ug_lip_token(ug_lip_ctx *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t)
{
    token_block(k, ar, sel, t);
    long slot = (long)ug_tload(k->slots, t);
    if (slot >= 0) k->writer[slot] = (long)t;
    q_rows(k, c, ar, sel, t);
    weights_row(k, ar, sel, t);
    if (slot >= 0) k_row(k, c, ar, sel, t, (size_t)slot);
}

void ug_lip_close(ug_lip_ctx *k, ug_ar *ar, const ug_selection *sel)
{
    if (!k) return;
    if (ar && sel) empty_slots(k, ar, sel);
    free(k->v);
    free(k->writer);
    free(k->qrow);
    free(k->heads);
    free(k->col0);
    free(k->qdot);
    free(k->qacc);
    free(k->kd);
    free(k->ba);
    free(k->bq);
    free(k->bp);
    ug_i8_packed_free(&k->wqp);
    free(k);
}

int ug_lip8_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_lip_ctx *k = ug_lip_open(c, ug_lip_format_of(c->def->op), NULL);
    if (!k) return -1;
    for (size_t t = 0; t < (size_t)k->p.tokens; t++) ug_lip_token(k, c, ar, sel, t);
    ug_lip_close(k, ar, sel);
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
