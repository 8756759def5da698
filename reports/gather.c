/* gather.c — folds one run's rows from the database into a ug_report (see report.h); the
 * queries themselves are in db/query_report.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

#include "core/paths.h"
#include "db/query_report.h"

const char *const ug_ulp_bucket_names[UG_ULP_BUCKETS] = {"<=0.5", "<=1", "<=2", "<=4", "<=16", "<=256", ">256",
                                                         "NaN/Inf"};

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

const char *ug_tally_pass_cell(const ug_tally *t, const char *none, char *buf, size_t len)
{
    double p = ug_tally_pass_rate(t);
    if (p < 0) snprintf(buf, len, "%s", none);
    else snprintf(buf, len, "%.2f %%", p);
    return buf;
}

double ug_tally_cert_rate(const ug_tally *t)
{
    return t->cert_judged ? 100.0 * (double)t->cert_pass / (double)t->cert_judged : -1.0;
}

const char *ug_tally_cert_cell(const ug_tally *t, const char *none, char *buf, size_t len)
{
    double c = ug_tally_cert_rate(t);
    if (c < 0) snprintf(buf, len, "%s", none);
    else snprintf(buf, len, "%.2f %%", c);
    return buf;
}

static void tally_add(ug_tally *t, const char *verdict, const char *certified)
{
    t->cases++;
    if (certified && (strcmp(certified, "PASS") == 0 || strcmp(certified, "FAIL") == 0)) {
        t->cert_judged++;
        t->cert_pass += certified[0] == 'P';
    }
    if (strcmp(verdict, "PASS") == 0) t->pass++;
    else if (strcmp(verdict, "FAIL") == 0) t->fail++;
    else t->other++;
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
    if (row->has_max_ulp || row->nonfinite > 0) {
        int b = ulp_bucket(row->max_ulp, row->nonfinite > 0);
        r->ulp_hist[op][b]++;
        r->ulp_hist_notpass[op][b] += strcmp(v, "PASS") != 0;
    }
    return 0;
}

static int add_failure(const ug_db_failure_row *row, void *ctx)
{
    ug_report *r = ctx;
    ug_report_failure *f = &r->failures[r->n_failures++];
    snprintf(f->case_id, sizeof f->case_id, "%s", row->case_id);
    f->op = ug_op_find(row->op);
    snprintf(f->dtype, sizeof f->dtype, "%s", row->dtype);
    snprintf(f->verdict, sizeof f->verdict, "%s", row->verdict);
    snprintf(f->message, sizeof f->message, "%s", row->message);
    f->max_ulp = row->max_ulp;
    f->has_max_ulp = row->has_max_ulp;
    return 0;
}

static int gather_failures(ug_db *db, ug_report *r, int max, char *err, size_t errlen)
{
    r->failures = calloc((size_t)(max > 0 ? max : 1), sizeof *r->failures);
    if (!r->failures) return 0;
    return ug_db_report_failures(db, r->run_id, max, add_failure, r, err, errlen);
}

/* Pass-rate history per group: one slot per run (at most 64), -1 where a group is absent. */
static int add_history(const ug_db_group_rate_row *row, void *ctx)
{
    ug_report *r = ctx;
    if (r->n_hist == 0 || r->hist_run[r->n_hist - 1] != row->run_id) {
        if (r->n_hist == 64) return 1;
        r->hist_run[r->n_hist] = row->run_id;
        for (int g = 0; g < UG_GROUP_COUNT; g++) r->hist_rate[r->n_hist][g] = -1;
        r->n_hist++;
    }
    int g = ug_group_find(row->group);
    if (g >= 0 && row->cases > 0) r->hist_rate[r->n_hist - 1][g] = 100.0 * row->pass / row->cases;
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

int ug_report_gather(ug_db *db, long run_id, int max_failures, ug_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    int rc = gather_run(db, r, err, errlen);
    if (!rc) rc = ug_db_report_results(db, run_id, add_result, r, err, errlen);
    if (!rc) rc = gather_failures(db, r, max_failures, err, errlen);
    if (!rc && ug_db_report_group_history(db, run_id, add_history, r, err, errlen) < 0) rc = -1;
    if (!rc) rc = gather_bench(db, r, err, errlen);
    if (rc) ug_report_free(r);
    return rc;
}

void ug_report_free(ug_report *r)
{
    free(r->failures);
    r->failures = NULL;
    r->n_failures = 0;
    if (r->has_bench) ug_bench_table_free(&r->bench);
    r->has_bench = 0;
}

char *ug_report_triage_line(const ug_report *r, const char *case_id)
{
    return ug_triage_line(case_id, r->db_path, r->run_id, r->backend);
}
