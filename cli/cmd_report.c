/* cmd_report.c — `ulpgym report`: one run as html, md, json or junit; with --unmatched, the
 * reference tests a plan has no case for and why (the plan file's "unmatched" list). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/plan.h"
#include "oracles/verdict.h"
#include "reports/report.h"

/* Prints the plan's unmatched reference tests as a markdown section; 0, or exit 2. */
static int print_unmatched(const char *plan_path, FILE *f)
{
    ug_plan p;
    char err[1024];
    if (ug_plan_load(plan_path, -1, &p, err, sizeof err)) return ug_cli_fail("report: %s", err);
    for (size_t i = 0; i < p.n_deviations; i++)
        if (ug_standard_find(p.deviations[i].standard) < 0) {
            ug_cli_fail("report: %s: deviations[%zu]: unknown standard \"%s\" (see ulpgym standards)", plan_path, i,
                        p.deviations[i].standard);
            ug_plan_free(&p);
            return -1;
        }
    fprintf(f, "\n## Reference tests without an equivalent (%s: %zu)\n\n", p.name, p.n_unmatched);
    for (size_t i = 0; i < p.n_unmatched; i++) fprintf(f, "- `%s`: %s\n", p.unmatched[i].source, p.unmatched[i].why);
    size_t with_source = 0;
    for (size_t i = 0; i < p.n; i++) with_source += p.cases[i].source != NULL;
    fprintf(f, "\n%zu cases reproduce reference tests; %zu reference tests have no equivalent.\n", with_source,
            p.n_unmatched);
    if (p.n_deviations) fprintf(f, "\n## Known deviations of the correct kernels (%zu)\n\n", p.n_deviations);
    for (size_t i = 0; i < p.n_deviations; i++)
        fprintf(f, "- `%s` under %s: %s\n", p.deviations[i].source, p.deviations[i].standard, p.deviations[i].why);
    ug_plan_free(&p);
    return 0;
}

static int ug_cmd_report(int argc, char **argv)
{
    const char *db_path = NULL, *run = "latest", *format = "md", *out = NULL, *top = NULL, *plan = NULL;
    int unmatched = 0;
    for (int i = 1; i < argc; i++) {
        int m;
        if (ug_cli_flag(argv, i, "--unmatched")) {
            unmatched = 1;
            continue;
        }
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--run", &run)) ||
            (m = ug_cli_opt(argc, argv, &i, "--plan", &plan)) ||
            (m = ug_cli_opt(argc, argv, &i, "--format", &format)) || (m = ug_cli_opt(argc, argv, &i, "-o", &out)) ||
            (m = ug_cli_opt(argc, argv, &i, "--top", &top))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else return ug_cli_fail("report: unexpected argument \"%s\" (see ulpgym report -h)", argv[i]);
    }
    if (unmatched) return print_unmatched(plan ? plan : "reference", stdout) ? UG_EXIT_USAGE : 0;
    if (plan) return ug_cli_fail("report: --plan goes with --unmatched");
    int fmt = strcmp(format, "md") == 0 ? 0 : strcmp(format, "json") == 0 ? 1 : strcmp(format, "html") == 0 ? 2
            : strcmp(format, "junit") == 0 ? 3 : -1;
    if (fmt < 0) return ug_cli_fail("report: --format must be html, md, json or junit");
    long ntop = top ? ug_cli_long(top) : 25;
    if (ntop < 0) return ug_cli_fail("report: --top must be a number");
    ug_db *db;
    if (ug_cli_open_db(db_path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    char err[512];
    long run_id;
    ug_report r;
    if (ug_db_resolve_run(db, run, &run_id, err, sizeof err) || ug_report_gather(db, run_id, (int)ntop, UG_DRIFT_FACTOR_DEFAULT, &r, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("report: %s", err);
    }
    snprintf(r.db_path, sizeof r.db_path, "%s", ug_db_default_path(db_path));
    FILE *f = out ? fopen(out, "w") : stdout;
    int rc = 0;
    if (!f) rc = ug_cli_fail("report: cannot write %s", out);
    else if (fmt == 0) {
        ug_report_write_md(&r, f);
        if (strcmp(r.plan, "reference") == 0 && print_unmatched("reference", f)) rc = UG_EXIT_USAGE;
    }
    else if (fmt == 1) ug_report_write_json(&r, f);
    else if (fmt == 2) ug_report_write_html(&r, f);
    else if (ug_report_write_junit(db, &r, f, err, sizeof err)) rc = ug_cli_fail("report: %s", err);
    if (f && f != stdout && fclose(f) != 0) rc = ug_cli_fail("report: writing %s failed", out);
    ug_report_free(&r);
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_report = {
    "report", ug_cmd_report, "write a run's report: html, markdown, json or junit",
    "usage: ulpgym report [--run ID|latest] [--format html|md|json|junit] [-o FILE] [--top N] [--db PATH]\n"
    "       ulpgym report --unmatched [--plan NAME|FILE]\n"
    "  --unmatched  the reference tests the plan (default: reference) has no case for, and why;\n"
    "               the md report of a run of the reference plan ends with the same list\n"
    "  html   one self-contained file: summary, pass-rate history per group, op x dtype\n"
    "         heatmap, per-op max-ulp histograms, top failures with triage commands\n"
    "  md     the release report's generalization table (group, operators, cases, pass rate)\n"
    "         and one row per operator\n"
    "  json   the same figures for tools;  junit  one testcase per case, for CI servers\n"
    "  --top  failures listed (default 25)\n"};
