/* query_case.c — lookups about one case or run for `triage` and `check` (see
 * query_case.h). The stored-metrics columns and the mapping from ug_metrics to them are
 * kept side by side here, so triage's comparison cannot drift out of step with them. */
#include "db/query_case.h"

#include <stdio.h>

#include "db/internal.h"

static const char *const metric_columns[UG_DB_MC_COUNT] = {
    "n_checked", "max_abs", "max_rel",         "max_ulp", "mean_ulp",   "mere",         "mare",
    "rmse",      "eb",      "small_err_ratio", "cosine",  "bench_mare", "max_ulp_index"};

const char *ug_db_metric_column(int c) { return c >= 0 && c < UG_DB_MC_COUNT ? metric_columns[c] : "?"; }

void ug_db_metric_values(const ug_metrics *m, double v[UG_DB_MC_COUNT])
{
    v[UG_DB_MC_N_CHECKED] = (double)m->n;
    v[UG_DB_MC_MAX_ABS] = m->max_abs;
    v[UG_DB_MC_MAX_REL] = m->max_rel;
    v[UG_DB_MC_MAX_ULP] = m->max_ulp;
    v[UG_DB_MC_MEAN_ULP] = m->mean_ulp;
    v[UG_DB_MC_MERE] = m->mere;
    v[UG_DB_MC_MARE] = m->mare;
    v[UG_DB_MC_RMSE] = m->rmse;
    v[UG_DB_MC_EB] = m->eb;
    v[UG_DB_MC_SMALL_ERR_RATIO] = m->small_err_ratio;
    v[UG_DB_MC_COSINE] = m->cosine;
    v[UG_DB_MC_BENCH_MARE] = m->b_mare;
    v[UG_DB_MC_MAX_ULP_INDEX] = (double)m->max_ulp_idx;
}

int ug_db_get_metrics(ug_db *db, long run_id, const char *case_id, const char *output, ug_db_metric_row *row, char *err,
                      size_t errlen)
{
    char sql[512];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    for (int c = 0; c < UG_DB_MC_COUNT; c++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", c ? ", " : "", metric_columns[c]);
    snprintf(sql + n, sizeof sql - n, " FROM metrics WHERE run_id = ? AND case_id = ? AND output = ?");
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, sql, err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, output, -1, SQLITE_TRANSIENT);
    int found = ug_db_step_row(db, st, err, errlen);
    for (int c = 0; found == 1 && c < UG_DB_MC_COUNT; c++) {
        row->v[c] = sqlite3_column_double(st, c);
        row->is_null[c] = sqlite3_column_type(st, c) == SQLITE_NULL;
    }
    sqlite3_finalize(st);
    return found;
}

int ug_db_get_verdict(ug_db *db, long run_id, const char *case_id, char *verdict, size_t vlen, char *message,
                      size_t mlen, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "SELECT verdict, message FROM results WHERE run_id = ? AND case_id = ?", err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, case_id, -1, SQLITE_TRANSIENT);
    int found = ug_db_step_row(db, st, err, errlen);
    if (found == 1) {
        const unsigned char *v = sqlite3_column_text(st, 0), *m = sqlite3_column_text(st, 1);
        snprintf(verdict, vlen, "%s", v ? (const char *)v : "");
        snprintf(message, mlen, "%s", m ? (const char *)m : "");
    }
    sqlite3_finalize(st);
    return found;
}

long ug_db_latest_replay_run(ug_db *db, const char *plan_name)
{
    sqlite3_stmt *st;
    long run = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT max(run_id) FROM runs WHERE backend = 'replay' AND plan_name = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, plan_name, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) run = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return run;
}

int ug_db_get_outputs_dir(ug_db *db, long run_id, const char *case_id, char *dir, size_t len, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "SELECT outputs_dir FROM results WHERE run_id = ? AND case_id = ?", err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, case_id, -1, SQLITE_TRANSIENT);
    int found = ug_db_step_row(db, st, err, errlen);
    const unsigned char *d = found == 1 ? sqlite3_column_text(st, 0) : NULL;
    if (found == 1 && !(d && *d)) found = 0;
    if (found == 1) snprintf(dir, len, "%s", (const char *)d);
    sqlite3_finalize(st);
    return found;
}

int ug_db_set_outputs_dir(ug_db *db, long run_id, const char *case_id, const char *dir, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "UPDATE results SET outputs_dir = ? WHERE run_id = ? AND case_id = ?", err, errlen))
        return -1;
    ug_db_bind_outside_text(st, 1, dir);
    sqlite3_bind_int64(st, 2, run_id);
    sqlite3_bind_text(st, 3, case_id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(db->h) == 1 ? 0 : -1;
    if (rc) snprintf(err, errlen, "database: cannot record the outputs folder of %s in run %ld", case_id, run_id);
    sqlite3_finalize(st);
    return rc;
}
