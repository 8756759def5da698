/* flash_attention_forward.c — the exact forward o and lse of every row (see
 * flash_attention_forward.h): a fast certified path over whole rows, and
 * flash_attention_mha's oracle (the engine path) for the elements it cannot settle.
 *
 * The fast path, per (batch element b, head h) and tile of query rows, exact in the bound:
 *   scores  s_j = fl(fl(q.k_j) * scale) as a blocked product Q K^T in double;
 *           |s_j - sigma_j| <= Delta = scale (gamma_D |q| max|k_j| + D 2^-1074) + 2^-53 max|s_j|
 *           (Cauchy-Schwarz for sum |q_i k_ji|, norms inflated by 2^-30);
 *   weights w_j = exp(s_j - m), m the computed max: o and lse do not depend on the shift,
 *           so m is an exact constant of the definition. exp's argument is off by at most
 *           Theta = Delta + 2^-53 (m - min s_j), libm's exp within 2 ulp (as arith.h
 *           assumes): |w_j - exact| <= eps' w_j + alpha' (alpha: exp underflowing);
 *   sums    T = sum_j w_j, N_d = sum_j w_j v_jd (blocked product W V, any order): gamma_n;
 *           the bound's sum_j w_j |v_jd| taken as max_j |v_jd| T / (1 - gamma_n), or where
 *           that is too loose to settle an element, computed for its row;
 *   o_d = N_d / T and lse = m + ln T with the quotient and logarithm error propagated
 *           (file's row_finish), every bound inflated by 2^-40 for its own roundings.
 * An element is kept when the whole interval rounds to one value of its dtype (the
 * engine's CERT rule, ug_cert_round) and that value is not zero (whose sign the interval
 * may not decide); the rest go to the engine. So both paths store the correctly rounded
 * exact value, bit for bit: tests/test_op_flash_attention_mha_grad.c compares them on
 * every element of several cases. */
#include "oracles/attention/flash_attention_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/attention/flash_attention_common.h"
#include "oracles/oracle.h"

#define ROW_TILE 64 /* query rows whose scores and weights are held at once */
#define INFLATE (1.0 + 0x1p-40)
#define NORM_INFLATE (1.0 + 0x1p-30)
#define EXP_UNDERFLOW 0x1p-1073 /* the absolute error of exp in double's subnormal range (2 ulp) */

/* ---- blocked double matrix product ---------------------------------------------------------- */

/* 8-double vectors through memcpy into locals, never passed by value (as attn_vec.c): one
 * register in the x86-64-v4 clone, two in the AVX2 one. */
typedef double fwd_v8 __attribute__((vector_size(64)));
#define LD8(v, p) memcpy(&(v), (p), sizeof(v))
#define ST8(p, v) memcpy((p), &(v), sizeof(v))

/* Compiled for AVX2 as well and picked at run time on x86-64 (no clones under the
 * sanitizers). Any instruction set gives a result within the same bound. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target_clones)
#define FWD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef FWD_CLONES
#define FWD_CLONES
#endif

/* C[M x N] += A[M x K] B[K x N], all row-major with leading dimensions lda, ldb, ldc.
 * Panels of 256 k by 256 columns keep B's panel in cache; 4 rows x 8 columns of C stay in
 * registers across a panel's k. Each element is a plain recursive sum of rounded products
 * (gamma_K bounds it whatever the order). */
FWD_CLONES static void gemm_acc(long M, long N, long K, const double *A, long lda, const double *B, long ldb, double *C,
                                long ldc)
{
    enum { KC = 256, NC = 256 };
    for (long k0 = 0; k0 < K; k0 += KC) {
        long k1 = k0 + KC < K ? k0 + KC : K;
        for (long j0 = 0; j0 < N; j0 += NC) {
            long j1 = j0 + NC < N ? j0 + NC : N, jv = j0 + (j1 - j0) / 8 * 8;
            for (long i = 0; i < M; i += 4) {
                long rows = M - i < 4 ? M - i : 4;
                const double *a[4];
                double *c[4];
                for (long r = 0; r < 4; r++) { /* a short block repeats its last row: computed, not stored */
                    long ri = i + (r < rows ? r : rows - 1);
                    a[r] = A + ri * lda, c[r] = C + ri * ldc;
                }
                for (long j = j0; j < jv; j += 8) {
                    fwd_v8 acc[4];
                    for (long r = 0; r < 4; r++) LD8(acc[r], c[r] + j);
                    for (long k = k0; k < k1; k++) {
                        fwd_v8 b0;
                        LD8(b0, B + k * ldb + j);
                        for (long r = 0; r < 4; r++) acc[r] += a[r][k] * b0;
                    }
                    for (long r = 0; r < rows; r++) ST8(c[r] + j, acc[r]);
                }
                for (long r = 0; r < rows; r++)
                    for (long j = jv; j < j1; j++) {
                        double s = c[r][j];
                        for (long k = k0; k < k1; k++) s += a[r][k] * B[k * ldb + j];
                        c[r][j] = s;
                    }
            }
        }
    }
}

/* ---- the certified rows ---------------------------------------------------------------------- */

static double gamma_n(long n) { return (double)n * 0x1p-53 / (1.0 - (double)n * 0x1p-53); }

typedef struct {
    const ug_fa_params *p;
    const double *q, *k, *v; /* the whole decoded tensors */
    ug_tensor *o, *lse;      /* where kept values go */
    unsigned char *unsure_o; /* [Tq*H*D] 1: the engine decides */
    unsigned char *unsure_l; /* [Tq*H] */
    double *kt;              /* [D][lk] the element's keys of head h, transposed */
    double *w;               /* [ROW_TILE][lk] scores, then weights */
    double *num;             /* [ROW_TILE][D] sum_j w_j v_jd */
    double *vmax;            /* [D] max_j |v_jd| over the element's keys */
    double *absn;            /* [D] sum_j w_j |v_jd| of one row, when needed */
    double kmax;             /* max_j |k_j| (2-norm, inflated) */
    long b, h, lq, lk;
} fwd_work;

/* What a row keeps between its weights and its outputs. */
typedef struct {
    long n;                  /* visible keys; 0: o = 0, lse = -inf */
    int bad;                 /* a non-finite q or bound: the engine decides the row */
    double m, T, eps, alpha; /* shift, sum of weights, weight error eps' w + alpha' */
} fwd_row;

static int all_finite(const double *x, long n)
{
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Marks every element of row r = t*H + h for the engine. */
static void row_unsure(fwd_work *w, size_t r)
{
    size_t D = (size_t)w->p->dim;
    memset(w->unsure_o + r * D, 1, D);
    w->unsure_l[r] = 1;
}

/* Stores v (bound e) into element i of t when the interval settles a nonzero value; else
 * marks it for the engine. */
static void keep_or_defer(ug_tensor *t, size_t i, double v, double e, unsigned char *unsure)
{
    double g;
    if (ug_cert_round(t->dtype, v, e, &g) && g != 0.0)
        ug_dtype_store(t->dtype, t->data, i, g);
    else
        unsure[i] = 1;
}

/* Scores -> weights of row i (local) held in wr[0..n), zeros up to nmax; fills *row. */
static void row_weights(const fwd_work *w, long i, double *wr, long nmax, fwd_row *row)
{
    const ug_fa_params *p = w->p;
    size_t D = (size_t)p->dim;
    const double *qr = w->q + ((size_t)(p->cu_q[w->b] + i) * (size_t)p->heads + (size_t)w->h) * D;
    long n = row->n;
    double qn = 0;
    for (size_t d = 0; d < D; d++) qn += qr[d] * qr[d];
    qn = sqrt(qn) * NORM_INFLATE;
    double m = -INFINITY, lo = INFINITY;
    for (long j = 0; j < n; j++) {
        wr[j] *= p->scale;
        m = wr[j] > m ? wr[j] : m;
        lo = wr[j] < lo ? wr[j] : lo;
    }
    double smax = fmax(fabs(m), fabs(lo));
    double delta = p->scale * (gamma_n((long)D) * qn * w->kmax + (double)D * 0x1p-1074) + 0x1p-53 * smax;
    double theta = (delta + 0x1p-53 * (m - lo)) * INFLATE;
    double eps = (expm1(theta) * (1 + 0x1p-51) + 0x1p-51) * INFLATE;
    double T = 0;
    for (long j = 0; j < n; j++) T += wr[j] = exp(wr[j] - m);
    for (long j = n; j < nmax; j++) wr[j] = 0.0;
    row->m = m;
    row->T = T;
    row->eps = eps / (1 - eps) * INFLATE;
    row->alpha = EXP_UNDERFLOW * (1 + row->eps);
    row->bad = !isfinite(m) || !isfinite(T) || !isfinite(theta) || !(eps < 0.5);
}

/* a[d] = sum_j w_j |v_jd| over the row's n keys (wr its weights): the bound's own
 * magnitude, where max_j |v_jd| T is too loose (values of very different sizes). */
static void row_abs_sums(const fwd_work *w, const double *wr, long n, double *a)
{
    const ug_fa_params *p = w->p;
    long D = p->dim, HD = p->heads * D;
    const double *v0 = w->v + ((size_t)p->cu_k[w->b] * (size_t)HD + (size_t)(w->h * D));
    for (long d = 0; d < D; d++) a[d] = 0;
    for (long j = 0; j < n; j++)
        for (long d = 0; d < D; d++) a[d] += wr[j] * fabs(v0[j * HD + d]);
}

/* o and lse of row i (local) from its weights wr and numerators nr[0..D). Each o element is
 * first bounded with max_j |v_jd| in place of its magnitude; if that leaves one unsettled,
 * the row's magnitudes sum_j w_j |v_jd| are computed and the unsettled ones tried again. */
static void row_finish(fwd_work *w, long i, const double *wr, const double *nr, const fwd_row *row)
{
    const ug_fa_params *p = w->p;
    size_t D = (size_t)p->dim, r = (size_t)(p->cu_q[w->b] + i) * (size_t)p->heads + (size_t)w->h;
    if (row->bad) {
        row_unsure(w, r);
        return;
    }
    if (row->n == 0) { /* sees no key: o = 0, lse = -inf, as the definition says */
        for (size_t d = 0; d < D; d++) ug_dtype_store(w->o->dtype, w->o->data, r * D + d, 0.0);
        ug_dtype_store(UG_DT_FP32, w->lse->data, r, -INFINITY);
        return;
    }
    double n = (double)row->n, g = gamma_n(row->n), T = row->T;
    double rel = (g + row->eps) / (1 - g) * INFLATE; /* (gamma + eps') per unit of sum w |v| */
    double eT = rel * T + n * row->alpha;            /* |T - exact T| */
    double Tlo = (T - eT) / INFLATE;
    if (!(Tlo > 0)) {
        row_unsure(w, r);
        return;
    }
    int loose = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (!loose) break;
            row_abs_sums(w, wr, row->n, w->absn);
        }
        for (size_t d = 0; d < D; d++) {
            size_t idx = r * D + d;
            if (pass == 1 && !w->unsure_o[idx]) continue;
            double od = nr[d] / T, vm = w->vmax[d], mag = pass ? w->absn[d] / (1 - g) * INFLATE : vm * T;
            double eN = rel * mag + n * row->alpha * vm + n * 0x1p-1074;
            double e = ((eN + fabs(od) * (1 + 0x1p-52) * eT) / Tlo + 0x1p-53 * fabs(od)) * INFLATE + 0x1p-1074;
            w->unsure_o[idx] = 0;
            keep_or_defer(w->o, idx, od, e, w->unsure_o);
            loose |= w->unsure_o[idx];
        }
    }
    double lt = log(T), l = row->m + lt;
    double el = (eT / Tlo + 0x1p-51 * fabs(lt)) * INFLATE + 0x1p-52 * fabs(l) + 0x1p-1074;
    keep_or_defer(w->lse, r, l, el, w->unsure_l);
}

/* One tile of query rows [i0, i1) of group (b, h). */
static void tile_fast(fwd_work *w, long i0, long i1, fwd_row *rows)
{
    const ug_fa_params *p = w->p;
    long D = p->dim, HD = p->heads * D, nmax = ug_fa_visible(p, w->b, i1 - 1), M = i1 - i0;
    const double *q0 = w->q + ((size_t)(p->cu_q[w->b] + i0) * (size_t)HD + (size_t)(w->h * D));
    const double *v0 = w->v + ((size_t)p->cu_k[w->b] * (size_t)HD + (size_t)(w->h * D));
    memset(w->w, 0, (size_t)(M * w->lk) * sizeof *w->w);
    memset(w->num, 0, (size_t)(M * D) * sizeof *w->num);
    if (nmax > 0) gemm_acc(M, nmax, D, q0, HD, w->kt, w->lk, w->w, w->lk); /* q.k_j */
    for (long i = i0; i < i1; i++) {
        fwd_row *row = &rows[i - i0];
        double *wr = w->w + (i - i0) * w->lk;
        memset(row, 0, sizeof *row);
        row->n = ug_fa_visible(p, w->b, i);
        row->bad = !all_finite(q0 + (i - i0) * HD, D);
        if (row->bad || row->n == 0)
            memset(wr, 0, (size_t)nmax * sizeof *wr);
        else
            row_weights(w, i, wr, nmax, row);
    }
    if (nmax > 0) gemm_acc(M, D, nmax, w->w, w->lk, v0, HD, w->num, D); /* sum_j w_j v_j */
    for (long i = i0; i < i1; i++) row_finish(w, i, w->w + (i - i0) * w->lk, w->num + (i - i0) * D, &rows[i - i0]);
}

/* Group (b, h): its keys transposed, their norms, v's column maxima; then the row tiles. A
 * non-finite k or v among the element's keys leaves the whole group to the engine. */
static void group_fast(fwd_work *w, fwd_row *rows)
{
    const ug_fa_params *p = w->p;
    long D = p->dim, HD = p->heads * D;
    const double *k0 = w->k + (size_t)p->cu_k[w->b] * (size_t)HD + (size_t)(w->h * D);
    const double *v0 = w->v + (size_t)p->cu_k[w->b] * (size_t)HD + (size_t)(w->h * D);
    int finite = 1;
    w->kmax = 0;
    for (long d = 0; d < D; d++) w->vmax[d] = 0;
    for (long j = 0; j < w->lk; j++) {
        const double *kr = k0 + j * HD, *vr = v0 + j * HD;
        double kn = 0;
        for (long d = 0; d < D; d++) {
            w->kt[d * w->lk + j] = kr[d];
            kn += kr[d] * kr[d];
            w->vmax[d] = fmax(w->vmax[d], fabs(vr[d]));
        }
        finite &= all_finite(kr, D) && all_finite(vr, D);
        w->kmax = fmax(w->kmax, sqrt(kn) * NORM_INFLATE);
    }
    if (!finite || !isfinite(w->kmax)) {
        for (long i = 0; i < w->lq; i++) row_unsure(w, (size_t)(p->cu_q[w->b] + i) * (size_t)p->heads + (size_t)w->h);
        return;
    }
    for (long i0 = 0; i0 < w->lq; i0 += ROW_TILE) tile_fast(w, i0, i0 + ROW_TILE < w->lq ? i0 + ROW_TILE : w->lq, rows);
}

static void work_free(fwd_work *w)
{
    free(w->kt), free(w->w), free(w->num), free(w->vmax), free(w->absn), free(w->unsure_o), free(w->unsure_l);
}

/* The fast path over every group; unsure_o/unsure_l (allocated here) mark what it left. */
static int forward_fast(fwd_work *w)
{
    const ug_fa_params *p = w->p;
    long maxk = 1;
    for (long b = 0; b < p->batch; b++) maxk = p->lk[b] > maxk ? p->lk[b] : maxk;
    size_t rows = (size_t)p->tq * (size_t)p->heads, D = (size_t)p->dim;
    w->kt = malloc(D * (size_t)maxk * sizeof *w->kt);
    w->w = malloc((size_t)ROW_TILE * (size_t)maxk * sizeof *w->w);
    w->num = malloc((size_t)ROW_TILE * D * sizeof *w->num);
    w->vmax = malloc(D * sizeof *w->vmax);
    w->absn = malloc(D * sizeof *w->absn);
    w->unsure_o = calloc(rows * D + 1, 1);
    w->unsure_l = calloc(rows + 1, 1);
    if (!w->kt || !w->w || !w->num || !w->vmax || !w->absn || !w->unsure_o || !w->unsure_l) return -1;
    fwd_row tile_rows[ROW_TILE];
    for (long b = 0; b < p->batch; b++)
        for (long h = 0; h < p->heads; h++) {
            w->b = b, w->h = h, w->lq = p->lq[b], w->lk = p->lk[b];
            group_fast(w, tile_rows);
        }
    return 0;
}

/* ---- the engine path -------------------------------------------------------------------------- */

/* Runs flash_attention_mha's oracle on the elements of o and lse that `want` marks (every
 * element when want is NULL), over a forward case that borrows c's params and the decoded
 * q, k, v, cu_seqlens in vals, and stores the correctly rounded values. Returns how many
 * elements it evaluated, or -1. */
static long forward_engine(ug_case *c, double *const vals[5], ug_tensor *o, ug_tensor *lse,
                           unsigned char *const want[2], char *err, size_t errlen)
{
    const ug_op_def *fwd = ug_op_def_get(UG_OP_FLASH_ATTENTION_MHA);
    if (!fwd) {
        snprintf(err, errlen, "%s: needs flash_attention_mha linked in to build o and lse", ug_op_name(c->spec.op));
        return -1;
    }
    ug_case f;
    memset(&f, 0, sizeof f);
    f.spec = c->spec;     /* borrowed */
    f.params = c->params; /* borrowed: the forward declares the same params and derived sizes */
    f.def = fwd;
    for (int i = 0; i < 5; i++) { /* q, k, v, cu_seqlens_q, cu_seqlens_k */
        f.in[i] = c->in[i];
        f.in[i].values = vals[i];
    }
    f.n_in = 5;
    f.out[0] = *o;
    f.out[1] = *lse;
    f.n_out = 2;
    ug_selection sel = {0};
    int rc = ug_selection_build(&f, 0, &sel);
    long total = 0;
    for (int k = 0; !rc && k < sel.n_out; k++) { /* keep the wanted elements (outputs past lse: none) */
        size_t m = 0;
        for (size_t i = 0; i < sel.n[k]; i++)
            if (k < 2 && (!want || want[k][sel.idx[k][i]])) sel.idx[k][m++] = sel.idx[k][i];
        sel.n[k] = m;
        total += (long)m;
    }
    ug_oracle_result r;
    ug_oracle_opts opts;
    ug_oracle_opts_default(&opts);
    opts.sample = 0;
    opts.naive = 0; /* only the exact values are wanted */
    opts.device_bound = 0;
    if (!rc && total) rc = ug_oracle_run_sel(&f, &opts, &sel, &r, err, errlen);
    if (!rc && total) {
        ug_tensor *dst[2] = {o, lse};
        for (int k = 0; k < 2; k++) /* exact: g is rounded to the tensor's dtype */
            for (size_t i = 0; i < r.sel.n[k]; i++)
                ug_dtype_store(dst[k]->dtype, dst[k]->data, r.sel.idx[k][i], r.g[k][i]);
        ug_oracle_result_free(&r);
    }
    ug_selection_free(&sel);
    if (rc && !err[0]) snprintf(err, errlen, "%s: out of memory building o and lse", ug_op_name(c->spec.op));
    return rc ? -1 : total;
}

int ug_fa_forward_exact(ug_case *c, ug_tensor *o, ug_tensor *lse, ug_fa_forward_path path, size_t *n_engine, char *err,
                        size_t errlen)
{
    ug_fa_params p;
    ug_fa_read(&c->params, &p);
    double *vals[5] = {0}; /* q, k, v, cu_seqlens_q, cu_seqlens_k, decoded */
    fwd_work w = {.p = &p, .o = o, .lse = lse};
    int rc = 0;
    for (int i = 0; i < 5; i++)
        if (!(vals[i] = ug_tload_all(&c->in[i]))) rc = -1;
    w.q = vals[0], w.k = vals[1], w.v = vals[2];
    if (!rc && path == UG_FA_FORWARD_FAST) rc = forward_fast(&w);
    long n = -1;
    if (!rc) {
        unsigned char *want[2] = {w.unsure_o, w.unsure_l};
        n = forward_engine(c, vals, o, lse, path == UG_FA_FORWARD_FAST ? want : NULL, err, errlen);
    }
    if (n_engine) *n_engine = n < 0 ? 0 : (size_t)n;
    work_free(&w);
    for (int i = 0; i < 5; i++) free(vals[i]);
    if (rc && !err[0]) snprintf(err, errlen, "%s: out of memory building o and lse", ug_op_name(c->spec.op));
    return rc || n < 0 ? -1 : 0;
}

double ug_fa_forward_scratch(const ug_params *P)
{
    ug_fa_params p;
    ug_fa_read(P, &p);
    double maxk = 1, D = (double)p.dim, rows = (double)p.tq * (double)p.heads;
    for (long b = 0; b < p.batch; b++) maxk = (double)p.lk[b] > maxk ? (double)p.lk[b] : maxk;
    return 8 * (D * maxk + ROW_TILE * maxk + ROW_TILE * D + 2 * D) + rows * D + rows;
}
