/* json.c — the JSON writer of report.h: the versioned document "ulpgym-report/1"
 * (docs/REPORTS.md lists every key). It says what the other formats say: the run and its
 * recorded options, the changes against the last like-for-like run, tallies per group, op
 * and dtype, headroom-used and max-ulp histograms per op, each op's passing case nearest
 * its limit, and the failures most severe first with their deciding figure and triage
 * line. Numbers that are not finite are null; database strings are made valid UTF-8. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/paths.h"
#include "reports/formats.h"
#include "reports/report.h"

#define UG_REPORT_FORMAT "ulpgym-report/1"

/* A database string as valid UTF-8 (bad bytes as \xNN). */
static void add_str(cJSON *o, const char *key, const char *s)
{
    char *clean = ug_failure_clean_utf8(s ? s : "");
    cJSON_AddStringToObject(o, key, clean ? clean : "");
    free(clean);
}

/* s, or null when it is empty. */
static void add_str_or_null(cJSON *o, const char *key, const char *s)
{
    if (s && *s)
        add_str(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}

/* x, or null when it is not finite (NaN: not judged; inf: a NaN/Inf mismatch). */
static void add_num(cJSON *o, const char *key, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, key, x);
    else
        cJSON_AddNullToObject(o, key);
}

static void add_triage(cJSON *o, const ug_report *r, const char *case_id)
{
    char *line = ug_failure_id_ok(case_id) ? ug_report_triage_line(r, case_id) : NULL;
    add_str_or_null(o, "triage", line);
    free(line);
}

static cJSON *tally_json(const ug_tally *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "cases", (double)t->cases);
    cJSON_AddNumberToObject(o, "passed", (double)t->pass);
    cJSON_AddNumberToObject(o, "failed", (double)t->fail);
    cJSON_AddNumberToObject(o, "other", (double)t->other);
    cJSON_AddNumberToObject(o, "skipped", (double)t->skip);
    if (ug_tally_pass_rate(t) >= 0)
        cJSON_AddNumberToObject(o, "pass_rate", ug_tally_pass_rate(t));
    else
        cJSON_AddNullToObject(o, "pass_rate"); /* every case skipped */
    cJSON_AddNumberToObject(o, "certified_judged", (double)t->cert_judged);
    cJSON_AddNumberToObject(o, "certified_passed", (double)t->cert_pass);
    if (t->cert_judged)
        cJSON_AddNumberToObject(o, "pass_rate_certified", ug_tally_cert_rate(t));
    else
        cJSON_AddNullToObject(o, "pass_rate_certified"); /* the certified standard judged no case */
    return o;
}

/* The run's row: who ran what, where, when (git rev and host in full from the run's record:
 * the report keeps only what fits). */
static void run_json(cJSON *j, const ug_report *r, const ug_run_record *run)
{
    cJSON_AddStringToObject(j, "format", UG_REPORT_FORMAT);
    cJSON_AddStringToObject(j, "generator", ug_version_line());
    cJSON_AddNumberToObject(j, "run_id", (double)r->run_id);
    add_str(j, "started_at", r->started);
    add_str(j, "finished_at", r->finished);
    add_str(j, "status", r->status);
    add_str(j, "plan", r->plan);
    add_str(j, "plan_hash", r->plan_hash);
    add_str(j, "backend", r->backend);
    add_str(j, "git_rev", run ? run->git_rev : r->git_rev);
    add_str(j, "host", run ? run->host : r->host);
    add_str_or_null(j, "primary_standard", r->primary);            /* null: each op's own primary decided */
    char *abs = r->db_path[0] ? realpath(r->db_path, NULL) : NULL; /* as triage lines name it */
    add_str_or_null(j, "database", abs ? abs : r->db_path);
    free(abs);
}

/* The options the run was swept with (all null when they were not recorded). */
static void options_json(cJSON *j, const ug_run_record *run)
{
    cJSON *o = cJSON_AddObjectToObject(j, "options");
    int known = run && run->has_options;
    if (known && run->seed_set)
        cJSON_AddNumberToObject(o, "seed", (double)run->seed);
    else
        cJSON_AddNullToObject(o, "seed");
    if (run)
        cJSON_AddNumberToObject(o, "sample", (double)run->sample);
    else
        cJSON_AddNullToObject(o, "sample");
    if (run)
        cJSON_AddNumberToObject(o, "oracle_precision", run->oracle_prec);
    else
        cJSON_AddNullToObject(o, "oracle_precision");
    add_str_or_null(o, "ops", known ? run->op_filter : NULL);
    add_str_or_null(o, "groups", known ? run->group_filter : NULL);
    if (known && run->limit > 0)
        cJSON_AddNumberToObject(o, "limit", (double)run->limit);
    else
        cJSON_AddNullToObject(o, "limit");
    add_str_or_null(o, "shard", run ? run->shard : NULL);
    add_str_or_null(o, "plan_path", run ? run->plan_path : NULL);
    add_str_or_null(o, "backend_sha256", run ? run->backend_sha256 : NULL);
    if (run) {
        cJSON_AddBoolToObject(o, "no_regressions", run->no_regressions);
        cJSON_AddBoolToObject(o, "oracle_check", run->oracle_check);
        cJSON_AddBoolToObject(o, "merged", run->merged);
        cJSON_AddNumberToObject(o, "cores", run->cores);
    } else {
        static const char *const keys[] = {"no_regressions", "oracle_check", "merged", "cores"};
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) cJSON_AddNullToObject(o, keys[k]);
    }
}

static cJSON *hist_json(const long *bins, const char *const *names, int n)
{
    cJSON *h = cJSON_CreateObject();
    for (int b = 0; b < n; b++) cJSON_AddNumberToObject(h, names[b], (double)bins[b]);
    return h;
}

static cJSON *op_json(const ug_report *r, int op)
{
    cJSON *o = tally_json(&r->op[op]);
    cJSON_AddStringToObject(o, "group", ug_group_name(ug_op_group(op)));
    cJSON *dts = cJSON_AddObjectToObject(o, "dtypes");
    for (int dt = 0; dt < UG_DT_COUNT; dt++)
        if (r->op_dtype[op][dt].cases)
            cJSON_AddItemToObject(dts, ug_dtype_name((ug_dtype)dt), tally_json(&r->op_dtype[op][dt]));
    cJSON_AddItemToObject(o, "used_histogram", hist_json(r->used_hist[op], ug_used_bucket_names, UG_USED_BUCKETS));
    cJSON_AddItemToObject(o, "used_histogram_not_pass",
                          hist_json(r->used_hist_notpass[op], ug_used_bucket_names, UG_USED_BUCKETS));
    cJSON_AddItemToObject(o, "max_ulp_histogram", hist_json(r->ulp_hist[op], ug_ulp_bucket_names, UG_ULP_BUCKETS));
    cJSON_AddItemToObject(o, "max_ulp_histogram_not_pass",
                          hist_json(r->ulp_hist_notpass[op], ug_ulp_bucket_names, UG_ULP_BUCKETS));
    if (r->closest_used[op] >= 0) {
        cJSON *c = cJSON_AddObjectToObject(o, "closest_to_limit");
        add_str(c, "case_id", r->closest_case[op]);
        add_num(c, "used", r->closest_used[op]);
    } else
        cJSON_AddNullToObject(o, "closest_to_limit"); /* no passing case was judged */
    return o;
}

static cJSON *change_json(const ug_report *r, const ug_report_index *ix, const ug_report_change *c)
{
    const ug_failure *x = ug_report_index_failure(ix, c->case_id);
    cJSON *o = cJSON_CreateObject();
    add_str(o, "case_id", c->case_id);
    cJSON_AddStringToObject(o, "op", c->op >= 0 ? ug_op_name(c->op) : "?");
    add_str(o, "dtype", c->dtype);
    add_str_or_null(o, "verdict_before", c->verdict_a);
    add_str(o, "verdict", c->verdict_b);
    add_num(o, "used_before", c->used_a);
    add_num(o, "used", c->used_b);
    add_str_or_null(o, "figure", x ? x->figure : NULL);
    if (x)
        add_num(o, "severity", x->severity);
    else
        cJSON_AddNullToObject(o, "severity");
    add_str(o, "message", c->message);
    add_triage(o, r, c->case_id);
    return o;
}

static void changes_json(cJSON *j, const ug_report *r, const ug_report_index *ix)
{
    cJSON *o = cJSON_AddObjectToObject(j, "changes");
    if (r->compared_run)
        cJSON_AddNumberToObject(o, "compared_run", (double)r->compared_run);
    else
        cJSON_AddNullToObject(o, "compared_run"); /* no like-for-like run before this one */
    cJSON_AddStringToObject(o, "rule",
                            "the last finished run before this one of the same plan hash, selection (ops, "
                            "groups, limit, shard), backend, sample and deciding standard");
    cJSON *counts = cJSON_AddObjectToObject(o, "counts");
    for (int k = 0; k < UG_CHANGE_COUNT; k++)
        cJSON_AddNumberToObject(counts, ug_change_key((ug_change)k), (double)r->n_change[k]);
    static const ug_change order[] = {UG_CHANGE_NEW_FAIL, UG_CHANGE_FIXED, UG_CHANGE_STILL_FAILING, UG_CHANGE_DRIFT};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        size_t n;
        const ug_report_change **v = ug_report_changes_of(r, ix, order[i], &n);
        cJSON *a = cJSON_AddArrayToObject(o, ug_change_key(order[i]));
        for (size_t k = 0; k < n; k++) cJSON_AddItemToArray(a, change_json(r, ix, v[k]));
        free(v);
    }
}

static cJSON *failure_json(const ug_report *r, const ug_report_index *ix, const ug_failure *x, size_t rank)
{
    const ug_report_change *c = ug_report_index_change(ix, x->case_id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", (double)rank);
    add_str(o, "case_id", x->case_id);
    add_str(o, "op", x->op);
    add_str(o, "dtype", x->dtype);
    add_str(o, "verdict", x->verdict);
    add_str(o, "figure", x->figure);
    add_num(o, "severity", x->severity);
    add_num(o, "used", x->used);
    add_num(o, "max_abs", x->has_metrics ? x->max_abs : NAN);
    add_num(o, "max_ulp", x->has_metrics ? x->max_ulp : NAN); /* null: no metric (a crash, a timeout) */
    add_str(o, "message", x->message);
    add_str_or_null(o, "change", c ? ug_change_key(c->kind) : NULL);
    add_triage(o, r, x->case_id);
    return o;
}

void ug_report_write_json_run(const ug_report *r, const ug_run_record *run, FILE *f)
{
    ug_report_index ix;
    ug_report_index_build(r, &ix);
    cJSON *j = cJSON_CreateObject();
    run_json(j, r, run);
    options_json(j, run);
    changes_json(j, r, &ix);
    cJSON_AddItemToObject(j, "total", tally_json(&r->total));
    cJSON_AddNumberToObject(j, "regression_cases", (double)r->regressions);
    cJSON *secs = cJSON_AddObjectToObject(j, "seconds");
    add_num(secs, "kernel", r->seconds_kernel);
    add_num(secs, "oracle", r->seconds_oracle);
    cJSON *elems = cJSON_AddObjectToObject(j, "elements"); /* what the verdicts rest on */
    cJSON_AddNumberToObject(elems, "judged", (double)r->elems_judged);
    cJSON_AddNumberToObject(elems, "total", (double)r->elems_total);
    cJSON *groups = cJSON_AddObjectToObject(j, "groups");
    for (int g = 0; g < UG_GROUP_COUNT; g++)
        if (r->group[g].cases) cJSON_AddItemToObject(groups, ug_group_name((ug_group)g), tally_json(&r->group[g]));
    cJSON *ops = cJSON_AddObjectToObject(j, "ops");
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (r->op[op].cases) cJSON_AddItemToObject(ops, ug_op_name(op), op_json(r, op));
    cJSON_AddNumberToObject(j, "failures_total", (double)r->failures.n);
    cJSON *fails = cJSON_AddArrayToObject(j, "failures");
    for (size_t i = 0; i < r->failures.n && i < (size_t)r->top; i++)
        cJSON_AddItemToArray(fails, failure_json(r, &ix, &r->failures.v[i], i + 1));
    char *s = cJSON_Print(j);
    fprintf(f, "%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
    ug_report_index_free(&ix);
}

void ug_report_write_json(const ug_report *r, FILE *f) { ug_report_write_json_run(r, NULL, f); }
