/* query_cost.c — the measured time of every case's latest result that ran (see query_cost.h). One
 * grouped pass over results: SQLite takes a bare column of an aggregate query from the row max() chose, so
 * kernel_ms and oracle_ms come from each case's latest result. */
#include "db/query_cost.h"

#include "db/internal.h"

#include <stdio.h>

int ug_db_case_times(ug_db *db, int (*cb)(const ug_db_case_time *row, void *ctx), void *ctx, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "SELECT t.case_id, c.op, c.spec_json, t.ms FROM"
                      " (SELECT case_id, kernel_ms + coalesce(oracle_ms, 0) AS ms, max(run_id) FROM results"
                      "  WHERE verdict NOT IN ('SKIP', 'ERROR') AND kernel_ms IS NOT NULL GROUP BY case_id) t"
                      " JOIN cases c ON c.case_id = t.case_id ORDER BY t.case_id",
                      err, errlen))
        return -1;
    int rc = 0, s;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_case_time row = {(const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
                               (const char *)sqlite3_column_text(st, 2), sqlite3_column_double(st, 3)};
        rc = cb(&row, ctx);
    }
    if (!rc && s < 0) rc = s;
    sqlite3_finalize(st);
    return rc;
}
