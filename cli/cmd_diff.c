/* cmd_diff.c — `ulpgym diff RUN_A RUN_B`: what changed between two runs: new failures,
 * fixed cases, and cases whose max ulp error moved by more than a factor, per group. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *diff_sql =
    "SELECT c.op_group, c.op, c.dtype, a.case_id, a.verdict, b.verdict,"
    " (SELECT max(max_ulp) FROM metrics m WHERE m.run_id = a.run_id AND m.case_id = a.case_id),"
    " (SELECT max(max_ulp) FROM metrics m WHERE m.run_id = b.run_id AND m.case_id = b.case_id)"
    " FROM results a JOIN results b ON b.case_id = a.case_id AND b.run_id = ?2 JOIN cases c ON c.case_id = a.case_id"
    " WHERE a.run_id = ?1 ORDER BY c.op_group, c.op, a.case_id";

typedef struct {
    long common, new_fail, fixed, moved;
} diff_counts;

static int ug_cmd_diff(int argc, char **argv)
{
    const char *db_path = NULL, *factor_s = NULL, *runs[2] = {NULL, NULL};
    int nruns = 0;
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--factor", &factor_s))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (argv[i][0] != '-' && nruns < 2) runs[nruns++] = argv[i];
        else return ug_cli_fail("diff: unexpected argument \"%s\" (see ulpgym diff -h)", argv[i]);
    }
    if (nruns != 2) return ug_cli_fail("diff: give two runs: ulpgym diff RUN_A RUN_B");
    double factor = factor_s ? strtod(factor_s, NULL) : 4.0;
    if (!(factor > 1.0)) return ug_cli_fail("diff: --factor must be a number > 1");
    ug_db *db;
    if (ug_cli_open_db(db_path, 0, &db)) return UG_EXIT_USAGE;
    long a, b;
    char err[256];
    if (ug_db_resolve_run(db, runs[0], &a, err, sizeof err) || ug_db_resolve_run(db, runs[1], &b, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("diff: %s", err);
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ug_db_handle(db), diff_sql, -1, &st, NULL) != SQLITE_OK) {
        ug_db_close(db);
        return ug_cli_fail("diff: %s", sqlite3_errmsg(ug_db_handle(db)));
    }
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    diff_counts per[UG_GROUP_COUNT] = {{0}}, all = {0};
    printf("diff run %ld -> run %ld (ulp factor %g)\n", a, b, factor);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int g = ug_group_find((const char *)sqlite3_column_text(st, 0));
        if (g < 0) continue;
        const char *va = (const char *)sqlite3_column_text(st, 4), *vb = (const char *)sqlite3_column_text(st, 5);
        const char *id = (const char *)sqlite3_column_text(st, 3), *op = (const char *)sqlite3_column_text(st, 1);
        const char *dt = (const char *)sqlite3_column_text(st, 2);
        double ua = sqlite3_column_double(st, 6), ub = sqlite3_column_double(st, 7);
        int pa = strcmp(va, "PASS") == 0, pb = strcmp(vb, "PASS") == 0;
        per[g].common++;
        if (pa && !pb) {
            per[g].new_fail++;
            printf("  NEW FAIL  %s  %-30s %-5s %s -> %s  (ulpgym triage %s)\n", id, op, dt, va, vb, id);
        } else if (!pa && pb) {
            per[g].fixed++;
            printf("  FIXED     %s  %-30s %-5s %s -> %s\n", id, op, dt, va, vb);
        } else if (pa && pb && fmax(ua, ub) > 0.5 && (ub > factor * fmax(ua, 0.5) || ua > factor * fmax(ub, 0.5))) {
            per[g].moved++;
            printf("  MOVED     %s  %-30s %-5s max ulp %.3g -> %.3g\n", id, op, dt, ua, ub);
        }
    }
    sqlite3_finalize(st);
    printf("%-11s %8s %9s %7s %7s\n", "group", "common", "new fail", "fixed", "moved");
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        if (!per[g].common) continue;
        printf("%-11s %8ld %9ld %7ld %7ld\n", ug_group_name((ug_group)g), per[g].common, per[g].new_fail, per[g].fixed,
               per[g].moved);
        all.common += per[g].common;
        all.new_fail += per[g].new_fail;
        all.fixed += per[g].fixed;
        all.moved += per[g].moved;
    }
    printf("%-11s %8ld %9ld %7ld %7ld\n", "total", all.common, all.new_fail, all.fixed, all.moved);
    ug_db_close(db);
    return all.new_fail ? UG_EXIT_FOUND : 0;
}

const ug_command ug_command_diff = {
    "diff", ug_cmd_diff, "compare two runs: new failures, fixed cases, moved errors",
    "usage: ulpgym diff RUN_A RUN_B [--factor F] [--db PATH]\n"
    "  Over the cases both runs hold: NEW FAIL (passed in A, not in B), FIXED, and MOVED\n"
    "  (both pass but the max ulp error changed by more than F, default 4). RUN is a number\n"
    "  or \"latest\". Exit status 1 when B has new failures.\n"};
