/* cmd_history.c — `ulpgym history`: how pass rates move. One line per run (optionally one
 * per run and group/op/dtype with --by) with the pass rate of the outcome and, beside it,
 * the certified standard's pass rate; then the flaky cases (verdict flipped between runs
 * of the same plan hash, code revision, backend and deciding standard: nothing but chance
 * changed) and the regressions (cases that passed in an earlier run and fail in a later
 * one under the same deciding standard, with the first run that failed). --json for tools:
 * each run row also carries what was run (plan, plan hash, status, git revision, times,
 * backend, deciding standard, selection), every database string made valid UTF-8. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "db/query_history.h"
#include "reports/failures.h" /* ug_failure_clean_utf8 */

typedef struct {
    ug_db_history_filter f;
    const char *by; /* NULL, "group", "op" or "dtype" */
    int json;
} history_opts;

/* --by NAME as the query's key; UG_DB_BY_NONE for none or an unknown name (refused). */
static ug_db_history_by by_key(const char *by)
{
    return !by                        ? UG_DB_BY_NONE
           : strcmp(by, "group") == 0 ? UG_DB_BY_GROUP
           : strcmp(by, "op") == 0    ? UG_DB_BY_OP
           : strcmp(by, "dtype") == 0 ? UG_DB_BY_DTYPE
                                      : UG_DB_BY_NONE;
}

typedef struct {
    const history_opts *o;
    cJSON *arr; /* --json: the array rows go to; NULL: print */
    int n;      /* rows seen */
    ug_db *db;  /* --json: each run's record is read from it */
} history_out;

/* key: s as valid UTF-8, or null for "" when empty_null. */
static void add_text(cJSON *o, const char *key, const char *s, int empty_null)
{
    char *c = s && !(empty_null && !s[0]) ? ug_failure_clean_utf8(s) : NULL;
    if (c)
        cJSON_AddStringToObject(o, key, c);
    else
        cJSON_AddNullToObject(o, key);
    free(c);
}

/* What run was, beside the row's started_at and backend: plan, plan hash, status, git
 * revision, end, deciding standard and selection (run_record's fields; "" as null). */
static void add_run_record(cJSON *e, ug_db *db, long run, const char *primary)
{
    ug_run_record rec;
    char err[256];
    if (ug_db_run_get(db, run, &rec, err, sizeof err)) memset(&rec, 0, sizeof rec); /* every field null */
    add_text(e, "plan", rec.plan_name, 1);
    add_text(e, "plan_path", rec.plan_path, 1);
    add_text(e, "plan_hash", rec.plan_hash, 1);
    add_text(e, "status", rec.status, 1);
    add_text(e, "git_rev", rec.git_rev, 1);
    add_text(e, "finished_at", rec.finished_at, 1);
    add_text(e, "backend_sha256", rec.backend_sha256, 1);
    add_text(e, "primary_standard", primary, 1); /* the rates query's, as before */
    add_text(e, "host", rec.host, 1);
    add_text(e, "op_filter", rec.op_filter, 1);
    add_text(e, "group_filter", rec.group_filter, 1);
    add_text(e, "shard", rec.shard, 1);
    if (rec.limit > 0)
        cJSON_AddNumberToObject(e, "case_limit", (double)rec.limit);
    else
        cJSON_AddNullToObject(e, "case_limit");
    cJSON_AddNumberToObject(e, "sample", (double)rec.sample);
    cJSON_AddBoolToObject(e, "merged", rec.merged);
}

static int print_rate(const ug_db_rate_row *row, void *ctx)
{
    history_out *out = ctx;
    const history_opts *o = out->o;
    double rate = row->n ? 100.0 * (double)row->pass / (double)row->n : 0.0;
    double cert = row->cert_judged ? 100.0 * (double)row->cert_pass / (double)row->cert_judged : 0.0;
    out->n++;
    if (out->arr) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "run_id", (double)row->run_id);
        add_text(e, "started_at", row->started_at, 0);
        add_text(e, "backend", row->backend, 0);
        add_run_record(e, out->db, (long)row->run_id, row->primary);
        if (o->by) add_text(e, o->by, row->key, 0);
        cJSON_AddNumberToObject(e, "cases", (double)row->n);
        cJSON_AddNumberToObject(e, "passed", (double)row->pass);
        cJSON_AddNumberToObject(e, "failed", (double)row->fail);
        cJSON_AddNumberToObject(e, "other", (double)row->other);
        cJSON_AddNumberToObject(e, "pass_rate", rate);
        cJSON_AddNumberToObject(e, "certified_judged", (double)row->cert_judged);
        cJSON_AddNumberToObject(e, "certified_passed", (double)row->cert_pass);
        if (row->cert_judged)
            cJSON_AddNumberToObject(e, "pass_rate_certified", cert);
        else
            cJSON_AddNullToObject(e, "pass_rate_certified");
        cJSON_AddItemToArray(out->arr, e);
        return 0;
    }
    char cert_s[16] = "      -";
    if (row->cert_judged) snprintf(cert_s, sizeof cert_s, "%7.2f%%", cert);
    printf("%5lld  %-20s %-11s %-22s %7ld %7ld %7lld %7lld %7.2f%% %8s  %s / %s%s%s\n", row->run_id, row->started_at,
           row->status, row->key, row->n, row->pass, row->fail, row->other, rate, cert_s, row->backend, row->plan_name,
           row->primary[0] ? " --primary " : "", row->primary);
    return 0;
}

static int print_rates(ug_db *db, const history_opts *o, cJSON *json)
{
    history_out out = {o, json ? cJSON_AddArrayToObject(json, "runs") : NULL, 0, db};
    if (!json)
        printf("%5s  %-20s %-11s %-22s %7s %7s %7s %7s %8s %8s  %s\n", "run", "started (UTC)", "status",
               o->by ? o->by : "", "cases", "pass", "fail", "other", "pass %", "cert %", "backend / plan");
    char err[512];
    if (ug_db_history_rates(db, &o->f, print_rate, &out, err, sizeof err)) return ug_cli_fail("history: %s", err);
    if (!out.n && !json) printf("(no results for this filter)\n");
    return 0;
}

typedef struct {
    history_out out;
    const char *title;
    int regress;
} cases_out;

static int print_case(const ug_db_history_case *c, void *ctx)
{
    cases_out *co = ctx;
    if (co->out.arr) {
        cJSON *e = cJSON_CreateObject();
        add_text(e, "case_id", c->case_id, 0);
        add_text(e, "op", c->op, 0);
        add_text(e, "dtype", c->dtype, 0);
        if (co->regress) {
            cJSON_AddNumberToObject(e, "first_failing_run", (double)c->first_failing_run);
            add_text(e, "verdict", c->verdict, 0);
            add_text(e, "backend", c->backend, 0);
        } else {
            add_text(e, "verdicts", c->verdicts, 0);
        }
        cJSON_AddItemToArray(co->out.arr, e);
    } else {
        if (!co->out.n) printf("\n%s:\n", co->title);
        if (co->regress)
            printf("  %s  %-30s %-5s first failed in run %lld (%s, %s)\n", c->case_id, c->op, c->dtype,
                   c->first_failing_run, c->verdict, c->backend);
        else
            printf("  %s  %-30s %-5s %s\n", c->case_id, c->op, c->dtype, c->verdicts);
    }
    co->out.n++;
    return 0;
}

static int print_cases(ug_db *db, const history_opts *o, const char *title, cJSON *json, int regress)
{
    cases_out co = {
        {o, json ? cJSON_AddArrayToObject(json, regress ? "regressions" : "flaky") : NULL, 0, db}, title, regress};
    char err[512];
    int rc = regress ? ug_db_history_regressions(db, &o->f, print_case, &co, err, sizeof err)
                     : ug_db_history_flaky(db, &o->f, print_case, &co, err, sizeof err);
    if (rc) return ug_cli_fail("history: %s", err);
    if (!co.out.n && !json) printf("\n%s: none\n", title);
    return 0;
}

static int ug_cmd_history(int argc, char **argv)
{
    const char *db_path = NULL, *last = NULL, *since = NULL;
    history_opts o = {{NULL, 0, NULL, 20, UG_DB_BY_NONE}, NULL, 0};
    ug_cli_filter f = {0};
    const ug_cli_valopt value_opts[] = {
        {"--db", &db_path}, {"--last", &last}, {"--since", &since}, {"--by", &o.by}, {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--json", &o.json}, {NULL, NULL}};
    const ug_cli_args cli_args = {"history", &f, value_opts, flags, NULL};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    if (last && (o.f.last = ug_cli_long(last)) <= 0) return ug_cli_fail("history: --last must be a positive number");
    if (o.by && !(o.f.by = by_key(o.by))) return ug_cli_fail("history: --by takes group, op or dtype");
    if (since) { /* an ISO date or time: digits, '-', ':', 'T', 'Z' only */
        if (strspn(since, "0123456789-:TZ ") != strlen(since) || strlen(since) < 4)
            return ug_cli_fail("history: --since takes a date such as 2026-11-01");
        o.f.since = since;
    }
    if (f.any_op) o.f.ops = f.ops;
    o.f.groups = f.groups;
    ug_db *db;
    if (ug_cli_open_db(db_path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    cJSON *json = o.json ? cJSON_CreateObject() : NULL;
    int rc = print_rates(db, &o, json);
    if (!rc)
        rc = print_cases(db, &o, "flaky cases (same plan, code, backend and deciding standard, different verdicts)",
                         json, 0);
    if (!rc) rc = print_cases(db, &o, "regressions (passed before, failed later; first failing run)", json, 1);
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
    "  other, pass % (the outcome, decided by each op's primary standard or the run's\n"
    "  `sweep --primary`, shown after the plan), cert % (the certified standard's pass rate:\n"
    "  cases whose certified verdict is PASS among those it judged PASS or FAIL; NA cases and\n"
    "  cases with no verdict, i.e. SKIP, ERROR, CRASH, TIMEOUT, are left out; \"-\" when none\n"
    "  was judged), backend, plan. --json: pass_rate, pass_rate_certified (null when none was\n"
    "  judged), certified_judged, certified_passed, and what the run was: plan, plan_path,\n"
    "  plan_hash, status, git_rev, started_at, finished_at, backend, backend_sha256,\n"
    "  primary_standard (null: each op's own), host, op_filter, group_filter, shard,\n"
    "  case_limit, sample (0: every element), merged (null where the run did not record it).\n"
    "  Then flaky cases (verdict flipped between runs with the same plan hash, code revision,\n"
    "  backend and deciding standard) and regressions (passed in an earlier run of the same\n"
    "  backend and deciding standard, failed later: the first failing run).\n"};
