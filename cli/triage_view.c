/* triage_view.c — see triage_view.h. Each element gets two figures: its ratio to the
 * yardstick (what the deciding standard allows of it; 1 = at the limit, +inf for a NaN/Inf
 * mismatch) and, secondary, its ulp error |a - g*| / ulp(g*) in the output dtype (NaN where
 * the exact value is below the smallest normal: not measured in ulps). Worst elements,
 * histogram and clusters are ranked and weighed by the ratio. */
#include "cli/triage_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_text.h"

/* --- the yardstick ----------------------------------------------------------------------- */

typedef enum { SCALE_ABS, SCALE_TOL, SCALE_CERT } scale_kind;

typedef struct {
    scale_kind kind;
    int standard; /* whose allowance (-1: none, absolute error only) */
    double atol, rtol, c;
    const double *bound; /* SCALE_CERT: B per checked element */
    char rule[200];      /* how the ratio is formed, in words */
} scale;

/* r's output result named like d's output k, or NULL. */
static const ug_output_result *result_of(const ug_result *r, const ug_exec_detail *d, int k)
{
    for (int j = 0; j < r->n_out; j++)
        if (strcmp(r->out[j].name, d->c.out[k].name) == 0) return &r->out[j];
    return NULL;
}

/* The number key of o's thresholds under standard s; NaN when absent. */
static double thr_num(const ug_output_result *o, int s, const char *key, char *golden, size_t glen)
{
    cJSON *j = o ? cJSON_Parse(o->thresholds[s]) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key), *g = cJSON_GetObjectItemCaseSensitive(j, "golden");
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (golden && glen) snprintf(golden, glen, "%s", cJSON_IsString(g) ? g->valuestring : "");
    cJSON_Delete(j);
    return x;
}

/* The tolerance of standard s on o: 1 with s's atol and rtol, 0 when o carries none. */
static int tolerance_of(const ug_output_result *o, int s, scale *sc)
{
    char golden[32];
    double atol = thr_num(o, s, "atol", golden, sizeof golden), rtol = thr_num(o, s, "rtol", NULL, 0);
    if (!(atol >= 0) || !(rtol >= 0) || !(atol + rtol > 0)) return 0;
    *sc = (scale){SCALE_TOL, s, atol, rtol, 0, NULL, ""};
    snprintf(sc->rule, sizeof sc->rule, "|a - g| / (atol %.3g + rtol %.3g * |g|), %s's per-element tolerance%s", atol,
             rtol, ug_standard_name(s),
             strcmp(golden, "exact or test") == 0
                 ? " against the exact value (the "
                   "reference test's own golden, which the standard also accepts, may allow more)"
                 : "");
    return 1;
}

static void scale_of(const ug_result *r, const ug_exec_detail *d, int k, scale *sc)
{
    const ug_output_result *o = result_of(r, d, k);
    int s = r->primary;
    double c = o ? thr_num(o, UG_STD_CERTIFIED, "c", NULL, 0) : NAN;
    if (s == UG_STD_CERTIFIED && d->oracle.bound[k] && c > 0) {
        *sc = (scale){SCALE_CERT, s, 0, 0, c, d->oracle.bound[k], ""};
        snprintf(sc->rule, sizeof sc->rule, "|a - g*| / (%g * B + ulp(g)/2), the certified bound", c);
        return;
    }
    if ((s == UG_STD_PYPTO || s == UG_STD_REFERENCE || s == UG_STD_ALLCLOSE) && tolerance_of(o, s, sc)) return;
    if (tolerance_of(o, UG_STD_PYPTO, sc)) {
        size_t n = strlen(sc->rule);
        if (s != UG_STD_PYPTO)
            snprintf(sc->rule + n, sizeof sc->rule - n, " (%s, which decides, has no per-element allowance%s)",
                     ug_standard_name(s), s == UG_STD_CERTIFIED ? " here: no bound" : "");
        return;
    }
    *sc = (scale){SCALE_ABS, -1, 0, 0, 0, NULL, "|a - g*|, the absolute error (no per-element tolerance applies)"};
}

/* --- per element -------------------------------------------------------------------------- */

static double ratio_of(const scale *sc, const ug_exec_detail *d, int k, size_t i)
{
    double a = d->a[k][i], gs = d->oracle.gstar[k][i], g = d->oracle.g[k][i];
    if (isnan(a) && isnan(gs)) return 0;
    if (!isfinite(a) || !isfinite(gs)) return a == gs ? 0 : INFINITY;
    if (!isfinite(g)) g = gs; /* an exact value beyond the dtype's range: judged against itself */
    if (sc->kind == SCALE_CERT) return fabs(a - gs) / (sc->c * sc->bound[i] + 0.5 * ug_dtype_ulp(d->c.out[k].dtype, g));
    if (sc->kind == SCALE_TOL) {
        const double *b = d->oracle.bound[k];
        g = b ? ug_tie_golden(d->c.out[k].dtype, a, g, gs, b[i]) : g; /* as the verdict: either neighbour at a tie */
        return fabs(a - g) / (sc->atol + sc->rtol * fabs(g));
    }
    return fabs(a - gs);
}

/* The ulp error; NaN where the exact value is below the smallest normal (not measured in ulps). */
static double ulp_of(const ug_exec_detail *d, int k, size_t i)
{
    ug_dtype dt = d->c.out[k].dtype;
    const ug_dtype_info *info = ug_dtype_get_info(dt);
    double a = d->a[k][i], gs = d->oracle.gstar[k][i];
    if (isnan(a) && isnan(gs)) return 0;
    if (!isfinite(a) || !isfinite(gs)) return a == gs ? 0 : INFINITY;
    if (info->is_float && fabs(gs) < ldexp(1.0, info->emin)) return NAN;
    return fabs(a - gs) / ug_dtype_ulp(dt, gs);
}

typedef struct {
    size_t pos;
    double ratio;
} ranked;

static int by_ratio_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->ratio != y->ratio) return x->ratio < y->ratio ? 1 : -1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Every checked element of output k, largest ratio first (malloc'd; NULL without memory). */
static ranked *rank(const scale *sc, const ug_exec_detail *d, int k)
{
    size_t n = d->oracle.sel.n[k];
    ranked *r = malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; r && i < n; i++) r[i] = (ranked){i, ratio_of(sc, d, k, i)};
    if (r) qsort(r, n, sizeof *r, by_ratio_desc);
    return r;
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
    for (int dd = 0; dd < t->ndim && n < len; dd++)
        n += (size_t)snprintf(buf + n, len - n, "%s%zu", dd ? "," : "", c[dd]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* "2.19x" or "4.2e-05 abs" (the ratio as the yardstick reads). */
static void ratio_text(const scale *sc, double q, char *buf, size_t len)
{
    if (sc->kind == SCALE_ABS)
        snprintf(buf, len, "abs err %.3g", q);
    else
        snprintf(buf, len, "%.3gx allowed", q);
}

/* "|err| 2.2e-04, 230 ulp" or "|err| 5e-04, not in ulps (exact value below the smallest normal)" */
static void secondary_text(const ug_exec_detail *d, int k, size_t i, char *buf, size_t len)
{
    double err = fabs(d->a[k][i] - d->oracle.gstar[k][i]), u = ulp_of(d, k, i);
    if (isnan(u))
        snprintf(buf, len, "|err| %.3g, not in ulps (exact value below the smallest normal)", err);
    else
        snprintf(buf, len, "|err| %.3g, %.3g ulp", err, u);
}

/* --- worst elements ------------------------------------------------------------------------ */

static void print_inputs(const ug_exec_detail *d, const ug_tensor *t, size_t idx, const char *where, FILE *f)
{
    for (int in = 0; in < d->c.n_in; in++) { /* inputs laid out like the output feed it elementwise */
        const ug_tensor *x = &d->c.in[in];
        if (x->numel != t->numel || x->ndim != t->ndim) continue;
        char xv[64];
        ug_fmt_value(ug_dtype_load(x->dtype, x->data, idx), xv, sizeof xv);
        fprintf(f, "        input %s%s = %s\n", x->name, where, xv);
    }
}

static void print_worst(const scale *sc, const ug_exec_detail *d, int k, const ranked *r, int nworst, FILE *f)
{
    const ug_tensor *t = &d->c.out[k];
    fprintf(f, "  worst elements of %s, by %s (1 = at the limit):\n", t->name, sc->rule);
    for (int j = 0; j < nworst && (size_t)j < d->oracle.sel.n[k]; j++) {
        size_t i = r[j].pos, idx = d->oracle.sel.idx[k][i];
        char where[96], q[48], av[64], gv[64], gr[64], sec[96];
        coord_text(t, idx, where, sizeof where);
        ratio_text(sc, r[j].ratio, q, sizeof q);
        ug_fmt_value(d->a[k][i], av, sizeof av);
        ug_fmt_value(d->oracle.gstar[k][i], gv, sizeof gv);
        ug_fmt_value(d->oracle.g[k][i], gr, sizeof gr);
        secondary_text(d, k, i, sec, sizeof sec);
        fprintf(f, "    %s  %s  kernel %s  exact %s  rounded %s  %s\n", where, q, av, gv, gr, sec);
        print_inputs(d, t, idx, where, f);
    }
}

/* --- histograms ---------------------------------------------------------------------------- */

static const double ratio_edges[] = {0.125, 0.25, 0.5, 1, 2, 8, 64, INFINITY};
static const char *ratio_names[] = {"<=0.125", "(0.125,0.25]", "(0.25,0.5]", "(0.5,1]", "(1,2]",
                                    "(2,8]",   "(8,64]",       ">64",        "NaN/Inf"};
#define N_RATIO 9
static const double ulp_edges[] = {0.5, 1, 2, 4, 16, 256, INFINITY};
static const char *ulp_names[] = {"<=0.5", "(0.5,1]", "(1,2]", "(2,4]", "(4,16]", "(16,256]", ">256", "NaN/Inf"};
#define N_ULP 8

/* counts[b] of the values into buckets by edges (the last bucket: infinite); NaN values are
 * left out and counted in *skipped. */
static void bucket(double v, const double *edges, int nb, long *counts, long *skipped)
{
    int b = 0;
    if (isnan(v)) {
        (*skipped)++;
        return;
    }
    if (isinf(v))
        b = nb - 1;
    else
        while (v > edges[b]) b++;
    counts[b]++;
}

static void histograms(const scale *sc, const ug_exec_detail *d, int k, long *rc, long *uc, long *below)
{
    long none = 0;
    memset(rc, 0, N_RATIO * sizeof *rc);
    memset(uc, 0, N_ULP * sizeof *uc);
    *below = 0;
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
        bucket(ratio_of(sc, d, k, i), ratio_edges, N_RATIO, rc, &none);
        bucket(ulp_of(d, k, i), ulp_edges, N_ULP, uc, below);
    }
}

static void print_histograms(const scale *sc, const ug_exec_detail *d, int k, FILE *f)
{
    long rc[N_RATIO], uc[N_ULP], below, peak = 1;
    histograms(sc, d, k, rc, uc, &below);
    for (int b = 0; b < N_RATIO; b++) peak = rc[b] > peak ? rc[b] : peak;
    if (sc->kind == SCALE_ABS)
        fprintf(f, "  error of %s (%zu elements): no per-element allowance applies\n", d->c.out[k].name,
                d->oracle.sel.n[k]);
    else
        fprintf(f, "  error of %s relative to what %s allows (%zu elements; 1 = at the limit):\n", d->c.out[k].name,
                ug_standard_name(sc->standard), d->oracle.sel.n[k]);
    for (int b = 0; sc->kind != SCALE_ABS && b < N_RATIO; b++) {
        char bar[41];
        int w = (int)(40.0 * (double)rc[b] / (double)peak + 0.5);
        memset(bar, '#', (size_t)w);
        bar[w] = 0;
        fprintf(f, "    %-12s %8ld %s\n", ratio_names[b], rc[b], bar);
    }
    fprintf(f, "  ulp error histogram of %s (secondary):", d->c.out[k].name);
    for (int b = 0; b < N_ULP; b++) fprintf(f, "%s %s %ld", b ? "," : "", ulp_names[b], uc[b]);
    fprintf(f, "; not in ulps (exact value below the smallest normal) %ld\n", below);
}

/* --- clusters ------------------------------------------------------------------------------ */

/* For each axis: the coordinate holding the largest share of the weight; for the last axis
 * per tile of 64. The weight of an element: 1 when it is beyond the allowance and some
 * element is (the count a tolerance rule judges), else its ratio capped at 1 (so no single
 * element, an exact zero's included, outweighs a whole row). */
typedef struct {
    int axis;
    size_t at, tile;
    double share, uniform;
} cluster;

static double weight(const scale *sc, const ug_exec_detail *d, int k, size_t i, int beyond)
{
    double q = ratio_of(sc, d, k, i);
    if (sc->kind == SCALE_ABS) return isnan(q) ? 0 : fmin(q, 1e300);
    return beyond ? (q > 1) : isnan(q) ? 0 : fmin(q, 1.0);
}

static int any_beyond(const scale *sc, const ug_exec_detail *d, int k)
{
    for (size_t i = 0; sc->kind != SCALE_ABS && i < d->oracle.sel.n[k]; i++)
        if (ratio_of(sc, d, k, i) > 1) return 1;
    return 0;
}

static int axis_cluster(const scale *sc, const ug_exec_detail *d, int k, int ax, int beyond, double total, cluster *out)
{
    const ug_tensor *t = &d->c.out[k];
    size_t len = (size_t)t->shape[ax], tile = ax == t->ndim - 1 && len > 64 ? 64 : 1;
    size_t bins = (len + tile - 1) / tile, best = 0;
    double *mass = calloc(bins ? bins : 1, sizeof *mass);
    if (!mass || bins < 2) {
        free(mass);
        return 0;
    }
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
        size_t c[ULPGYM_MAX_DIMS];
        unravel(t, d->oracle.sel.idx[k][i], c);
        mass[c[ax] / tile] += weight(sc, d, k, i, beyond);
    }
    for (size_t b = 1; b < bins; b++) best = mass[b] > mass[best] ? b : best;
    *out = (cluster){ax, best, tile, mass[best] / total, 1.0 / (double)bins};
    free(mass);
    return 1;
}

static int find_clusters(const scale *sc, const ug_exec_detail *d, int k, int beyond, cluster *out)
{
    double total = 0;
    int n = 0;
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) total += weight(sc, d, k, i, beyond);
    if (!(total > 0) || !isfinite(total)) return 0;
    for (int ax = 0; ax < d->c.out[k].ndim; ax++) n += axis_cluster(sc, d, k, ax, beyond, total, &out[n]);
    return n;
}

static const char *weighed(const scale *sc, int beyond)
{
    return sc->kind == SCALE_ABS ? "of the absolute error"
           : beyond              ? "of the elements beyond the allowance"
                                 : "of the error relative to the allowance";
}

static void print_clusters(const scale *sc, const ug_exec_detail *d, int k, FILE *f)
{
    cluster c[ULPGYM_MAX_DIMS];
    int beyond = any_beyond(sc, d, k), n = find_clusters(sc, d, k, beyond, c);
    fprintf(f, "  where the error of %s clusters:\n", d->c.out[k].name);
    if (!n) fprintf(f, "    nowhere: the output has no error or a single position per axis\n");
    for (int i = 0; i < n; i++) {
        const char *verdict = c[i].share > 2 * c[i].uniform + 0.05 ? "concentrated" : "spread evenly";
        if (c[i].tile > 1)
            fprintf(f, "    axis %d, tile %zu (positions %zu..%zu): %.1f%% %s (uniform %.1f%%) — %s\n", c[i].axis,
                    c[i].at, c[i].at * c[i].tile, (c[i].at + 1) * c[i].tile - 1, 100 * c[i].share, weighed(sc, beyond),
                    100 * c[i].uniform, verdict);
        else
            fprintf(f, "    axis %d, position %zu: %.1f%% %s (uniform %.1f%%) — %s\n", c[i].axis, c[i].at,
                    100 * c[i].share, weighed(sc, beyond), 100 * c[i].uniform, verdict);
    }
}

void ug_triage_print_output(const ug_result *r, const ug_exec_detail *d, int k, int nworst, FILE *f)
{
    scale sc;
    scale_of(r, d, k, &sc);
    ranked *rk = rank(&sc, d, k);
    if (rk) print_worst(&sc, d, k, rk, nworst, f);
    free(rk);
    print_histograms(&sc, d, k, f);
    print_clusters(&sc, d, k, f);
}

/* --- JSON ---------------------------------------------------------------------------------- */

static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else if (isinf(v))
        cJSON_AddStringToObject(o, key, "inf");
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *element_json(const scale *sc, const ug_exec_detail *d, int k, const ranked *e)
{
    size_t i = e->pos;
    char where[96], hex[40];
    coord_text(&d->c.out[k], d->oracle.sel.idx[k][i], where, sizeof where);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "index", where);
    add_num(o, "ratio", sc->kind == SCALE_ABS ? NAN : e->ratio); /* null: no per-element allowance */
    cJSON_AddNumberToObject(o, "kernel", d->a[k][i]);
    snprintf(hex, sizeof hex, "%a", d->a[k][i]);
    cJSON_AddStringToObject(o, "kernel_hex", hex);
    cJSON_AddNumberToObject(o, "exact", d->oracle.gstar[k][i]);
    snprintf(hex, sizeof hex, "%a", d->oracle.gstar[k][i]);
    cJSON_AddStringToObject(o, "exact_hex", hex);
    cJSON_AddNumberToObject(o, "rounded", d->oracle.g[k][i]);
    add_num(o, "abs_err", fabs(d->a[k][i] - d->oracle.gstar[k][i]));
    add_num(o, "ulp", ulp_of(d, k, i)); /* null: not measured in ulps (exact value below the smallest normal) */
    return o;
}

static void add_histograms(cJSON *o, const scale *sc, const ug_exec_detail *d, int k)
{
    long rc[N_RATIO], uc[N_ULP], below;
    histograms(sc, d, k, rc, uc, &below);
    cJSON *h = cJSON_AddObjectToObject(o, "histogram");
    for (int b = 0; sc->kind != SCALE_ABS && b < N_RATIO; b++)
        cJSON_AddNumberToObject(h, ratio_names[b], (double)rc[b]);
    h = cJSON_AddObjectToObject(o, "ulp_histogram");
    for (int b = 0; b < N_ULP; b++) cJSON_AddNumberToObject(h, ulp_names[b], (double)uc[b]);
    cJSON_AddNumberToObject(o, "not_in_ulps", (double)below);
}

static void add_clusters(cJSON *o, const scale *sc, const ug_exec_detail *d, int k)
{
    cluster cl[ULPGYM_MAX_DIMS];
    int beyond = any_beyond(sc, d, k), n = find_clusters(sc, d, k, beyond, cl);
    cJSON_AddStringToObject(o, "clusters_weigh", sc->kind == SCALE_ABS ? "abs_err" : beyond ? "beyond" : "ratio");
    cJSON *ca = cJSON_AddArrayToObject(o, "clusters");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "axis", cl[i].axis);
        cJSON_AddNumberToObject(e, "tile", (double)cl[i].tile);
        cJSON_AddNumberToObject(e, "at", (double)cl[i].at);
        cJSON_AddNumberToObject(e, "share", cl[i].share);
        cJSON_AddItemToArray(ca, e);
    }
}

cJSON *ug_triage_json(const ug_result *r, const ug_exec_detail *d, int k, int nworst)
{
    scale sc;
    scale_of(r, d, k, &sc);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output", d->c.out[k].name);
    cJSON *y = cJSON_AddObjectToObject(o, "yardstick");
    if (sc.standard >= 0)
        cJSON_AddStringToObject(y, "standard", ug_standard_name(sc.standard));
    else
        cJSON_AddNullToObject(y, "standard");
    cJSON_AddStringToObject(y, "rule", sc.rule);
    add_histograms(o, &sc, d, k);
    cJSON *w = cJSON_AddArrayToObject(o, "worst");
    ranked *rk = rank(&sc, d, k);
    for (int j = 0; rk && j < nworst && (size_t)j < d->oracle.sel.n[k]; j++)
        cJSON_AddItemToArray(w, element_json(&sc, d, k, &rk[j]));
    free(rk);
    add_clusters(o, &sc, d, k);
    return o;
}
