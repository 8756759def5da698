/* flash_attention_mha.c — sim kernel and planted-bug mutants for flash_attention_mha, the
 * variable-length multi-head attention forward (FlashAttention-2 style):
 *     o[t,h,:] = softmax_j(scale * q[t,h,:].k[j,h,:]) . v[j,h,:],  lse[t,h] = ln sum_j exp(scale*s_tj)
 * over the keys j of t's batch element (cu_seqlens_q/k), causal bottom-right aligned.
 *
 * Device model: per (batch element, head) the queries are cut into 64-row tiles and the
 * keys into 64-key tiles; causal key tiles beyond a query tile's last visible key are
 * skipped. Scores are fp32 dot products times the fp32 scale; an online softmax keeps
 * the running row max m and sum l in fp32 and rescales the fp32 output accumulator by
 * exp(m_old - m_new). l sums the fp32 probabilities; P is cast to the input dtype before
 * the P.V matmul (fp32 accumulation), as a cube unit takes its operands. At the end
 * o = acc * (1/l) is rounded once to the dtype and lse = m + ln(l) stays fp32. A query tile
 * whose keys all fit one key tile (64) casts the normalised weights P/l instead (fp32
 * division, then the cast) and takes o = acc: the reference kernel's path for a row whose
 * keys fit its one 320-key tile, which its test's golden follows. The running m and
 * l are also written as the optional softmax_max and softmax_sum (fp32). A row
 * that sees no key (causal, k shorter than q) gives o = 0 and lse = -inf. Special values as
 * the op's semantics state: the row max propagates NaN (a NaN score makes the row NaN),
 * and P.V skips keys whose score is -inf (unseen or dropped), so NaN/inf in their v
 * never leaks in.
 *
 * Speed: each key tile is transposed once per (batch element, head) and its q.k computed for all 64 rows with the
 * vectorised loops of attn_vec.h (lanes = keys for q.k, = d for P.V), which keep every fp32
 * sum in its declared order: the outputs are those of the row-at-a-time loops, bit for
 * bit (tests/test_kernel_digests.sh).
 *
 * Legal variants (other correct kernels, which must pass every case: the false-alarm set):
 * 16-key tiles (a query tile whose keys fit 16 casts P/l, longer ones cast P); 320-key
 * tiles, the reference kernel's (rows whose keys fit 320 cast the normalised P/l); two
 * passes (one key tile holding the whole row: the row max first, then one pass of exp, sum
 * and P.V, P cast unnormalised and o = acc * (1/l), as in the FA2 path); approximate functions
 * (legal_fn_ulps: every exp, the rescale's included, and the log of lse moved by 3 fp32 ulps
 * off libm's, ug_sim_fn_ulps; the contract allows exp and log within 4 ulps). */
#include <math.h>
#include <stdlib.h>

#include "core/ops.h"
#include "kernels/sim/attention/attn_vec.h"
#include "kernels/sim/simlib.h"
#include "op_params.h"

#define FA_BQ 64
#define FA_BK 64
#define FA_BK_REF 320 /* legal_tile320: the reference kernel's key tile */

typedef struct {
    long heads, dim, causal;
    float scale;
    int dt; /* input dtype */
    const float *q, *k, *v;
    ug_variant_code bug;
    long bk;     /* keys per key tile: FA_BK, or a legal variant's (a multiple of UG_AV_COLS) */
    int fn_ulps; /* ulps every exp and log is moved by (ug_sim_fn_ulps): 0, or legal_fn_ulps' */
} fa_ctx;

/* Keys query row i of an element with lq queries and lk keys may see (a prefix). */
static long visible(const fa_ctx *x, long i, long lq, long lk)
{
    if (!x->causal) return lk;
    long n = x->bug == UG_VAR_MUT_CAUSAL_TOPLEFT ? i + 1 : i + 1 + lk - lq; /* bug: top-left aligned */
    return n < 0 ? 0 : n > lk ? lk : n;
}

/* Per-kernel scratch of the tile loop. */
typedef struct {
    float *acc;    /* [FA_BQ, D] fp32 output accumulators of a query tile */
    float *kt;     /* [cdiv(Lk, bk), D, bk] a (batch element, head)'s key tiles transposed (attn_vec.h) */
    float *dots;   /* [FA_BQ, bk] q.k of the tile, unscaled */
    float *s, *pr; /* [bk] each */
    int *live;     /* [bk] */
} fa_work;

/* Online-softmax step of one query row over one key tile: dots are its q.k, the first
 * nvis keys are visible; m, l, acc its running max, sum and output accumulator; v the
 * tile's first value row (stride HD). */
static void row_step(const fa_ctx *x, fa_work *w, const float *dots, long nk, long nvis, const float *v, float *m,
                     float *l, float *acc, int single)
{
    size_t D = (size_t)x->dim, HD = (size_t)x->heads * D;
    float tm = -INFINITY, *s = w->s, *pr = w->pr;
    for (long c = 0; c < nk; c++) {
        s[c] = c < nvis ? dots[c] * x->scale : -INFINITY;      /* rounds: fp32 */
        tm = isnan(tm) || isnan(s[c]) ? NAN : fmaxf(tm, s[c]); /* NaN propagates */
    }
    float m_new = isnan(*m) || isnan(tm) ? NAN : fmaxf(*m, tm);
    if (m_new == -INFINITY) return; /* nothing visible yet */
    float za = *m - m_new;          /* rounds: fp32 (-inf when nothing was visible before) */
    float alpha = *m == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(za), za, x->fn_ulps); /* rounds: fp32 exp */
    float ts = 0.0f;
    size_t n = 0;
    for (long c = 0; c < nk; c++) {
        float z = s[c] - m_new;                                                    /* rounds: fp32 */
        pr[c] = s[c] == -INFINITY ? 0.0f : ug_sim_fn_ulps(expf(z), z, x->fn_ulps); /* rounds: fp32 exp */
        ts += pr[c];                                                               /* rounds: fp32 */
        if (s[c] != -INFINITY) w->live[n++] = (int)c;                              /* P.V skips keys scored -inf */
    }
    *l = *l * alpha + ts;         /* rounds: fp32 */
    for (long c = 0; c < nk; c++) /* rounds: P (single: P/l, fp32 division first) cast to the input dtype for P.V */
        pr[c] = ug_av_round_to(x->dt, single ? pr[c] / *l : pr[c]);
    float acc_alpha = x->bug == UG_VAR_MUT_NO_RESCALE && *m != -INFINITY ? 1.0f : alpha; /* bug: no rescale */
    ug_av_pv(acc, acc_alpha, pr, w->live, n, v, HD, D); /* rounds: fp32 P.V in key order, acc*alpha + P.V */
    *m = m_new;
}

/* The optional row max and sum of a finished query row (the reference's M and L): the
 * running m and l as the online softmax left them, in fp32. */
static void row_max_sum(const fa_ctx *x, float m, float l, float *mo, float *lo)
{
    *mo = x->bug == UG_VAR_MUT_MAX_LOG2 ? m * (float)M_LOG2E : m; /* bug: max in an exp2 softmax's log2 domain */
    *lo = x->bug != UG_VAR_MUT_SUM_RECIP ? l
          : l > 0.0f                     ? 1.0f / l
                                         : 0.0f; /* bug: the reciprocal o is normalised with */
}

/* The o and lse rows of a finished query row. */
static void row_finish(const fa_ctx *x, float m, float l, const float *acc, float *o, float *lse, int single)
{
    float inv = l > 0.0f ? (single ? 1.0f : 1.0f / l) : 0.0f; /* rounds: fp32 reciprocal (single: P was normalised) */
    for (long d = 0; d < x->dim; d++) o[d] = acc[d] * inv;    /* rounds: fp32 */
    if (l == 0.0f)
        *lse = -INFINITY;
    else if (x->bug == UG_VAR_MUT_LSE_LOG2)
        *lse = m * (float)M_LOG2E + log2f(l); /* bug: log2 domain kept */
    else
        *lse = m + ug_sim_fn_ulps(logf(l), l, x->fn_ulps);             /* rounds: fp32 */
    if (x->bug == UG_VAR_MUT_LSE_BF16) *lse = ug_sim_round_bf16(*lse); /* bug: lse kept in bf16 (rounds: RNE) */
}

/* One query tile [i0, i0+nq) of element (q0 tokens, k0 keys offset), head h: writes o and
 * lse rows, and the rows of the optional row max and sum (mo, lo [Tq, H]). Per key tile: K
 * transposed once, the tile's q.k for all rows (attn_vec.h), then each row's online-softmax step. */
static void query_tile(const fa_ctx *x, long q0, long lq, long k0, long lk, long h, long i0, long nq, float *o,
                       float *lse, float *mo, float *lo, fa_work *w)
{
    size_t D = (size_t)x->dim, HD = (size_t)x->heads * D;
    float m[FA_BQ], l[FA_BQ];
    for (long r = 0; r < nq; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        for (size_t d = 0; d < D; d++) w->acc[r * D + d] = 0.0f;
    }
    const float *qt = x->q + (size_t)(q0 + i0) * HD + (size_t)h * D;
    long kend = visible(x, i0 + nq - 1, lq, lk), bk = x->bk; /* causal: later key tiles are skipped */
    /* one key tile: P/l is cast, not P (the reference kernel's path); legal_two_pass keeps the FA2 cast of P */
    int single = kend <= bk && x->bug != UG_VAR_LEGAL_TWO_PASS;
    for (long j0 = 0; j0 < kend; j0 += bk) {
        long nk = kend - j0 < bk ? kend - j0 : bk;
        size_t kofs = (size_t)(k0 + j0) * HD + (size_t)h * D;
        const float *kt = w->kt + (size_t)(j0 / bk) * D * (size_t)bk;
        ug_av_scores(qt, HD, (size_t)nq, kt, (size_t)bk, ug_av_cols((size_t)nk), D, w->dots,
                     (size_t)bk); /* rounds: fp32 acc */
        for (long r = 0; r < nq; r++)
            row_step(x, w, w->dots + r * bk, nk, visible(x, i0 + r, lq, lk) - j0, x->v + kofs, &m[r], &l[r],
                     w->acc + r * D, single);
    }
    for (long r = 0; r < nq; r++) {
        size_t row = (size_t)(q0 + i0 + r) * (size_t)x->heads + (size_t)h;
        row_finish(x, m[r], l[r], w->acc + r * D, o + row * D, lse + row, single);
        row_max_sum(x, m[r], l[r], mo + row, lo + row);
    }
}

/* The longest key sequence, in keys. */
static long longest_keys(const float *cuk, long batch)
{
    long most = 0;
    for (long b = 0; b < batch; b++) most = (long)(cuk[b + 1] - cuk[b]) > most ? (long)(cuk[b + 1] - cuk[b]) : most;
    return most;
}

/* Columns of the staged key tiles: the longest key sequence, in whole tiles of bk keys. */
static size_t kt_cols(const float *cuk, long batch, long bk)
{
    return (size_t)(longest_keys(cuk, batch) + bk - 1) / (size_t)bk * (size_t)bk;
}

/* Every key tile of one (batch element, head) transposed once into kt, tile after tile. */
static void stage_keys(const fa_ctx *x, long k0, long lk, long h, float *kt)
{
    size_t D = (size_t)x->dim, HD = (size_t)x->heads * D;
    long bk = x->bk;
    for (long j0 = 0; j0 < lk; j0 += bk) {
        long nk = lk - j0 < bk ? lk - j0 : bk;
        ug_av_stage_kt(x->k + (size_t)(k0 + j0) * HD + (size_t)h * D, HD, (size_t)nk, D,
                       kt + (size_t)(j0 / bk) * D * (size_t)bk, (size_t)bk);
    }
}

static int fa_kernel(const ulpgym_call *call, char *err, size_t errlen, int bug)
{
    const ulpgym_tensor *q, *k, *v, *cq, *ck, *o, *lse, *mx, *sm,
        **slots[] = {&q, &k, &v, &cq, &ck, &o, &lse, &mx, &sm};
    if (ug_sim_bind(call, "q k v cu_seqlens_q cu_seqlens_k o lse softmax_max? softmax_sum?", slots, err, errlen))
        return -2;
    ug_params p;
    if (ug_sim_params_parse(call, &p, err, errlen)) return -2;
    const ug_flash_attention_mha_params *params = UG_P(flash_attention_mha, &p);
    fa_ctx x = {.heads = q->shape[1],
                .dim = q->shape[2],
                .causal = params->causal,
                .dt = q->dtype,
                .bug = bug,
                .fn_ulps = bug == UG_VAR_LEGAL_FN_ULPS ? UG_SIM_FN_ULPS : 0};
    double scale = params->scale; /* exact: an fp32 value; 0 is the 1/sqrt(D) sentinel */
    x.scale = scale == 0.0 ? (float)(1.0 / sqrt((double)x.dim)) : (float)scale; /* rounds: fp32 */
    ug_params_free(&p);
    size_t tq = (size_t)q->shape[0], tk = (size_t)k->shape[0], HD = (size_t)(x.heads * x.dim);
    long batch = cq->shape[0] - 1;
    float *cu = malloc(2 * (size_t)(batch + 1) * sizeof *cu), *buf = NULL;
    int *live = NULL;
    x.bk = FA_BK;
    if (cu) {
        ug_sim_load(cq, 0, (size_t)batch + 1, cu);
        ug_sim_load(ck, 0, (size_t)batch + 1, cu + batch + 1);
        if (bug == UG_VAR_LEGAL_TILE16 || bug == UG_VAR_LEGAL_TILE320)
            x.bk = bug == UG_VAR_LEGAL_TILE16 ? 16 : FA_BK_REF;
        if (bug == UG_VAR_LEGAL_TWO_PASS)
            x.bk = (long)ug_av_cols((size_t)longest_keys(cu + batch + 1, batch)); /* the row */
        if (x.bk < 1) x.bk = UG_AV_COLS;
        size_t bk = (size_t)x.bk;
        buf = malloc(((tq + 2 * tk) * HD + tq * HD + 3 * tq * (size_t)x.heads + FA_BQ * (size_t)x.dim +
                      (size_t)x.dim * kt_cols(cu + batch + 1, batch, x.bk) + FA_BQ * bk + 2 * bk) *
                     sizeof *buf);
        live = malloc(bk * sizeof *live);
    }
    if (!buf || !cu || !live) {
        free(buf);
        free(cu);
        free(live);
        return -1;
    }
    float *qf = buf, *kf = qf + tq * HD, *vf = kf + tk * HD, *of = vf + tk * HD, *lf = of + tq * HD;
    float *mof = lf + tq * (size_t)x.heads, *lof = mof + tq * (size_t)x.heads; /* the optional row max and sum */
    fa_work w;
    w.acc = lof + tq * (size_t)x.heads;
    w.kt = w.acc + FA_BQ * (size_t)x.dim;
    w.dots = w.kt + (size_t)x.dim * kt_cols(cu + batch + 1, batch, x.bk);
    w.s = w.dots + FA_BQ * (size_t)x.bk;
    w.pr = w.s + x.bk;
    w.live = live;
    ug_sim_load(q, 0, tq * HD, qf);
    ug_sim_load(k, 0, tk * HD, kf);
    ug_sim_load(v, 0, tk * HD, vf);
    x.q = qf;
    x.k = kf;
    x.v = vf;
    for (long b = 0; b < batch; b++) {
        long q0 = (long)cu[b], lq = (long)cu[b + 1] - q0, k0 = (long)cu[batch + 1 + b],
             lk = (long)cu[batch + 2 + b] - k0;
        for (long h = 0; h < x.heads; h++) {
            stage_keys(&x, k0, lk, h, w.kt);
            for (long i0 = 0; i0 < lq; i0 += FA_BQ)
                query_tile(&x, q0, lq, k0, lk, h, i0, lq - i0 < FA_BQ ? lq - i0 : FA_BQ, of, lf, mof, lof, &w);
        }
    }
    ug_sim_store(o, 0, tq * HD, of);
    ug_sim_store(lse, 0, tq * (size_t)x.heads, lf);
    if (mx) ug_sim_store(mx, 0, tq * (size_t)x.heads, mof); /* provided (an older caller may not pass them) */
    if (sm) ug_sim_store(sm, 0, tq * (size_t)x.heads, lof);
    free(buf);
    free(cu);
    free(live);
    return 0;
}

const ug_kernel_fn ug_sim_flash_attention_mha = fa_kernel;
