/* gather.c — reads one run's report data from the database (see report.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

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

static void tally_add(ug_tally *t, const char *verdict)
{
    t->cases++;
    if (strcmp(verdict, "PASS") == 0) t->pass++;
    else if (strcmp(verdict, "FAIL") == 0) t->fail++;
    else t->other++;
    if (strcmp(verdict, "SKIP") == 0) t->skip++;
}

static void copy_col(sqlite3_stmt *st, int col, char *dst, size_t len)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    snprintf(dst, len, "%s", s ? (const char *)s : "");
}

static int gather_run(sqlite3 *h, ug_report *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h,
                           "SELECT started_at, finished_at, status, backend, plan_name, plan_hash, git_rev, host"
                           " FROM runs WHERE run_id = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(h));
        return -1;
    }
    sqlite3_bind_int64(st, 1, r->run_id);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        copy_col(st, 0, r->started, sizeof r->started);
        copy_col(st, 1, r->finished, sizeof r->finished);
        copy_col(st, 2, r->status, sizeof r->status);
        copy_col(st, 3, r->backend, sizeof r->backend);
        copy_col(st, 4, r->plan, sizeof r->plan);
        copy_col(st, 5, r->plan_hash, sizeof r->plan_hash);
        copy_col(st, 6, r->git_rev, sizeof r->git_rev);
        copy_col(st, 7, r->host, sizeof r->host);
    }
    sqlite3_finalize(st);
    if (!found) snprintf(err, errlen, "no run %ld in the database", r->run_id);
    return found ? 0 : -2;
}

/* Tallies, ulp histogram and timing: one pass over the run's results. */
static int gather_results(sqlite3 *h, ug_report *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT c.op, c.dtype, r.verdict, r.kernel_ms, r.oracle_ms, c.origin = 'fuzz',"
                      " (SELECT max(max_ulp) FROM metrics m WHERE m.run_id = r.run_id AND m.case_id = r.case_id),"
                      " (SELECT sum(nonfinite_mismatch) FROM metrics m WHERE m.run_id = r.run_id AND m.case_id = r.case_id)"
                      " FROM results r JOIN cases c ON c.case_id = r.case_id WHERE r.run_id = ?";
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(h));
        return -1;
    }
    sqlite3_bind_int64(st, 1, r->run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int op = ug_op_find((const char *)sqlite3_column_text(st, 0));
        int dt = ug_dtype_parse((const char *)sqlite3_column_text(st, 1));
        const char *v = (const char *)sqlite3_column_text(st, 2);
        if (op < 0 || dt < 0 || !v) continue; /* a case of an op this build does not know */
        tally_add(&r->total, v);
        tally_add(&r->group[ug_op_group(op)], v);
        tally_add(&r->op[op], v);
        tally_add(&r->op_dtype[op][dt], v);
        r->seconds_kernel += sqlite3_column_double(st, 3) / 1e3;
        r->seconds_oracle += sqlite3_column_double(st, 4) / 1e3;
        r->regressions += sqlite3_column_int(st, 5);
        if (sqlite3_column_type(st, 6) != SQLITE_NULL || sqlite3_column_int64(st, 7) > 0)
            r->ulp_hist[op][ulp_bucket(sqlite3_column_double(st, 6), sqlite3_column_int64(st, 7) > 0)]++;
    }
    sqlite3_finalize(st);
    return 0;
}

static int gather_failures(sqlite3 *h, ug_report *r, int max, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT r.case_id, c.op, c.dtype, r.verdict, coalesce(r.message, ''),"
                      " coalesce((SELECT max(max_ulp) FROM metrics m WHERE m.run_id = r.run_id AND m.case_id = r.case_id), 0)"
                      " AS u FROM results r JOIN cases c ON c.case_id = r.case_id"
                      " WHERE r.run_id = ? AND r.verdict <> 'PASS' ORDER BY (r.verdict = 'FAIL'), u DESC, r.case_id LIMIT ?";
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(h));
        return -1;
    }
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int(st, 2, max);
    r->failures = calloc((size_t)(max > 0 ? max : 1), sizeof *r->failures);
    while (r->failures && sqlite3_step(st) == SQLITE_ROW) {
        ug_report_failure *f = &r->failures[r->n_failures++];
        copy_col(st, 0, f->case_id, sizeof f->case_id);
        f->op = ug_op_find((const char *)sqlite3_column_text(st, 1));
        copy_col(st, 2, f->dtype, sizeof f->dtype);
        copy_col(st, 3, f->verdict, sizeof f->verdict);
        copy_col(st, 4, f->message, sizeof f->message);
        f->max_ulp = sqlite3_column_double(st, 5);
    }
    sqlite3_finalize(st);
    return 0;
}

static int gather_history(sqlite3 *h, ug_report *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT run_id, op_group, sum(verdict = 'PASS'), count(*) FROM results JOIN cases USING (case_id)"
                      " WHERE run_id IN (SELECT run_id FROM runs WHERE run_id <= ? ORDER BY run_id DESC LIMIT 64)"
                      " GROUP BY run_id, op_group ORDER BY run_id";
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(h));
        return -1;
    }
    sqlite3_bind_int64(st, 1, r->run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        long run = (long)sqlite3_column_int64(st, 0);
        if (r->n_hist == 0 || r->hist_run[r->n_hist - 1] != run) {
            if (r->n_hist == 64) break;
            r->hist_run[r->n_hist] = run;
            for (int g = 0; g < UG_GROUP_COUNT; g++) r->hist_rate[r->n_hist][g] = -1;
            r->n_hist++;
        }
        int g = ug_group_find((const char *)sqlite3_column_text(st, 1));
        double n = sqlite3_column_double(st, 3);
        if (g >= 0 && n > 0) r->hist_rate[r->n_hist - 1][g] = 100.0 * sqlite3_column_double(st, 2) / n;
    }
    sqlite3_finalize(st);
    return 0;
}

int ug_report_gather(ug_db *db, long run_id, int max_failures, ug_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    sqlite3 *h = ug_db_handle(db);
    int rc = gather_run(h, r, err, errlen);
    if (!rc) rc = gather_results(h, r, err, errlen);
    if (!rc) rc = gather_failures(h, r, max_failures, err, errlen);
    if (!rc) rc = gather_history(h, r, err, errlen);
    if (rc) ug_report_free(r);
    return rc;
}

void ug_report_free(ug_report *r)
{
    free(r->failures);
    r->failures = NULL;
    r->n_failures = 0;
}
