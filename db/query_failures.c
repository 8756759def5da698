/* query_failures.c — a run's failing cases with what they stored (see query_failures.h):
 * one query selects the results, two more per case read its outputs (metrics) and its
 * verdicts with their thresholds into a ug_result that oracles/figure.h can word. Nothing
 * read here is trusted: a verdict, standard or op this build does not know is kept as text
 * and mapped to a harmless value in the parsed result. */
#include "db/query_failures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/internal.h"
#include "oracles/figure.h"

/* The WHERE clause of a filter's failures (parameters: ?1 run, ?2 standard name, ?3 the
 * compared run, ?4... the selected ops' names). */
static void failure_where(const ug_db_failure_filter *f, char *sql, size_t len)
{
    size_t n =
        (size_t)snprintf(sql, len, " FROM results r LEFT JOIN cases c ON c.case_id = r.case_id WHERE r.run_id = ?1");
    const char *fails = f->standard < 0 ? " AND r.verdict NOT IN ('PASS', 'SKIP')"
                                        : " AND EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = r.run_id AND"
                                          " v.case_id = r.case_id AND v.standard = ?2 AND v.verdict = 'FAIL')";
    const char *is_new = f->standard < 0 ? " AND coalesce((SELECT p.verdict FROM results p WHERE p.run_id = ?3 AND"
                                           " p.case_id = r.case_id), 'PASS') IN ('PASS', 'SKIP')"
                                         : " AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = ?3 AND"
                                           " v.case_id = r.case_id AND v.standard = ?2 AND v.verdict = 'FAIL')";
    n += (size_t)snprintf(sql + n, len - n, "%s%s", fails, f->compare_run > 0 ? is_new : "");
    int first = 1;
    for (int op = 0; f->ops && op < UG_OP_COUNT && n < len; op++) {
        if (!f->ops[op]) continue;
        n += (size_t)snprintf(sql + n, len - n, "%s?%d", first ? " AND c.op IN (" : ", ", 4 + op);
        first = 0;
    }
    if (!first && n < len) snprintf(sql + n, len - n, ")");
}

static int prepare_failures(ug_db *db, const ug_db_failure_filter *f, const char *select, const char *tail,
                            sqlite3_stmt **st, char *err, size_t errlen)
{
    char sql[4096], where[3500];
    failure_where(f, where, sizeof where);
    snprintf(sql, sizeof sql, "%s%s%s", select, where, tail);
    if (ug_db_prepare(db, st, sql, err, errlen)) return -1;
    sqlite3_bind_int64(*st, 1, f->run);
    if (f->standard >= 0) sqlite3_bind_text(*st, 2, ug_standard_name(f->standard), -1, SQLITE_STATIC);
    if (f->compare_run > 0) sqlite3_bind_int64(*st, 3, f->compare_run);
    for (int op = 0; f->ops && op < UG_OP_COUNT; op++)
        if (f->ops[op]) sqlite3_bind_text(*st, 4 + op, ug_op_name(op), -1, SQLITE_STATIC);
    return 0;
}

long ug_db_count_failures(ug_db *db, const ug_db_failure_filter *f, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_failures(db, f, "SELECT count(*)", "", &st, err, errlen)) return -1;
    int s = ug_db_step_row(db, st, err, errlen);
    long n = s == 1 ? (long)sqlite3_column_int64(st, 0) : s < 0 ? s : -1;
    if (!s) snprintf(err, errlen, "database: no count of the failures");
    sqlite3_finalize(st);
    return n;
}

/* The statements that read one case's outputs and verdicts, and where their errors go. */
typedef struct {
    sqlite3_stmt *metrics, *verdicts;
    ug_db *db;
    char *err;
    size_t errlen;
} detail_stmts;

static const char *text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* r's outputs from the metrics rows: name, checked elements, NaN/Inf mismatches. 0, or
 * ug_db_step_row's negative value. */
static int read_outputs(detail_stmts *d, ug_result *r)
{
    int s;
    while ((s = ug_db_step_row(d->db, d->metrics, d->err, d->errlen)) == 1 && r->n_out < UG_MAX_TENSORS) {
        ug_output_result *o = &r->out[r->n_out++];
        snprintf(o->name, sizeof o->name, "%s", text(d->metrics, 0));
        sqlite3_int64 n = sqlite3_column_int64(d->metrics, 1), bad = sqlite3_column_int64(d->metrics, 2);
        o->m.n = n > 0 ? (size_t)n : 0;
        o->m.n_nonfinite_mismatch = bad > 0 ? (size_t)bad : 0;
        int dt = ug_dtype_parse(text(d->metrics, 3));
        o->dtype = dt >= 0 ? (ug_dtype)dt : r->dtype;
        o->m.max_abs = sqlite3_column_double(d->metrics, 4); /* NULL (not provided) reads 0 */
        o->m.max_ulp = sqlite3_column_double(d->metrics, 5);
    }
    sqlite3_reset(d->metrics);
    return s < 0 ? s : 0;
}

/* r's verdict and thresholds per standard from the verdicts rows (unknown standards
 * skipped). 0, or ug_db_step_row's negative value. */
static int read_verdicts(detail_stmts *d, ug_result *r)
{
    int s;
    while ((s = ug_db_step_row(d->db, d->verdicts, d->err, d->errlen)) == 1) {
        int std = ug_standard_find(text(d->verdicts, 0));
        if (std < 0) continue;
        const char *v = text(d->verdicts, 1);
        r->verdict[std] = strcmp(v, "FAIL") == 0 ? UG_V_FAIL : strcmp(v, "PASS") == 0 ? UG_V_PASS : UG_V_NA;
        ug_result_put_stored_thresholds(r, std, text(d->verdicts, 2)); /* malformed: no figures */
    }
    sqlite3_reset(d->verdicts);
    return s < 0 ? s : 0;
}

/* Fills r from the current row of st (case_id, op, dtype, verdict, message, primary_standard):
 * 0, or ug_db_step_row's negative value from its outputs or verdicts. */
static int read_result(sqlite3_stmt *st, detail_stmts *d, ug_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->case_id, sizeof r->case_id, "%s", text(st, 0));
    r->op = ug_op_find(text(st, 1));
    int dt = ug_dtype_parse(text(st, 2)), outcome = ug_outcome_find(text(st, 3));
    r->dtype = dt >= 0 ? (ug_dtype)dt : UG_DT_FP32;
    r->outcome = outcome >= 0 ? (ug_outcome)outcome : UG_OUT_ERROR;
    snprintf(r->message, sizeof r->message, "%s", text(st, 4));
    r->primary = ug_standard_find(text(st, 5));
    for (int s = 0; s < UG_STD_COUNT; s++) r->verdict[s] = UG_V_NA;
    sqlite3_stmt *both[2] = {d->metrics, d->verdicts};
    for (int k = 0; k < 2; k++) {
        sqlite3_bind_int64(both[k], 1, sqlite3_column_int64(st, 6));
        sqlite3_bind_text(both[k], 2, text(st, 0), -1, SQLITE_TRANSIENT);
    }
    r->used = sqlite3_column_type(st, 7) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 7);
    int rc = read_outputs(d, r);
    return rc ? rc : read_verdicts(d, r);
}

static int walk_failures(ug_db *db, sqlite3_stmt *st, detail_stmts *d, ug_result *r,
                         int (*cb)(const ug_db_failure_row *row, void *ctx), void *ctx, char *err, size_t errlen)
{
    int rc = 0, s;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        if ((rc = read_result(st, d, r))) break;
        ug_db_failure_row row = {text(st, 0), text(st, 1), text(st, 2), text(st, 3), text(st, 4), text(st, 5), r};
        rc = cb(&row, ctx);
    }
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_failures(ug_db *db, const ug_db_failure_filter *f, int (*cb)(const ug_db_failure_row *row, void *ctx),
                   void *ctx, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    detail_stmts d = {NULL, NULL, db, err, errlen};
    ug_result *r = malloc(sizeof *r);
    int rc = -1;
    if (!r)
        snprintf(err, errlen, "out of memory reading the failures");
    else if (!prepare_failures(db, f,
                               "SELECT r.case_id, c.op, c.dtype, r.verdict, r.message, r.primary_standard, r.run_id,"
                               " r.used",
                               " ORDER BY r.case_id", &st, err, errlen) &&
             !ug_db_prepare(db, &d.metrics,
                            "SELECT output, n_checked, nonfinite_mismatch, dtype, max_abs, max_ulp FROM metrics"
                            " WHERE run_id = ? AND case_id = ? ORDER BY rowid",
                            err, errlen) &&
             !ug_db_prepare(db, &d.verdicts,
                            "SELECT standard, verdict, thresholds FROM verdicts WHERE run_id = ? AND case_id = ?", err,
                            errlen))
        rc = walk_failures(db, st, &d, r, cb, ctx, err, errlen);
    sqlite3_finalize(st);
    sqlite3_finalize(d.metrics);
    sqlite3_finalize(d.verdicts);
    free(r);
    return rc;
}

long ug_db_comparable_run(ug_db *db, long run, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "SELECT max(p.run_id) FROM runs p, runs c WHERE c.run_id = ?1 AND p.run_id < ?1"
                      " AND p.status = 'done' AND p.merged_from IS NULL AND p.plan_hash IS c.plan_hash"
                      " AND p.backend IS c.backend AND p.op_filter IS c.op_filter AND p.group_filter IS c.group_filter"
                      " AND p.case_limit IS c.case_limit AND p.shard IS c.shard AND p.sample IS c.sample"
                      " AND p.primary_standard IS c.primary_standard",
                      err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int s = ug_db_step_row(db, st, err, errlen);
    long prev = s == 1 ? (long)sqlite3_column_int64(st, 0) : s < 0 ? s : -1;
    if (!s) snprintf(err, errlen, "database: no answer looking for the run before run %ld", run);
    sqlite3_finalize(st);
    return prev;
}

int ug_db_previous_verdict(ug_db *db, const char *case_id, long before_run, const char *backend_kind,
                           const char *standard, char *verdict, size_t vlen, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "SELECT r.verdict FROM results r JOIN runs u ON u.run_id = r.run_id"
                      " WHERE r.case_id = ?1 AND (?2 <= 0 OR r.run_id < ?2) AND r.primary_standard = ?4"
                      " AND CASE WHEN instr(u.backend, ':') > 0 THEN substr(u.backend, 1, instr(u.backend, ':') - 1)"
                      " ELSE u.backend END = ?3 ORDER BY r.run_id DESC LIMIT 1",
                      err, errlen))
        return -1;
    sqlite3_bind_text(st, 1, case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, before_run);
    sqlite3_bind_text(st, 3, backend_kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, standard, -1, SQLITE_TRANSIENT);
    int found = ug_db_step_row(db, st, err, errlen);
    if (found == 1) snprintf(verdict, vlen, "%s", text(st, 0));
    sqlite3_finalize(st);
    return found;
}
