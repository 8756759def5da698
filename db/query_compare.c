/* query_compare.c — two runs case by case, and the classification of each change (see
 * query_compare.h). */
#include "db/query_compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "db/internal.h"

static const char compare_sql[] =
    "SELECT c.op_group, c.op, c.dtype, b.case_id, coalesce(a.verdict, ''), b.verdict, coalesce(b.message, ''),"
    " a.used, b.used,"
    " (SELECT max(m.max_ulp) FROM metrics m WHERE m.run_id = ?1 AND m.case_id = b.case_id),"
    " (SELECT max(m.max_ulp) FROM metrics m WHERE m.run_id = ?2 AND m.case_id = b.case_id),"
    " coalesce(ca.verdict, ''), coalesce(cb.verdict, '')"
    " FROM results b JOIN cases c ON c.case_id = b.case_id"
    " LEFT JOIN results a ON a.run_id = ?1 AND a.case_id = b.case_id"
    " LEFT JOIN verdicts ca ON ca.run_id = ?1 AND ca.case_id = b.case_id AND ca.standard = ?3"
    " LEFT JOIN verdicts cb ON cb.run_id = ?2 AND cb.case_id = b.case_id AND cb.standard = ?3"
    " WHERE b.run_id = ?2 ORDER BY c.op_group, c.op, b.case_id";

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static double col_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int ug_db_compare_runs(ug_db *db, long a, long b, int (*cb)(const ug_db_compare_row *row, void *ctx), void *ctx,
                       char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, compare_sql, err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    sqlite3_bind_text(st, 3, "certified", -1, SQLITE_STATIC);
    int rc = 0, step;
    while (!rc && (step = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_compare_row row = {col_text(st, 0),  col_text(st, 1),  col_text(st, 2), col_text(st, 3), col_text(st, 4),
                                 col_text(st, 5),  col_text(st, 6),  col_real(st, 7), col_real(st, 8), col_real(st, 9),
                                 col_real(st, 10), col_text(st, 11), col_text(st, 12)};
        rc = cb(&row, ctx);
    }
    if (!rc && step < 0) rc = step;
    sqlite3_finalize(st);
    return rc;
}

/* A stored outcome that counts as a failure: neither PASS nor SKIP (nor no result). */
static int fails(const char *v) { return v[0] && strcmp(v, "PASS") != 0 && strcmp(v, "SKIP") != 0; }

ug_change ug_change_classify(const ug_db_compare_row *row, double drift_factor)
{
    if (fails(row->verdict_b)) return fails(row->verdict_a) ? UG_CHANGE_STILL_FAILING : UG_CHANGE_NEW_FAIL;
    if (strcmp(row->verdict_b, "PASS") != 0) return UG_CHANGE_NONE;
    if (fails(row->verdict_a)) return UG_CHANGE_FIXED;
    if (strcmp(row->verdict_a, "PASS") == 0 && row->used_b >= UG_DRIFT_FLOOR &&
        row->used_b > drift_factor * row->used_a)
        return UG_CHANGE_DRIFT; /* NaN on either side: no comparison, no drift */
    return UG_CHANGE_NONE;
}

const char *ug_change_name(ug_change c)
{
    static const char *const names[UG_CHANGE_COUNT] = {"unchanged", "new failure", "fixed", "still failing", "drift"};
    return (unsigned)c < UG_CHANGE_COUNT ? names[c] : "?";
}

const char *ug_change_key(ug_change c)
{
    static const char *const keys[UG_CHANGE_COUNT] = {"unchanged", "new_failures", "fixed", "still_failing", "drift"};
    return (unsigned)c < UG_CHANGE_COUNT ? keys[c] : "?";
}
