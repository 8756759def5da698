/* query_history.c — the queries behind `ulpgym history` (see query_history.h; `ulpgym
 * diff` reads db/query_compare.c).
 *
 * The history filter becomes one SQL condition over c (cases) and ru (runs) shared by its
 * three queries: op and group names come from the registry (so they are known
 * identifiers and go in as literals), the --since date is bound as :since. */
#include "db/query_history.h"

#include <stdio.h>
#include <string.h>

#include "db/internal.h"

/* Appends " AND <column> IN ('a','b')" for the selected names. */
static void add_in(char *where, size_t len, const char *column, const char *(*name)(int), int n,
                   int (*selected)(const ug_db_history_filter *, int), const ug_db_history_filter *f)
{
    size_t w = strlen(where);
    w += (size_t)snprintf(where + w, len - w, " AND %s IN (", column);
    for (int i = 0, first = 1; i < n && w < len; i++)
        if (selected(f, i)) {
            w += (size_t)snprintf(where + w, len - w, "%s'%s'", first ? "" : ",", name(i));
            first = 0;
        }
    if (w < len) snprintf(where + w, len - w, ")");
}

static int op_selected(const ug_db_history_filter *f, int i) { return f->ops[i] != 0; }
static int group_selected(const ug_db_history_filter *f, int g) { return (f->groups >> g & 1u) != 0; }
static const char *group_name(int g) { return ug_group_name((ug_group)g); }

static void build_where(const ug_db_history_filter *f, char *where, size_t len)
{
    snprintf(where, len, "1");
    if (f->since) snprintf(where + strlen(where), len - strlen(where), " AND ru.started_at >= :since");
    if (f->ops) add_in(where, len, "c.op", ug_op_name, UG_OP_COUNT, op_selected, f);
    if (f->groups) add_in(where, len, "c.op_group", group_name, UG_GROUP_COUNT, group_selected, f);
}

/* Prepares sql (a format with one %s: the filter's condition) and binds :since. */
static int prepare_filtered(ug_db *db, const char *fmt, const ug_db_history_filter *f, sqlite3_stmt **st, char *err,
                            size_t errlen)
{
    char where[4096], sql[8192];
    build_where(f, where, sizeof where);
    snprintf(sql, sizeof sql, fmt, where);
    if (ug_db_prepare(db, st, sql, err, errlen)) return -1;
    int i = sqlite3_bind_parameter_index(*st, ":since");
    if (i) sqlite3_bind_text(*st, i, f->since, -1, SQLITE_TRANSIENT);
    return 0;
}

static const char *text(sqlite3_stmt *st, int i) { return (const char *)sqlite3_column_text(st, i); }

int ug_db_history_rates(ug_db *db, const ug_db_history_filter *f, int (*cb)(const ug_db_rate_row *row, void *ctx),
                        void *ctx, char *err, size_t errlen)
{
    const char *col = f->by == UG_DB_BY_GROUP   ? "c.op_group"
                      : f->by == UG_DB_BY_OP    ? "c.op"
                      : f->by == UG_DB_BY_DTYPE ? "c.dtype"
                                                : NULL;
    char fmt[2048];
    /* %%s stays for prepare_filtered's condition. cv: the case's certified verdict (none for a case that was not
     * judged: SKIP, ERROR, CRASH, TIMEOUT), found by the verdicts primary key. */
    snprintf(fmt, sizeof fmt,
             "SELECT r.run_id, ru.started_at, ru.status, ru.backend, coalesce(ru.plan_name, '-'), %s,"
             " count(*), sum(r.verdict = 'PASS'), sum(r.verdict = 'FAIL'), sum(r.verdict NOT IN ('PASS','FAIL')),"
             " count(CASE WHEN cv.verdict IN ('PASS','FAIL') THEN 1 END),"
             " count(CASE WHEN cv.verdict = 'PASS' THEN 1 END),"
             " coalesce(ru.primary_standard, '')"
             " FROM results r JOIN runs ru ON ru.run_id = r.run_id JOIN cases c ON c.case_id = r.case_id"
             " LEFT JOIN verdicts cv ON cv.run_id = r.run_id AND cv.case_id = r.case_id AND cv.standard = :certified"
             " WHERE r.run_id IN (SELECT run_id FROM runs ORDER BY run_id DESC LIMIT %ld) AND %%s"
             " GROUP BY r.run_id%s%s ORDER BY r.run_id%s%s",
             col ? col : "''", f->last, col ? ", " : "", col ? col : "", col ? ", " : "", col ? col : "");
    sqlite3_stmt *st;
    if (prepare_filtered(db, fmt, f, &st, err, errlen)) return -1;
    sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":certified"), ug_standard_name(UG_STD_CERTIFIED), -1,
                      SQLITE_STATIC);
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_rate_row row = {sqlite3_column_int64(st, 0),
                              text(st, 1),
                              text(st, 2),
                              text(st, 3),
                              text(st, 4),
                              text(st, 5),
                              (long)sqlite3_column_int64(st, 6),
                              (long)sqlite3_column_int64(st, 7),
                              sqlite3_column_int64(st, 8),
                              sqlite3_column_int64(st, 9),
                              (long)sqlite3_column_int64(st, 10),
                              (long)sqlite3_column_int64(st, 11),
                              text(st, 12)};
        rc = cb(&row, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

/* Flaky: the same case under the same plan hash, source revision (a dirty tree's revision hashes its changes:
 * cmake/build_rev.cmake), backend, plugin file contents and deciding standard (results.primary_standard: a `sweep
 * --primary` run decides by another rule, so its verdicts may differ by design) got different verdicts. */
static const char flaky_sql[] =
    "SELECT r.case_id, c.op, c.dtype, group_concat(r.run_id || ':' || r.verdict, ' ')"
    " FROM results r JOIN runs ru ON ru.run_id = r.run_id JOIN cases c ON c.case_id = r.case_id WHERE %s"
    " GROUP BY r.case_id, ru.plan_hash, ru.git_rev, ru.backend, ru.backend_sha256, r.primary_standard HAVING count(DISTINCT r.verdict) > 1"
    " ORDER BY c.op, r.case_id LIMIT 200";

/* Regressions: the first failing run after a passing one, same backend and deciding standard. */
static const char regress_sql[] =
    "SELECT f.case_id, c.op, c.dtype, min(f.run_id), f.verdict, ru.backend"
    " FROM results f JOIN runs ru ON ru.run_id = f.run_id JOIN cases c ON c.case_id = f.case_id"
    " WHERE f.verdict <> 'PASS' AND %s AND EXISTS (SELECT 1 FROM results p JOIN runs pr ON pr.run_id = p.run_id"
    "  WHERE p.case_id = f.case_id AND p.run_id < f.run_id AND p.verdict = 'PASS' AND pr.backend = ru.backend"
    "  AND p.primary_standard = f.primary_standard)"
    " GROUP BY f.case_id, ru.backend ORDER BY min(f.run_id), c.op LIMIT 200";

static int each_case(ug_db *db, const char *fmt, int regress, const ug_db_history_filter *f,
                     int (*cb)(const ug_db_history_case *c, void *ctx), void *ctx, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare_filtered(db, fmt, f, &st, err, errlen)) return -1;
    int rc = 0, s = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_db_history_case c = {text(st, 0), text(st, 1), text(st, 2), NULL, 0, NULL, NULL};
        if (regress) {
            c.first_failing_run = sqlite3_column_int64(st, 3);
            c.verdict = text(st, 4);
            c.backend = text(st, 5);
        } else {
            c.verdicts = text(st, 3);
        }
        rc = cb(&c, ctx);
    }
    sqlite3_finalize(st);
    return rc ? rc : s < 0 ? s : 0;
}

int ug_db_history_flaky(ug_db *db, const ug_db_history_filter *f, int (*cb)(const ug_db_history_case *c, void *ctx),
                        void *ctx, char *err, size_t errlen)
{
    return each_case(db, flaky_sql, 0, f, cb, ctx, err, errlen);
}

int ug_db_history_regressions(ug_db *db, const ug_db_history_filter *f,
                              int (*cb)(const ug_db_history_case *c, void *ctx), void *ctx, char *err, size_t errlen)
{
    return each_case(db, regress_sql, 1, f, cb, ctx, err, errlen);
}
