/* store.c — the SQLite store (see store.h). The schema text is compiled in from
 * db/schema.sql (build/schema_sql.c), so the binary needs no data files to create a
 * database. Migrations: PRAGMA user_version counts the schema steps applied. */
#include "db/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef UG_GIT_REV
#define UG_GIT_REV "unknown"
#endif

extern const char ug_schema_sql[];

/* Migration 2: what `sweep --resume` needs to rebuild a run's case list, and where a
 * merged run came from. */
static const char migration2_sql[] =
    "ALTER TABLE runs ADD COLUMN seed INTEGER;"          /* plan seed override, NULL = the plan's */
    "ALTER TABLE runs ADD COLUMN op_filter TEXT;"        /* --op names, comma-separated, NULL = all */
    "ALTER TABLE runs ADD COLUMN group_filter TEXT;"     /* --group names, NULL = all */
    "ALTER TABLE runs ADD COLUMN case_limit INTEGER;"    /* --limit, 0 = all */
    "ALTER TABLE runs ADD COLUMN oracle_check INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN jobs INTEGER;"          /* worker processes (of the last session) */
    "ALTER TABLE runs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN merged_from TEXT;";     /* `ulpgym merge`: input databases and runs */

/* Migration 3: whether the run left out the fuzz findings (corpus/found/), for resume. */
static const char migration3_sql[] = "ALTER TABLE runs ADD COLUMN no_regressions INTEGER NOT NULL DEFAULT 0;";

struct ug_db {
    sqlite3 *h;
    sqlite3_stmt *put_result, *put_metric, *put_verdict, *put_case;
};

const char *ug_db_default_path(const char *explicit_path)
{
    if (explicit_path && *explicit_path) return explicit_path;
    const char *env = getenv("ULPGYM_DB");
    return env && *env ? env : "./ulpgym.db";
}

sqlite3 *ug_db_handle(ug_db *db) { return db->h; }

void ug_db_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int exec(ug_db *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int user_version(ug_db *db, int *v, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db->h));
        return -1;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = sqlite3_column_int(st, 0);
    else snprintf(err, errlen, "%s", sqlite3_errmsg(db->h));
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

static int table_count(ug_db *db)
{
    sqlite3_stmt *st;
    int n = -1;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int migrate(ug_db *db, const char *path, char *err, size_t errlen)
{
    int v = 0;
    char why[256];
    if (user_version(db, &v, why, sizeof why)) {
        snprintf(err, errlen, "%s is not a ulpgym database (%s)", path, why);
        return -2;
    }
    if (v > UG_DB_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s has schema version %d; this ulpgym knows up to %d: upgrade ulpgym", path, v,
                 UG_DB_SCHEMA_VERSION);
        return -2;
    }
    if (v == 0 && table_count(db) != 0) {
        snprintf(err, errlen, "%s is an SQLite database but not a ulpgym one (it has other tables)", path);
        return -2;
    }
    if (v == UG_DB_SCHEMA_VERSION) return 0;
    if (exec(db, "BEGIN IMMEDIATE", err, errlen)) return -1;
    if ((v < 1 && exec(db, ug_schema_sql, err, errlen)) || (v < 2 && exec(db, migration2_sql, err, errlen)) ||
        (v < 3 && exec(db, migration3_sql, err, errlen))) {
        ug_db_rollback(db);
        return -1;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", UG_DB_SCHEMA_VERSION);
    if (exec(db, sql, err, errlen) || exec(db, "COMMIT", err, errlen)) {
        ug_db_rollback(db);
        return -1;
    }
    return 0;
}

static int prepare(ug_db *db, sqlite3_stmt **st, const char *sql, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

int ug_db_open(const char *path, int create, ug_db **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!create && access(path, F_OK) != 0) {
        snprintf(err, errlen, "no database at %s (run `ulpgym sweep` first, or pass --db)", path);
        return -2;
    }
    ug_db *db = calloc(1, sizeof *db);
    if (!db) return -1;
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open database %s: %s", path, db->h ? sqlite3_errmsg(db->h) : "out of memory");
        ug_db_close(db);
        return -2;
    }
    sqlite3_busy_timeout(db->h, 10000);
    int rc = migrate(db, path, err, errlen);
    if (!rc) {
        char inner[256];
        if (exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", inner,
                 sizeof inner)) {
            snprintf(err, errlen, "%s: %s", path, inner);
            rc = -2;
        }
    }
    if (!rc)
        rc = prepare(db, &db->put_result,
                     "INSERT OR REPLACE INTO results(run_id, case_id, verdict, primary_standard, kernel_ms, oracle_ms,"
                     " oracle_fallbacks, message) VALUES (?,?,?,?,?,?,?,?)", err, errlen) ||
             prepare(db, &db->put_metric,
                     "INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err,
                     errlen) ||
             prepare(db, &db->put_verdict, "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?)", err, errlen) ||
             prepare(db, &db->put_case,
                     "INSERT OR IGNORE INTO cases(case_id, op, op_group, dtype, spec_json, origin, first_seen)"
                     " VALUES (?,?,?,?,?,?,?)", err, errlen);
    if (rc) {
        ug_db_close(db);
        return rc == -1 ? -2 : rc;
    }
    *out = db;
    return 0;
}

void ug_db_close(ug_db *db)
{
    if (!db) return;
    sqlite3_finalize(db->put_result);
    sqlite3_finalize(db->put_metric);
    sqlite3_finalize(db->put_verdict);
    sqlite3_finalize(db->put_case);
    sqlite3_close(db->h);
    free(db);
}

int ug_db_begin(ug_db *db, char *err, size_t errlen) { return exec(db, "BEGIN IMMEDIATE", err, errlen); }
int ug_db_commit(ug_db *db, char *err, size_t errlen) { return exec(db, "COMMIT", err, errlen); }
void ug_db_rollback(ug_db *db) { sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL); }

static int step_done(ug_db *db, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

int ug_db_run_begin(ug_db *db, const ug_run_info *in, long *run_id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare(db, &st,
                "INSERT INTO runs(started_at, plan_name, plan_path, plan_hash, backend, git_rev, host, cores, shard,"
                " oracle_prec, sample, command, seed, op_filter, group_filter, case_limit, oracle_check, jobs,"
                " no_regressions) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err, errlen))
        return -1;
    char now[32], host[256] = "";
    ug_db_now(now, sizeof now);
    gethostname(host, sizeof host - 1);
    sqlite3_bind_text(st, 1, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, in->plan_name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, in->plan_path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, in->plan_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, in->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, UG_GIT_REV, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 8, (int)sysconf(_SC_NPROCESSORS_ONLN));
    sqlite3_bind_text(st, 9, in->shard, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 10, in->oracle_prec);
    sqlite3_bind_int64(st, 11, in->sample);
    sqlite3_bind_text(st, 12, in->command, -1, SQLITE_TRANSIENT);
    if (in->seed_set) sqlite3_bind_int64(st, 13, in->seed);
    sqlite3_bind_text(st, 14, in->op_filter, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 15, in->group_filter, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 16, in->limit);
    sqlite3_bind_int(st, 17, in->oracle_check);
    if (in->jobs > 0) sqlite3_bind_int(st, 18, in->jobs);
    sqlite3_bind_int(st, 19, in->no_regressions);
    int rc = step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    if (!rc) *run_id = (long)sqlite3_last_insert_rowid(db->h);
    return rc;
}

int ug_db_run_finish(ug_db *db, long run_id, const char *status, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare(db, &st,
                "UPDATE runs SET status = ?1,"
                " finished_at = CASE WHEN ?1 = 'running' THEN NULL ELSE ?2 END,"
                " n_cases = (SELECT count(*) FROM results WHERE run_id = ?3),"
                " n_pass = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict = 'PASS'),"
                " n_fail = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict = 'FAIL'),"
                " n_other = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict NOT IN ('PASS','FAIL'))"
                " WHERE run_id = ?3", err, errlen))
        return -1;
    char now[32];
    ug_db_now(now, sizeof now);
    sqlite3_bind_text(st, 1, status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, run_id);
    int rc = step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_put_case(ug_db *db, const char *case_id, const char *spec_json, const char *origin, char *err,
                   size_t errlen)
{
    ug_spec s;
    char inner[256];
    if (ug_spec_parse(spec_json, &s, inner, sizeof inner)) {
        snprintf(err, errlen, "case %s: %s", case_id, inner);
        return -2;
    }
    char now[32];
    ug_db_now(now, sizeof now);
    sqlite3_stmt *st = db->put_case;
    sqlite3_bind_text(st, 1, case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, ug_op_name(s.op), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ug_group_name(ug_op_group(s.op)), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ug_dtype_name(s.dtype), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, spec_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, origin, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, now, -1, SQLITE_TRANSIENT);
    ug_spec_free(&s);
    return step_done(db, st, err, errlen);
}

static void bind_real(sqlite3_stmt *st, int i, double v) { sqlite3_bind_double(st, i, v); }

static int put_metrics(ug_db *db, long run_id, const ug_result *r, const ug_output_result *o, char *err, size_t errlen)
{
    sqlite3_stmt *st = db->put_metric;
    const ug_metrics *m = &o->m;
    int i = 1;
    sqlite3_bind_int64(st, i++, run_id);
    sqlite3_bind_text(st, i++, r->case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, o->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, ug_dtype_name(o->dtype), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->n);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->n_total);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->n_nonfinite_mismatch);
    bind_real(st, i++, m->max_abs);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->max_abs_idx);
    bind_real(st, i++, m->max_rel);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->max_rel_idx);
    bind_real(st, i++, m->max_ulp);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->max_ulp_idx);
    bind_real(st, i++, m->mean_ulp);
    bind_real(st, i++, m->mere);
    bind_real(st, i++, m->mare);
    bind_real(st, i++, m->rmse);
    bind_real(st, i++, m->eb);
    bind_real(st, i++, m->small_err_ratio);
    bind_real(st, i++, m->cosine);
    bind_real(st, i++, m->b_max_abs);
    bind_real(st, i++, m->b_mere);
    bind_real(st, i++, m->b_mare);
    bind_real(st, i++, m->b_rmse);
    bind_real(st, i++, m->b_small_err_ratio);
    return step_done(db, st, err, errlen);
}

static int put_verdicts(ug_db *db, long run_id, const ug_result *r, char *err, size_t errlen)
{
    for (int s = 0; s < UG_STD_COUNT; s++) {
        char thr[UG_MAX_TENSORS * (UG_THR_LEN + 40) + 4];
        size_t n = (size_t)snprintf(thr, sizeof thr, "{");
        for (int k = 0; k < r->n_out && n < sizeof thr; k++)
            n += (size_t)snprintf(thr + n, sizeof thr - n, "%s\"%s\":%s", k ? "," : "", r->out[k].name,
                                  r->out[k].thresholds[s]);
        if (n < sizeof thr) snprintf(thr + n, sizeof thr - n, "}");
        sqlite3_stmt *st = db->put_verdict;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, r->case_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, ug_standard_name(s), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, ug_vstate_name(r->verdict[s]), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, thr, -1, SQLITE_TRANSIENT);
        if (step_done(db, st, err, errlen)) return -1;
    }
    return 0;
}

int ug_db_put_result(ug_db *db, long run_id, const ug_result *r, char *err, size_t errlen)
{
    sqlite3_stmt *st = db->put_result;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, r->case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, ug_outcome_name(r->outcome), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ug_standard_name(r->primary), -1, SQLITE_STATIC);
    bind_real(st, 5, r->kernel_ms);
    bind_real(st, 6, r->oracle_ms);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)r->n_fallback);
    sqlite3_bind_text(st, 8, r->message, -1, SQLITE_TRANSIENT);
    if (step_done(db, st, err, errlen)) return -1;
    for (int k = 0; k < r->n_out; k++)
        if (put_metrics(db, run_id, r, &r->out[k], err, errlen)) return -1;
    return r->n_out ? put_verdicts(db, run_id, r, err, errlen) : 0;
}

int ug_db_find_case(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *err, size_t errlen)
{
    *spec = NULL;
    if (!ug_case_id_prefix_ok(prefix)) {
        snprintf(err, errlen, "\"%s\" is not a case ID (6 to 16 hex digits)", prefix);
        return -2;
    }
    char lower[UG_ID_LEN + 1], pattern[UG_ID_LEN + 2];
    size_t n = strlen(prefix);
    for (size_t i = 0; i <= n; i++) lower[i] = (char)(prefix[i] >= 'A' && prefix[i] <= 'F' ? prefix[i] + 32 : prefix[i]);
    snprintf(pattern, sizeof pattern, "%s%%", lower);
    sqlite3_stmt *st;
    if (prepare(db, &st, "SELECT case_id, spec_json FROM cases WHERE case_id LIKE ? LIMIT 2", err, errlen)) return -1;
    sqlite3_bind_text(st, 1, pattern, -1, SQLITE_TRANSIENT);
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (++found == 1) {
            snprintf(id, UG_ID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
            *spec = strdup((const char *)sqlite3_column_text(st, 1));
        }
    }
    sqlite3_finalize(st);
    if (found == 1 && *spec) return 0;
    free(*spec);
    *spec = NULL;
    snprintf(err, errlen, found ? "case ID prefix %s is ambiguous: give more digits" : "unknown case ID %s", prefix);
    return -2;
}

long ug_db_latest_result_run(ug_db *db, const char *case_id)
{
    sqlite3_stmt *st;
    long run = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT max(run_id) FROM results WHERE case_id = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, case_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) run = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return run;
}

int ug_db_resolve_run(ug_db *db, const char *which, long *run_id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    const char *sql = (!which || strcmp(which, "latest") == 0) ? "SELECT max(run_id) FROM runs"
                                                               : "SELECT run_id FROM runs WHERE run_id = ?";
    if (prepare(db, &st, sql, err, errlen)) return -1;
    if (which && strcmp(which, "latest") != 0) {
        char *end;
        long v = strtol(which, &end, 10);
        if (*end || v <= 0) {
            sqlite3_finalize(st);
            snprintf(err, errlen, "\"%s\" is not a run ID (a number or \"latest\")", which);
            return -2;
        }
        sqlite3_bind_int64(st, 1, v);
    }
    int rc = sqlite3_step(st);
    *run_id = rc == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (*run_id <= 0) {
        snprintf(err, errlen, which && strcmp(which, "latest") ? "no run %s in the database" : "the database has no runs",
                 which);
        return -2;
    }
    return 0;
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int ug_db_run_get(ug_db *db, long run_id, ug_run_record *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare(db, &st,
                "SELECT status, plan_name, plan_path, plan_hash, backend, shard, op_filter, group_filter, started_at,"
                " finished_at, host, git_rev, seed, oracle_check, oracle_prec, cores, merged_from IS NOT NULL,"
                " case_limit, sample, jobs IS NOT NULL, no_regressions FROM runs WHERE run_id = ?", err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    memset(r, 0, sizeof *r);
    if (rc == SQLITE_ROW) {
        r->run_id = run_id;
        int i = 0;
        col_text(st, i++, r->status, sizeof r->status);
        col_text(st, i++, r->plan_name, sizeof r->plan_name);
        col_text(st, i++, r->plan_path, sizeof r->plan_path);
        col_text(st, i++, r->plan_hash, sizeof r->plan_hash);
        col_text(st, i++, r->backend, sizeof r->backend);
        col_text(st, i++, r->shard, sizeof r->shard);
        col_text(st, i++, r->op_filter, sizeof r->op_filter);
        col_text(st, i++, r->group_filter, sizeof r->group_filter);
        col_text(st, i++, r->started_at, sizeof r->started_at);
        col_text(st, i++, r->finished_at, sizeof r->finished_at);
        col_text(st, i++, r->host, sizeof r->host);
        col_text(st, i++, r->git_rev, sizeof r->git_rev);
        r->seed_set = sqlite3_column_type(st, i) != SQLITE_NULL;
        r->seed = sqlite3_column_int64(st, i++);
        r->oracle_check = sqlite3_column_int(st, i++);
        r->oracle_prec = sqlite3_column_int(st, i++);
        r->cores = sqlite3_column_int(st, i++);
        r->merged = sqlite3_column_int(st, i++);
        r->limit = (long)sqlite3_column_int64(st, i++);
        r->sample = (long)sqlite3_column_int64(st, i++);
        r->has_options = sqlite3_column_int(st, i++);
        r->no_regressions = sqlite3_column_int(st, i++);
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "no run %ld in the database", run_id);
    } else {
        snprintf(err, errlen, "database: %s", sqlite3_errmsg(db->h));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -2 : -1;
}

int ug_db_run_reopen(ug_db *db, long run_id, int jobs, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prepare(db, &st,
                "UPDATE runs SET status = 'running', finished_at = NULL, resumes = resumes + 1, jobs = ?2"
                " WHERE run_id = ?1", err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, jobs);
    int rc = step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_result_ids(ug_db *db, long run_id, char (**ids)[UG_ID_LEN + 1], size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    *ids = NULL;
    *n = 0;
    if (prepare(db, &st, "SELECT case_id FROM results WHERE run_id = ? ORDER BY case_id", err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            char(*grown)[UG_ID_LEN + 1] = realloc(*ids, cap * sizeof **ids);
            if (!grown) break;
            *ids = grown;
        }
        col_text(st, 0, (*ids)[(*n)++], UG_ID_LEN + 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "database: reading the results of run %ld failed", run_id);
        free(*ids);
        *ids = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

/* ---- merge ---- */

/* Copies the rows of table that a SELECT on src yields into dst, with run_id replaced by
 * new_run. Columns are matched by name, so the copy follows the schema. verb is
 * "INSERT" or "INSERT OR IGNORE". A constraint failure names the case. */
static int copy_rows(sqlite3 *src, sqlite3 *dst, const char *table, const char *select, long old_run, long new_run,
                     const char *verb, const char *in_path, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *ins = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(src, select, -1, &q, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", in_path, sqlite3_errmsg(src));
        return -1;
    }
    sqlite3_bind_int64(q, 1, old_run);
    int nc = sqlite3_column_count(q), run_col = -1, case_col = -1;
    char sql[4096];
    size_t n = (size_t)snprintf(sql, sizeof sql, "%s INTO %s(", verb, table);
    for (int i = 0; i < nc && n < sizeof sql; i++) {
        const char *name = sqlite3_column_name(q, i);
        if (strcmp(name, "run_id") == 0) run_col = i;
        if (strcmp(name, "case_id") == 0) case_col = i;
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s\"%s\"", i ? "," : "", name);
    }
    for (int i = 0; i < nc && n < sizeof sql; i++) n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", i ? ",?" : ") VALUES (?");
    if (n < sizeof sql) snprintf(sql + n, sizeof sql - n, ")");
    if (sqlite3_prepare_v2(dst, sql, -1, &ins, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: table %s does not match this database: %s", in_path, table, sqlite3_errmsg(dst));
        rc = -2;
        goto done;
    }
    int s;
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        for (int i = 0; i < nc; i++) {
            if (i == run_col) sqlite3_bind_int64(ins, i + 1, new_run);
            else sqlite3_bind_value(ins, i + 1, sqlite3_column_value(q, i));
        }
        int w = sqlite3_step(ins);
        if (w == SQLITE_CONSTRAINT) {
            snprintf(err, errlen, "%s: case %s already came from an earlier input (the same shard twice?)", in_path,
                     case_col >= 0 ? (const char *)sqlite3_column_text(q, case_col) : "?");
            rc = -2;
            goto done;
        }
        if (w != SQLITE_DONE) {
            snprintf(err, errlen, "database: %s", sqlite3_errmsg(dst));
            goto done;
        }
        sqlite3_reset(ins);
    }
    if (s != SQLITE_DONE) snprintf(err, errlen, "%s: %s", in_path, sqlite3_errmsg(src));
    else rc = 0;
done:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

/* Reads the latest run of the database at path (upgrading its schema like any command). */
static int merge_read_input(const char *path, ug_run_record *r, char *err, size_t errlen)
{
    ug_db *in;
    char inner[512];
    if (ug_db_open(path, 0, &in, inner, sizeof inner)) {
        snprintf(err, errlen, "merge: %s", inner);
        return -2;
    }
    long run;
    int rc = ug_db_resolve_run(in, "latest", &run, inner, sizeof inner);
    if (!rc) rc = ug_db_run_get(in, run, r, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "merge: %s: %s", path, inner);
    ug_db_close(in);
    return rc ? -2 : 0;
}

static int merge_check(const ug_run_record *a, const char *pa, const ug_run_record *b, const char *pb, char *err,
                       size_t errlen)
{
    const char *what = strcmp(a->plan_hash, b->plan_hash) ? "plan hash"
                       : strcmp(a->backend, b->backend) ? "backend"
                       : a->sample != b->sample          ? "sample"
                       : a->oracle_prec != b->oracle_prec ? "oracle precision"
                       : strcmp(a->op_filter, b->op_filter) || strcmp(a->group_filter, b->group_filter) ||
                               a->limit != b->limit
                           ? "case selection (--op/--group/--limit)"
                           : NULL;
    if (what) {
        snprintf(err, errlen, "merge: %s (run %ld) and %s (run %ld) differ in %s: not shards of one sweep", pa, a->run_id,
                 pb, b->run_id, what);
        return -2;
    }
    if (a->shard[0] && strcmp(a->shard, b->shard) == 0) {
        snprintf(err, errlen, "merge: %s and %s are both shard %s", pa, pb, a->shard);
        return -2;
    }
    return 0;
}

/* Appends text to a growing string (free with free()). */
static int append(char **s, size_t *len, const char *sep, const char *text)
{
    if (!*len) sep = "";
    size_t add = strlen(sep) + strlen(text);
    char *g = realloc(*s, *len + add + 1);
    if (!g) return -1;
    snprintf(g + *len, add + 1, "%s%s", sep, text);
    *s = g;
    *len += add;
    return 0;
}

/* The merged run's metadata: earliest start, latest end, hosts, cores, sources. */
static int merge_update_run(ug_db *db, long run_id, const ug_run_record *recs, const char *const *inputs, int n,
                            char *err, size_t errlen)
{
    char *hosts = NULL, *from = NULL, *shards = NULL, *revs = NULL;
    size_t lh = 0, lf = 0, ls = 0, lr = 0;
    const char *start = recs[0].started_at, *end = recs[0].finished_at;
    int cores = 0, done = 1, rc = -1;
    for (int i = 0; i < n; i++) {
        char src[1200];
        snprintf(src, sizeof src, "%s#%ld", inputs[i], recs[i].run_id);
        if (append(&from, &lf, ",", src) || (recs[i].shard[0] && append(&shards, &ls, ",", recs[i].shard)) ||
            ((!hosts || !strstr(hosts, recs[i].host)) && append(&hosts, &lh, ",", recs[i].host)) ||
            ((!revs || !strstr(revs, recs[i].git_rev)) && append(&revs, &lr, ",", recs[i].git_rev)))
            goto done;
        if (strcmp(recs[i].started_at, start) < 0) start = recs[i].started_at;
        if (strcmp(recs[i].finished_at, end) > 0) end = recs[i].finished_at;
        cores += recs[i].cores;
        done &= strcmp(recs[i].status, "done") == 0;
    }
    if (ug_db_run_finish(db, run_id, done ? "done" : "partial", err, errlen)) goto done;
    sqlite3_stmt *st;
    if (prepare(db, &st,
                "UPDATE runs SET started_at = ?2, finished_at = ?3, host = ?4, cores = ?5, git_rev = ?6, shard = ?7,"
                " merged_from = ?8 WHERE run_id = ?1", err, errlen))
        goto done;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, start, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, end[0] ? end : NULL, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, hosts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, cores);
    sqlite3_bind_text(st, 6, revs, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, shards, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, from, -1, SQLITE_TRANSIENT);
    rc = step_done(db, st, err, errlen);
    sqlite3_finalize(st);
done:
    if (rc && !err[0]) snprintf(err, errlen, "out of memory");
    free(hosts);
    free(from);
    free(shards);
    free(revs);
    return rc;
}

static int merge_copy_input(ug_db *db, const char *path, long old_run, long new_run, char *err, size_t errlen)
{
    sqlite3 *src;
    if (sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "merge: cannot open %s: %s", path, sqlite3_errmsg(src));
        sqlite3_close(src);
        return -2;
    }
    int rc = copy_rows(src, db->h, "cases",
                       "SELECT * FROM cases WHERE case_id IN (SELECT case_id FROM results WHERE run_id = ?1)", old_run,
                       new_run, "INSERT OR IGNORE", path, err, errlen);
    if (!rc) rc = copy_rows(src, db->h, "results", "SELECT * FROM results WHERE run_id = ?1", old_run, new_run,
                            "INSERT", path, err, errlen);
    if (!rc) rc = copy_rows(src, db->h, "metrics", "SELECT * FROM metrics WHERE run_id = ?1", old_run, new_run,
                            "INSERT", path, err, errlen);
    if (!rc) rc = copy_rows(src, db->h, "verdicts", "SELECT * FROM verdicts WHERE run_id = ?1", old_run, new_run,
                            "INSERT", path, err, errlen);
    sqlite3_close(src);
    return rc;
}

int ug_db_merge(ug_db *db, const char *const *inputs, int n, const char *command, long *run_id, char *err,
                size_t errlen)
{
    ug_run_record *recs = calloc((size_t)(n > 0 ? n : 1), sizeof *recs);
    if (!recs) return -1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = merge_read_input(inputs[i], &recs[i], err, errlen);
        for (int j = 0; j < i && !rc; j++) rc = merge_check(&recs[j], inputs[j], &recs[i], inputs[i], err, errlen);
        if (!rc && recs[i].merged) {
            snprintf(err, errlen, "merge: the latest run of %s is itself a merge; give the shard databases", inputs[i]);
            rc = -2;
        }
    }
    if (rc) goto done;
    const ug_run_record *r0 = &recs[0];
    ug_run_info info = {r0->plan_name, r0->plan_path, r0->plan_hash, r0->backend, NULL, command, r0->oracle_prec,
                        r0->sample, r0->seed_set, r0->seed, r0->op_filter[0] ? r0->op_filter : NULL,
                        r0->group_filter[0] ? r0->group_filter : NULL, r0->limit, r0->oracle_check, 0,
                        r0->no_regressions};
    if ((rc = ug_db_begin(db, err, errlen)) || (rc = ug_db_run_begin(db, &info, run_id, err, errlen))) goto undo;
    for (int i = 0; i < n && !rc; i++) rc = merge_copy_input(db, inputs[i], recs[i].run_id, *run_id, err, errlen);
    if (!rc) rc = merge_update_run(db, *run_id, recs, inputs, n, err, errlen);
    if (!rc) rc = ug_db_commit(db, err, errlen);
undo:
    if (rc) ug_db_rollback(db);
done:
    free(recs);
    return rc;
}
