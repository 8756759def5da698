/* cmd_diff.c — `ulpgym diff RUN_A RUN_B`: what changed between two runs: new failures,
 * fixed cases, and cases whose max ulp error moved by more than a factor, per group; beside
 * them the cases whose certified verdict flipped, and the pass rates of both runs over
 * their common cases, of the outcome and of the certified standard. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "db/query_history.h"

typedef struct {
    long common, new_fail, fixed, moved;
    long cert_fail, cert_fixed; /* certified verdict PASS -> FAIL, FAIL -> PASS */
} diff_counts;

typedef struct {
    double factor;
    diff_counts per[UG_GROUP_COUNT];
    long pass_a, pass_b;                             /* outcome PASS, over the common cases */
    long cert_judged_a, cert_pass_a, cert_judged_b, cert_pass_b; /* certified PASS or FAIL; PASS */
} diff_state;

/* Prints a case that changed between the runs and counts it under its group. */
static int diff_case(const ug_db_diff_row *row, void *ctx)
{
    diff_state *d = ctx;
    int g = ug_group_find(row->group);
    if (g < 0) return 0;
    const char *va = row->verdict_a, *vb = row->verdict_b, *id = row->case_id, *op = row->op, *dt = row->dtype;
    const char *ca = row->certified_a, *cb = row->certified_b;
    double ua = row->max_ulp_a, ub = row->max_ulp_b, factor = d->factor;
    int pa = strcmp(va, "PASS") == 0, pb = strcmp(vb, "PASS") == 0;
    int cpa = strcmp(ca, "PASS") == 0, cpb = strcmp(cb, "PASS") == 0;
    int cfa = strcmp(ca, "FAIL") == 0, cfb = strcmp(cb, "FAIL") == 0;
    diff_counts *per = d->per;
    per[g].common++;
    d->pass_a += pa;
    d->pass_b += pb;
    d->cert_judged_a += cpa || cfa;
    d->cert_pass_a += cpa;
    d->cert_judged_b += cpb || cfb;
    d->cert_pass_b += cpb;
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
    if (cpa && cfb) {
        per[g].cert_fail++;
        printf("  CERT FAIL  %s  %-30s %-5s certified PASS -> FAIL\n", id, op, dt);
    } else if (cfa && cpb) {
        per[g].cert_fixed++;
        printf("  CERT FIXED %s  %-30s %-5s certified FAIL -> PASS\n", id, op, dt);
    }
    return 0;
}

/* "12.50%", or "-" when nothing was counted. */
static const char *rate(long pass, long n, char *buf, size_t len)
{
    if (n) snprintf(buf, len, "%.2f%%", 100.0 * (double)pass / (double)n);
    else snprintf(buf, len, "-");
    return buf;
}

/* The standard that decided run's cases: its `sweep --primary`, else each op's own. */
static const char *decided_by(ug_db *db, long run, char *buf, size_t len)
{
    ug_run_record rec;
    char err[256];
    if (ug_db_run_get(db, run, &rec, err, sizeof err) == 0 && rec.primary_standard[0])
        snprintf(buf, len, "%s (--primary)", rec.primary_standard);
    else snprintf(buf, len, "each op's own primary");
    return buf;
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
    if (ug_cli_open_db(db_path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    long a, b;
    char err[256];
    if (ug_db_resolve_run(db, runs[0], &a, err, sizeof err) || ug_db_resolve_run(db, runs[1], &b, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("diff: %s", err);
    }
    diff_state d = {.factor = factor};
    diff_counts *per = d.per, all = {0};
    printf("diff run %ld -> run %ld (ulp factor %g)\n", a, b, factor);
    char da[64], dbs[64];
    decided_by(db, a, da, sizeof da);
    decided_by(db, b, dbs, sizeof dbs);
    if (strcmp(da, dbs) != 0) printf("  outcomes decided by %s -> %s\n", da, dbs);
    if (ug_db_diff_runs(db, a, b, diff_case, &d, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("diff: %s", err);
    }
    printf("%-11s %8s %9s %7s %7s %10s %11s\n", "group", "common", "new fail", "fixed", "moved", "cert fail",
           "cert fixed");
    for (int g = 0; g < UG_GROUP_COUNT; g++) {
        if (!per[g].common) continue;
        printf("%-11s %8ld %9ld %7ld %7ld %10ld %11ld\n", ug_group_name((ug_group)g), per[g].common, per[g].new_fail,
               per[g].fixed, per[g].moved, per[g].cert_fail, per[g].cert_fixed);
        all.common += per[g].common;
        all.new_fail += per[g].new_fail;
        all.fixed += per[g].fixed;
        all.moved += per[g].moved;
        all.cert_fail += per[g].cert_fail;
        all.cert_fixed += per[g].cert_fixed;
    }
    printf("%-11s %8ld %9ld %7ld %7ld %10ld %11ld\n", "total", all.common, all.new_fail, all.fixed, all.moved,
           all.cert_fail, all.cert_fixed);
    char r1[16], r2[16], r3[16], r4[16];
    printf("pass rate over the %ld common cases: %s -> %s; certified %s -> %s (of %ld -> %ld judged)\n", all.common,
           rate(d.pass_a, all.common, r1, sizeof r1), rate(d.pass_b, all.common, r2, sizeof r2),
           rate(d.cert_pass_a, d.cert_judged_a, r3, sizeof r3), rate(d.cert_pass_b, d.cert_judged_b, r4, sizeof r4),
           d.cert_judged_a, d.cert_judged_b);
    ug_db_close(db);
    return all.new_fail ? UG_EXIT_FOUND : 0;
}

const ug_command ug_command_diff = {
    "diff", ug_cmd_diff, "compare two runs: new failures, fixed cases, moved errors, certified flips",
    "usage: ulpgym diff RUN_A RUN_B [--factor F] [--db PATH]\n"
    "  Over the cases both runs hold: NEW FAIL (passed in A, not in B), FIXED, and MOVED\n"
    "  (both pass but the max ulp error changed by more than F, default 4); beside them\n"
    "  CERT FAIL / CERT FIXED, cases whose certified verdict went PASS -> FAIL / FAIL -> PASS\n"
    "  (a case the certified standard did not judge in a run, NA or without verdicts, is no\n"
    "  flip). Last, the pass rate of both runs over the common cases, of the outcome and of\n"
    "  the certified standard (among the cases it judged). RUN is a number or \"latest\".\n"
    "  Exit status 1 when B has new failures (of the outcome).\n"};
