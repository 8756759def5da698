/* cmd_diff.c — `ulpgym diff RUN_A RUN_B`: what changed between two runs: new failures,
 * fixed cases, and cases whose max ulp error moved by more than a factor, per group. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "db/query_history.h"

typedef struct {
    long common, new_fail, fixed, moved;
} diff_counts;

typedef struct {
    double factor;
    diff_counts per[UG_GROUP_COUNT];
} diff_state;

/* Prints a case that changed between the runs and counts it under its group. */
static int diff_case(const ug_db_diff_row *row, void *ctx)
{
    diff_state *d = ctx;
    int g = ug_group_find(row->group);
    if (g < 0) return 0;
    const char *va = row->verdict_a, *vb = row->verdict_b, *id = row->case_id, *op = row->op, *dt = row->dtype;
    double ua = row->max_ulp_a, ub = row->max_ulp_b, factor = d->factor;
    int pa = strcmp(va, "PASS") == 0, pb = strcmp(vb, "PASS") == 0;
    diff_counts *per = d->per;
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
    return 0;
}

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
    diff_state d = {factor, {{0}}};
    diff_counts *per = d.per, all = {0};
    printf("diff run %ld -> run %ld (ulp factor %g)\n", a, b, factor);
    if (ug_db_diff_runs(db, a, b, diff_case, &d, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("diff: %s", err);
    }
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
