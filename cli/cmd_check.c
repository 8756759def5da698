/* cmd_check.c — `ulpgym check`: judge outputs a device wrote for exported cases and
 * store them like a sweep does (a run with backend "replay").
 *
 * The case is rebuilt from the spec in D/case.json (inputs regenerate bit for bit), its
 * outputs are filled from the .npy files in D/outputs/ and ug_exec_judge() gives the very metrics and
 * verdicts a sweep would. Everything — the run row, cases, results — is written in one
 * transaction after every file has been read, so a missing or malformed file stops the
 * command with exit status 2 and leaves nothing in the database. Each result records the
 * case folder its outputs came from, so `ulpgym triage ID` rejudges those very outputs. --run NAME collects
 * checks into one run (the latest replay run of that name, created on first use), so a
 * batch of cases checked one at a time reads as one run in `ulpgym history`. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
#include "cli/failure_list.h"
#include "cli/report_text.h"
#include "db/query_case.h"
#include "kernels/replay.h"
#include "oracles/oracle.h"
#include "run/exec.h"
#include "gen/case.h"

typedef struct {
    char dir[1100];
    char id[UG_ID_LEN + 1];
    char *spec;
    ug_result r;
} checked;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int is_file(const char *dir, const char *name)
{
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Case folders to check: D itself, or the ones D/index.json lists (those matching
 * prefix when given). *n is their count; the array is malloc'd. */
static checked *list_cases(const char *root, const char *prefix, size_t *n)
{
    *n = 0;
    if (is_file(root, "case.json")) {
        checked *one = calloc(1, sizeof *one);
        if (one) snprintf(one->dir, sizeof one->dir, "%s", root), *n = 1;
        return one;
    }
    if (!is_file(root, "index.json")) {
        ug_cli_fail("check: %s has neither case.json nor index.json (write it with `ulpgym export`)", root);
        return NULL;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/index.json", root);
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)len + 1)))
        text[fread(text, 1, (size_t)len, f)] = 0;
    if (f) fclose(f);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    checked *list = cJSON_IsArray(cases) ? calloc((size_t)cJSON_GetArraySize(cases) + 1, sizeof *list) : NULL;
    if (!list) ug_cli_fail("check: %s is not a valid index (\"cases\" array)", path);
    for (const cJSON *e = list ? cases->child : NULL; e; e = e->next) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "dir"),
                    *id = cJSON_GetObjectItemCaseSensitive(e, "case_id");
        if (!cJSON_IsString(d) || !cJSON_IsString(id) || strchr(d->valuestring, '/')) {
            ug_cli_fail("check: %s: every case needs \"case_id\" and a plain \"dir\" name", path);
            free(list);
            list = NULL;
            break;
        }
        if (prefix && strncasecmp(id->valuestring, prefix, strlen(prefix)) != 0) continue;
        snprintf(list[*n].dir, sizeof list[*n].dir, "%s/%s", root, d->valuestring);
        (*n)++;
    }
    cJSON_Delete(j);
    if (list && *n == 0) {
        ug_cli_fail(prefix ? "check: no case %s in %s" : "check: %s lists no case", prefix ? prefix : path, path);
        free(list);
        list = NULL;
    }
    return list;
}

/* Rebuilds one case, loads its outputs and judges them. 0, or -2 after printing why. */
static int judge_one(checked *k, const char *prefix, const ug_exec_opts *o)
{
    char err[1024];
    if (ug_replay_read_spec(k->dir, &k->spec, k->id, err, sizeof err)) return ug_cli_fail("check: %s", err);
    if (prefix && strncasecmp(k->id, prefix, strlen(prefix)) != 0)
        return ug_cli_fail("check: %s/case.json is case %s, not %s", k->dir, k->id, prefix);
    ug_spec spec;
    ug_case c;
    if (ug_spec_parse(k->spec, &spec, err, sizeof err)) return ug_cli_fail("check: %s", err);
    ug_result *r = &k->r;
    memset(r, 0, sizeof *r);
    snprintf(r->case_id, sizeof r->case_id, "%s", spec.id);
    r->op = spec.op;
    r->dtype = spec.dtype;
    r->primary = o->primary_set ? o->primary : ug_op_def_get(spec.op)->primary;
    int rc = ug_case_build(&c, &spec, err, sizeof err);
    if (rc) {
        ug_case_free(&c);
        return ug_cli_fail("check: case %s: %s", k->id, err);
    }
    double t0 = now_ms();
    rc = ug_replay_load_outputs(&c, k->dir, err, sizeof err);
    r->kernel_ms = now_ms() - t0;
    if (rc == 1) {
        r->outcome = UG_OUT_SKIP;
        snprintf(r->message, sizeof r->message, "unsupported: %.480s", err);
    } else if (rc == -1) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "device error: %.480s", err);
    } else if (rc == 0) {
        ug_exec_judge(&c, o, r, NULL);
    }
    ug_case_free(&c);
    return rc == -2 ? ug_cli_fail("check: %s", err) : 0;
}

/* The run to store into: the latest replay run called name, else a new one. primary: the --primary standard, NULL
 * for each op's own; a named run decided otherwise is refused, so one run never mixes two ways of deciding. */
static int open_run(ug_db *db, const char *name, const char *root, const char *command, long sample,
                    const char *primary, long *run_id, char *err, size_t errlen)
{
    *run_id = 0;
    if (name) {
        *run_id = ug_db_latest_replay_run(db, name);
        ug_run_record rec;
        if (*run_id > 0 && ug_db_run_get(db, *run_id, &rec, err, errlen)) return -1;
        if (*run_id > 0 && strcmp(rec.primary_standard, primary ? primary : "") != 0) {
            snprintf(err, errlen, "run %ld (\"%s\") decides cases by %s%s; check them with the same --primary", *run_id,
                     name, rec.primary_standard[0] ? "--primary " : "each op's own primary standard",
                     rec.primary_standard);
            return -1;
        }
        if (*run_id > 0) return 0;
    }
    ug_run_info info = {.plan_name = name ? name : "replay",
                        .plan_path = root,
                        .backend = "replay",
                        .command = command,
                        .oracle_prec = UG_ORACLE_PREC,
                        .sample = sample,
                        .primary_standard = primary};
    return ug_db_run_begin(db, &info, run_id, err, errlen);
}

static int store_all(const char *db_path, const char *name, const char *root, const char *command, long sample,
                     const char *primary, checked *list, size_t n, long *run_id)
{
    ug_db *db;
    char err[1024];
    if (ug_cli_open_db(db_path, 1, &db)) return UG_EXIT_USAGE;
    int rc =
        ug_db_begin(db, err, sizeof err) || open_run(db, name, root, command, sample, primary, run_id, err, sizeof err);
    for (size_t i = 0; i < n && !rc; i++) {
        const char *origin = strstr(list[i].spec, "\"plan\":") ? "plan" : "manual";
        char abs[PATH_MAX]; /* where triage finds these outputs again (absolute: from any folder) */
        rc = ug_db_put_case(db, list[i].id, list[i].spec, origin, err, sizeof err) ||
             ug_db_put_result(db, *run_id, &list[i].r, err, sizeof err) ||
             ug_db_set_outputs_dir(db, *run_id, list[i].id, realpath(list[i].dir, abs) ? abs : list[i].dir, err,
                                   sizeof err);
    }
    if (!rc) rc = ug_db_run_finish(db, *run_id, "done", err, sizeof err) || ug_db_commit(db, err, sizeof err);
    if (rc) ug_db_rollback(db);
    ug_db_close(db);
    return rc ? ug_cli_fail("check: nothing stored: %s", err) : 0;
}

static void join_argv(int argc, char **argv, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "ulpgym");
    for (int i = 0; i < argc && n < len; i++) n += (size_t)snprintf(buf + n, len - n, " %s", argv[i]);
}

/* The exit status --fail-on gives the n cases just checked into run (stored in db_path). */
static int check_status(const char *db_path, ug_fail_on policy, const checked *list, size_t n, long run)
{
    ug_db *db = NULL;
    char err[512];
    long counted = 0;
    if (policy == UG_FAIL_ON_NEW && ug_db_open(ug_db_default_path(db_path), UG_DB_READONLY, &db, err, sizeof err)) {
        ug_cli_fail("check: run %ld is stored, but cannot be read for --fail-on new: %s", run, err);
        return UG_EXIT_ENGINE;
    }
    for (size_t i = 0; i < n && counted >= 0; i++) {
        int c = ug_fail_on_case(db, policy, &list[i].r, run, "replay", err, sizeof err);
        counted = c < 0 ? -1 : counted + c;
    }
    if (db) ug_db_close(db);
    if (counted < 0) {
        ug_cli_fail("check: run %ld is stored, but its earlier results cannot be read for --fail-on new: %s", run, err);
        return UG_EXIT_ENGINE;
    }
    if (counted)
        fprintf(stderr, "ulpgym: check: %ld case%s failing%s (--fail-on %s): exit status 1\n", counted,
                counted == 1 ? "" : "s", policy == UG_FAIL_ON_NEW ? " that did not fail before" : "",
                ug_fail_on_name(policy));
    return counted ? UG_EXIT_FOUND : UG_EXIT_OK;
}

static int ug_cmd_check(int argc, char **argv)
{
    const char *root = NULL, *name = NULL, *db = NULL, *sample = NULL, *prefix = NULL, *primary = NULL, *mem = NULL;
    const char *top_s = NULL, *fail_on = NULL;
    int json = 0;
    ug_fail_on policy = UG_FAIL_ON_FAIL;
    const ug_cli_valopt value_opts[] = {{"--outputs", &root},  {"--run", &name},        {"--db", &db},
                                        {"--sample", &sample}, {"--primary", &primary}, {"--case-memory", &mem},
                                        {"--top", &top_s},     {"--fail-on", &fail_on}, {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--json", &json}, {NULL, NULL}};
    const ug_cli_args cli_args = {"check", NULL, value_opts, flags, &prefix};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    long top = top_s ? ug_cli_long(top_s) : 5;
    if (top < 0) return ug_cli_fail("check: --top takes a number of cases (0: none)");
    if (ug_fail_on_parse("check", fail_on, &policy)) return UG_EXIT_USAGE;
    if (!root || !*root) return ug_cli_fail("check: give the folder the device wrote with --outputs D");
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    if (prefix && !ug_case_id_prefix_ok(prefix))
        return ug_cli_fail("check: \"%s\" is not a case ID (6 to 16 hex digits)", prefix);
    if (name && !*name) return ug_cli_fail("check: --run needs a name");
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    long samp = sample ? ug_cli_sample(sample) : UG_SAMPLE_DEFAULT;
    if (samp < 0) return ug_cli_fail("check: --sample takes a count or \"all\"");
    o.oracle.sample = (size_t)samp;
    char perr[512];
    if (primary && ug_exec_parse_primary(primary, &o.primary, perr, sizeof perr)) return ug_cli_fail("check: %s", perr);
    o.primary_set = primary != NULL;
    size_t n;
    checked *list = list_cases(root, prefix, &n);
    if (!list) return UG_EXIT_USAGE;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) rc = judge_one(&list[i], n == 1 ? prefix : NULL, &o);
    long run_id = 0;
    char command[2048];
    join_argv(argc, argv, command, sizeof command);
    if (!rc) rc = store_all(db, name, root, command, samp, primary, list, n, &run_id);
    size_t n_pass = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const ug_result *r = &list[i].r;
        n_pass += r->outcome == UG_OUT_PASS;
        if (n == 1 && json)
            ug_print_result_json(r, stdout);
        else if (n == 1)
            ug_print_result(r, stdout);
        else
            printf("%s  %-28s %-5s %-9s %s\n", r->case_id, ug_op_name(r->op), ug_dtype_name(r->dtype),
                   ug_outcome_name(r->outcome), r->message);
    }
    if (!rc && !json) printf("run %ld (replay): %zu case%s checked, %zu pass\n", run_id, n, n == 1 ? "" : "s", n_pass);
    if (!rc && !json && top) ug_failures_summary(db, run_id, top, stdout); /* read back, as `failures` */
    fflush(stdout);
    int status = rc ? UG_EXIT_USAGE : check_status(db, policy, list, n, run_id);
    for (size_t i = 0; i < n; i++) free(list[i].spec);
    free(list);
    return status;
}

const ug_command ug_command_check = {
    "check", ug_cmd_check, "judge outputs a device wrote for exported cases; store them",
    "usage: ulpgym check [CASE_ID] --outputs D [--run NAME] [--db PATH] [--sample N|all] [--primary STD]\n"
    "                    [--json] [--case-memory BYTES] [--top N] [--fail-on never|fail|new]\n"
    "  D is a folder written by `ulpgym export`: D/case.json plus D/outputs/<name>.npy\n"
    "  for each output (or outputs/unsupported.txt -> SKIP, outputs/error.txt -> ERROR),\n"
    "  or a plan export (D/index.json): every listed case, or the one CASE_ID names.\n"
    "  The case is rebuilt from its spec and judged exactly as a sweep judges it; results\n"
    "  go to a run with backend \"replay\". --run NAME adds to the latest replay run of\n"
    "  that name (created on first use) instead of starting a new run.\n"
    "  --primary STD decides every case by numeric standard STD, as `sweep --primary` does\n"
    "  (recorded with the run; --run NAME refuses a run decided another way).\n"
    "  A missing or malformed output file is an error (exit 2) and nothing is stored.\n" UG_CLI_CASE_MEMORY_HELP
        UG_FAILURES_TOP_HELP
    "                   of the run (`ulpgym failures --run R` lists them all; none with --json)\n" UG_FAIL_ON_HELP(
        "fail") "                   The cases checked now are judged; new compares each with its latest\n"
                "                   result in an earlier replay run decided by the same standard\n"
                "  Exit status: 0 stored and --fail-on finds nothing; 1 --fail-on found failing cases\n"
                "  (default: any case neither PASS nor SKIP); 2 bad input (nothing stored); 3 stored, but\n"
                "  the database could not be read back for --fail-on new.\n"};
