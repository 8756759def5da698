/* cmd_diff.c — `ulpgym diff RUN_A RUN_B`: what changed between two runs: new failures,
 * fixed cases, and cases whose max ulp error moved by more than a factor, per group; beside
 * them the cases whose certified verdict flipped, and the pass rates of both runs over
 * their common cases, of the outcome and of the certified standard. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
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
    long fails_b, new_fails_b; /* --fail-on: B neither PASS nor SKIP; of those, A PASS or SKIP */
    const char *db_path;       /* for the triage lines: run B of this database, its backend */
    long run_b;
    char backend_b[600];
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
    d->fails_b += ug_verdict_text_fails(vb);
    d->new_fails_b += ug_verdict_text_fails(vb) && !ug_verdict_text_fails(va);
    if (pa && !pb) {
        per[g].new_fail++;
        char *line = ug_triage_line(id, d->db_path, d->run_b, d->backend_b);
        printf("  NEW FAIL  %s  %-30s %-5s %s -> %s  (%s)\n", id, op, dt, va, vb, line ? line : id);
        free(line);
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
    const char *db_path = NULL, *factor_s = NULL, *runs[2] = {NULL, NULL}, *fail_on = NULL;
    ug_fail_on policy = UG_FAIL_ON_NEW; /* diff is about change */
    int nruns = 0;
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--factor", &factor_s)) ||
            (m = ug_cli_opt(argc, argv, &i, "--fail-on", &fail_on))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (argv[i][0] != '-' && nruns < 2) runs[nruns++] = argv[i];
        else return ug_cli_fail("diff: unexpected argument \"%s\" (see ulpgym diff -h)", argv[i]);
    }
    if (nruns != 2) return ug_cli_fail("diff: give two runs: ulpgym diff RUN_A RUN_B");
    if (ug_fail_on_parse("diff", fail_on, &policy)) return UG_EXIT_USAGE;
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
    diff_state d = {.factor = factor, .db_path = ug_db_default_path(db_path), .run_b = b};
    ug_run_record rec_b;
    if (ug_db_run_get(db, b, &rec_b, err, sizeof err) == 0) snprintf(d.backend_b, sizeof d.backend_b, "%s", rec_b.backend);
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
    long counted = policy == UG_FAIL_ON_NEW ? d.new_fails_b : policy == UG_FAIL_ON_FAIL ? d.fails_b : 0;
    return counted ? UG_EXIT_FOUND : UG_EXIT_OK;
}

const ug_command ug_command_diff = {
    "diff", ug_cmd_diff, "compare two runs: new failures, fixed cases, moved errors, certified flips",
    "usage: ulpgym diff RUN_A RUN_B [--factor F] [--fail-on never|fail|new] [--db PATH]\n"
    "  Over the cases both runs hold: NEW FAIL (passed in A, not in B), FIXED, and MOVED\n"
    "  (both pass but the max ulp error changed by more than F, default 4); beside them\n"
    "  CERT FAIL / CERT FIXED, cases whose certified verdict went PASS -> FAIL / FAIL -> PASS\n"
    "  (a case the certified standard did not judge in a run, NA or without verdicts, is no\n"
    "  flip). Last, the pass rate of both runs over the common cases, of the outcome and of\n"
    "  the certified standard (among the cases it judged). RUN is a number or \"latest\".\n"
    "  --fail-on P  new (default): exit status 1 when a common case fails in B (neither PASS nor\n"
    "               SKIP) that passed or was skipped in A; fail: when any common case fails in B;\n"
    "               never: not for verdicts\n"
    "  Exit status: 0 --fail-on finds nothing, 1 it does, 2 bad input (no such run, not a\n"
    "  ulpgym database).\n"};
