/* cmd_export.c — `ulpgym export`: a case (or a plan's cases) written as files for a
 * device stack ulpgym cannot load; `ulpgym check` judges what the device writes back.
 *
 * One case goes to D itself; many go to D/<case_id>/ with D/index.json listing them, the
 * layout both `ulpgym check --outputs D` and `ulpgym sweep --backend replay:D` read.
 * The folder format is kernels/replay.h's. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gen/plan.h"
#include "core/npy.h"
#include "kernels/replay.h"
#include "gen/case.h"

/* Builds the case of spec and exports it to dir. */
static int export_one(const char *spec_text, const char *dir)
{
    char err[1024];
    ug_spec spec;
    ug_case c;
    if (ug_spec_parse(spec_text, &spec, err, sizeof err)) return ug_cli_fail("%s", err);
    int rc = ug_case_build(&c, &spec, err, sizeof err);
    if (!rc) rc = ug_replay_export(&c, dir, err, sizeof err);
    ug_case_free(&c);
    return rc ? ug_cli_fail("export: %s", err) : 0;
}

static int write_json(const char *dir, const char *name, cJSON *j)
{
    char *text = cJSON_Print(j), path[1100];
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = text ? ug_file_create(path) : NULL; /* never through a link */
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    return ok ? 0
              : ug_cli_fail("export: cannot write %s: %s", path,
                            errno == ELOOP ? "it is a symbolic link (ulpgym never writes through one)"
                                           : strerror(errno));
}

/* D/index.json lists the case folders; D/plan.json is a plan of exactly these cases
 * (explicit specs, so `ulpgym sweep --plan D/plan.json` runs them without expanding
 * any generalization space, e.g. the sim reference next to a device's replay). */
static int write_index(const char *dir, const char *plan_path, const ug_plan *p)
{
    cJSON *j = cJSON_CreateObject(), *pl = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", UG_REPLAY_FORMAT);
    cJSON_AddStringToObject(j, "plan", plan_path);
    cJSON *cases = cJSON_AddArrayToObject(j, "cases");
    cJSON_AddStringToObject(pl, "name", "export");
    cJSON_AddNumberToObject(pl, "version", 1);
    cJSON_AddStringToObject(pl, "about", "the cases of this export, as full specs (written by ulpgym export)");
    cJSON *specs = cJSON_AddArrayToObject(pl, "cases");
    for (size_t i = 0; i < p->n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "case_id", p->cases[i].id);
        cJSON_AddStringToObject(e, "op", ug_op_name(p->cases[i].op));
        cJSON_AddStringToObject(e, "dir", p->cases[i].id);
        cJSON_AddItemToArray(cases, e);
        cJSON_AddItemToArray(specs, cJSON_CreateRaw(p->cases[i].spec)); /* canonical text: exact numbers */
    }
    return write_json(dir, "index.json", j) || write_json(dir, "plan.json", pl) ? -2 : 0;
}

static int export_plan(const char *plan_path, const ug_cli_filter *f, long per_op, long limit, const char *dir)
{
    ug_plan p;
    char err[1024];
    if (ug_plan_load_only(plan_path, -1, f->any_op ? f->ops : NULL, f->groups, &p, err, sizeof err))
        return ug_cli_fail("%s", err);
    ug_plan_keep_first(&p, per_op, limit);
    int rc = p.n ? 0 : ug_cli_fail("export: the plan has no case for that selection");
    for (size_t i = 0; i < p.n && !rc; i++) {
        char sub[1100];
        snprintf(sub, sizeof sub, "%s/%s", dir, p.cases[i].id);
        rc = export_one(p.cases[i].spec, sub);
    }
    if (!rc) rc = write_index(dir, plan_path, &p);
    if (!rc) printf("exported %zu cases to %s (index.json lists them, plan.json is their plan)\n", p.n, dir);
    ug_plan_free(&p);
    return rc ? UG_EXIT_USAGE : 0;
}

/* An export writes into an empty (or new) folder, or with --force into one holding anything
 * (an earlier export): what it writes still never goes through a link. 0, or exit 2 after
 * saying why. */
static int target_ok(const char *dir, int force)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return 0; /* created by the export */
    if (S_ISLNK(st.st_mode)) return ug_cli_fail("export: %s is a symbolic link; give the folder itself", dir);
    if (!S_ISDIR(st.st_mode)) return ug_cli_fail("export: %s is not a folder", dir);
    DIR *d = opendir(dir);
    const struct dirent *e = NULL;
    while (d && (e = readdir(d)) && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))) {}
    int empty = d && !e;
    char first[256] = "";
    if (e) snprintf(first, sizeof first, "%s", e->d_name);
    if (d) closedir(d);
    if (empty || force) return 0;
    return ug_cli_fail("export: %s is not empty (it holds %s%s); give an empty folder, or --force to write over an "
                       "earlier export there (never through a link)",
                       dir, first[0] ? first : "files", first[0] ? ", ..." : "");
}

static int ug_cmd_export(int argc, char **argv)
{
    const char *dir = NULL, *db = NULL, *plan = NULL, *limit = NULL, *per_op = NULL, *case_id = NULL, *mem = NULL;
    int force = 0;
    ug_cli_filter f = {0};
    const ug_cli_valopt value_opts[] = {{"--dir", &dir},     {"--db", &db},         {"--plan", &plan},
                                        {"--limit", &limit}, {"--per-op", &per_op}, {"--case-memory", &mem},
                                        {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--force", &force}, {NULL, NULL}};
    const ug_cli_args cli_args = {"export", &f, value_opts, flags, &case_id};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    if (!dir || !*dir) return ug_cli_fail("export: give the folder to write with --dir D");
    if (target_ok(dir, force)) return UG_EXIT_USAGE;
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    long lim = limit ? ug_cli_long(limit) : 0, per = per_op ? ug_cli_long(per_op) : 0;
    if (lim < 0 || per < 0) return ug_cli_fail("export: --limit and --per-op take a number");
    const char *plan_path = plan ? plan : ug_plan_default_path();
    if (!case_id) return export_plan(plan_path, &f, per, lim, dir);
    if (f.any_op || f.groups || limit || per_op)
        return ug_cli_fail("export: --op, --group, --per-op and --limit select plan cases; "
                           "with a CASE_ID leave them out");
    char id[UG_ID_LEN + 1], *spec;
    ug_db *store = NULL;
    const char *db_file = ug_db_default_path(db);
    if (access(db_file, F_OK) == 0 && ug_cli_open_db(db, UG_DB_READONLY, &store)) return UG_EXIT_USAGE;
    int found = ug_cli_find_case(store, plan_path, case_id, id, &spec, NULL);
    ug_db_close(store);
    if (found) return UG_EXIT_USAGE;
    int rc = export_one(spec, dir);
    free(spec);
    char *qdir = ug_shell_word(dir);
    if (!rc)
        printf("exported case %s to %s; after the device writes %s/outputs/: %s check %s --outputs %s\n", id, dir, dir,
               ug_self_command(), id, qdir ? qdir : dir);
    free(qdir);
    return rc;
}

const ug_command ug_command_export = {
    "export", ug_cmd_export, "write a case's inputs as .npy for another device stack",
    "usage: ulpgym export CASE_ID --dir D [--force] [--db PATH] [--plan FILE] [--case-memory BYTES]\n"
    "       ulpgym export [--plan FILE] [--op OP]... [--group G]... [--per-op N] [--limit N] --dir D [--force]\n"
    "  D must be empty or new; --force writes over an earlier export there. Nothing is ever\n"
    "  written through a symbolic link (a link in D is refused, not followed).\n"
    "  Writes D/case.json (spec, tensor names, dtypes, shapes) and D/inputs/<name>.npy;\n"
    "  the device writes D/outputs/<name>.npy for each output (or outputs/unsupported.txt\n"
    "  or outputs/error.txt with a reason), then `ulpgym check CASE_ID --outputs D`.\n"
    "  bf16 travels as uint16 bits ('<u2'), e4m3/e5m2/e8m0 as uint8 bits ('|u1').\n"
    "  CASE_ID (6+ hex digits) is looked up in the database, then in the plan.\n"
    "  Without CASE_ID: every selected plan case into D/<case_id>/, listed in D/index.json\n"
    "  (judge them all with `ulpgym check --outputs D`); D/plan.json is a plan of exactly\n"
    "  those cases (`ulpgym sweep --plan D/plan.json` gives the sim reference).\n"
    "  --per-op N keeps the first N cases of each op (required cases come first).\n"
    "  See docs/PLUGINS.md.\n" UG_CLI_CASE_MEMORY_HELP};
