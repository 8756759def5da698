/* attn_rows.c — exact softmax(s)·V for one query row, with the family's special-value
 * rule (see attn_rows.h).
 *
 * o_d = sum_j e_j v_jd / sum_j e_j with e_j = exp(s_j - max s) over the live keys: the max
 * shift is exact algebra (it cancels), and keeps the double-based arithmetics in range.
 * Only the selected output columns are summed; the scores and e_j are computed once per
 * row. Special values are decided in double before any arithmetic: their class does not
 * depend on rounding. */
#include "oracles/attention/attn_rows.h"
#include "oracles/attention/flash_attention_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/philox.h"

long ug_gl_attn_seq_len(uint64_t seed, const long *given, int ragged, long lo, long b, long batch, long ctx)
{
    if (given) return given[b];
    if (!ragged || b == batch - 1) return ctx;
    uint32_t w[4];
    ug_rng_words(seed, 0x6c656e73u, (uint64_t)b, 0, w);
    return lo + (long)(w[0] % (uint32_t)(ctx - lo + 1));
}

const long *ug_gl_attn_given_lens(const ug_params *P)
{
    const long *v;
    size_t n = ug_p_list(P, "context_lens", &v);
    return n == 1 && v[0] == 0 ? NULL : v;
}

int ug_gl_attn_check_lens(const ug_params *P, const char *op, char *err, size_t errlen)
{
    long batch = ug_p_int(P, "batch"), ctx = ug_p_int(P, "ctx"), sq = ug_p_int(P, "q_per_step");
    const long *v;
    size_t n = ug_p_list(P, "context_lens", &v);
    if (sq > ctx) {
        snprintf(err, errlen, "%s: param q_per_step %ld out of range (at most ctx = %ld)", op, sq, ctx);
        return -2;
    }
    if (!ug_gl_attn_given_lens(P)) return 0;
    if (ug_p_is(P, "lens", "ragged")) {
        snprintf(err, errlen, "%s: param context_lens lists the lengths; lens \"ragged\" cannot be given with it", op);
        return -2;
    }
    if (n != (size_t)batch) {
        snprintf(err, errlen, "%s: param context_lens has %zu entries, batch is %ld (one length per sequence)", op, n,
                 batch);
        return -2;
    }
    for (size_t b = 0; b < n; b++)
        if (v[b] < sq || v[b] > ctx) {
            snprintf(err, errlen, "%s: param context_lens[%zu] = %ld out of range (q_per_step..ctx = %ld..%ld)", op, b,
                     v[b], sq, ctx);
            return -2;
        }
    return 0;
}

int ug_gl_attn_check_paged(const ug_params *P, const char *op, char *err, size_t errlen)
{
    const long *lens;
    long batch = (long)ug_p_list(P, "actual_seqs", &lens), bs = ug_p_int(P, "block_size");
    long mb = ug_p_int(P, "max_blocks_per_seq"), nb = ug_p_int(P, "num_blocks"), sq = ug_p_int(P, "q_per_step");
    long needed = ug_p_int(P, "blocks_needed");
    if (nb < needed) {
        snprintf(err, errlen,
                 "%s: param num_blocks = %ld but the sequences need %ld blocks: the block table would "
                 "point past the cache",
                 op, nb, needed);
        return -2;
    }
    for (long b = 0; b < batch; b++) {
        if (lens[b] > mb * bs) {
            snprintf(err, errlen,
                     "%s: param actual_seqs[%ld] = %ld is longer than the table allows "
                     "(max_blocks_per_seq %ld * block_size %ld)",
                     op, b, lens[b], mb, bs);
            return -2;
        }
        if (lens[b] < sq) {
            snprintf(err, errlen, "%s: param actual_seqs[%ld] = %ld below q_per_step = %ld (each row needs a token)",
                     op, b, lens[b], sq);
            return -2;
        }
    }
    return 0;
}

int ug_gl_attn_build_paged(ug_case *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const long *lens;
    long batch = (long)ug_p_list(&c->params, "actual_seqs", &lens), bs = ug_p_int(&c->params, "block_size");
    long mb = ug_p_int(&c->params, "max_blocks_per_seq"), nb = ug_p_int(&c->params, "num_blocks");
    ug_tensor *bt = ug_case_input_mut(c, "block_tables"), *al = ug_case_input_mut(c, "actual_seqs");
    long *perm = malloc((size_t)nb * sizeof *perm), next = 0;
    if (!perm) return -1;
    for (long i = 0; i < nb; i++) perm[i] = i;
    for (long i = nb - 1; i > 0; i--) {
        uint32_t w[4];
        ug_rng_words(c->spec.seed, 0x676c6d62u, (uint64_t)i, 0, w);
        long j = (long)(w[0] % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (long b = 0; b < batch; b++) {
        ug_dtype_store(UG_DT_INT32, al->data, (size_t)b, (double)lens[b]);
        long n = (lens[b] + bs - 1) / bs;
        for (long i = 0; i < mb; i++) /* exact: small integers */
            ug_dtype_store(UG_DT_INT32, bt->data, (size_t)(b * mb + i), i < n ? (double)perm[next++] : -1.0);
    }
    free(perm);
    return 0;
}

static int all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Classes of the n scores: live[j] = 0 where q·k_j is -inf (scale > 0 keeps the sign);
 * returns 1 when some score is NaN or +inf (the row is NaN). Exact in class: q·k of
 * finite bf16 values never overflows a double. */
static int classify(const double *q, const double *k, size_t ldk, size_t dk, size_t n, unsigned char *live)
{
    int finite = all_finite(q, dk);
    for (size_t j = 0; j < n; j++) {
        live[j] = 1;
        if (finite && all_finite(k + j * ldk, dk)) continue;
        double d = 0;
        for (size_t i = 0; i < dk; i++) d += q[i] * k[j * ldk + i];
        if (isnan(d) || d == INFINITY) return 1;
        live[j] = d != -INFINITY;
    }
    return 0;
}

/* The value column v[j*ldv] takes over the live keys when one is not finite: NaN, +-inf,
 * or 0 when all are finite. */
static double column_special(const double *v, size_t ldv, size_t n, const unsigned char *live)
{
    double sp = 0;
    for (size_t j = 0; j < n; j++) {
        double x = v[j * ldv];
        if (!live[j] || isfinite(x)) continue;
        sp = sp == 0 || sp == x ? x : NAN;
    }
    return sp;
}

/* Key-major values (ldc 1), every key live, most of the row selected and every value of its
 * n keys finite (so no column takes a special value): each column's weighted sum
 * ug_dot_nd(e, v + d, ldv, n), all dv at once in one pass over v's rows (ug_dot_nd_cols: the
 * same numbers), into o. 0 when the row does not qualify (the caller goes column by column). */
static int row_sums(ug_ar *ar, const ug_num *e, const double *v, size_t ldv, size_t ldc, size_t dv, size_t n,
                    size_t n_live, int out, const ug_selection *sel, size_t row, ug_num *o)
{
    size_t b, end;
    if (!o || ldc != 1 || !n || n_live != n || !ug_attn_row_dense(sel, out, row, dv, &b, &end)) return 0;
    for (size_t j = 0; j < n; j++)
        if (!all_finite(v + j * ldv, dv)) return 0;
    ug_dot_nd_cols(ar, e, v, ldv, n, dv, o);
    return 1;
}

/* The keys of emit_query: k_j = k + j*ldk, and when kt is not NULL the same held transposed
 * (ug_gl_keys_transpose). */
typedef struct {
    const double *k, *kt;
    size_t ldk, ldkt;
} query_keys;

/* s[i] = scale * q·k_j for the live keys j in order (live[j]); their count. */
static size_t live_scores(ug_ar *ar, const double *q, const query_keys *K, size_t dk, size_t n,
                          const unsigned char *live, ug_num scale, ug_num *s)
{
    size_t n_live = 0;
    if (K->kt && ug_ar_plain(ar) && n) { /* every key's dot in one pass (ug_dot_d per key, bit for bit) */
        ug_dot_d_tile(ar, q, dk, 1, K->kt, K->ldkt, dk, n, s, n);
        for (size_t j = 0; j < n; j++)
            if (live[j]) s[n_live++] = ug_mul(ar, s[j], scale);
        return n_live;
    }
    for (size_t j = 0; j < n; j++)
        if (live[j]) s[n_live++] = ug_mul(ar, ug_dot_d(ar, q, 1, K->k + j * K->ldk, 1, dk), scale);
    return n_live;
}

/* The row's emission with value element (key j, column d) at v[j*ldv + d*ldc] (the public
 * forms pass key-major values, ldc = 1, which a dense row sums in one pass: row_sums). */
static int emit_query(ug_ar *ar, const double *q, const query_keys *K, size_t dk, size_t n, ug_num scale,
                      const double *v, size_t ldv, size_t ldc, size_t dv, ug_num *s, int out, const ug_selection *sel,
                      size_t *pos, size_t row, ug_num *max_sum)
{
    const double *k = K->k;
    size_t ldk = K->ldk;
    unsigned char *live = malloc(n ? n : 1);
    double *col = malloc((n ? n : 1) * sizeof *col);
    ug_num *sums = ldc == 1 ? malloc((dv ? dv : 1) * sizeof *sums) : NULL; /* row_sums' columns */
    if (!live || !col || (ldc == 1 && !sums)) {
        free(live);
        free(col);
        free(sums);
        return -1;
    }
    int nan_row = classify(q, k, ldk, dk, n, live);
    ug_num *e = s + n, total = {0};
    size_t n_live = 0;
    if (max_sum) /* a NaN row: both NaN; no live key: max -inf, sum 0 (overwritten below otherwise) */
        max_sum[0] = ug_c(ar, nan_row ? NAN : -INFINITY), max_sum[1] = ug_c(ar, nan_row ? NAN : 0.0);
    if (!nan_row) n_live = live_scores(ar, q, K, dk, n, live, scale, s);
    if (n_live) { /* s[0..n_live) now holds the live scores in key order */
        ug_num m = s[0];
        for (size_t j = 1; j < n_live; j++) m = ug_max(ar, m, s[j]);
        for (size_t j = 0; j < n_live; j++) e[j] = ug_exp(ar, ug_sub(ar, s[j], m));
        total = ug_sum(ar, e, n_live);
        if (max_sum) max_sum[0] = m, max_sum[1] = total;
        /* the semantics let a device multiply V by bf16 P (these ops are bf16): the device bound sees it */
        for (size_t j = 0; j < n_live; j++) e[j] = ug_dev_round(ar, e[j], UG_DT_BF16);
    }
    int whole = !nan_row && row_sums(ar, e, v, ldv, ldc, dv, n, n_live, out, sel, row, sums);
    for (; *pos < sel->n[out] && sel->idx[out][*pos] / dv == row; (*pos)++) {
        size_t d = sel->idx[out][*pos] % dv;
        const double *vd = v + d * ldc;
        double sp = whole ? 0 : nan_row ? NAN : n_live ? column_special(vd, ldv, n, live) : 0;
        ug_num o;
        if (whole) {
            o = ug_div(ar, sums[d], total);
        } else if (sp != 0 || !n_live) {
            o = ug_c(ar, sp); /* a special value, or zeros for a row with no live key */
        } else if (n_live == n) {
            o = ug_div(ar, ug_dot_nd(ar, e, vd, ldv, n), total);
        } else {
            for (size_t j = 0, i = 0; j < n; j++)
                if (live[j]) col[i++] = vd[j * ldv];
            o = ug_div(ar, ug_dot_nd(ar, e, col, 1, n_live), total);
        }
        ug_ar_emit(ar, out, *pos, o);
    }
    free(live);
    free(col);
    free(sums);
    return 0;
}

int ug_gl_attn_emit_query(ug_ar *ar, const double *q, const double *k, size_t ldk, size_t dk, size_t n, ug_num scale,
                          const double *v, size_t ldv, size_t dv, ug_num *s, int out, const ug_selection *sel,
                          size_t *pos, size_t row)
{
    query_keys K = {k, NULL, ldk, 0};
    return emit_query(ar, q, &K, dk, n, scale, v, ldv, 1, dv, s, out, sel, pos, row, NULL);
}

int ug_gl_attn_emit_query_kt(ug_ar *ar, const double *q, const double *k, size_t ldk, const double *kt, size_t ldkt,
                             size_t dk, size_t n, ug_num scale, const double *v, size_t ldv, size_t dv, ug_num *s,
                             int out, const ug_selection *sel, size_t *pos, size_t row)
{
    query_keys K = {k, kt, ldk, ldkt};
    return emit_query(ar, q, &K, dk, n, scale, v, ldv, 1, dv, s, out, sel, pos, row, NULL);
}

int ug_gl_attn_emit_query_max_sum(ug_ar *ar, const double *q, const double *k, size_t ldk, const double *kt,
                                  size_t ldkt, size_t dk, size_t n, ug_num scale, const double *v, size_t ldv,
                                  size_t dv, ug_num *s, int out, const ug_selection *sel, size_t *pos, size_t row,
                                  ug_num max_sum[2])
{
    query_keys K = {k, kt, ldk, ldkt};
    return emit_query(ar, q, &K, dk, n, scale, v, ldv, 1, dv, s, out, sel, pos, row, max_sum);
}

double *ug_gl_kt_alloc(const ug_ar *ar, size_t dk, size_t n, size_t *ldkt)
{
    *ldkt = n + 8;
    size_t bytes = dk * *ldkt * sizeof(double);
    return ug_ar_plain(ar) && bytes <= UG_GL_KT_MAX_BYTES ? malloc(bytes) : NULL;
}

double ug_gl_kt_scratch(double dk, double n)
{
    double bytes = 8 * dk * (n + 8);
    return bytes <= (double)UG_GL_KT_MAX_BYTES ? bytes : 0.0;
}

void ug_gl_keys_transpose(const double *k, size_t ldk, size_t dk, size_t n, double *kt, size_t ldkt)
{
    for (size_t j0 = 0; j0 < n; j0 += 8) /* 8 keys at a time: the reads stay in 8 rows */
        for (size_t d = 0; d < dk; d++)
            for (size_t j = j0; j < n && j < j0 + 8; j++) kt[d * ldkt + j] = k[j * ldk + d];
}

void ug_gl_attn_geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_geom_last_dim(&c->out[out], (size_t)c->out[0].shape[1], 64, g);
}

void ug_gl_paged_gather(const ug_gl_paged *p, long b, long g, long n, double *kg, double *v, size_t ldv, size_t ldc)
{
    size_t D = (size_t)p->dim;
    for (long t = 0; t < n; t++) {
        long phys = (long)ug_tload(p->bt, (size_t)(b * p->mb + t / p->bs));
        size_t at = (((size_t)phys * (size_t)p->bs + (size_t)(t % p->bs)) * (size_t)p->hkv + (size_t)g) * D;
        for (size_t d = 0; d < D; d++) {
            kg[(size_t)t * D + d] = ug_tload(p->kc, at + d);
            v[(size_t)t * ldv + d * ldc] = ug_tload(p->vc, at + d);
        }
    }
}

int ug_gl_attn_paged_emit(ug_ar *ar, const ug_gl_paged *p, int out, const ug_selection *sel)
{
    size_t D = (size_t)p->dim, maxlen = 1;
    for (long b = 0; b < p->batch; b++) maxlen = (size_t)p->lens[b] > maxlen ? (size_t)p->lens[b] : maxlen;
    size_t ldkt;
    double *kg = malloc((2 * maxlen + 1) * D * sizeof *kg);
    double *kt = ug_gl_kt_alloc(ar, D, maxlen, &ldkt); /* the keys transposed: all scores at once */
    ug_num *s = malloc(2 * maxlen * sizeof *s);
    if (!kg || !s) {
        free(kg), free(kt), free(s);
        return -1;
    }
    double *vg = kg + maxlen * D, *qr = vg + maxlen * D;
    long have_b = -1, have_g = -1; /* the (sequence, kv head) gathered: rows arrive sorted */
    size_t pos = 0;
    int rc = 0;
    while (pos < sel->n[out] && !rc) {
        size_t r = sel->idx[out][pos] / D, mark = ug_ar_mark(ar);
        long tok = (long)r / p->hq, b = tok / p->sq, g = (long)r % p->hq / (p->hq / p->hkv);
        if (b != have_b || g != have_g) { /* the group's query rows share its keys */
            ug_gl_paged_gather(p, b, g, p->lens[b], kg, vg, D, 1), have_b = b, have_g = g;
            if (kt) ug_gl_keys_transpose(kg, D, D, (size_t)p->lens[b], kt, ldkt);
        }
        for (size_t d = 0; d < D; d++) qr[d] = ug_tload(p->q, r * D + d);
        long n = ug_gl_attn_mtp_end(p->lens[b], p->sq, tok % p->sq); /* row i: its causal prefix */
        query_keys K = {kg, kt, D, ldkt};
        rc = emit_query(ar, qr, &K, D, (size_t)n, ug_c(ar, p->scale), vg, D, 1, D, s, out, sel, &pos, r, NULL);
        ug_ar_release(ar, mark);
    }
    free(kg);
    free(kt);
    free(s);
    return rc;
}
