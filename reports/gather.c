/* gather.c — folds one run's rows from the database into a ug_report (see report.h); the
 * queries themselves are in db/query_report.c. Last, for the cases the HTML page lists (top
 * failures, each op x dtype's, the changes, each op's closest pass), what their triage
 * blocks show: verdict, deciding standard, message, spec, per output the figures and the
 * deciding standard's thresholds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

#include "core/paths.h"
#include "db/query_failures.h"
#include "db/query_report.h"

const char *const ug_ulp_bucket_names[UG_ULP_BUCKETS] = {"<=0.5", "<=1",   "<=2",  "<=4",
                                                         "<=16",  "<=256", ">256", "NaN/Inf"};
const char *const ug_used_bucket_names[UG_USED_BUCKETS] = {"<=0.1", "<=0.25", "<=0.5", "<=1",
                                                           "<=2",   "<=10",   ">10",   "NaN/Inf"};

/* The headroom bin of a case's used figure: at most 1 passes its deciding standard. */
static int used_bucket(double u)
{
    static const double edges[] = {0.1, 0.25, 0.5, 1, 2, 10};
    if (!isfinite(u)) return 7;
    for (int b = 0; b < 6; b++)
        if (u <= edges[b]) return b;
    return 6;
}

static int ulp_bucket(double u, int nonfinite)
{
    static const double edges[] = {0.5, 1, 2, 4, 16, 256};
    if (nonfinite) return 7;
    for (int b = 0; b < 6; b++)
        if (u <= edges[b]) return b;
    return 6;
}

double ug_tally_pass_rate(const ug_tally *t)
{
    long judged = t->cases - t->skip;
    return judged > 0 ? 100.0 * (double)t->pass / (double)judged : -1.0;
}

/* A rate as a cell: "12.34 %", or `none` where nothing was judged (p < 0). */
static const char *rate_cell(double p, const char *none, char *buf, size_t len)
{
    if (p < 0)
        snprintf(buf, len, "%s", none);
    else
        snprintf(buf, len, "%.2f %%", p);
    return buf;
}

const char *ug_tally_pass_cell(const ug_tally *t, const char *none, char *buf, size_t len)
{
    return rate_cell(ug_tally_pass_rate(t), none, buf, len);
}

double ug_tally_cert_rate(const ug_tally *t)
{
    return t->cert_judged ? 100.0 * (double)t->cert_pass / (double)t->cert_judged : -1.0;
}

const char *ug_tally_cert_cell(const ug_tally *t, const char *none, char *buf, size_t len)
{
    return rate_cell(ug_tally_cert_rate(t), none, buf, len);
}

static void tally_add(ug_tally *t, const char *verdict, const char *certified)
{
    t->cases++;
    if (certified && (strcmp(certified, "PASS") == 0 || strcmp(certified, "FAIL") == 0)) {
        t->cert_judged++;
        t->cert_pass += certified[0] == 'P';
    }
    if (strcmp(verdict, "PASS") == 0)
        t->pass++;
    else if (strcmp(verdict, "FAIL") == 0)
        t->fail++;
    else
        t->other++;
    if (strcmp(verdict, "SKIP") == 0) t->skip++;
}

/* Tallies, ulp histogram and timing: one pass over the run's results. */
static int add_result(const ug_db_result_row *row, void *ctx)
{
    ug_report *r = ctx;
    int op = ug_op_find(row->op);
    int dt = ug_dtype_parse(row->dtype);
    const char *v = row->verdict;
    if (op < 0 || dt < 0 || !v) return 0; /* a case of an op this build does not know */
    tally_add(&r->total, v, row->certified);
    tally_add(&r->group[ug_op_group(op)], v, row->certified);
    tally_add(&r->op[op], v, row->certified);
    tally_add(&r->op_dtype[op][dt], v, row->certified);
    r->seconds_kernel += row->kernel_ms / 1e3;
    r->seconds_oracle += row->oracle_ms / 1e3;
    r->regressions += row->fuzz;
    r->elems_judged += row->n_checked;
    r->elems_total += row->n_total;
    if (row->has_max_ulp || row->nonfinite > 0) {
        int b = ulp_bucket(row->max_ulp, row->nonfinite > 0);
        r->ulp_hist[op][b]++;
        r->ulp_hist_notpass[op][b] += strcmp(v, "PASS") != 0;
    }
    if (!isnan(row->used)) { /* NaN: no output judged (SKIP, ERROR, CRASH) or stored before the figure */
        int b = used_bucket(row->used);
        r->used_hist[op][b]++;
        r->used_hist_notpass[op][b] += strcmp(v, "PASS") != 0;
        if (strcmp(v, "PASS") == 0 && row->used > r->closest_used[op] && row->case_id) {
            r->closest_used[op] = row->used;
            snprintf(r->closest_case[op], sizeof r->closest_case[op], "%s", row->case_id);
        }
    }
    return 0;
}

static int gather_failures(ug_db *db, ug_report *r, char *err, size_t errlen)
{
    ug_db_failure_filter f = {.run = r->run_id, .standard = -1};
    return ug_failures_read(db, &f, 0, &r->failures, err, errlen);
}

/* One change against the compared run, kept when it is one (db/query_compare.h). */
typedef struct {
    ug_report *r;
    double factor;
    size_t cap;
} change_ctx;

static int add_change(const ug_db_compare_row *row, void *vctx)
{
    change_ctx *x = vctx;
    ug_report *r = x->r;
    ug_change kind = ug_change_classify(row, x->factor);
    r->n_change[kind]++;
    if (kind == UG_CHANGE_NONE) return 0;
    if (r->n_changes == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        ug_report_change *v = realloc(r->changes, cap * sizeof *v);
        if (!v) return -1;
        r->changes = v, x->cap = cap;
    }
    ug_report_change *c = &r->changes[r->n_changes++];
    c->kind = kind;
    c->op = ug_op_find(row->op);
    c->used_a = row->used_a, c->used_b = row->used_b;
    snprintf(c->case_id, sizeof c->case_id, "%s", row->case_id);
    snprintf(c->dtype, sizeof c->dtype, "%s", row->dtype);
    snprintf(c->verdict_a, sizeof c->verdict_a, "%s", row->verdict_a);
    snprintf(c->verdict_b, sizeof c->verdict_b, "%s", row->verdict_b);
    snprintf(c->message, sizeof c->message, "%s", row->message_b);
    return 0;
}

static int by_kind(const void *a, const void *b)
{
    const ug_report_change *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return strcmp(x->case_id, y->case_id);
}

/* What changed against the last like-for-like run, when there is one. */
static int gather_changes(ug_db *db, ug_report *r, double factor, char *err, size_t errlen)
{
    long prev = ug_db_comparable_run(db, r->run_id, err, errlen);
    if (prev <= 0) return prev < 0 ? -1 : 0;
    r->compared_run = prev;
    change_ctx x = {r, factor, 0};
    if (ug_db_compare_runs(db, prev, r->run_id, add_change, &x, err, errlen)) {
        if (!err[0]) snprintf(err, errlen, "out of memory reading the changes");
        return -1;
    }
    if (r->n_changes) qsort(r->changes, r->n_changes, sizeof *r->changes, by_kind);
    return 0;
}

/* The history slot of run (a new one, every rate -1, when run is not the latest slot): its
 * index, or -1 once 64 runs are held. */
static int hist_slot(ug_report *r, long run)
{
    if (r->n_hist > 0 && r->hist_run[r->n_hist - 1] == run) return r->n_hist - 1;
    if (r->n_hist == 64) return -1;
    int h = r->n_hist++;
    r->hist_run[h] = run;
    for (int g = 0; g < UG_GROUP_COUNT; g++) r->hist_rate[h][g] = -1;
    for (int op = 0; op < UG_OP_COUNT; op++) r->hist_op_rate[h][op] = -1;
    return h;
}

/* Pass-rate history per group: one slot per run (at most 64), -1 where a group is absent. */
static int add_history(const ug_db_group_rate_row *row, void *ctx)
{
    ug_report *r = ctx;
    int h = hist_slot(r, row->run_id), g = ug_group_find(row->group);
    if (h < 0) return 1;
    if (g >= 0 && row->cases > 0) r->hist_rate[h][g] = 100.0 * row->pass / row->cases;
    return 0;
}

/* The same per op, and each run's date; a run the group history did not hold is left out. */
static int add_op_history(const ug_db_op_rate_row *row, void *ctx)
{
    ug_report *r = ctx;
    int op = ug_op_find(row->op);
    for (int h = 0; h < r->n_hist; h++)
        if (r->hist_run[h] == row->run_id) {
            snprintf(r->hist_started[h], sizeof r->hist_started[h], "%s", row->started);
            if (op >= 0 && row->cases > 0) r->hist_op_rate[h][op] = 100.0 * row->pass / row->cases;
        }
    return 0;
}

/* The run's row: the same lookup `sweep --resume` and merge use. */
static int gather_run(ug_db *db, ug_report *r, char *err, size_t errlen)
{
    ug_run_record rec;
    int rc = ug_db_run_get(db, r->run_id, &rec, err, errlen);
    if (rc) return rc;
    snprintf(r->started, sizeof r->started, "%s", rec.started_at);
    snprintf(r->finished, sizeof r->finished, "%s", rec.finished_at);
    snprintf(r->status, sizeof r->status, "%s", rec.status);
    snprintf(r->backend, sizeof r->backend, "%s", rec.backend);
    snprintf(r->plan, sizeof r->plan, "%s", rec.plan_name);
    snprintf(r->plan_hash, sizeof r->plan_hash, "%s", rec.plan_hash);
    snprintf(r->primary, sizeof r->primary, "%s", rec.primary_standard);
    /* a merged run lists every rev and host: the report keeps what fits, as it always did */
    snprintf(r->git_rev, sizeof r->git_rev, "%.*s", (int)sizeof r->git_rev - 1, rec.git_rev);
    snprintf(r->host, sizeof r->host, "%.*s", (int)sizeof r->host - 1, rec.host);
    return 0;
}

/* The latest kernel-timing table, if the database has one (a bench is not tied to a run). */
static int gather_bench(ug_db *db, ug_report *r, char *err, size_t errlen)
{
    long id;
    if (ug_db_bench_latest(db, &id, err, errlen)) return -1;
    if (!id) return 0;
    int rc = ug_db_bench_get(db, id, &r->bench, err, errlen);
    r->has_bench = rc == 0;
    return rc;
}

/* --- the cases the HTML page lists: each gets a triage block (report.h ug_report_detail) --- */

typedef struct {
    const char *id;
    long i;
} id_index; /* an index of a list by case ID, for bsearch */

static int by_id(const void *a, const void *b) { return strcmp(((const id_index *)a)->id, ((const id_index *)b)->id); }

static long index_find(const id_index *v, size_t n, const char *id)
{
    id_index key = {id, 0};
    const id_index *hit = n ? bsearch(&key, v, n, sizeof *v, by_id) : NULL;
    return hit ? hit->i : -1;
}

/* The failures and the changes indexed by case ID (malloc'd; NULL without memory). */
static id_index *index_failures(const ug_report *r)
{
    id_index *v = malloc((r->failures.n + 1) * sizeof *v);
    for (size_t i = 0; v && i < r->failures.n; i++) v[i] = (id_index){r->failures.v[i].case_id, (long)i};
    if (v) qsort(v, r->failures.n, sizeof *v, by_id);
    return v;
}

static id_index *index_changes(const ug_report *r)
{
    id_index *v = malloc((r->n_changes + 1) * sizeof *v);
    for (size_t i = 0; v && i < r->n_changes; i++) v[i] = (id_index){r->changes[i].case_id, (long)i};
    if (v) qsort(v, r->n_changes, sizeof *v, by_id);
    return v;
}

/* Appends case id to the listed cases when it is a valid ID (duplicates are merged later). */
static int listed_add(ug_report *r, size_t *cap, const char *id)
{
    if (!id || !ug_failure_id_ok(id)) return 0;
    if (r->n_details == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        ug_report_detail *v = realloc(r->details, c * sizeof *v);
        if (!v) return -1;
        r->details = v, *cap = c;
    }
    ug_report_detail *d = &r->details[r->n_details++];
    memset(d, 0, sizeof *d);
    snprintf(d->case_id, sizeof d->case_id, "%s", id);
    d->failure = d->change = -1;
    return 0;
}

/* The failures the page lists: the top ones, and each op x dtype's first `top` (the heatmap's links). */
static int listed_failures(ug_report *r, size_t *cap)
{
    long per_cell[UG_OP_COUNT][UG_DT_COUNT] = {{0}};
    size_t top = (size_t)r->top;
    for (size_t i = 0; i < r->failures.n; i++) {
        const ug_failure *x = &r->failures.v[i];
        int op = ug_op_find(x->op), dt = ug_dtype_parse(x->dtype);
        int in_cell = op >= 0 && dt >= 0 && (size_t)per_cell[op][dt]++ < top;
        if ((i < top || in_cell) && listed_add(r, cap, x->case_id)) return -1;
    }
    return 0;
}

/* The headroom a change is ranked by: NaN (not judged) above everything. */
static double change_rank(const ug_report_change *c)
{
    double u = c->kind == UG_CHANGE_FIXED ? c->used_a : c->used_b;
    return isnan(u) ? INFINITY : u;
}

typedef struct {
    double rank;
    const char *id;
    size_t i;
} ranked_change;

static int by_rank(const void *a, const void *b)
{
    const ranked_change *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return strcmp(x->id, y->id);
}

size_t ug_report_changes_ranked(const ug_report *r, ug_change kind, size_t *idx)
{
    size_t n = 0;
    ranked_change *v = malloc((r->n_changes + 1) * sizeof *v);
    for (size_t i = 0; v && i < r->n_changes; i++)
        if (r->changes[i].kind == kind) v[n++] = (ranked_change){change_rank(&r->changes[i]), r->changes[i].case_id, i};
    if (v) qsort(v, n, sizeof *v, by_rank);
    for (size_t i = 0; i < n; i++) idx[i] = v[i].i;
    free(v);
    return n < (size_t)r->top ? n : (size_t)r->top;
}

/* The changes the page lists (ug_report_changes_ranked) and every op's closest passing case. */
static int listed_others(ug_report *r, size_t *cap)
{
    size_t *idx = malloc((r->n_changes + 1) * sizeof *idx);
    if (!idx) return -1;
    for (int k = 0; k < UG_CHANGE_COUNT; k++) {
        size_t n = k == UG_CHANGE_NONE ? 0 : ug_report_changes_ranked(r, (ug_change)k, idx);
        for (size_t i = 0; i < n; i++)
            if (listed_add(r, cap, r->changes[idx[i]].case_id)) {
                free(idx);
                return -1;
            }
    }
    free(idx);
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->closest_used[op] >= 0 && listed_add(r, cap, r->closest_case[op])) return -1;
    return 0;
}

static int detail_by_id(const void *a, const void *b)
{
    return strcmp(((const ug_report_detail *)a)->case_id, ((const ug_report_detail *)b)->case_id);
}

/* Sorts the listed cases by ID, drops duplicates, and links each to its failure and change. */
static int listed_index(ug_report *r)
{
    if (r->n_details) qsort(r->details, r->n_details, sizeof *r->details, detail_by_id);
    size_t n = 0;
    for (size_t i = 0; i < r->n_details; i++)
        if (!n || strcmp(r->details[n - 1].case_id, r->details[i].case_id)) r->details[n++] = r->details[i];
    r->n_details = n;
    id_index *f = index_failures(r), *c = index_changes(r);
    for (size_t i = 0; f && c && i < n; i++) {
        r->details[i].failure = index_find(f, r->failures.n, r->details[i].case_id);
        r->details[i].change = index_find(c, r->n_changes, r->details[i].case_id);
    }
    int rc = f && c ? 0 : -1;
    free(f);
    free(c);
    return rc;
}

const ug_report_detail *ug_report_detail_find(const ug_report *r, const char *case_id)
{
    if (!case_id || !r->n_details || strlen(case_id) > UG_ID_LEN) return NULL;
    ug_report_detail key;
    snprintf(key.case_id, sizeof key.case_id, "%s", case_id);
    return bsearch(&key, r->details, r->n_details, sizeof *r->details, detail_by_id);
}

/* text cleaned to valid UTF-8 (malloc'd); NULL when there is none or no memory. */
static char *clean_or_null(const char *text) { return text ? ug_failure_clean_utf8(text) : NULL; }

/* One case of the run: its verdict, deciding standard, message and spec when the page lists it. */
static int detail_case(const ug_db_case_row *row, void *ctx)
{
    ug_report *r = ctx;
    ug_report_detail *d = (ug_report_detail *)ug_report_detail_find(r, row->case_id);
    if (!d || d->spec) return 0;
    snprintf(d->verdict, sizeof d->verdict, "%s", row->verdict ? row->verdict : "");
    snprintf(d->standard, sizeof d->standard, "%s", row->primary_standard ? row->primary_standard : "");
    d->message = clean_or_null(row->message);
    d->spec = clean_or_null(row->spec_json);
    return d->spec || !row->spec_json ? 0 : -1;
}

/* One output's figures of a listed case. */
static int detail_output(const ug_db_output_figures *o, void *ctx)
{
    ug_report_detail *d = ctx;
    ug_report_output *v = realloc(d->out, (d->n_out + 1) * sizeof *v);
    if (!v) return -1;
    d->out = v;
    ug_report_output *x = &v[d->n_out++];
    char *name = clean_or_null(o->output);
    snprintf(x->output, sizeof x->output, "%s", name ? name : "?");
    free(name);
    x->n_checked = o->n_checked, x->n_total = o->n_total, x->nonfinite = o->nonfinite_mismatch;
    x->max_abs = o->max_abs, x->max_rel = o->max_rel, x->max_ulp = o->max_ulp;
    return 0;
}

/* Per listed case its outputs' figures and the deciding standard's thresholds. */
static int detail_figures(ug_db *db, ug_report *r, char *err, size_t errlen)
{
    const size_t tlen = 1 << 16;
    char *thr = malloc(tlen);
    int rc = thr ? 0 : -1;
    for (size_t i = 0; !rc && i < r->n_details; i++) {
        ug_report_detail *d = &r->details[i];
        rc =
            ug_db_report_case_figures(db, r->run_id, d->case_id, d->standard, detail_output, d, thr, tlen, err, errlen);
        if (!rc && thr[0] && !(d->thresholds = ug_failure_clean_utf8(thr))) rc = -1;
    }
    free(thr);
    if (rc && errlen && !err[0]) snprintf(err, errlen, "out of memory reading the listed cases");
    return rc ? -1 : 0;
}

static int gather_details(ug_db *db, ug_report *r, char *err, size_t errlen)
{
    size_t cap = 0;
    if (listed_failures(r, &cap) || listed_others(r, &cap) || listed_index(r)) {
        snprintf(err, errlen, "out of memory listing the report's cases");
        return -1;
    }
    if (ug_db_report_cases(db, r->run_id, detail_case, r, err, errlen)) {
        if (!err[0]) snprintf(err, errlen, "out of memory reading the listed cases");
        return -1;
    }
    return detail_figures(db, r, err, errlen);
}

int ug_report_gather(ug_db *db, long run_id, int max_failures, double drift_factor, ug_report *r, char *err,
                     size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    r->top = max_failures;
    for (int op = 0; op < UG_OP_COUNT; op++) r->closest_used[op] = -1;
    if (errlen) err[0] = 0;
    int rc = gather_run(db, r, err, errlen);
    if (!rc) rc = ug_db_report_results(db, run_id, add_result, r, err, errlen);
    if (!rc) rc = gather_failures(db, r, err, errlen);
    if (!rc) rc = gather_changes(db, r, drift_factor > 1 ? drift_factor : UG_DRIFT_FACTOR_DEFAULT, err, errlen);
    if (!rc && ug_db_report_group_history(db, run_id, add_history, r, err, errlen) < 0) rc = -1;
    if (!rc && ug_db_report_op_history(db, run_id, add_op_history, r, err, errlen) < 0) rc = -1;
    if (!rc) rc = gather_bench(db, r, err, errlen);
    if (!rc) rc = gather_details(db, r, err, errlen);
    if (rc) ug_report_free(r);
    return rc;
}

void ug_report_free(ug_report *r)
{
    ug_failures_free(&r->failures);
    free(r->changes);
    r->changes = NULL;
    r->n_changes = 0;
    if (r->has_bench) ug_bench_table_free(&r->bench);
    r->has_bench = 0;
    for (size_t i = 0; i < r->n_details; i++) {
        ug_report_detail *d = &r->details[i];
        free(d->message);
        free(d->spec);
        free(d->thresholds);
        free(d->out);
    }
    free(r->details);
    r->details = NULL;
    r->n_details = 0;
}

char *ug_report_triage_line(const ug_report *r, const char *case_id)
{
    return ug_triage_line(case_id, r->db_path, r->run_id, r->backend);
}
