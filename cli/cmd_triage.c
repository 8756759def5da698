/* cmd_triage.c — `ulpgym triage CASE_ID`: rebuild a case from its ID, rerun kernel and
 * oracle, show that the stored metrics are reproduced, then check every element and
 * print what a person needs to understand the verdict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
#include "cli/report_text.h"
#include "gen/plan.h"
#include "cli/triage_view.h"
#include "core/npy.h"
#include "db/query_case.h"
#include "kernels/replay.h"
#include "run/exec.h"
#include "run/result_json.h"
#include "run/shrink.h"

/* The backend, sample and --primary standard (-1: each op's own) of run (0: the latest run that stored a result for
 * the case). */
static long stored_run(ug_db *db, const char *id, long run, char *backend, size_t blen, long *sample, int *primary)
{
    if (run <= 0) run = ug_db_latest_result_run(db, id);
    ug_run_record rec;
    char err[256];
    int rc = run > 0 ? ug_db_run_get(db, run, &rec, err, sizeof err) : -1;
    if (rc == -1) return 0;
    if (rc == 0) { /* -2: no such run; the case keeps the default backend */
        snprintf(backend, blen, "%s", rec.backend);
        *sample = rec.sample;
        if (rec.primary_standard[0] && ug_exec_parse_primary(rec.primary_standard, primary, err, sizeof err))
            *primary = -1; /* a standard this build does not know: the op's own decides */
    }
    return run;
}

/* A replay run's case: its outputs are the files the run read (results.outputs_dir), judged
 * again. Sets backend to "replay:DIR" and returns 1; 0 when the run is not a replay run
 * (backend untouched); -1 after saying why when it is one but the folder is unknown or gone. */
static int stored_outputs(ug_db *db, long run, const char *id, char *backend, size_t blen)
{
    if (run <= 0 || strncmp(backend, "replay", 6) != 0) return 0;
    char dir[1100], err[512];
    struct stat st;
    int found = ug_db_get_outputs_dir(db, run, id, dir, sizeof dir, err, sizeof err);
    if (found < 0) return ug_cli_fail("triage: %s", err), -1;
    if (!found) {
        ug_cli_fail("triage: run %ld judged outputs a device wrote and did not record their folder (an older "
                    "ulpgym stored it); name it: --backend replay:DIR",
                    run);
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        ug_cli_fail("triage: run %ld read case %s's outputs from %s, which is gone; name where they are now: "
                    "--backend replay:DIR",
                    run, id, dir);
        return -1;
    }
    snprintf(backend, blen, "replay:%s", dir);
    return 1;
}

/* Says what run stored for the case and what happened now (verdict and message). 1 when
 * the verdicts differ, 0 when they agree, -1 on a database error. */
static int compare_verdict(ug_db *db, long run, const ug_result *r, FILE *f)
{
    char verdict[32] = "", msg[600] = "", err[256];
    int have = ug_db_get_verdict(db, run, r->case_id, verdict, sizeof verdict, msg, sizeof msg, err, sizeof err);
    if (have < 0) return -1;
    const char *now = ug_outcome_name(r->outcome);
    if (have)
        fprintf(f, "stored in run %ld: %s%s%s\n", run, verdict, msg[0] ? ": " : "", msg);
    else
        fprintf(f, "stored in run %ld: no result for this case\n", run);
    fprintf(f, "now: %s%s%s\n", now, r->message[0] ? ": " : "", r->message);
    return have && strcmp(verdict, now) != 0;
}

/* Compares the stored verdict and metrics of (run, case) with a fresh result; prints
 * differences (to f). Returns the number of values that differ (a verdict counts). */
static int compare_stored(ug_db *db, long run, const ug_result *r, FILE *f)
{
    int diffs = compare_verdict(db, run, r, f), compared = 0;
    if (diffs < 0) return -1;
    for (int k = 0; k < r->n_out; k++) {
        double fresh[UG_DB_MC_COUNT];
        ug_db_metric_values(&r->out[k].m, fresh);
        ug_db_metric_row stored;
        char err[256];
        int found = ug_db_get_metrics(db, run, r->case_id, r->out[k].name, &stored, err, sizeof err);
        if (found < 0) return -1;
        for (int c = 0; found && c < UG_DB_MC_COUNT; c++) {
            int same = stored.v[c] == fresh[c] || (stored.is_null[c] && isnan(fresh[c]));
            compared++;
            if (!same) {
                diffs++;
                fprintf(f, "  differs: %s %s stored %.17g, now %.17g\n", r->out[k].name, ug_db_metric_column(c),
                        stored.v[c], fresh[c]);
            }
        }
    }
    if (compared)
        fprintf(f, "stored metrics of run %ld: %d values compared, %s\n", run, compared,
                diffs ? "NOT reproduced" : "reproduced exactly");
    else
        fprintf(f, "stored metrics of run %ld: none to compare; the verdict is %s\n", run,
                diffs ? "NOT reproduced" : "reproduced");
    return diffs;
}

/* The reproduction line's " --primary STD" when the run decided by one (primary >= 0), else "". */
/* The command line that reruns spec with backend (and --primary when set), every argument
 * shell-quoted so that pasting it runs ulpgym and nothing else, whatever the spec's
 * strings hold. malloc'd; NULL without memory. */
static char *reproduce_line(const char *backend, int primary, const char *spec)
{
    char *b = ug_shell_quote(backend), *s = ug_shell_quote(spec), *line = NULL;
    const char *std = primary >= 0 ? ug_standard_name(primary) : NULL;
    size_t n = (b ? strlen(b) : 0) + (s ? strlen(s) : 0) + strlen(ug_self_command()) + 96;
    if (b && s && (line = malloc(n)))
        snprintf(line, n, "%s case --backend %s%s%s --spec %s", ug_self_command(), b, std ? " --primary " : "",
                 std ? std : "", s);
    free(b);
    free(s);
    return line;
}

/* --shrink: the smallest failing shape; stored as a manual case so it can be triaged. */
static int shrink(ug_db *db, const char *spec, const ug_backend *b, int primary, double contain_s,
                  const char *backend_name, int json)
{
    ug_shrink_result sr;
    char err[512];
    if (ug_shrink_case(spec, b, primary, contain_s, &sr, err, sizeof err))
        return ug_cli_fail("triage --shrink: %s", err);
    if (ug_db_put_case(db, sr.id, sr.spec, "manual", err, sizeof err)) fprintf(stderr, "ulpgym: %s\n", err);
    if (json) {
        printf("{\"shrunk_case_id\":\"%s\",\"input_elements\":%zu,\"start_input_elements\":%zu,\"spec\":%s}\n", sr.id,
               sr.input_elems, sr.start_elems, sr.spec);
    } else {
        printf("\nshrink: %d steps (%d candidates tried): input elements %zu -> %zu\n", sr.steps, sr.tried,
               sr.start_elems, sr.input_elems);
        char *line = reproduce_line(backend_name, primary, sr.spec);
        printf("smallest failing case %s\nspec %s\nreproduce: %s\n", sr.id, sr.spec, line ? line : "(out of memory)");
        free(line);
    }
    free(sr.spec);
    return 0;
}

/* --dump DIR: case.json and inputs/ (as `ulpgym export` writes them), the kernel's
 * outputs/<name>.npy (dtype bits), and exact/<name>.npy with the exact values (fp64,
 * nearest double) and exact/<name>_rounded.npy (correctly rounded to the dtype, fp64). */
static int dump(const ug_exec_detail *d, const char *dir)
{
    char err[512], path[1400], sub[1200];
    if (ug_replay_export(&d->c, dir, err, sizeof err)) return ug_cli_fail("triage --dump: %s", err);
    const char *subs[] = {"outputs", "exact"};
    for (int k = 0; k < 2; k++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, subs[k]);
        mkdir(sub, 0755);
    }
    for (int k = 0; k < d->c.n_out; k++) {
        const ug_tensor *t = &d->c.out[k];
        snprintf(path, sizeof path, "%s/outputs/%s.npy", dir, t->name);
        if (ug_npy_write_file(path, ug_npy_descr_of_dtype(t->dtype), t->ndim, t->shape, t->data, err, sizeof err))
            return ug_cli_fail("triage --dump: %s", err);
        if (d->oracle.sel.n[k] != t->numel) continue; /* triage checks every element */
        snprintf(path, sizeof path, "%s/exact/%s.npy", dir, t->name);
        if (ug_npy_write_file(path, "<f8", t->ndim, t->shape, d->oracle.gstar[k], err, sizeof err))
            return ug_cli_fail("triage --dump: %s", err);
        snprintf(path, sizeof path, "%s/exact/%s_rounded.npy", dir, t->name);
        if (ug_npy_write_file(path, "<f8", t->ndim, t->shape, d->oracle.g[k], err, sizeof err))
            return ug_cli_fail("triage --dump: %s", err);
    }
    return 0;
}

/* The kernel crashed or hung: the case has no outputs to look at. */
static int kernel_died(const ug_result *r) { return r->outcome == UG_OUT_CRASH || r->outcome == UG_OUT_TIMEOUT; }

static void print_text(const ug_result *r, const ug_exec_detail *d, int nworst)
{
    if (kernel_died(r))
        printf("\nthe kernel %s: no outputs to check\n", r->outcome == UG_OUT_CRASH ? "crashed" : "hung");
    else
        printf("\nall elements:\n");
    ug_print_result(r, stdout);
    for (int k = 0; d->have_oracle && k < d->c.n_out; k++) {
        if (!d->a[k]) continue; /* an optional output not provided: nothing to rank */
        ug_triage_print_output(r, d, k, nworst, stdout);
    }
}

static void print_json(const ug_result *r, const ug_exec_detail *d, int nworst, const char *spec, const char *backend,
                       int primary, int reproduced)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "case_id", r->case_id);
    cJSON_AddItemToObject(j, "spec", cJSON_Parse(spec));
    cJSON_AddStringToObject(j, "backend", backend);
    cJSON_AddStringToObject(j, "verdict", ug_outcome_name(r->outcome));
    cJSON_AddStringToObject(j, "primary_standard", ug_standard_name(r->primary));
    cJSON_AddStringToObject(j, "message", r->message);
    if (reproduced >= 0) cJSON_AddBoolToObject(j, "stored_metrics_reproduced", reproduced);
    cJSON *st = cJSON_AddObjectToObject(j, "standards");
    for (int s = 0; s < UG_STD_COUNT; s++)
        cJSON_AddStringToObject(st, ug_standard_name(s), ug_vstate_name(r->verdict[s]));
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int k = 0; d->have_oracle && k < d->c.n_out; k++) {
        if (r->out[k].not_provided) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", r->out[k].name);
            cJSON_AddBoolToObject(o, "provided", 0);
            cJSON_AddItemToArray(outs, o);
            continue;
        }
        cJSON *o = ug_triage_json(r, d, k, nworst);
        ug_result_metrics_json(o, &r->out[k]);
        cJSON_AddItemToArray(outs, o);
    }
    char *cmd = reproduce_line(backend, primary, spec);
    cJSON_AddStringToObject(j, "reproduce", cmd ? cmd : "");
    free(cmd);
    char *s = cJSON_Print(j);
    printf("%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}

/* The exit status --fail-on gives the case's verdict now (r), judged by backend against the results before run. */
static int verdict_status(ug_db *db, ug_fail_on policy, const ug_result *r, long run, const char *backend)
{
    char err[512];
    int counts = ug_fail_on_case(db, policy, r, run, backend, err, sizeof err);
    if (counts < 0) {
        ug_cli_fail("triage: %s", err);
        return UG_EXIT_ENGINE;
    }
    if (counts)
        fprintf(stderr, "ulpgym: triage: case %s is %s now (--fail-on %s): exit status 1\n", r->case_id,
                ug_outcome_name(r->outcome), ug_fail_on_name(policy));
    return counts ? UG_EXIT_FOUND : UG_EXIT_OK;
}

static int ug_cmd_triage(int argc, char **argv)
{
    const char *db_path = NULL, *backend_opt = NULL, *worst = NULL, *id_arg = NULL, *run_opt = NULL, *dump_dir = NULL,
               *mem = NULL, *timeout = NULL, *fail_on = NULL;
    int json = 0, do_shrink = 0;
    ug_fail_on policy = UG_FAIL_ON_FAIL;
    const ug_cli_valopt value_opts[] = {
        {"--db", &db_path},           {"--backend", &backend_opt}, {"--worst", &worst},
        {"--run", &run_opt},          {"--dump", &dump_dir},       {"--case-memory", &mem},
        {"--case-timeout", &timeout}, {"--fail-on", &fail_on},     {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--json", &json}, {"--shrink", &do_shrink}, {NULL, NULL}};
    const ug_cli_args cli_args = {"triage", NULL, value_opts, flags, &id_arg};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    if (!id_arg) return ug_cli_fail("triage: give a case ID");
    if (ug_fail_on_parse("triage", fail_on, &policy)) return UG_EXIT_USAGE;
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    double limit = ug_cli_case_timeout("triage", timeout);
    if (limit < 0) return UG_EXIT_USAGE;
    long nworst = worst ? ug_cli_long(worst) : 5;
    if (nworst < 0) return ug_cli_fail("triage: --worst must be a number");
    ug_db *db;
    if (ug_cli_open_db(db_path, do_shrink ? UG_DB_EXISTING : UG_DB_READONLY, &db)) /* --shrink stores its case */
        return UG_EXIT_USAGE;
    char id[UG_ID_LEN + 1], backend_name[1200] = "sim", err[1024];
    char *spec = NULL;
    int from_plan, rc = 0, reproduced = -1;
    if (ug_cli_find_case(db, NULL, id_arg, id, &spec, &from_plan)) {
        ug_db_close(db);
        return UG_EXIT_USAGE;
    }
    long run = 0, sample = UG_SAMPLE_DEFAULT;
    int primary = -1;
    if (run_opt && (from_plan || ug_db_resolve_run(db, run_opt, &run, err, sizeof err))) {
        free(spec);
        ug_db_close(db);
        return ug_cli_fail("triage: %s", from_plan ? "--run needs a case stored in the database" : err);
    }
    if (!from_plan) run = stored_run(db, id, run, backend_name, sizeof backend_name, &sample, &primary);
    char stored_backend[1200];
    snprintf(stored_backend, sizeof stored_backend, "%s", backend_name);
    int replayed = 0;
    if (backend_opt && strcmp(backend_opt, "replay") != 0)
        snprintf(backend_name, sizeof backend_name, "%s", backend_opt);
    else if ((replayed = stored_outputs(db, run, id, backend_name, sizeof backend_name)) < 0) {
        free(spec);
        ug_db_close(db);
        return UG_EXIT_USAGE;
    } else if (replayed)
        snprintf(stored_backend, sizeof stored_backend, "%s", backend_name);
    else if (ug_backend_names_code(backend_name)) { /* a database is data: its plugin path is not run unasked */
        free(spec);
        ug_db_close(db);
        return ug_cli_fail("triage: run %ld used %s; triage loads a plugin only when you name it: add --backend %s "
                           "(or --backend sim for the built-in kernel)",
                           run, backend_name, backend_name);
    }
    ug_backend b;
    ug_cli_input_cache_open();
    if (ug_backend_open(&b, backend_name, err, sizeof err)) {
        free(spec);
        ug_db_close(db);
        return ug_cli_fail("%s", err);
    }
    if (!json)
        printf("case %s%s\nspec %s\nbackend %s%s\n", id,
               from_plan ? " (from the default plan; not in the database)" : "", spec, backend_name,
               replayed ? " (the device outputs stored by the run, judged again: no kernel runs)" : "");
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.primary_set = primary >= 0; /* decided as the run decided it */
    o.primary = primary;
    o.contain_s = limit; /* the kernel cannot take triage down with it (run/contain.h) */
    ug_result r;
    char now_backend[1200];
    ug_backend_describe(&b, now_backend, sizeof now_backend);
    if (run > 0 && !strcmp(now_backend, stored_backend)) { /* the run's own kernel and sample: results must match */
        o.oracle.sample = (size_t)sample;
        ug_exec_case(spec, &b, &o, &r, NULL);
        reproduced = compare_stored(db, run, &r, json ? stderr : stdout) == 0;
        rc = reproduced ? 0 : UG_EXIT_NOT_REPRODUCED;
    }
    o.oracle.sample = 0; /* every element */
    ug_exec_detail d;
    if (reproduced == 1 && kernel_died(&r)) /* no outputs to look at: not run a second time */
        memset(&d, 0, sizeof d);
    else
        ug_exec_case(spec, &b, &o, &r, &d);
    if (json && !do_shrink)
        print_json(&r, &d, (int)nworst, spec, backend_name, primary, reproduced);
    else if (!json) {
        print_text(&r, &d, (int)nworst);
        char *line = reproduce_line(backend_name, primary, spec);
        printf("\nreproduce: %s\n", line ? line : "(out of memory)");
        free(line);
    }
    if (dump_dir && d.have_oracle) {
        int drc = dump(&d, dump_dir);
        if (drc)
            rc = drc;
        else if (!json)
            printf("dumped inputs, kernel outputs and exact values as .npy to %s\n", dump_dir);
    }
    ug_exec_detail_free(&d);
    if (do_shrink) {
        int src = shrink(db, spec, &b, primary, limit, backend_name, json);
        if (src) rc = src;
    }
    if (!rc) rc = verdict_status(db, policy, &r, run, now_backend);
    ug_backend_close(&b);
    free(spec);
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_triage = {
    "triage", ug_cmd_triage, "rebuild a case from its ID, rerun it and explain the verdict",
    "usage: ulpgym triage CASE_ID [--db PATH] [--run ID] [--backend B] [--worst N] [--shrink] [--json]\n"
    "                     [--dump DIR] [--case-memory BYTES] [--case-timeout SECONDS] [--fail-on never|fail|new]\n"
    "  CASE_ID is 16 hex digits or a unique prefix of 6+ (looked up in the database, then\n"
    "  in the default plan). Reruns kernel and oracle with the backend and sample of run ID\n"
    "  (default: the latest run that holds the case; --backend overrides the backend)\n"
    "  and the standard that run decided by (its `sweep --primary`, else the op's own),\n"
    "  (a replay run's case: the device outputs it read, from the folder it recorded, judged\n"
    "  again; `--backend replay` says the same, `--backend replay:DIR` reads them from DIR)\n"
    "  and checks that the stored metrics are reproduced exactly; then checks every\n"
    "  element and prints metrics, the verdict per standard with its thresholds, then per\n"
    "  output the worst elements, a histogram and where the error clusters, each led by the\n"
    "  element's error relative to what the deciding standard allows of it (pypto, reference,\n"
    "  allclose: |a - g| / (atol + rtol*|g|) with the atol/rtol it applied; certified:\n"
    "  |a - g*| / (c*B + ulp/2); other standards: pypto's; 1 = at the limit), ulps second (an\n"
    "  element whose exact value is below the dtype's smallest normal, e.g. 0, is never\n"
    "  measured in ulps: its absolute error stands), hex floats beside decimals with the\n"
    "  inputs feeding them, and a command that reproduces the case.\n"
    "  --dump DIR  write case.json, inputs/, outputs/ (the kernel's) and exact/ (exact values,\n"
    "            fp64) as .npy files\n"
    "  --shrink  search for the smallest shape of the same op/dtype/distribution that fails\n"
    "            the same way; prints (and stores) its new case ID\n"
    "  --json    the same as one JSON object, for tools\n" UG_CLI_CASE_MEMORY_HELP UG_CLI_CASE_TIMEOUT_HELP
        UG_FAIL_ON_HELP(
            "fail") "                   The case's verdict now is judged; new compares with its latest result\n"
                    "                   in a run before the one triaged, of the same backend kind and standard\n"
                    "  Exit status: 0 reproduced and --fail-on finds nothing; 1 the case fails now by --fail-on;\n"
                    "  4 the stored verdict or metrics are NOT reproduced (this comes first); 2 bad input\n"
                    "  (unknown case ID, no such run, a plugin not named, not a ulpgym database); 3 the database\n"
                    "  could not be read.\n"};
