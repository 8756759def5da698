/* triage_view.c — see triage_view.h. Errors are ulp errors in the output dtype,
 * |a - g*| / ulp(g*), as in docs/STANDARDS.md; a NaN/Inf mismatch counts as infinite. */
#include "cli/triage_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_text.h"

static const double bucket_edges[] = {0.5, 1, 2, 4, 16, 256, INFINITY};
static const char *bucket_names[] = {"<=0.5", "(0.5,1]", "(1,2]", "(2,4]", "(4,16]", "(16,256]", ">256", "NaN/Inf"};
#define N_BUCKETS 8

static double elem_ulp(const ug_exec_detail *d, int k, size_t i)
{
    double a = d->a[k][i], gs = d->oracle.gstar[k][i];
    if (isnan(a) && isnan(gs)) return 0;
    if (!isfinite(a) || !isfinite(gs)) return a == gs ? 0 : INFINITY;
    return fabs(a - gs) / ug_dtype_ulp(d->c.out[k].dtype, gs);
}

static void unravel(const ug_tensor *t, size_t idx, size_t *coord)
{
    for (int dd = t->ndim - 1; dd >= 0; dd--) {
        coord[dd] = idx % (size_t)t->shape[dd];
        idx /= (size_t)t->shape[dd];
    }
}

static void coord_text(const ug_tensor *t, size_t idx, char *buf, size_t len)
{
    size_t c[ULPGYM_MAX_DIMS], n = (size_t)snprintf(buf, len, "[");
    unravel(t, idx, c);
    for (int dd = 0; dd < t->ndim && n < len; dd++) n += (size_t)snprintf(buf + n, len - n, "%s%zu", dd ? "," : "", c[dd]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

typedef struct {
    size_t pos;
    double ulp;
} ranked;

static int by_ulp_desc(const void *a, const void *b)
{
    double x = ((const ranked *)a)->ulp, y = ((const ranked *)b)->ulp;
    return x < y ? 1 : x > y ? -1 : 0;
}

static ranked *rank(const ug_exec_detail *d, int k)
{
    size_t n = d->oracle.sel.n[k];
    ranked *r = malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; r && i < n; i++) r[i] = (ranked){i, elem_ulp(d, k, i)};
    if (r) qsort(r, n, sizeof *r, by_ulp_desc);
    return r;
}

void ug_triage_print_worst(const ug_exec_detail *d, int k, int nworst, FILE *f)
{
    const ug_tensor *t = &d->c.out[k];
    ranked *r = rank(d, k);
    if (!r) return;
    fprintf(f, "  worst elements of %s:\n", t->name);
    for (int j = 0; j < nworst && (size_t)j < d->oracle.sel.n[k]; j++) {
        size_t i = r[j].pos, idx = d->oracle.sel.idx[k][i];
        char where[96], av[64], gv[64], gr[64];
        coord_text(t, idx, where, sizeof where);
        ug_fmt_value(d->a[k][i], av, sizeof av);
        ug_fmt_value(d->oracle.gstar[k][i], gv, sizeof gv);
        ug_fmt_value(d->oracle.g[k][i], gr, sizeof gr);
        fprintf(f, "    %s  kernel %s  exact %s  rounded %s  %.3g ulp\n", where, av, gv, gr, r[j].ulp);
        for (int in = 0; in < d->c.n_in; in++) { /* inputs laid out like the output feed it elementwise */
            const ug_tensor *x = &d->c.in[in];
            if (x->numel != t->numel || x->ndim != t->ndim) continue;
            char xv[64];
            ug_fmt_value(ug_dtype_load(x->dtype, x->data, idx), xv, sizeof xv);
            fprintf(f, "        input %s%s = %s\n", x->name, where, xv);
        }
    }
    free(r);
}

static void histogram(const ug_exec_detail *d, int k, long *counts)
{
    memset(counts, 0, N_BUCKETS * sizeof *counts);
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
        double u = elem_ulp(d, k, i);
        int b = 0;
        if (isinf(u)) b = N_BUCKETS - 1;
        else
            while (u > bucket_edges[b]) b++;
        counts[b]++;
    }
}

void ug_triage_print_histogram(const ug_exec_detail *d, int k, FILE *f)
{
    long c[N_BUCKETS], peak = 1;
    histogram(d, k, c);
    for (int b = 0; b < N_BUCKETS; b++) peak = c[b] > peak ? c[b] : peak;
    fprintf(f, "  ulp error histogram of %s (%zu elements):\n", d->c.out[k].name, d->oracle.sel.n[k]);
    for (int b = 0; b < N_BUCKETS; b++) {
        char bar[41];
        int w = (int)(40.0 * (double)c[b] / (double)peak + 0.5);
        memset(bar, '#', (size_t)w);
        bar[w] = 0;
        fprintf(f, "    %-9s %8ld %s\n", bucket_names[b], c[b], bar);
    }
}

/* For each axis: the coordinate holding the largest share of the total ulp error; for
 * the last axis also per tile of 64. Reports axes whose top share is well above uniform. */
typedef struct {
    int axis;
    size_t at, tile;
    double share, uniform;
} cluster;

static int find_clusters(const ug_exec_detail *d, int k, cluster *out)
{
    const ug_tensor *t = &d->c.out[k];
    double total = 0;
    int n = 0;
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) total += fmin(elem_ulp(d, k, i), 1e6);
    if (!(total > 0)) return 0;
    for (int ax = 0; ax < t->ndim; ax++) {
        size_t len = (size_t)t->shape[ax], tile = ax == t->ndim - 1 && len > 64 ? 64 : 1;
        size_t bins = (len + tile - 1) / tile;
        double *mass = calloc(bins ? bins : 1, sizeof *mass);
        if (!mass) return n;
        for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
            size_t c[ULPGYM_MAX_DIMS];
            unravel(t, d->oracle.sel.idx[k][i], c);
            mass[c[ax] / tile] += fmin(elem_ulp(d, k, i), 1e6);
        }
        size_t best = 0;
        for (size_t b = 1; b < bins; b++) best = mass[b] > mass[best] ? b : best;
        if (bins > 1) out[n++] = (cluster){ax, best, tile, mass[best] / total, 1.0 / (double)bins};
        free(mass);
    }
    return n;
}

void ug_triage_print_clusters(const ug_exec_detail *d, int k, FILE *f)
{
    cluster c[ULPGYM_MAX_DIMS];
    int n = find_clusters(d, k, c);
    fprintf(f, "  where the error of %s clusters:\n", d->c.out[k].name);
    if (!n) fprintf(f, "    nowhere: the output has no error or a single position per axis\n");
    for (int i = 0; i < n; i++) {
        const char *verdict = c[i].share > 2 * c[i].uniform + 0.05 ? "concentrated" : "spread evenly";
        if (c[i].tile > 1)
            fprintf(f, "    axis %d, tile %zu (positions %zu..%zu): %.1f%% of the ulp error (uniform %.1f%%) — %s\n",
                    c[i].axis, c[i].at, c[i].at * c[i].tile, (c[i].at + 1) * c[i].tile - 1, 100 * c[i].share,
                    100 * c[i].uniform, verdict);
        else
            fprintf(f, "    axis %d, position %zu: %.1f%% of the ulp error (uniform %.1f%%) — %s\n", c[i].axis, c[i].at,
                    100 * c[i].share, 100 * c[i].uniform, verdict);
    }
}

cJSON *ug_triage_json(const ug_exec_detail *d, int k, int nworst)
{
    const ug_tensor *t = &d->c.out[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output", t->name);
    long c[N_BUCKETS];
    histogram(d, k, c);
    cJSON *h = cJSON_AddObjectToObject(o, "ulp_histogram");
    for (int b = 0; b < N_BUCKETS; b++) cJSON_AddNumberToObject(h, bucket_names[b], (double)c[b]);
    cJSON *w = cJSON_AddArrayToObject(o, "worst");
    ranked *r = rank(d, k);
    for (int j = 0; r && j < nworst && (size_t)j < d->oracle.sel.n[k]; j++) {
        size_t i = r[j].pos;
        char where[96], hex[40];
        coord_text(t, d->oracle.sel.idx[k][i], where, sizeof where);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "index", where);
        cJSON_AddNumberToObject(e, "kernel", d->a[k][i]);
        snprintf(hex, sizeof hex, "%a", d->a[k][i]);
        cJSON_AddStringToObject(e, "kernel_hex", hex);
        cJSON_AddNumberToObject(e, "exact", d->oracle.gstar[k][i]);
        snprintf(hex, sizeof hex, "%a", d->oracle.gstar[k][i]);
        cJSON_AddStringToObject(e, "exact_hex", hex);
        cJSON_AddNumberToObject(e, "rounded", d->oracle.g[k][i]);
        cJSON_AddNumberToObject(e, "ulp", isfinite(r[j].ulp) ? r[j].ulp : -1);
        cJSON_AddItemToArray(w, e);
    }
    free(r);
    cluster cl[ULPGYM_MAX_DIMS];
    int n = find_clusters(d, k, cl);
    cJSON *ca = cJSON_AddArrayToObject(o, "clusters");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "axis", cl[i].axis);
        cJSON_AddNumberToObject(e, "tile", (double)cl[i].tile);
        cJSON_AddNumberToObject(e, "at", (double)cl[i].at);
        cJSON_AddNumberToObject(e, "share", cl[i].share);
        cJSON_AddItemToArray(ca, e);
    }
    return o;
}
