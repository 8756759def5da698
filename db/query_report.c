/* query_report.c — the queries behind a run's report (see query_report.h). Each query
 * is one pass over the run's results; max ulp and NaN/Inf counts are folded over a
 * case's outputs in SQL so the report code sees one row per case. */
#include "db/query_report.h"

#include "db/internal.h"

#include <math.h>
#include <stdio.h>

static const char *text(sqlite3_stmt *st, int i) { return (const char *)sqlite3_column_text(st, i); }
static const char *text0(sqlite3_stmt *st, int i)
{
    const char *t = text(st, i);
    return t ? t : "";
}

/* Prepares sql and binds run_id as parameter 1. */
static int prepare_run(ug_db *db, const char *sql, long run_id, sqlite3_stmt **st, char *err, size_t errlen)
{
    if (ug_db_prepare(db, st, sql, err, errlen)) return -1;
    sqlite3_bind_int64(*st, 1, run_id);
    return 0;
}

int ug_db_report_results(ug_db *db, long run_id, int (*cb)(const ug_db_result_row *row, void *ctx), void *ctx,
                         char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_run(
            db,
            "SELECT c.op, c.dtype, r.verdict, r.kernel_ms, r.oracle_ms, c.origin = 'fuzz', m.ulp, m.nonfinite,"
            " (SELECT verdict FROM verdicts v WHERE v.run_id = r.run_id AND v.case_id = r.case_id"
            "  AND v.standard = ?2)"
            " , r.used, r.case_id, coalesce(m.checked, 0), coalesce(m.total, 0)"
            " FROM results r JOIN cases c ON c.case_id = r.case_id"
            " LEFT JOIN (SELECT case_id, max(max_ulp) AS ulp, sum(nonfinite_mismatch) AS nonfinite,"
            "  sum(n_checked) AS checked, sum(n_total) AS total FROM metrics WHERE run_id = ?1 GROUP BY case_id)"
            " m ON m.case_id = r.case_id WHERE r.run_id = ?1",
            run_id, &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 2, ug_standard_name(UG_STD_CERTIFIED), -1, SQLITE_STATIC);
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_result_row row = {text(st, 0),
                                text(st, 1),
                                text(st, 2),
                                sqlite3_column_double(st, 3),
                                sqlite3_column_double(st, 4),
                                sqlite3_column_int(st, 5),
                                sqlite3_column_type(st, 6) != SQLITE_NULL,
                                sqlite3_column_double(st, 6),
                                sqlite3_column_int64(st, 7),
                                text(st, 8),
                                sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9),
                                text0(st, 10),
                                sqlite3_column_int64(st, 11),
                                sqlite3_column_int64(st, 12)};
        rc = cb(&row, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_report_group_history(ug_db *db, long run_id, int (*cb)(const ug_db_group_rate_row *row, void *ctx), void *ctx,
                               char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_run(db,
                    "SELECT run_id, op_group, sum(verdict = 'PASS'), sum(verdict <> 'SKIP') FROM results"
                    " JOIN cases USING (case_id) WHERE run_id IN (SELECT run_id FROM runs WHERE run_id <= ?1"
                    " AND backend IS (SELECT backend FROM runs WHERE run_id = ?1) ORDER BY run_id DESC LIMIT 64)"
                    " GROUP BY run_id, op_group ORDER BY run_id",
                    run_id, &st, err, errlen))
        return -1;
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_group_rate_row row = {(long)sqlite3_column_int64(st, 0), text(st, 1), sqlite3_column_double(st, 2),
                                    sqlite3_column_double(st, 3)};
        rc = cb(&row, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_report_op_history(ug_db *db, long run_id, int (*cb)(const ug_db_op_rate_row *row, void *ctx), void *ctx,
                            char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_run(db,
                    "SELECT r.run_id, u.started_at, c.op, sum(r.verdict = 'PASS'), sum(r.verdict <> 'SKIP')"
                    " FROM results r JOIN cases c ON c.case_id = r.case_id JOIN runs u ON u.run_id = r.run_id"
                    " WHERE r.run_id IN (SELECT run_id FROM runs WHERE run_id <= ?1"
                    " AND backend IS (SELECT backend FROM runs WHERE run_id = ?1) ORDER BY run_id DESC LIMIT 64)"
                    " GROUP BY r.run_id, c.op ORDER BY r.run_id",
                    run_id, &st, err, errlen))
        return -1;
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_op_rate_row row = {(long)sqlite3_column_int64(st, 0), text0(st, 1), text0(st, 2),
                                 sqlite3_column_double(st, 3), sqlite3_column_double(st, 4)};
        rc = cb(&row, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_report_cases(ug_db *db, long run_id, int (*cb)(const ug_db_case_row *row, void *ctx), void *ctx, char *err,
                       size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_run(db,
                    "SELECT c.op_group, c.op, c.dtype, r.case_id, r.verdict, coalesce(r.message, ''),"
                    " coalesce(r.kernel_ms, 0) + coalesce(r.oracle_ms, 0), r.primary_standard, c.spec_json"
                    " FROM results r JOIN cases c ON c.case_id = r.case_id WHERE r.run_id = ?"
                    " ORDER BY c.op_group, c.op, r.case_id",
                    run_id, &st, err, errlen))
        return -1;
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_case_row row = {
            text(st, 0), text(st, 1), text(st, 2), text(st, 3), text(st, 4), text(st, 5), sqlite3_column_double(st, 6),
            text(st, 7), text0(st, 8)};
        rc = cb(&row, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_report_case_figures(ug_db *db, long run_id, const char *case_id, const char *standard,
                              int (*cb)(const ug_db_output_figures *f, void *ctx), void *ctx, char *thresholds,
                              size_t tlen, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    thresholds[0] = 0;
    if (prepare_run(db, "SELECT thresholds FROM verdicts WHERE run_id = ?1 AND case_id = ?2 AND standard = ?3", run_id,
                    &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 2, case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, standard, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(thresholds, tlen, "%s", text0(st, 0));
    sqlite3_finalize(st);
    if (prepare_run(db,
                    "SELECT output, n_checked, n_total, nonfinite_mismatch, coalesce(max_abs, 0), coalesce(max_rel, 0),"
                    " coalesce(max_ulp, 0) FROM metrics WHERE run_id = ?1 AND case_id = ?2 ORDER BY rowid",
                    run_id, &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 2, case_id, -1, SQLITE_TRANSIENT);
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_output_figures f = {text0(st, 0),
                                  (long)sqlite3_column_int64(st, 1),
                                  (long)sqlite3_column_int64(st, 2),
                                  (long)sqlite3_column_int64(st, 3),
                                  sqlite3_column_double(st, 4),
                                  sqlite3_column_double(st, 5),
                                  sqlite3_column_double(st, 6)};
        rc = cb(&f, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

/* Binds the discrete compares' names as parameters 2.. and notes them in row. */
static void bind_discrete(sqlite3_stmt *st, ug_db_output_row *row)
{
    int k = 0;
    for (int s = 0; s < UG_STD_COUNT && k < UG_DB_DISCRETE_STANDARDS; s++)
        if (ug_standard_is_discrete(s)) {
            row->discrete_standard[k] = s;
            sqlite3_bind_text(st, 2 + k++, ug_standard_name(s), -1, SQLITE_STATIC);
        }
    for (; k < UG_DB_DISCRETE_STANDARDS; k++) row->discrete_standard[k] = -1;
}

static double real_or_nan(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void fill_output_row(sqlite3_stmt *st, ug_db_output_row *row)
{
    row->case_id = text0(st, 0), row->group = text0(st, 1), row->op = text0(st, 2), row->dtype = text0(st, 3);
    row->verdict = text0(st, 4), row->primary_standard = text0(st, 5), row->message = text0(st, 6);
    row->spec_json = text0(st, 7), row->used = real_or_nan(st, 8);
    row->output = text(st, 9), row->output_dtype = text0(st, 10);
    row->n_checked = (long)sqlite3_column_int64(st, 11), row->n_total = (long)sqlite3_column_int64(st, 12);
    row->nonfinite_mismatch = (long)sqlite3_column_int64(st, 13);
    row->max_abs = real_or_nan(st, 14), row->max_rel = real_or_nan(st, 15), row->max_ulp = real_or_nan(st, 16);
    row->cosine = real_or_nan(st, 17), row->mere = real_or_nan(st, 18), row->mare = real_or_nan(st, 19);
    row->rmse = real_or_nan(st, 20), row->primary_thresholds = text0(st, 21);
    for (int k = 0; k < UG_DB_DISCRETE_STANDARDS; k++) row->discrete_thresholds[k] = text0(st, 22 + k);
}

int ug_db_report_outputs(ug_db *db, long run_id, int (*cb)(const ug_db_output_row *row, void *ctx), void *ctx,
                         char *err, size_t errlen)
{
#define THR(param)                                                                                                     \
    "(SELECT thresholds FROM verdicts v WHERE v.run_id = r.run_id AND v.case_id = r.case_id"                           \
    " AND v.standard = " param ")"
    sqlite3_stmt *st;
    if (prepare_run(
            db,
            "SELECT r.case_id, c.op_group, c.op, c.dtype, r.verdict, r.primary_standard, r.message, c.spec_json,"
            " r.used, m.output, m.dtype, m.n_checked, m.n_total, m.nonfinite_mismatch, m.max_abs, m.max_rel,"
            " m.max_ulp, m.cosine, m.mere, m.mare, m.rmse, " THR("r.primary_standard") ", " THR("?2") ", " THR(
                "?3") ", " THR("?4") " FROM results r JOIN cases c ON c.case_id = r.case_id"
                                     " LEFT JOIN metrics m ON m.run_id = r.run_id AND m.case_id = r.case_id"
                                     " WHERE r.run_id = ?1 ORDER BY c.op_group, c.op, r.case_id, m.rowid",
            run_id, &st, err, errlen))
        return -1;
#undef THR
    ug_db_output_row row;
    bind_discrete(st, &row);
    int rc = 0, s;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        fill_output_row(st, &row);
        rc = cb(&row, ctx);
    }
    if (!rc && s < 0) rc = s;
    sqlite3_finalize(st);
    return rc;
}
