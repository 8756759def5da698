/* oracle.c — the oracle engine of oracle.h. */
#include "oracles/oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/philox.h"

void ug_oracle_opts_default(ug_oracle_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sample = UG_SAMPLE_DEFAULT;
    o->prec = UG_ORACLE_PREC;
    o->mode = UG_AR_CERT;
    o->naive = 1;
    o->device_bound = 1;
}

double *ug_tload_all(const ug_tensor *t)
{
    double *d = malloc((t->numel ? t->numel : 1) * sizeof *d);
    if (!d) return NULL;
    for (size_t i = 0; i < t->numel; i++) d[i] = ug_dtype_load(t->dtype, t->data, i);
    return d;
}

/* A few freed large arrays (values, flags, selections) kept per thread for the next run.
 * Why: at --sample all a run allocates six arrays of up to 8 bytes per element and frees
 * them, and glibc hands large blocks back to the kernel, so every run paid a page fault
 * per 4 KiB (and the unmap): 40 % of inplace_add_rmsnorm's engine time. At most
 * POOL_SLOTS blocks of POOL_MIN .. POOL_BYTES bytes are kept, POOL_BYTES in all. */
#define POOL_SLOTS 16
#define POOL_MIN ((size_t)64 << 10)
#define POOL_BYTES ((size_t)256 << 20)
static _Thread_local struct {
    void *p[POOL_SLOTS];
    size_t cap[POOL_SLOTS]; /* bytes each block holds at least */
    size_t bytes;
} pool;

/* A block of n bytes: the smallest pooled one that fits (its old contents, not zeroed), else
 * calloc's. */
static void *pool_take(size_t n)
{
    n = n ? n : 1;
    int best = -1;
    for (int i = 0; i < POOL_SLOTS; i++)
        if (pool.p[i] && pool.cap[i] >= n && (best < 0 || pool.cap[i] < pool.cap[best])) best = i;
    if (best < 0) return calloc(n, 1);
    void *p = pool.p[best];
    pool.bytes -= pool.cap[best];
    pool.p[best] = NULL;
    return p;
}

/* Frees block p of at least n bytes, or keeps it for pool_take. */
static void pool_put(void *p, size_t n)
{
    if (!p) return;
    for (int i = 0; n >= POOL_MIN && pool.bytes + n <= POOL_BYTES && i < POOL_SLOTS; i++)
        if (!pool.p[i]) {
            pool.p[i] = p, pool.cap[i] = n, pool.bytes += n;
            return;
        }
    free(p);
}

/* An array evaluate() fills, not zeroed: the oracle emits every selected element once, which
 * writes its value, its rounding, its unsure flag or its bound, and evaluate() fails the run
 * when the count of emits differs (zeroing them was a fifth of inplace_add_rmsnorm's engine
 * time at --sample all). */
static double *out_vals(size_t n) { return pool_take(n * sizeof(double)); }
static void free_vals(double *p, size_t n) { pool_put(p, n * sizeof(double)); }

/* The zeros of a naive array no pass writes (bench_cold): large ones as fresh anonymous pages,
 * which cost nothing until read (calloc from glibc's heap memsets them: 8 % of
 * inplace_add_rmsnorm's engine time), small ones from calloc. A header before the zeros keeps
 * the mapping's size for cold_free. */
#define COLD_MMAP ((size_t)64 << 10)
#define COLD_HEAD 8 /* doubles: 64 bytes, the zeros stay 64-byte aligned */
static double *cold_zeros(size_t n)
{
    size_t bytes = ((n ? n : 1) + COLD_HEAD) * sizeof(double);
    double *p = NULL;
    if (bytes < COLD_MMAP)
        p = calloc(1, bytes);
    else if ((p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
        p = NULL;
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    return p + COLD_HEAD;
}

static void cold_free(double *z)
{
    if (!z) return;
    double *p = z - COLD_HEAD;
    size_t bytes;
    memcpy(&bytes, p, sizeof bytes);
    if (bytes < COLD_MMAP)
        free(p);
    else
        munmap(p, bytes);
}

void ug_geom_last_dim(const ug_tensor *t, size_t row_tile, size_t col_tile, ug_geom *g)
{
    g->cols = t->ndim ? (size_t)t->shape[t->ndim - 1] : 1;
    g->rows = g->cols ? t->numel / g->cols : 0;
    g->row_tile = row_tile;
    g->col_tile = col_tile;
}

static void default_geometry(const ug_case *c, int o, ug_geom *g) { ug_geom_last_dim(&c->out[o], 16, 64, g); }

/* Adds v to a small set (linear probe is fine: sets hold at most ~64 entries). */
static void set_add(size_t *set, size_t *n, size_t cap, size_t v, size_t limit)
{
    if (v >= limit || *n >= cap) return;
    for (size_t i = 0; i < *n; i++)
        if (set[i] == v) return;
    set[(*n)++] = v;
}

/* Structural positions along one axis of length len with tile t: ends, tile edges
 * (t-1, t, 2t-1, 2t), the start of the tail tile and the element before it. */
static void axis_points(size_t *set, size_t *n, size_t cap, size_t len, size_t t)
{
    set_add(set, n, cap, 0, len);
    set_add(set, n, cap, len - 1, len);
    if (t && len > 1) {
        set_add(set, n, cap, t - 1, len);
        set_add(set, n, cap, t, len);
        set_add(set, n, cap, 2 * t - 1, len);
        set_add(set, n, cap, 2 * t, len);
        size_t tail = len / t * t;
        if (tail) {
            set_add(set, n, cap, tail, len);
            set_add(set, n, cap, tail - 1, len);
        }
    }
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int select_output(const ug_case *c, int o, size_t sample, size_t **idx_out, size_t *n_out)
{
    const ug_tensor *t = &c->out[o];
    if (sample == 0 || t->numel <= sample) {
        size_t *idx = pool_take(t->numel * sizeof *idx), n = t->numel; /* not zeroed: every entry is written below */
        if (!idx) return -1;
        for (size_t i = 0; i < n; i++) idx[i] = i;
        *idx_out = idx;
        *n_out = t->numel;
        return 0;
    }
    ug_geom g = {0};
    if (c->def->geometry)
        c->def->geometry(c, o, &g);
    else
        default_geometry(c, o, &g);
    if (g.rows * g.cols != t->numel) g = (ug_geom){0}, default_geometry(c, o, &g);
    size_t rows[24 + UG_GEOM_HOT], cols[64], nr = 0, nc = 0;
    for (size_t i = 0; i < g.n_hot; i++)
        set_add(rows, &nr, UG_GEOM_HOT, g.hot[i], g.rows); /* the op's hot rows first */
    axis_points(rows, &nr, nr + 12, g.rows, g.row_tile);
    size_t want_rows = sample / 32 < 16 ? (sample / 32 ? sample / 32 : 1) : 16;
    want_rows += g.n_hot;
    for (uint64_t k = 0; nr < want_rows && nr < g.rows && k < 64; k++) {
        uint32_t w[4];
        ug_rng_words(c->spec.seed, 0xC0DE0000u + (uint32_t)o, k, 7, w);
        set_add(rows, &nr, want_rows, w[0] % g.rows, g.rows);
    }
    size_t *idx = malloc(nr * 64 * sizeof *idx);
    if (!idx) return -1;
    size_t n = 0;
    size_t per_row = sample / nr < 64 ? sample / nr : 64;
    if (per_row < 1) per_row = 1;
    for (size_t r = 0; r < nr; r++) {
        nc = 0;
        axis_points(cols, &nc, per_row, g.cols, g.col_tile);
        for (uint64_t k = 0; nc < per_row && nc < g.cols && k < 256; k++) {
            uint32_t w[4];
            ug_rng_words(c->spec.seed, 0xC0DE1000u + (uint32_t)o, rows[r] * 256 + k, 7, w);
            set_add(cols, &nc, per_row, w[0] % g.cols, g.cols);
        }
        for (size_t j = 0; j < nc; j++) idx[n++] = rows[r] * g.cols + cols[j];
    }
    qsort(idx, n, sizeof *idx, cmp_size);
    *idx_out = idx;
    *n_out = n;
    return 0;
}

/* Output tensors get their own sample; a view (registry.h) checks its tensor's elements. */
int ug_selection_build(const ug_case *c, size_t sample, ug_selection *sel)
{
    memset(sel, 0, sizeof *sel);
    sel->n_out = ug_case_n_judged(c);
    for (int o = 0; o < sel->n_out; o++) {
        int t = ug_case_judged_tensor(c, o), rc = 0;
        if (o < c->n_out)
            rc = select_output(c, o, sample, &sel->idx[o], &sel->n[o]);
        else if ((sel->idx[o] = malloc((sel->n[t] ? sel->n[t] : 1) * sizeof(size_t))) != NULL) {
            memcpy(sel->idx[o], sel->idx[t], sel->n[t] * sizeof(size_t));
            sel->n[o] = sel->n[t];
        } else
            rc = -1;
        if (rc) {
            ug_selection_free(sel);
            return -1;
        }
    }
    return 0;
}

void ug_selection_free(ug_selection *sel)
{
    for (int o = 0; o < sel->n_out; o++) pool_put(sel->idx[o], sel->n[o] * sizeof(size_t)); /* holds at least n */
    memset(sel, 0, sizeof *sel);
}

size_t ug_selection_lower_bound(const ug_selection *sel, int o, size_t idx)
{
    size_t lo = 0, hi = sel->n[o];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sel->idx[o][mid] < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

long ug_selection_find(const ug_selection *sel, int o, size_t idx)
{
    size_t lo = ug_selection_lower_bound(sel, o, idx);
    return lo < sel->n[o] && sel->idx[o][lo] == idx ? (long)lo : -1;
}

void ug_selection_range(const ug_selection *sel, int o, size_t lo, size_t hi, size_t *b, size_t *e)
{
    *b = *e = 0;
    if (o < 0 || o >= sel->n_out) return;
    *b = *e = ug_selection_lower_bound(sel, o, lo);
    while (*e < sel->n[o] && sel->idx[o][*e] < hi) (*e)++;
}

static int copy_selection(const ug_selection *src, ug_selection *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->n_out = src->n_out;
    for (int o = 0; o < src->n_out; o++) {
        dst->n[o] = src->n[o];
        dst->idx[o] = malloc((src->n[o] ? src->n[o] : 1) * sizeof(size_t));
        if (!dst->idx[o]) return -1;
        if (src->n[o])
            memcpy(dst->idx[o], src->idx[o], src->n[o] * sizeof(size_t)); /* an empty output may have no idx */
    }
    return 0;
}

/* Evaluates the op's oracle on sel in arithmetic (mode, prec, naive dtype) into
 * gstar/g (and unsure when CERT). */
static int evaluate(const ug_case *c, const ug_selection *sel, ug_ar_mode mode, mpfr_prec_t prec, double **gstar,
                    double **g, unsigned char **unsure, double **bound, char *err, size_t errlen)
{
    ug_ar *ar = ug_ar_new(mode, prec, c->spec.dtype);
    if (!ar) {
        snprintf(err, errlen, "out of memory for the oracle");
        return -1;
    }
    ug_ar_sink sinks[UG_MAX_TENSORS];
    for (int o = 0; o < sel->n_out; o++) {
        sinks[o].dt = c->out[ug_case_judged_tensor(c, o)].dtype; /* a view rounds like its tensor */
        sinks[o].gstar = gstar[o];
        sinks[o].g = g[o];
        sinks[o].unsure = unsure ? unsure[o] : NULL;
        sinks[o].bound = bound ? bound[o] : NULL;
    }
    ug_ar_set_sink(ar, sinks, sel->n_out);
    int (*fn)(const ug_case *, ug_ar *, const ug_selection *) = c->def->oracle;
    if (mode == UG_AR_DEVICE && c->def->device_oracle) fn = c->def->device_oracle; /* the device's own order */
    int rc = fn(c, ar, sel);
    unsigned long emitted, n_unsure;
    size_t want = 0;
    ug_ar_counts(ar, &emitted, &n_unsure);
    for (int o = 0; o < sel->n_out; o++) want += sel->n[o];
    ug_ar_free(ar);
    if (rc)
        snprintf(err, errlen, "oracle of %s failed (%d)", ug_op_name(c->spec.op), rc);
    else if (emitted != want) { /* the arrays are not zeroed (out_vals): an element left out would be garbage */
        snprintf(err, errlen,
                 "oracle of %s emitted %lu values for its %zu selected elements (a bug: each is emitted once)",
                 ug_op_name(c->spec.op), emitted, want);
        rc = -1;
    }
    return rc;
}

/* Ziv's strategy for the exact fallback (docs/STANDARDS.md): the unsure elements are
 * evaluated at prec and 2*prec; those whose rounding (g to the dtype, or g* to double)
 * differs are evaluated again at 4*prec, 8*prec, ... up to UG_ORACLE_PREC_MAX, and each
 * element keeps the values of the highest precision it was evaluated at. z holds the
 * elements still being raised, their positions in r->sel, and their values at p ([0])
 * and at 2p ([1]). */
typedef struct {
    ug_selection sub;
    size_t *pos[UG_MAX_TENSORS];
    double *gs[2][UG_MAX_TENSORS], *g[2][UG_MAX_TENSORS];
} ziv_set;

static void ziv_free(ziv_set *z)
{
    for (int k = 0; k < z->sub.n_out; k++) {
        free(z->pos[k]);
        for (int s = 0; s < 2; s++) free(z->gs[s][k]), free(z->g[s][k]);
    }
    ug_selection_free(&z->sub);
}

/* Whether u[0..8) are all 0: the two loops of ziv_init skip eight flags at a time where so
 * (almost every flag is 0: byte loops over millions of flags were 7-11 % of apply_adamw's
 * engine time). */
static int eight_zero(const unsigned char *u)
{
    uint64_t w;
    memcpy(&w, u, sizeof w);
    return w == 0;
}

/* How many of u[0..n) are nonzero. */
static size_t count_nonzero(const unsigned char *u, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 8 <= n && eight_zero(u + i))
            i += 7;
        else
            c += u[i] != 0;
    }
    return c;
}

/* z: the elements marked unsure (arrays of their count: the selection may hold millions);
 * *total: how many. 0, or -1 out of memory. */
static int ziv_init(ziv_set *z, const ug_oracle_result *r, unsigned char **unsure, long *total)
{
    memset(z, 0, sizeof *z);
    z->sub.n_out = r->sel.n_out;
    *total = 0;
    for (int k = 0; k < z->sub.n_out; k++) {
        size_t n = count_nonzero(unsure[k], r->sel.n[k]); /* the elements the loop below takes */
        n += !n;
        z->sub.idx[k] = malloc(n * sizeof(size_t));
        z->pos[k] = malloc(n * sizeof(size_t));
        for (int s = 0; s < 2; s++) z->gs[s][k] = out_vals(n), z->g[s][k] = out_vals(n);
        if (!z->sub.idx[k] || !z->pos[k] || !z->gs[0][k] || !z->g[0][k] || !z->gs[1][k] || !z->g[1][k]) return -1;
        for (size_t i = 0; i < r->sel.n[k]; i++) {
            if (i + 8 <= r->sel.n[k] && eight_zero(unsure[k] + i))
                i += 7; /* eight sure elements */
            else if (unsure[k][i])
                z->pos[k][z->sub.n[k]] = i, z->sub.idx[k][z->sub.n[k]++] = r->sel.idx[k][i];
        }
        *total += (long)z->sub.n[k];
    }
    return 0;
}

static int same_value(double a, double b) { return a == b || (a != a && b != b); }

/* Elements whose values at p and 2p agree are settled: their 2p values go to r. The rest
 * stay in z (compacted) with their 2p values as the new p side, and go to r as well when
 * last (no higher precision follows). Returns how many stay. */
static long ziv_settle(ziv_set *z, ug_oracle_result *r, int last)
{
    long left = 0;
    for (int k = 0; k < z->sub.n_out; k++) {
        size_t m = 0;
        for (size_t j = 0; j < z->sub.n[k]; j++) {
            double gs = z->gs[1][k][j], g = z->g[1][k][j];
            int agree = same_value(g, z->g[0][k][j]) && same_value(gs, z->gs[0][k][j]);
            if (agree || last) r->gstar[k][z->pos[k][j]] = gs, r->g[k][z->pos[k][j]] = g;
            if (agree) continue;
            z->sub.idx[k][m] = z->sub.idx[k][j], z->pos[k][m] = z->pos[k][j];
            z->gs[0][k][m] = gs, z->g[0][k][m++] = g;
        }
        z->sub.n[k] = m;
        left += (long)m;
    }
    return left;
}

/* Re-evaluates in EXACT the elements marked unsure, raising the precision of those whose
 * rounding is not settled (ziv_set); returns how many were re-evaluated. */
static long exact_fallback(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, unsigned char **unsure,
                           char *err, size_t errlen)
{
    ziv_set z;
    long total = 0, left;
    int rc = ziv_init(&z, r, unsure, &total);
    if (rc) snprintf(err, errlen, "out of memory for the oracle");
    mpfr_prec_t p = o->prec, pmax = 2 * o->prec > UG_ORACLE_PREC_MAX ? 2 * o->prec : UG_ORACLE_PREC_MAX;
    if (!rc && total) rc = evaluate(c, &z.sub, UG_AR_EXACT, p, z.gs[0], z.g[0], NULL, NULL, err, errlen);
    for (left = total; !rc && left && 2 * p <= pmax; p *= 2) {
        int last = 4 * p > pmax;
        rc = evaluate(c, &z.sub, UG_AR_EXACT, 2 * p, z.gs[1], z.g[1], NULL, NULL, err, errlen);
        if (!rc) left = ziv_settle(&z, r, last);
        if (!rc && p == o->prec) r->n_raised = (unsigned long)left;
        if (!rc && last) r->n_unsettled = (unsigned long)left;
    }
    ziv_free(&z);
    return rc ? rc : total;
}

/* The device bound of every selected element (UG_AR_DEVICE), for the certified standard: of
 * the numeric outputs only (bound NULL for the others), since the certified standard holds a
 * discrete output (exact, boundary, top-k: ug_output_rule.cmp) to its discrete rule, and no
 * standard reads its bound. A whole paged cache judged exact is millions of elements. */
static int device_bound(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, char *err, size_t errlen)
{
    double *none[UG_MAX_TENSORS] = {0}; /* DEVICE writes the bound only */
    for (int k = 0; k < r->sel.n_out; k++) {
        const ug_output_rule *rule = ug_op_output_rule(c->def, ug_case_judged_name(c, k));
        if (rule && rule->cmp != UG_CMP_NUMERIC) continue;
        if (!(r->bound[k] = out_vals(r->sel.n[k]))) {
            snprintf(err, errlen, "out of memory for the oracle");
            return -1;
        }
    }
    return evaluate(c, &r->sel, UG_AR_DEVICE, o->prec, none, none, NULL, r->bound, err, errlen);
}

/* Self-check: up to 64 elements per output plus every fallback element, evaluated in
 * EXACT at prec and 2*prec; counts roundings that differ between the two or from r. */
static int self_check(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, char *err, size_t errlen)
{
    ug_selection sub;
    if (copy_selection(&r->sel, &sub)) return -1;
    for (int k = 0; k < sub.n_out; k++) {
        size_t step = sub.n[k] > 64 ? sub.n[k] / 64 : 1, m = 0;
        for (size_t i = 0; i < sub.n[k]; i += step) sub.idx[k][m++] = sub.idx[k][i];
        sub.n[k] = m;
    }
    double *g1s[UG_MAX_TENSORS] = {0}, *g1[UG_MAX_TENSORS] = {0}, *g2s[UG_MAX_TENSORS] = {0}, *g2[UG_MAX_TENSORS] = {0};
    int rc = 0;
    for (int k = 0; k < sub.n_out && !rc; k++) {
        g1s[k] = out_vals(sub.n[k]);
        g1[k] = out_vals(sub.n[k]);
        g2s[k] = out_vals(sub.n[k]);
        g2[k] = out_vals(sub.n[k]);
        if (!g1s[k] || !g1[k] || !g2s[k] || !g2[k]) rc = -1;
    }
    if (!rc) rc = evaluate(c, &sub, UG_AR_EXACT, o->prec, g1s, g1, NULL, NULL, err, errlen);
    if (!rc) rc = evaluate(c, &sub, UG_AR_EXACT, 2 * o->prec, g2s, g2, NULL, NULL, err, errlen);
    for (int k = 0; !rc && k < sub.n_out; k++)
        for (size_t i = 0; i < sub.n[k]; i++) {
            long pos = ug_selection_find(&r->sel, k, sub.idx[k][i]);
            double fast = pos >= 0 ? r->g[k][pos] : g1[k][i];
            int same = (g1[k][i] == g2[k][i] || (g1[k][i] != g1[k][i] && g2[k][i] != g2[k][i])) &&
                       (fast == g2[k][i] || (fast != fast && g2[k][i] != g2[k][i]));
            r->n_checked_twice++;
            if (!same) r->n_mismatch++;
        }
    for (int k = 0; k < sub.n_out; k++) {
        free_vals(g1s[k], sub.n[k]);
        free_vals(g1[k], sub.n[k]);
        free_vals(g2s[k], sub.n[k]);
        free_vals(g2[k], sub.n[k]);
    }
    ug_selection_free(&sub);
    return rc;
}

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Charges the CPU time since *t0 to pass, and restarts the clock. */
static void charge(ug_oracle_result *r, int pass, double *t0)
{
    double t = thread_cpu_s();
    r->cpu_s[pass] += t - *t0;
    *t0 = t;
}

/* The run on a selection r->sel already holds (ug_oracle_run hands its own over: at
 * --sample all a copy is 8 bytes of fresh memory per element, page faults included). */
static int run_on_result_sel(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, char *err, size_t errlen)
{
    const ug_selection *sel = &r->sel;
    unsigned char *unsure[UG_MAX_TENSORS] = {0};
    int rc = 0;
    double t0 = thread_cpu_s();
    for (int k = 0; !rc && k < sel->n_out; k++) {
        r->gstar[k] = out_vals(sel->n[k]);
        r->g[k] = out_vals(sel->n[k]);
        r->bench[k] = o->naive ? out_vals(sel->n[k]) : cold_zeros(sel->n[k]);
        unsure[k] = pool_take(sel->n[k]); /* CERT's emits write every flag (out_vals) */
        if (!r->gstar[k] || !r->g[k] || !r->bench[k] || !unsure[k]) rc = -1;
    }
    r->bench_cold = !o->naive;
    if (rc) snprintf(err, errlen, "out of memory for the oracle");
    if (!rc)
        rc = evaluate(c, &r->sel, o->mode, o->prec, r->gstar, r->g, o->mode == UG_AR_CERT ? unsure : NULL, NULL, err,
                      errlen);
    if (!rc && o->mode == UG_AR_CERT) {
        long n = exact_fallback(c, o, r, unsure, err, errlen);
        if (n < 0)
            rc = (int)n;
        else
            r->n_fallback = (unsigned long)n;
    }
    charge(r, UG_PASS_ENGINE, &t0);
    if (!rc && o->naive) { /* the naive values only: their nearest doubles are not kept */
        double *none[UG_MAX_TENSORS] = {0};
        rc = evaluate(c, &r->sel, UG_AR_NAIVE, o->prec, none, r->bench, NULL, NULL, err, errlen);
    }
    charge(r, UG_PASS_NAIVE, &t0);
    if (!rc && o->device_bound) rc = device_bound(c, o, r, err, errlen);
    charge(r, UG_PASS_DEVICE, &t0);
    if (!rc && o->self_check) rc = self_check(c, o, r, err, errlen);
    charge(r, UG_PASS_SELF_CHECK, &t0);
    for (int k = 0; k < sel->n_out; k++) pool_put(unsure[k], sel->n[k]);
    if (rc) ug_oracle_result_free(r);
    return rc;
}

int ug_oracle_run_sel(const ug_case *c, const ug_oracle_opts *o, const ug_selection *sel, ug_oracle_result *r,
                      char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (copy_selection(sel, &r->sel)) {
        ug_oracle_result_free(r);
        snprintf(err, errlen, "out of memory for the oracle");
        return -1;
    }
    return run_on_result_sel(c, o, r, err, errlen);
}

int ug_oracle_run(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, char *err, size_t errlen)
{
    ug_selection sel;
    if (ug_selection_build(c, o->sample, &sel)) {
        snprintf(err, errlen, "out of memory building the sample");
        return -1;
    }
    memset(r, 0, sizeof *r);
    r->sel = sel; /* the result owns it from here */
    return run_on_result_sel(c, o, r, err, errlen);
}

void ug_oracle_result_free(ug_oracle_result *r)
{
    for (int k = 0; k < UG_MAX_TENSORS; k++) {
        size_t n = k < r->sel.n_out ? r->sel.n[k] : 0; /* the arrays' length (0: free them) */
        free_vals(r->gstar[k], n);
        free_vals(r->g[k], n);
        if (r->bench_cold)
            cold_free(r->bench[k]); /* never written: not pooled (a pooled block is reused dirty) */
        else
            free_vals(r->bench[k], n);
        free_vals(r->bound[k], n);
    }
    ug_selection_free(&r->sel);
    memset(r, 0, sizeof *r);
}

void ug_oracle_output_scale(const ug_case *c, int out, double *mean_abs, double *max_abs)
{
    double sum = 0.0, max = 0.0;
    size_t n = c->out[out].numel, finite = 0;
    ug_selection sel = {.n_out = c->n_out};
    sel.idx[out] = malloc((n ? n : 1) * sizeof(size_t));
    if (sel.idx[out]) {
        for (size_t i = 0; i < n; i++) sel.idx[out][i] = i;
        sel.n[out] = n;
        ug_oracle_opts o;
        ug_oracle_opts_default(&o);
        o.mode = UG_AR_F64;
        o.naive = o.device_bound = o.self_check = 0;
        ug_oracle_result r;
        char err[128];
        if (ug_oracle_run_sel(c, &o, &sel, &r, err, sizeof err) == 0) {
            for (size_t i = 0; i < n; i++)
                if (isfinite(r.g[out][i])) {
                    double a = fabs(r.g[out][i]);
                    sum += a, finite++;
                    if (a > max) max = a;
                }
            ug_oracle_result_free(&r);
        }
        free(sel.idx[out]);
    }
    if (mean_abs) *mean_abs = finite ? sum / (double)finite : 0.0;
    if (max_abs) *max_abs = finite ? max : 0.0;
}
