/* cmd_report.c — `ulpgym report`: one run as html, md, json, junit or csv (the format from
 * --format, else from the -o file's extension); with --unmatched, the reference tests a
 * plan has no case for and why (the plan file's "unmatched" list). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "gen/plan.h"
#include "oracles/verdict.h"
#include "reports/formats.h"
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

/* The report formats, by --format name and by the -o file's extension. */
enum { FMT_MD, FMT_JSON, FMT_HTML, FMT_JUNIT, FMT_CSV, FMT_COUNT };
static const char *const format_names[FMT_COUNT] = {"md", "json", "html", "junit", "csv"};

static int format_named(const char *name)
{
    for (int k = 0; k < FMT_COUNT; k++)
        if (strcmp(name, format_names[k]) == 0) return k;
    return -1;
}

/* The format a file's extension names (.md .markdown .json .html .htm .xml .csv, any case); -1 for others. */
static int format_of_path(const char *path)
{
    static const struct {
        const char *ext;
        int fmt;
    } exts[] = {{".md", FMT_MD},    {".markdown", FMT_MD}, {".json", FMT_JSON}, {".html", FMT_HTML},
                {".htm", FMT_HTML}, {".xml", FMT_JUNIT},   {".csv", FMT_CSV}};
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot || strchr(dot, '/')) return -1;
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++)
        if (strcasecmp(dot, exts[k].ext) == 0) return exts[k].fmt;
    return -1;
}

/* The format asked for: --format, else the -o file's extension, else md. -1 after a message. */
static int pick_format(const char *format, const char *out)
{
    int by_name = format ? format_named(format) : -1, by_ext = format_of_path(out);
    if (format && by_name < 0) {
        ug_cli_fail("report: --format must be html, md, json, junit or csv");
        return -1;
    }
    if (format && by_ext >= 0 && by_ext != by_name) {
        ug_cli_fail("report: --format %s does not match -o %s, whose extension means %s (leave --format out, or "
                    "name the file to match)",
                    format, out, format_names[by_ext]);
        return -1;
    }
    return format ? by_name : by_ext >= 0 ? by_ext : FMT_MD;
}

/* --top N or all (every failure); -1 after a message. */
static long pick_top(const char *top)
{
    if (!top) return 25;
    if (strcmp(top, "all") == 0) return INT_MAX;
    long n = ug_cli_long(top);
    if (n < 0 || n > INT_MAX) ug_cli_fail("report: --top must be a number or all");
    return n < 0 || n > INT_MAX ? -1 : n;
}

/* Writes run r in format fmt; 0, or an exit status after a message. */
static int write_report(ug_db *db, ug_report *r, int fmt, FILE *f)
{
    char err[512];
    ug_run_record run;
    switch (fmt) {
    case FMT_MD:
        ug_report_write_md(r, f);
        return strcmp(r->plan, "reference") == 0 && print_unmatched("reference", f) ? UG_EXIT_USAGE : 0;
    case FMT_JSON:
        ug_report_write_json_run(r, ug_db_run_get(db, r->run_id, &run, err, sizeof err) == 0 ? &run : NULL, f);
        return 0;
    case FMT_HTML: ug_report_write_html(r, f); return 0;
    case FMT_JUNIT: return ug_report_write_junit(db, r, f, err, sizeof err) ? ug_cli_fail("report: %s", err) : 0;
    default: return ug_report_write_csv(db, r, f, err, sizeof err) ? ug_cli_fail("report: %s", err) : 0;
    }
}

static int ug_cmd_report(int argc, char **argv)
{
    const char *db_path = NULL, *run = "latest", *format = NULL, *out = NULL, *top = NULL, *plan = NULL;
    int unmatched = 0;
    const ug_cli_valopt value_opts[] = {{"--db", &db_path}, {"--run", &run}, {"--plan", &plan}, {"--format", &format},
                                        {"-o", &out},       {"--top", &top}, {NULL, NULL}};
    for (int i = 1; i < argc; i++) {
        int m;
        if (ug_cli_flag(argv, i, "--unmatched")) {
            unmatched = 1;
            continue;
        }
        if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("report: unexpected argument \"%s\" (see ulpgym report -h)", argv[i]);
    }
    if (unmatched) return print_unmatched(plan ? plan : "reference", stdout) ? UG_EXIT_USAGE : 0;
    if (plan) return ug_cli_fail("report: --plan goes with --unmatched");
    int fmt = pick_format(format, out);
    long ntop = pick_top(top);
    if (fmt < 0 || ntop < 0) return UG_EXIT_USAGE;
    ug_db *db;
    if (ug_cli_open_db(db_path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    char err[512];
    long run_id;
    ug_report r;
    if (ug_db_resolve_run(db, run, &run_id, err, sizeof err) ||
        ug_report_gather(db, run_id, (int)ntop, UG_DRIFT_FACTOR_DEFAULT, &r, err, sizeof err)) {
        ug_db_close(db);
        return ug_cli_fail("report: %s", err);
    }
    snprintf(r.db_path, sizeof r.db_path, "%s", ug_db_default_path(db_path));
    FILE *f = out ? fopen(out, "w") : stdout;
    int rc = f ? write_report(db, &r, fmt, f) : ug_cli_fail("report: cannot write %s", out);
    if (f && f != stdout && fclose(f) != 0) rc = ug_cli_fail("report: writing %s failed", out);
    ug_report_free(&r);
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_report = {
    "report", ug_cmd_report, "write a run's report: html, markdown, json, junit or csv",
    "usage: ulpgym report [--run ID|latest] [--format html|md|json|junit|csv] [-o FILE] [--top N|all] [--db PATH]\n"
    "       ulpgym report --unmatched [--plan NAME|FILE]\n"
    "  html, md, json and junit lead with what changed since the last like-for-like run (same\n"
    "  plan hash, selection, backend, sample and standard): new failures, fixed, still failing,\n"
    "  drift of headroom. docs/REPORTS.md describes each format, key and column.\n"
    "  html   one self-contained file: the changes, summary, pass-rate history, op x dtype\n"
    "         heatmap, headroom histograms, top failures with their triage blocks\n"
    "  md     the changes, the release report's generalization table (group, operators,\n"
    "         cases, pass rate), one row per operator with its passing case nearest the\n"
    "         limit, top failures with their deciding figure, headroom and triage line\n"
    "  json   the same for tools: \"format\": \"ulpgym-report/1\"\n"
    "  junit  one testcase per case (\"fp32 rows=3 cols=257 [ID]\", classname group.op), for CI\n"
    "  csv    one row per case x output with msprobe-style columns (Cosine, MaxAbsErr, MERE, ...)\n"
    "  -o FILE    write to FILE; without --format its extension picks the format (.html .md\n"
    "             .json .xml .csv); a --format that does not match it is an error\n"
    "  --top N    failures listed (default 25; all: every one)\n"
    "  --unmatched  the reference tests the plan (default: reference) has no case for, and why;\n"
    "               the md report of a run of the reference plan ends with the same list\n"};
