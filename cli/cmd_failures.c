/* cmd_failures.c — `ulpgym failures`: a run's failing cases, most severe first, each with
 * the figure that decided it and a paste-ready triage line (cli/failure_list.h); text or
 * JSON, no SQL for the user to write. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/failure_list.h"

typedef struct {
    const char *run, *db, *top;
    int standard, json;
    unsigned char ops[UG_OP_COUNT];
    int any_op;
} failures_opts;

static int parse(int argc, char **argv, failures_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--run", &o->run)) || (m = ug_cli_opt(argc, argv, &i, "--db", &o->db)) ||
            (m = ug_cli_opt(argc, argv, &i, "--top", &o->top))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if ((m = ug_cli_opt(argc, argv, &i, "--op", &v))) {
            int op = m < 0 ? -1 : ug_op_find(v);
            if (m < 0) return UG_EXIT_USAGE;
            if (op < 0) return ug_cli_fail("failures: unknown op \"%s\" (see `ulpgym ops`)", v);
            o->ops[op] = 1;
            o->any_op = 1;
        } else if ((m = ug_cli_opt(argc, argv, &i, "--standard", &v))) {
            if (m < 0) return UG_EXIT_USAGE;
            if ((o->standard = ug_standard_find(v)) < 0)
                return ug_cli_fail("failures: unknown standard \"%s\" (see `ulpgym standards`)", v);
        } else if (ug_cli_flag(argv, i, "--json")) {
            o->json = 1;
        } else {
            return ug_cli_fail("failures: unexpected argument \"%s\" (see ulpgym failures -h)", argv[i]);
        }
    }
    if (o->top && ug_cli_long(o->top) < 0) return ug_cli_fail("failures: --top takes a number of cases");
    return 0;
}

static void print_header(const failures_opts *o, long run, const ug_run_record *rec, size_t n)
{
    char *backend = ug_failure_escape(rec->backend);
    printf("run %ld (backend %s): %zu case%s ", run, backend ? backend : "?", n, n == 1 ? "" : "s");
    if (o->standard >= 0)
        printf("whose stored %s verdict is FAIL, most severe by its figures first\n", ug_standard_name(o->standard));
    else
        printf("failing (outcome neither PASS nor SKIP), most severe first\n");
    free(backend);
}

static int list(ug_db *db, const failures_opts *o, const char *db_path)
{
    long run;
    char err[512];
    ug_run_record rec;
    if (ug_db_resolve_run(db, o->run, &run, err, sizeof err) || ug_db_run_get(db, run, &rec, err, sizeof err))
        return ug_cli_fail("failures: %s", err);
    ug_db_failure_filter f = {.run = run, .ops = o->any_op ? o->ops : NULL, .standard = o->standard};
    ug_failure_list l;
    if (ug_failures_read(db, &f, o->json, &l, err, sizeof err)) {
        ug_cli_fail("failures: %s", err);
        return UG_EXIT_ENGINE;
    }
    size_t top = o->top ? (size_t)ug_cli_long(o->top) : l.n;
    if (o->json) {
        ug_failures_print_json(&l, top, db_path, run, rec.backend, stdout);
    } else {
        print_header(o, run, &rec, l.n);
        ug_failures_print_text(&l, top, db_path, run, rec.backend, stdout);
        if (top < l.n) printf("  (%zu more; without --top every one is listed)\n", l.n - top);
    }
    ug_failures_free(&l);
    return 0;
}

static int ug_cmd_failures(int argc, char **argv)
{
    failures_opts o = {.standard = -1};
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    ug_db *db;
    const char *path = ug_db_default_path(o.db);
    if (ug_cli_open_db(path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    rc = list(db, &o, path);
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_failures = {
    "failures", ug_cmd_failures, "list a run's failing cases, most severe first, with triage lines",
    "usage: ulpgym failures [--run R|latest] [--op OP]... [--standard S] [--top N] [--json] [--db PATH]\n"
    "  The failing cases of run R (default: the latest): every case whose outcome is neither\n"
    "  PASS nor SKIP, most severe first. Each row: case ID, op, dtype, verdict, the figure that\n"
    "  decided it (e.g. `y: 566 of 4096 checked elements beyond atol 0.0001 + rtol 0.0078 * |g|\n"
    "  (5 allowed)`; for CRASH, ERROR, TIMEOUT its message), and the triage line that reruns\n"
    "  it (`ulpgym triage ID --db DB --run R`, pasted as printed).\n"
    "  Severity is scale-free, so ops and dtypes rank together: how far the deciding figure is\n"
    "  past its limit (failed / (allowed + 1) elements, the worst element's ratio to the\n"
    "  certified bound, a share over its limit); NaN/Inf mismatches, CRASH, ERROR, TIMEOUT first.\n"
    "  --op OP        only this op's cases (repeatable)\n"
    "  --standard S   the cases whose stored verdict under standard S is FAIL (whatever decided\n"
    "                 the outcome), worded and ranked by S's figures\n"
    "  --top N        the N most severe only (default: all)\n"
    "  --json         one JSON array: the same fields plus severity, the standards read and\n"
    "                 their thresholds ({standard: {output: {...}}}); triage is null, with\n"
    "                 \"refused\", for a case ID that is not 16 hex digits\n"
    "  --db           database (default $ULPGYM_DB or ./ulpgym.db)\n"
    "  Text from the database is printed escaped (control characters as \\xNN).\n"
    "  Exit status: 0 listed (failures or none), 2 bad input (unknown op or standard, no such\n"
    "  run, not a ulpgym database), 3 the database could not be read.\n"};
