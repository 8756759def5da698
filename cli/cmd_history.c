/* cmd_history.c — `ulpgym history`: how pass rates move. One line per run (optionally one
 * per run and group/op/dtype with --by), then the flaky cases (verdict flipped between
 * runs of the same plan hash, code revision and backend: nothing but chance changed) and
 * the regressions (cases that passed in an earlier run and fail in a later one, with the
 * first run that failed). --json for tools. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    char where[4096];     /* SQL condition over c (cases) and ru (runs); literals only */
    const char *by;       /* NULL, "group", "op" or "dtype" */
    long last;
    int json;
} history_opts;

/* Appends " AND <column> IN ('a','b')" for the selected names (known names only). */
static void add_in(char *where, size_t len, const char *column, const char *const *names, const unsigned char *sel, int n)
{
    size_t w = strlen(where);
    w += (size_t)snprintf(where + w, len - w, " AND %s IN (", column);
    for (int i = 0, first = 1; i < n && w < len; i++)
        if (sel[i]) {
            w += (size_t)snprintf(where + w, len - w, "%s'%s'", first ? "" : ",", names[i]);
            first = 0;
        }
    if (w < len) snprintf(where + w, len - w, ")");
}

static const char *by_column(const char *by)
{
    return !by ? NULL : strcmp(by, "group") == 0 ? "c.op_group" : strcmp(by, "op") == 0 ? "c.op"
                      : strcmp(by, "dtype") == 0 ? "c.dtype" : NULL;
}

static int print_rates(sqlite3 *h, const history_opts *o, cJSON *json)
{
    const char *col = by_column(o->by);
    char sql[8192];
    snprintf(sql, sizeof sql,
             "SELECT r.run_id, ru.started_at, ru.status, ru.backend, coalesce(ru.plan_name, '-'), %s,"
             " count(*), sum(r.verdict = 'PASS'), sum(r.verdict = 'FAIL'), sum(r.verdict NOT IN ('PASS','FAIL'))"
             " FROM results r JOIN runs ru ON ru.run_id = r.run_id JOIN cases c ON c.case_id = r.case_id"
             " WHERE r.run_id IN (SELECT run_id FROM runs ORDER BY run_id DESC LIMIT %ld) AND %s"
             " GROUP BY r.run_id%s%s ORDER BY r.run_id%s%s",
             col ? col : "''", o->last, o->where, col ? ", " : "", col ? col : "", col ? ", " : "", col ? col : "");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return ug_cli_fail("history: %s", sqlite3_errmsg(h));
    cJSON *arr = json ? cJSON_AddArrayToObject(json, "runs") : NULL;
    if (!json)
        printf("%5s  %-20s %-11s %-22s %7s %7s %7s %7s %8s  %s\n", "run", "started (UTC)", "status", col ? o->by : "",
               "cases", "pass", "fail", "other", "pass %", "backend / plan");
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long n = (long)sqlite3_column_int64(st, 6), pass = (long)sqlite3_column_int64(st, 7);
        double rate = n ? 100.0 * (double)pass / (double)n : 0.0;
        const char *key = (const char *)sqlite3_column_text(st, 5);
        rows++;
        if (arr) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "run_id", (double)sqlite3_column_int64(st, 0));
            cJSON_AddStringToObject(e, "started_at", (const char *)sqlite3_column_text(st, 1));
            cJSON_AddStringToObject(e, "backend", (const char *)sqlite3_column_text(st, 3));
            if (col) cJSON_AddStringToObject(e, o->by, key);
            cJSON_AddNumberToObject(e, "cases", (double)n);
            cJSON_AddNumberToObject(e, "passed", (double)pass);
            cJSON_AddNumberToObject(e, "failed", (double)sqlite3_column_int64(st, 8));
            cJSON_AddNumberToObject(e, "other", (double)sqlite3_column_int64(st, 9));
            cJSON_AddNumberToObject(e, "pass_rate", rate);
            cJSON_AddItemToArray(arr, e);
            continue;
        }
        printf("%5lld  %-20s %-11s %-22s %7ld %7ld %7lld %7lld %7.2f%%  %s / %s\n", sqlite3_column_int64(st, 0),
               (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2), key, n, pass,
               sqlite3_column_int64(st, 8), sqlite3_column_int64(st, 9), rate, (const char *)sqlite3_column_text(st, 3),
               (const char *)sqlite3_column_text(st, 4));
    }
    sqlite3_finalize(st);
    if (!rows && !json) printf("(no results for this filter)\n");
    return 0;
}

/* Flaky: the same case under the same plan hash, git revision and backend got different verdicts. */
static const char *flaky_sql =
    "SELECT r.case_id, c.op, c.dtype, group_concat(r.run_id || ':' || r.verdict, ' ')"
    " FROM results r JOIN runs ru ON ru.run_id = r.run_id JOIN cases c ON c.case_id = r.case_id WHERE %s"
    " GROUP BY r.case_id, ru.plan_hash, ru.git_rev, ru.backend HAVING count(DISTINCT r.verdict) > 1"
    " ORDER BY c.op, r.case_id LIMIT 200";

/* Regressions: the first failing run after a passing one, same backend. */
static const char *regress_sql =
    "SELECT f.case_id, c.op, c.dtype, min(f.run_id), f.verdict, ru.backend"
    " FROM results f JOIN runs ru ON ru.run_id = f.run_id JOIN cases c ON c.case_id = f.case_id"
    " WHERE f.verdict <> 'PASS' AND %s AND EXISTS (SELECT 1 FROM results p JOIN runs pr ON pr.run_id = p.run_id"
    "  WHERE p.case_id = f.case_id AND p.run_id < f.run_id AND p.verdict = 'PASS' AND pr.backend = ru.backend)"
    " GROUP BY f.case_id, ru.backend ORDER BY min(f.run_id), c.op LIMIT 200";

static int print_cases(sqlite3 *h, const char *fmt, const history_opts *o, const char *title, cJSON *json, int regress)
{
    char sql[8192];
    snprintf(sql, sizeof sql, fmt, o->where);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return ug_cli_fail("history: %s", sqlite3_errmsg(h));
    cJSON *arr = json ? cJSON_AddArrayToObject(json, regress ? "regressions" : "flaky") : NULL;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0), *op = (const char *)sqlite3_column_text(st, 1);
        const char *dt = (const char *)sqlite3_column_text(st, 2);
        if (arr) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "case_id", id);
            cJSON_AddStringToObject(e, "op", op);
            cJSON_AddStringToObject(e, "dtype", dt);
            if (regress) {
                cJSON_AddNumberToObject(e, "first_failing_run", (double)sqlite3_column_int64(st, 3));
                cJSON_AddStringToObject(e, "verdict", (const char *)sqlite3_column_text(st, 4));
                cJSON_AddStringToObject(e, "backend", (const char *)sqlite3_column_text(st, 5));
            } else {
                cJSON_AddStringToObject(e, "verdicts", (const char *)sqlite3_column_text(st, 3));
            }
            cJSON_AddItemToArray(arr, e);
        } else {
            if (!n) printf("\n%s:\n", title);
            if (regress)
                printf("  %s  %-30s %-5s first failed in run %lld (%s, %s)\n", id, op, dt, sqlite3_column_int64(st, 3),
                       (const char *)sqlite3_column_text(st, 4), (const char *)sqlite3_column_text(st, 5));
            else
                printf("  %s  %-30s %-5s %s\n", id, op, dt, (const char *)sqlite3_column_text(st, 3));
        }
        n++;
    }
    sqlite3_finalize(st);
    if (!n && !json) printf("\n%s: none\n", title);
    return 0;
}

static int ug_cmd_history(int argc, char **argv)
{
    const char *db_path = NULL, *last = NULL, *since = NULL;
    history_opts o = {"1", NULL, 20, 0};
    ug_cli_filter f = {0};
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--last", &last)) ||
            (m = ug_cli_opt(argc, argv, &i, "--since", &since)) || (m = ug_cli_opt(argc, argv, &i, "--by", &o.by))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (ug_cli_flag(argv, i, "--json")) o.json = 1;
        else return ug_cli_fail("history: unexpected argument \"%s\" (see ulpgym history -h)", argv[i]);
    }
    if (last && (o.last = ug_cli_long(last)) <= 0) return ug_cli_fail("history: --last must be a positive number");
    if (o.by && !by_column(o.by)) return ug_cli_fail("history: --by takes group, op or dtype");
    if (since) { /* an ISO date or time: digits, '-', ':', 'T', 'Z' only (it goes into SQL) */
        if (strspn(since, "0123456789-:TZ ") != strlen(since) || strlen(since) < 4)
            return ug_cli_fail("history: --since takes a date such as 2026-11-01");
        snprintf(o.where + strlen(o.where), sizeof o.where - strlen(o.where), " AND ru.started_at >= '%s'", since);
    }
    const char *opnames[UG_OP_COUNT], *gnames[UG_GROUP_COUNT];
    unsigned char gsel[UG_GROUP_COUNT];
    for (int i = 0; i < UG_OP_COUNT; i++) opnames[i] = ug_op_name(i);
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        gnames[g] = ug_group_name((ug_group)g);
        gsel[g] = (unsigned char)(f.groups >> g & 1u);
    }
    if (f.any_op) add_in(o.where, sizeof o.where, "c.op", opnames, f.ops, UG_OP_COUNT);
    if (f.groups) add_in(o.where, sizeof o.where, "c.op_group", gnames, gsel, UG_GROUP_COUNT);
    ug_db *db;
    if (ug_cli_open_db(db_path, 0, &db)) return UG_EXIT_USAGE;
    sqlite3 *h = ug_db_handle(db);
    cJSON *json = o.json ? cJSON_CreateObject() : NULL;
    int rc = print_rates(h, &o, json);
    if (!rc) rc = print_cases(h, flaky_sql, &o, "flaky cases (same plan, code and backend, different verdicts)", json, 0);
    if (!rc) rc = print_cases(h, regress_sql, &o, "regressions (passed before, failed later; first failing run)", json, 1);
    if (json) {
        char *s = cJSON_Print(json);
        if (!rc) printf("%s\n", s ? s : "{}");
        free(s);
        cJSON_Delete(json);
    }
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_history = {
    "history", ug_cmd_history, "pass rate per run, flaky cases and regressions",
    "usage: ulpgym history [--by group|op|dtype] [--op OP]... [--group G]... [--since DATE] [--last N]\n"
    "                      [--json] [--db PATH]\n"
    "  One line per run (newest last; --by: per run and key): cases, passed, failed,\n"
    "  other, pass %, backend, plan. Then flaky cases (verdict flipped between runs with the\n"
    "  same plan hash, code revision and backend) and regressions (passed in an earlier run\n"
    "  of the same backend, failed later: the first failing run).\n"};
