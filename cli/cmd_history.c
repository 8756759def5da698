/* cmd_history.c — `ulpgym history`: pass rate per run, optionally per op/group. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int ug_cmd_history(int argc, char **argv)
{
    const char *db_path = NULL, *last = NULL;
    ug_cli_filter f = {0};
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--last", &last))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else return ug_cli_fail("history: unexpected argument \"%s\" (see ulpgym history -h)", argv[i]);
    }
    long n_last = last ? ug_cli_long(last) : 20;
    if (n_last <= 0) return ug_cli_fail("history: --last must be a positive number");
    ug_db *db;
    if (ug_cli_open_db(db_path, 0, &db)) return UG_EXIT_USAGE;
    char where[4096] = "1";
    size_t w = 1;
    if (f.any_op) {
        w = (size_t)snprintf(where, sizeof where, "c.op IN (");
        for (int op = 0, first = 1; op < UG_OP_COUNT; op++)
            if (f.ops[op]) {
                w += (size_t)snprintf(where + w, sizeof where - w, "%s'%s'", first ? "" : ",", ug_op_name(op));
                first = 0;
            }
        w += (size_t)snprintf(where + w, sizeof where - w, ")");
    }
    if (f.groups) {
        w += (size_t)snprintf(where + w, sizeof where - w, " AND c.op_group IN (");
        for (int g = 0, first = 1; g < UG_GROUP_COUNT; g++)
            if (f.groups >> g & 1u) {
                w += (size_t)snprintf(where + w, sizeof where - w, "%s'%s'", first ? "" : ",", ug_group_name((ug_group)g));
                first = 0;
            }
        snprintf(where + w, sizeof where - w, ")");
    }
    char sql[8192];
    snprintf(sql, sizeof sql,
             "SELECT * FROM (SELECT r.run_id, ru.started_at, ru.status, ru.backend, ru.plan_name, count(*) AS n,"
             " sum(r.verdict = 'PASS'), sum(r.verdict = 'FAIL'), sum(r.verdict NOT IN ('PASS','FAIL'))"
             " FROM results r JOIN runs ru ON ru.run_id = r.run_id JOIN cases c ON c.case_id = r.case_id"
             " WHERE %s GROUP BY r.run_id ORDER BY r.run_id DESC LIMIT %ld) ORDER BY run_id",
             where, n_last);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ug_db_handle(db), sql, -1, &st, NULL) != SQLITE_OK) {
        int rc = ug_cli_fail("history: %s", sqlite3_errmsg(ug_db_handle(db)));
        ug_db_close(db);
        return rc;
    }
    printf("%5s  %-20s %-11s %7s %7s %7s %7s %8s  %-s\n", "run", "started (UTC)", "status", "cases", "pass", "fail",
           "other", "pass %", "backend / plan");
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long n = sqlite3_column_int64(st, 5), pass = sqlite3_column_int64(st, 6);
        printf("%5lld  %-20s %-11s %7ld %7ld %7lld %7lld %7.2f%%  %s / %s\n", sqlite3_column_int64(st, 0),
               (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2), n, pass,
               sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 8), n ? 100.0 * (double)pass / (double)n : 0.0,
               (const char *)sqlite3_column_text(st, 3),
               sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "-");
        rows++;
    }
    sqlite3_finalize(st);
    if (!rows) printf("(no results%s)\n", f.any_op || f.groups ? " for this filter" : "");
    ug_db_close(db);
    return 0;
}

const ug_command ug_command_history = {
    "history", ug_cmd_history, "pass rate per run",
     "usage: ulpgym history [--op OP]... [--group G]... [--last N] [--db PATH]\n"
     "  One line per run (newest last): cases, passed, failed, other, pass %, backend, plan.\n"
     "  --op/--group restrict the counts to those operators.\n"};
