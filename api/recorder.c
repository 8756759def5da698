/* recorder.c — libulpgym's recorder: judged cases stored into a ulpgym database as one run,
 * backend "replay", the way `ulpgym check --run NAME` stores a device's outputs, each case
 * in its own transaction with the folder its outputs are kept in, so a Python loop over a
 * device kernel is a run that history, failures, diff, report and triage all read
 * (ulpgym/ulpgym.h). */
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/internal.h"
#include "core/paths.h"
#include "db/query_case.h"
#include "db/store.h"
#include "kernels/replay.h"
#include "oracles/oracle.h"

struct ulpgym_recorder {
    ug_db *db;
    long run;
    char db_path[PATH_MAX];
    char outputs[PATH_MAX]; /* absolute: one case folder per recorded case below it */
};

/* Creates dir and its missing parents; the last level must end up a real folder, not a link. */
static int make_folder(const char *dir, char **err)
{
    char path[PATH_MAX + 64];
    struct stat st;
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return api_fail(err, "folder name too long: %s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return api_fail(err, "cannot create %s: %s", dir, strerror(errno));
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return api_fail(err, "%s is not a folder (a link or a file is never written through)", dir);
    return 0;
}

/* The outputs folder: the one asked for, else DB_DIR/<db file name>-outputs/run-<run>; made absolute. */
static int outputs_folder(ulpgym_recorder *rec, const cJSON *asked, char **err)
{
    char dir[PATH_MAX + 64];
    if (cJSON_IsString(asked) && asked->valuestring[0])
        snprintf(dir, sizeof dir, "%s", asked->valuestring);
    else
        snprintf(dir, sizeof dir, "%s-outputs/run-%ld", rec->db_path, rec->run);
    return make_folder(dir, err) || !realpath(dir, rec->outputs)
               ? api_fail(err, "cannot use %s as the outputs folder", dir)
               : 0;
}

/* Starts the run of opts q in rec->db (one committed transaction). */
static int begin_run(ulpgym_recorder *rec, const cJSON *q, char **err)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(q, "name"),
                *cmd = cJSON_GetObjectItemCaseSensitive(q, "command");
    const cJSON *prim = cJSON_GetObjectItemCaseSensitive(q, "primary"),
                *samp = cJSON_GetObjectItemCaseSensitive(q, "sample");
    long sample = cJSON_IsNumber(samp) ? (long)samp->valuedouble : UG_SAMPLE_DEFAULT;
    char msg[1024];
    if (cJSON_IsString(prim) && ug_standard_find(prim->valuestring) < 0)
        return api_fail(err, "unknown standard \"%s\" (see `ulpgym standards`)", prim->valuestring);
    ug_run_info info = {.plan_name = cJSON_IsString(name) && name->valuestring[0] ? name->valuestring : "python",
                        .plan_path = "python",
                        .backend = "replay",
                        .command = cJSON_IsString(cmd) ? cmd->valuestring : "python",
                        .oracle_prec = UG_ORACLE_PREC,
                        .sample = sample < 0 ? UG_SAMPLE_DEFAULT : sample,
                        .primary_standard = cJSON_IsString(prim) ? prim->valuestring : NULL};
    if (ug_db_begin(rec->db, msg, sizeof msg) || ug_db_run_begin(rec->db, &info, &rec->run, msg, sizeof msg) ||
        ug_db_commit(rec->db, msg, sizeof msg)) {
        ug_db_rollback(rec->db);
        return api_fail(err, "%s", msg);
    }
    return 0;
}

ulpgym_recorder *ulpgym_recorder_open(const char *opts_json, char **err)
{
    static const char *const keys[] = {"db", "name", "outputs", "primary", "sample", "command", NULL};
    cJSON *q = api_parse_object("recorder options", opts_json, keys, err);
    if (!q) return NULL;
    const cJSON *db = cJSON_GetObjectItemCaseSensitive(q, "db");
    ulpgym_recorder *rec = cJSON_IsString(db) && db->valuestring[0] ? calloc(1, sizeof *rec) : NULL;
    char msg[1024];
    int rc = rec ? 0 : api_fail(err, "recorder: give the database path (\"db\")");
    if (!rc && ug_db_open(db->valuestring, UG_DB_CREATE, &rec->db, msg, sizeof msg)) rc = api_fail(err, "%s", msg);
    if (!rc && !realpath(db->valuestring, rec->db_path)) rc = api_fail(err, "cannot resolve %s", db->valuestring);
    if (!rc) rc = begin_run(rec, q, err);
    if (!rc) rc = outputs_folder(rec, cJSON_GetObjectItemCaseSensitive(q, "outputs"), err);
    cJSON_Delete(q);
    if (rc && rec) {
        ug_db_close(rec->db);
        free(rec);
        rec = NULL;
    }
    return rec;
}

long ulpgym_recorder_run_id(const ulpgym_recorder *rec) { return rec ? rec->run : 0; }

/* The case, its result and its outputs folder in one transaction; the run's counts recounted. */
static int store(ulpgym_recorder *rec, const ulpgym_case *h, const char *dir, char **err)
{
    char msg[1024];
    const char *origin = strstr(h->c.spec.canonical, "\"plan\":") ? "plan" : "manual";
    int rc = ug_db_begin(rec->db, msg, sizeof msg) ||
             ug_db_put_case(rec->db, h->r.case_id, h->c.spec.canonical, origin, msg, sizeof msg) ||
             ug_db_put_result(rec->db, rec->run, &h->r, msg, sizeof msg) ||
             ug_db_set_outputs_dir(rec->db, rec->run, h->r.case_id, dir, msg, sizeof msg) ||
             ug_db_run_finish(rec->db, rec->run, "running", msg, sizeof msg) || ug_db_commit(rec->db, msg, sizeof msg);
    if (rc) ug_db_rollback(rec->db);
    return rc ? api_fail(err, "nothing stored for case %s: %s", h->r.case_id, msg) : 0;
}

char *ulpgym_recorder_add(ulpgym_recorder *rec, ulpgym_case *h, char **err)
{
    if (!rec || !h) return api_fail(err, "no recorder or no case"), NULL;
    if (!h->judged && h->status) { /* declined or failed: its verdict (SKIP / ERROR) needs no judging */
        char *v = ulpgym_case_judge(h, NULL, err);
        if (!v) return NULL;
        ulpgym_free(v);
    }
    if (!h->judged) return api_fail(err, "case %s: judge it before recording it", h->c.spec.id), NULL;
    char dir[PATH_MAX + 32], msg[1024];
    snprintf(dir, sizeof dir, "%s/%s", rec->outputs, h->c.spec.id);
    if (make_folder(dir, err)) return NULL;
    if (ug_replay_keep_outputs(&h->c, h->status, h->reason, dir, msg, sizeof msg))
        return api_fail(err, "case %s: outputs not kept, nothing stored: %s", h->c.spec.id, msg), NULL;
    if (store(rec, h, dir, err)) return NULL;
    cJSON *j = cJSON_CreateObject();
    char *line = ug_triage_line(h->c.spec.id, rec->db_path, rec->run, "replay");
    cJSON_AddNumberToObject(j, "run_id", (double)rec->run);
    cJSON_AddStringToObject(j, "case_id", h->c.spec.id);
    cJSON_AddStringToObject(j, "outputs_dir", dir);
    cJSON_AddStringToObject(j, "triage", line ? line : "");
    free(line);
    return api_print(j, err);
}

int ulpgym_recorder_close(ulpgym_recorder *rec, char **err)
{
    if (!rec) return 0;
    char msg[1024];
    int rc = ug_db_begin(rec->db, msg, sizeof msg) || ug_db_run_finish(rec->db, rec->run, "done", msg, sizeof msg) ||
             ug_db_commit(rec->db, msg, sizeof msg);
    if (rc) ug_db_rollback(rec->db);
    ug_db_close(rec->db);
    free(rec);
    return rc ? api_fail(err, "the run stays \"running\" (its cases are stored): %s", msg) : 0;
}
