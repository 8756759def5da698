/* store.c — the SQLite store (see store.h). The schema text is compiled in from
 * db/schema.sql (build/schema_sql.c), so the binary needs no data files to create a
 * database. Migrations: PRAGMA user_version counts the schema steps applied. */
#include "db/store.h"
#include "db/internal.h"
#include "core/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/build_rev.h"
#include "core/ops.h"

extern const char ug_schema_sql[];

/* Migration 2: what `sweep --resume` needs to rebuild a run's case list, and where a
 * merged run came from. */
static const char migration2_sql[] =
    "ALTER TABLE runs ADD COLUMN seed INTEGER;"       /* plan seed override, NULL = the plan's */
    "ALTER TABLE runs ADD COLUMN op_filter TEXT;"     /* --op names, comma-separated, NULL = all */
    "ALTER TABLE runs ADD COLUMN group_filter TEXT;"  /* --group names, NULL = all */
    "ALTER TABLE runs ADD COLUMN case_limit INTEGER;" /* --limit, 0 = all */
    "ALTER TABLE runs ADD COLUMN oracle_check INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN jobs INTEGER;" /* worker processes (of the last session) */
    "ALTER TABLE runs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN merged_from TEXT;"; /* `ulpgym merge`: input databases and runs */

/* Migration 3: whether the run left out the fuzz findings (corpus/found/), for resume. */
static const char migration3_sql[] = "ALTER TABLE runs ADD COLUMN no_regressions INTEGER NOT NULL DEFAULT 0;";

/* Migration 4: `sweep --primary STD`, the standard that decided every case of the run (results.primary_standard
 * says the same per case); NULL = each op's own primary. Kept on the run so a resume decides the same way. */
static const char migration4_sql[] = "ALTER TABLE runs ADD COLUMN primary_standard TEXT;";

/* Migration 5: the SHA-256 of the plugin file a run loaded (NULL for sim, replay and older runs), so runs of one
 * plugin path with different bytes are not "the same code" (history's flaky list, resume). */
static const char migration5_sql[] = "ALTER TABLE runs ADD COLUMN backend_sha256 TEXT;";

/* Migration 6: `sweep --shard K/N --cost-from DB` — the cost database (absolute path) and the fingerprint of the
 * costs the shard was dealt by, so a resume deals the same cases and `merge` joins only shards of one deal. */
static const char migration6_sql[] = "ALTER TABLE runs ADD COLUMN cost_from TEXT;"
                                     "ALTER TABLE runs ADD COLUMN cost_hash TEXT;";

/* Migration 7: `ulpgym bench kernels --backend B --baseline A`, the kernel-timing table (db/query_bench.h). A
 * bench is not a run: it judges nothing, so it has tables of its own. Ratios are B / A (above 1: B is slower). */
static const char migration7_sql[] =
    "CREATE TABLE bench_runs ("
    " bench_id INTEGER PRIMARY KEY,"
    " started_at TEXT NOT NULL,"                  /* UTC, ISO 8601 */
    " backend TEXT NOT NULL,"                     /* B, the kernel timed */
    " baseline TEXT NOT NULL,"                    /* A, what B is compared with */
    " backend_sha256 TEXT, baseline_sha256 TEXT," /* plugins: SHA-256 of the .so loaded */
    " backend_clock TEXT NOT NULL,"               /* B's kernel-only clock: device (the plugin's own), wall or cpu */
    " baseline_clock TEXT NOT NULL,"
    " host_clock TEXT NOT NULL," /* wall or cpu: the end-to-end clock (and kernel-only without device) */
    " repeats INTEGER NOT NULL, warmup INTEGER NOT NULL,"
    " git_rev TEXT, host TEXT, command TEXT);"
    "CREATE TABLE bench_scenes ("
    " bench_id INTEGER NOT NULL REFERENCES bench_runs(bench_id),"
    " position INTEGER NOT NULL," /* order in the table */
    " op TEXT NOT NULL, scene TEXT NOT NULL,"
    " n_cases INTEGER NOT NULL,"                                        /* cases timed */
    " n_left_out INTEGER NOT NULL,"                                     /* cases a backend declined or failed */
    " kernel_ratio REAL, kernel_ratio_min REAL, kernel_ratio_max REAL," /* geometric mean, min, max of case ratios */
    " e2e_ratio REAL, e2e_ratio_min REAL, e2e_ratio_max REAL,"
    " baseline_kernel_ms REAL, backend_kernel_ms REAL," /* geometric means of the case medians */
    " baseline_e2e_ms REAL, backend_e2e_ms REAL,"
    " PRIMARY KEY (bench_id, op, scene));"
    "CREATE TABLE bench_cases ("
    " bench_id INTEGER NOT NULL REFERENCES bench_runs(bench_id),"
    " op TEXT NOT NULL, scene TEXT NOT NULL, case_id TEXT NOT NULL,"
    " spec_json TEXT NOT NULL," /* rebuilds the case: scene cases need not be in `cases` */
    " status TEXT NOT NULL,"    /* timed | left out */
    " message TEXT,"            /* why a case was left out */
    " baseline_kernel_ms REAL, baseline_kernel_min REAL, baseline_kernel_max REAL," /* median, min, max of repeats */
    " backend_kernel_ms REAL, backend_kernel_min REAL, backend_kernel_max REAL,"
    " baseline_e2e_ms REAL, baseline_e2e_min REAL, baseline_e2e_max REAL,"
    " backend_e2e_ms REAL, backend_e2e_min REAL, backend_e2e_max REAL,"
    " kernel_ratio REAL, e2e_ratio REAL," /* median of the repeats' paired ratios B / A */
    " PRIMARY KEY (bench_id, op, scene, case_id));";

/* Migration 8: the exact fallback's raised precision (Ziv's strategy, docs/STANDARDS.md): of a case's
 * oracle_fallbacks, the elements whose rounding changed between the working precision and twice it (raised
 * further) and those still changing at UG_ORACLE_PREC_MAX bits. NULL for results stored before. */
static const char migration8_sql[] = "ALTER TABLE results ADD COLUMN oracle_raised INTEGER;"
                                     "ALTER TABLE results ADD COLUMN oracle_unsettled INTEGER;";

/* Migration 9: where a replayed result's outputs are (`check`, the library's recorder): the absolute case
 * folder (case.json + outputs/), so `triage` rejudges the device's stored outputs. NULL for other backends. */
static const char migration9_sql[] = "ALTER TABLE results ADD COLUMN outputs_dir TEXT;";

/* Migration 10: the headroom a result used (ug_result.used, oracles/figure.h): of what its deciding standard
 * allows, the share the case used (1 = at the limit; Inf for a NaN/Inf mismatch); NULL when no output was
 * judged, and for results stored before. Reports bin, rank and compare by it. */
static const char migration10_sql[] = "ALTER TABLE results ADD COLUMN used REAL;";

/* Migration 11: the contract digest of every op as the run's ulpgym declared it ({"op": "16 hex", ...},
 * core/ops.h ug_op_contract_digest): a plugin written to one contract can be told which runs judged it by
 * another. NULL for runs stored before. */
static const char migration11_sql[] = "ALTER TABLE runs ADD COLUMN contracts TEXT;";

const char *ug_db_default_path(const char *explicit_path)
{
    if (explicit_path && *explicit_path) return explicit_path;
    const char *env = getenv("ULPGYM_DB");
    return env && *env ? env : "./ulpgym.db";
}

void ug_db_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ug_db_prepare_stamped(ug_db *db, sqlite3_stmt **st, const char *sql, char *host, size_t hostlen, char *err,
                          size_t errlen)
{
    if (ug_db_prepare(db, st, sql, err, errlen)) return -1;
    char now[32];
    ug_db_now(now, sizeof now);
    memset(host, 0, hostlen);
    gethostname(host, hostlen - 1);
    sqlite3_bind_text(*st, 1, now, -1, SQLITE_TRANSIENT);
    return 0;
}

int ug_db_code_damaged(int code) { return (code & 0xff) == SQLITE_CORRUPT; }

/* path as a shell word: bare when it holds only characters no shell treats specially, else in single quotes. */
static void shell_word(const char *path, char *out, size_t len)
{
    if (path[0] &&
        strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+,=:@") == strlen(path)) {
        snprintf(out, len, "%s", path);
        return;
    }
    size_t n = 0;
    out[n++] = '\'';
    for (const char *c = path; *c && n + 6 < len; c++) { /* room for '\'' and the closing quote */
        if (*c == '\'')
            n += (size_t)snprintf(out + n, len - n, "'\\''");
        else
            out[n++] = *c;
    }
    out[n++] = '\'';
    out[n] = 0;
}

void ug_db_damaged(const char *path, const char *why, char *err, size_t errlen)
{
    char word[4200];
    shell_word(path ? path : "DB", word, sizeof word);
    snprintf(err, errlen, "database %s is damaged: run `sqlite3 %s 'pragma integrity_check'` (%s)", path ? path : "",
             word, why && *why ? why : "database disk image is malformed");
}

/* "database: <SQLite's message>", with the system's reason for a failed read or write
 * when there is one; a write cut short (what a full disk or `ulimit -f` gives) says so. */
static void db_error(ug_db *db, const char *msg, char *err, size_t errlen)
{
    int code = sqlite3_errcode(db->h) & 0xff, sys = sqlite3_system_errno(db->h); /* the primary code */
    const char *text = msg ? msg : sqlite3_errmsg(db->h);
    if (ug_db_code_damaged(code))
        ug_db_damaged(db->path, text, err, errlen);
    else if (sys && (code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN))
        snprintf(err, errlen, "database: %s (%s)", text, strerror(sys));
    else if (sqlite3_extended_errcode(db->h) == SQLITE_IOERR_WRITE)
        snprintf(err, errlen, "database: %s (a write was cut short: a full disk or a file size limit)", text);
    else
        snprintf(err, errlen, "database: %s", text);
}

static int exec(ug_db *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        db_error(db, msg, err, errlen);
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
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int(st, 0);
    else
        snprintf(err, errlen, "%s", sqlite3_errmsg(db->h));
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

#define UG_DB_NEEDS_UPGRADE (-3)

/* Whether a database at schema version v may be used as it is (0), must be migrated (1), or
 * is refused (-2, or UG_DB_NEEDS_UPGRADE for an older schema a reader cannot upgrade). */
static int schema_state(ug_db *db, const char *path, int v, int readonly, char *err, size_t errlen)
{
    if (v > UG_DB_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s has schema version %d; this ulpgym knows up to %d: upgrade ulpgym", path, v,
                 UG_DB_SCHEMA_VERSION);
        return -2;
    }
    if (v < 0) { /* no ulpgym ever wrote one */
        snprintf(err, errlen, "%s is an SQLite database but not a ulpgym one (schema version %d)", path, v);
        return -2;
    }
    if (v == 0 && table_count(db) != 0) {
        snprintf(err, errlen, "%s is an SQLite database but not a ulpgym one (it has other tables)", path);
        return -2;
    }
    if (v == UG_DB_SCHEMA_VERSION) return 0;
    if (readonly && v == 0) { /* an empty file, or an empty SQLite database: a reader writes no schema into it */
        snprintf(err, errlen, "%s is not a ulpgym database (it is empty; `ulpgym sweep --db` creates one)", path);
        return -2;
    }
    if (readonly) { /* an older ulpgym's database: ug_db_open upgrades it where it may write */
        snprintf(err, errlen,
                 "%s has schema version %d, older than this ulpgym's %d, and cannot be upgraded here "
                 "(it is not writable): upgrade it once where it is (any ulpgym command that opens it)",
                 path, v, UG_DB_SCHEMA_VERSION);
        return UG_DB_NEEDS_UPGRADE;
    }
    return 1;
}

/* Applies the schema steps after version v and sets user_version, inside the caller's transaction. */
static int apply_migrations(ug_db *db, int v, char *err, size_t errlen)
{
    static const char *const steps[UG_DB_SCHEMA_VERSION] = {
        ug_schema_sql,  migration2_sql, migration3_sql, migration4_sql,  migration5_sql, migration6_sql,
        migration7_sql, migration8_sql, migration9_sql, migration10_sql, migration11_sql};
    for (int i = v; i < UG_DB_SCHEMA_VERSION; i++)
        if (exec(db, steps[i], err, errlen)) return -1;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", UG_DB_SCHEMA_VERSION);
    return exec(db, sql, err, errlen);
}

/* Reads the schema version and judges it (schema_state) inside the transaction begin
 * opens, so the version and the tables are read from one snapshot. */
static int read_state(ug_db *db, const char *path, const char *begin, int readonly, int *v, char *err, size_t errlen)
{
    char why[256];
    if (exec(db, begin, err, errlen)) return -1;
    if (user_version(db, v, why, sizeof why)) {
        snprintf(err, errlen, "%s is not a ulpgym database (%s)", path, why);
        return -2;
    }
    return schema_state(db, path, *v, readonly, err, errlen);
}

/* Brings the database to the current schema (a reader only checks it). A writer reads the
 * version again once the write lock is held (BEGIN IMMEDIATE), so two processes creating
 * one new database at the same moment migrate it once: the second finds the first's
 * schema and writes nothing. */
static int migrate(ug_db *db, const char *path, int readonly, char *err, size_t errlen)
{
    int v = 0;
    char why[256];
    if (user_version(db, &v, why, sizeof why)) {
        if (ug_db_code_damaged(sqlite3_errcode(db->h)))
            ug_db_damaged(path, why, err, errlen);
        else
            snprintf(err, errlen, "%s is not a ulpgym database (%s)", path, why);
        return -2;
    }
    if (v == UG_DB_SCHEMA_VERSION) return 0;
    if (v > UG_DB_SCHEMA_VERSION || v < 0) return schema_state(db, path, v, readonly, err, errlen);
    int state = read_state(db, path, readonly ? "BEGIN" : "BEGIN IMMEDIATE", readonly, &v, err, errlen);
    if (state > 0 && apply_migrations(db, v, err, errlen)) state = -1;
    if (state < 0 || exec(db, "COMMIT", err, errlen)) {
        ug_db_rollback(db);
        return state < 0 ? state : -1;
    }
    return state > 0 ? 0 : state;
}

int ug_db_prepare(ug_db *db, sqlite3_stmt **st, const char *sql, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK) {
        db_error(db, NULL, err, errlen);
        return -1;
    }
    return 0;
}

/* Opens db->h on path: read-write (creating it when asked), or read-only, in which mode
 * SQLite never writes the file (a WAL database's -shm it may need lives beside it; where
 * that folder is read-only and no -shm exists, the file is read as immutable: a sweep
 * cannot be writing into a folder nobody may write). */
int ug_db_sqlite_open_ro(const char *path, sqlite3 **h)
{
    char wal[4096];
    struct stat st; /* write-protected: no write bit (root passes access(W_OK) on any file) */
    int sealed = (access(path, W_OK) != 0 || (stat(path, &st) == 0 && !(st.st_mode & 0222))) &&
                 snprintf(wal, sizeof wal, "%s-wal", path) < (int)sizeof wal && access(wal, F_OK) != 0;
    if (!sealed) return sqlite3_open_v2(path, h, SQLITE_OPEN_READONLY, NULL);
    char *uri = sqlite3_mprintf("file:%s?immutable=1", path); /* characters a URI needs escaping: rare in paths */
    int rc = uri ? sqlite3_open_v2(uri, h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
    sqlite3_free(uri);
    return rc;
}

/* The folder path lies in ("." for a bare name, "/" for a file at the root). */
static void db_folder(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path) + (slash == path), path);
}

static int open_handle(ug_db *db, const char *path, int mode, char *err, size_t errlen)
{
    int flags = SQLITE_OPEN_READWRITE | (mode == UG_DB_CREATE ? SQLITE_OPEN_CREATE : 0);
    int rc = mode == UG_DB_READONLY ? ug_db_sqlite_open_ro(path, &db->h) : sqlite3_open_v2(path, &db->h, flags, NULL);
    int v;
    char why[256];
    int code = rc == SQLITE_OK && mode == UG_DB_READONLY && user_version(db, &v, why, sizeof why)
                   ? sqlite3_errcode(db->h) & 0xff
                   : SQLITE_OK;
    if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) { /* a WAL database whose -shm cannot be made */
        sqlite3_close(db->h);
        char *uri = sqlite3_mprintf("file:%s?immutable=1", path);
        rc = uri ? sqlite3_open_v2(uri, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) : SQLITE_NOMEM;
        sqlite3_free(uri);
    }
    if (rc == SQLITE_OK) return 0;
    char dir[4096];
    db_folder(path, dir, sizeof dir);
    if (mode == UG_DB_CREATE && access(path, F_OK) != 0 && access(dir, W_OK) != 0)
        snprintf(err, errlen, "cannot create database %s: its folder %s may not be written by this user", path, dir);
    else
        snprintf(err, errlen, "cannot open database %s: %s", path, db->h ? sqlite3_errmsg(db->h) : "out of memory");
    return -2;
}

/* A writer refuses a database it cannot write, saying why, before any statement meets
 * SQLite's "attempt to write a readonly database": the file is read-only (SQLite fell back
 * to reading it), or its folder is, where SQLite must create the -wal and -shm beside it. */
static int refuse_unwritable(ug_db *db, const char *path, char *err, size_t errlen)
{
    if (sqlite3_db_readonly(db->h, "main") == 1) {
        snprintf(err, errlen,
                 "database %s is read-only (this user may not write the file); give --db a writable "
                 "database, or read it with history, report, failures or diff",
                 path);
        return -2;
    }
    char dir[4096], wal[4112];
    db_folder(path, dir, sizeof dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (access(dir, W_OK) == 0 || access(wal, W_OK) == 0) return 0;
    snprintf(err, errlen,
             "database %s is read-only here: its folder %s may not be written by this user, and SQLite "
             "writes %s-wal and -shm beside the database",
             path, dir, path);
    return -2;
}

/* Appends text to sql (cap bytes, *n used), never past its end: *n then reaches cap. */
static void sql_append(char *sql, size_t cap, size_t *n, const char *text)
{
    if (*n < cap) *n += (size_t)snprintf(sql + *n, cap - *n, "%s", text);
}

/* The metrics insert, its columns named from the one list of metric fields (verdict.h). */
static int prepare_put_metric(ug_db *db, char *err, size_t errlen)
{
    char sql[1024];
    size_t n = 0;
    sql_append(sql, sizeof sql, &n, "INSERT OR REPLACE INTO metrics(run_id, case_id, output, dtype");
    for (int f = 0; f < ug_metric_nfields; f++) {
        sql_append(sql, sizeof sql, &n, ", ");
        sql_append(sql, sizeof sql, &n, ug_metric_fields[f].name);
    }
    sql_append(sql, sizeof sql, &n, ") VALUES (?,?,?,?"); /* run_id, case_id, output, dtype */
    for (int f = 0; f < ug_metric_nfields; f++) sql_append(sql, sizeof sql, &n, ",?");
    sql_append(sql, sizeof sql, &n, ")");
    if (n >= sizeof sql) {
        snprintf(err, errlen, "internal: the metrics insert does not fit its buffer");
        return -1;
    }
    return ug_db_prepare(db, &db->put_metric, sql, err, errlen);
}

/* The writer's journal (WAL) and settings. Switching a new file to WAL takes its exclusive
 * lock, and SQLite answers SQLITE_BUSY at once, without the busy handler, where waiting could
 * deadlock: several sweeps creating one database at the same moment met it ("database is
 * locked", tests/test_db_create_race.sh). So a busy answer is retried every 10 ms, up to the
 * busy timeout's 10 s; the pragmas are idempotent. */
static int set_wal(ug_db *db, char *err, size_t errlen)
{
    const char *sql = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;";
    for (int tries = 0;; tries++) {
        int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK) return 0;
        if ((rc & 0xff) != SQLITE_BUSY || tries == 1000) {
            db_error(db, NULL, err, errlen);
            return -1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int ug_db_open(const char *path, int mode, ug_db **out, char *err, size_t errlen)
{
    *out = NULL;
    if (mode != UG_DB_CREATE && access(path, F_OK) != 0) {
        snprintf(err, errlen, "no database at %s (run `ulpgym sweep` first, or pass --db)", path);
        return -2;
    }
    ug_db *db = calloc(1, sizeof *db);
    if (db && !(db->path = strdup(path))) {
        free(db);
        db = NULL;
    }
    if (!db) return -1;
    if (open_handle(db, path, mode, err, errlen) ||
        (mode != UG_DB_READONLY && refuse_unwritable(db, path, err, errlen))) {
        ug_db_close(db);
        return -2;
    }
    sqlite3_busy_timeout(db->h, 10000);
    int rc = migrate(db, path, mode == UG_DB_READONLY, err, errlen);
    if (rc == UG_DB_NEEDS_UPGRADE && access(path, W_OK) == 0) { /* a reader upgrades an older schema it may write */
        ug_db_close(db);
        return ug_db_open(path, UG_DB_EXISTING, out, err, errlen);
    }
    if (!rc && mode != UG_DB_READONLY) {
        char inner[256];
        if (set_wal(db, inner, sizeof inner)) {
            snprintf(err, errlen, "%s: %s", path, inner);
            rc = -2;
        }
    }
    if (!rc)
        rc = ug_db_prepare(
                 db, &db->put_result,
                 "INSERT OR REPLACE INTO results(run_id, case_id, verdict, primary_standard, kernel_ms, oracle_ms,"
                 " oracle_fallbacks, message, oracle_raised, oracle_unsettled, used) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 err, errlen) ||
             prepare_put_metric(db, err, errlen) ||
             ug_db_prepare(db, &db->put_verdict, "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?)", err, errlen) ||
             ug_db_prepare(db, &db->put_case,
                           "INSERT OR IGNORE INTO cases(case_id, op, op_group, dtype, spec_json, origin, first_seen)"
                           " VALUES (?,?,?,?,?,?,?)",
                           err, errlen);
    if (rc) {
        ug_db_close(db);
        return rc == -1 || rc == UG_DB_NEEDS_UPGRADE ? -2 : rc;
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
    free(db->path);
    free(db);
}

int ug_db_begin(ug_db *db, char *err, size_t errlen) { return exec(db, "BEGIN IMMEDIATE", err, errlen); }
int ug_db_commit(ug_db *db, char *err, size_t errlen) { return exec(db, "COMMIT", err, errlen); }
void ug_db_rollback(ug_db *db) { sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL); }

int ug_db_step_row(ug_db *db, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return 1;
    if (rc == SQLITE_DONE) return 0;
    if (ug_db_code_damaged(rc)) {
        ug_db_damaged(db->path, sqlite3_errmsg(db->h), err, errlen);
        return -2;
    }
    snprintf(err, errlen, "database %s: %s", db->path, sqlite3_errmsg(db->h));
    return -1;
}

int ug_db_quick_check(ug_db *db, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "PRAGMA quick_check", err, errlen))
        return ug_db_code_damaged(sqlite3_errcode(db->h)) ? -2 : -1;
    char first[512] = "";
    long problems = 0;
    int s;
    while ((s = ug_db_step_row(db, st, err, errlen)) == 1) {
        const unsigned char *line = sqlite3_column_text(st, 0);
        if (line && strcmp((const char *)line, "ok") == 0) continue;
        if (!problems++) snprintf(first, sizeof first, "%s", line ? (const char *)line : "?");
    }
    sqlite3_finalize(st);
    if (s < 0) return s;
    if (!problems) return 0;
    char why[640];
    snprintf(why, sizeof why, "quick_check: %s%s", first, problems > 1 ? ", ..." : "");
    ug_db_damaged(db->path, why, err, errlen);
    return -2;
}

int ug_db_step_done(ug_db *db, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        db_error(db, NULL, err, errlen);
        return -1;
    }
    return 0;
}

void ug_db_bind_outside_text(sqlite3_stmt *st, int i, const char *s)
{
    size_t n = s ? strlen(s) * 4 + 1 : 0;
    char *clean = s ? malloc(n) : NULL;
    if (clean) ug_utf8_sanitize(s, clean, n);
    sqlite3_bind_text(st, i, clean ? clean : s, -1, SQLITE_TRANSIENT);
    free(clean);
}

/* {"op": "digest", ...} for every implemented op, in core/ops.def's order: runs.contracts. */
static char *contracts_json(void)
{
    cJSON *o = cJSON_CreateObject();
    char digest[17];
    for (int op = 0; o && op < UG_OP_COUNT; op++)
        if (ug_op_contract_digest(op, digest) == 0) cJSON_AddStringToObject(o, ug_op_name(op), digest);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

int ug_db_run_begin(ug_db *db, const ug_run_info *in, long *run_id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    char host[256];
    if (ug_db_prepare_stamped(
            db, &st,
            "INSERT INTO runs(started_at, plan_name, plan_path, plan_hash, backend, git_rev, host, cores, shard,"
            " oracle_prec, sample, command, seed, op_filter, group_filter, case_limit, oracle_check, jobs,"
            " no_regressions, primary_standard, backend_sha256, cost_from, cost_hash, contracts)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            host, sizeof host, err, errlen))
        return -1;
    sqlite3_bind_text(st, 2, in->plan_name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, in->plan_path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, in->plan_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, in->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, ug_build_rev, -1, SQLITE_STATIC);
    ug_db_bind_outside_text(st, 7, host);
    sqlite3_bind_int(st, 8, (int)sysconf(_SC_NPROCESSORS_ONLN));
    sqlite3_bind_text(st, 9, in->shard, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 10, in->oracle_prec);
    sqlite3_bind_int64(st, 11, in->sample);
    ug_db_bind_outside_text(st, 12, in->command);
    if (in->seed_set) sqlite3_bind_int64(st, 13, in->seed);
    sqlite3_bind_text(st, 14, in->op_filter, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 15, in->group_filter, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 16, in->limit);
    sqlite3_bind_int(st, 17, in->oracle_check);
    if (in->jobs > 0) sqlite3_bind_int(st, 18, in->jobs);
    sqlite3_bind_int(st, 19, in->no_regressions);
    sqlite3_bind_text(st, 20, in->primary_standard, -1, SQLITE_TRANSIENT); /* NULL binds NULL */
    sqlite3_bind_text(st, 21, in->backend_sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 22, in->cost_from, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 23, in->cost_hash, -1, SQLITE_TRANSIENT);
    char *contracts = contracts_json();
    sqlite3_bind_text(st, 24, contracts, -1, SQLITE_TRANSIENT); /* NULL (no memory) binds NULL */
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    free(contracts);
    if (!rc) *run_id = (long)sqlite3_last_insert_rowid(db->h);
    return rc;
}

int ug_db_run_finish(ug_db *db, long run_id, const char *status, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "UPDATE runs SET status = ?1,"
                      " finished_at = CASE WHEN ?1 = 'running' THEN NULL ELSE ?2 END,"
                      " n_cases = (SELECT count(*) FROM results WHERE run_id = ?3),"
                      " n_pass = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict = 'PASS'),"
                      " n_fail = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict = 'FAIL'),"
                      " n_other = (SELECT count(*) FROM results WHERE run_id = ?3 AND verdict NOT IN ('PASS','FAIL'))"
                      " WHERE run_id = ?3",
                      err, errlen))
        return -1;
    char now[32];
    ug_db_now(now, sizeof now);
    sqlite3_bind_text(st, 1, status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, run_id);
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_put_case(ug_db *db, const char *case_id, const char *spec_json, const char *origin, char *err, size_t errlen)
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
    return ug_db_step_done(db, st, err, errlen);
}

/* A metric field of output o (verdict.h's ug_metric_fields, the table's column order): a
 * figure NaN is NULL, and so is a worst element's index where no element was checked (an
 * optional output not provided). */
static void bind_metric(sqlite3_stmt *st, int i, const ug_output_result *o, const ug_metric_field *f)
{
    double v = ug_metric_value(&o->m, f);
    if (f->kind == UG_MF_REAL)
        sqlite3_bind_double(st, i, v); /* NaN: NULL */
    else if (f->kind == UG_MF_INDEX && o->not_provided)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

static int put_metrics(ug_db *db, long run_id, const ug_result *r, const ug_output_result *o, char *err, size_t errlen)
{
    sqlite3_stmt *st = db->put_metric;
    int i = 1;
    sqlite3_bind_int64(st, i++, run_id);
    sqlite3_bind_text(st, i++, r->case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, o->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, ug_dtype_name(o->dtype), -1, SQLITE_STATIC);
    for (int f = 0; f < ug_metric_nfields; f++) bind_metric(st, i++, o, &ug_metric_fields[f]);
    return ug_db_step_done(db, st, err, errlen);
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
        if (ug_db_step_done(db, st, err, errlen)) return -1;
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
    sqlite3_bind_double(st, 5, r->kernel_ms); /* NaN: NULL */
    sqlite3_bind_double(st, 6, r->oracle_ms);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)r->n_fallback);
    ug_db_bind_outside_text(st, 8, r->message);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->n_raised);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)r->n_unsettled);
    int judged = r->n_out && (r->outcome == UG_OUT_PASS || r->outcome == UG_OUT_FAIL || r->outcome == UG_OUT_NONFINITE);
    if (judged && !isnan(r->used))
        sqlite3_bind_double(st, 11, r->used); /* +inf (a NaN/Inf mismatch) is stored as Inf */
    else
        sqlite3_bind_null(st, 11);
    if (ug_db_step_done(db, st, err, errlen)) return -1;
    for (int k = 0; k < r->n_out; k++)
        if (put_metrics(db, run_id, r, &r->out[k], err, errlen)) return -1;
    return r->n_out ? put_verdicts(db, run_id, r, err, errlen) : 0;
}

int ug_db_find_cases(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *list, size_t listlen,
                     char *err, size_t errlen)
{
    *spec = NULL;
    if (list && listlen) list[0] = 0;
    if (!ug_case_id_prefix_ok(prefix)) {
        snprintf(err, errlen, "\"%s\" is not a case ID (6 to 16 hex digits)", prefix);
        return -2;
    }
    char lower[UG_ID_LEN + 1], pattern[UG_ID_LEN + 2];
    size_t n = strlen(prefix);
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)(prefix[i] >= 'A' && prefix[i] <= 'F' ? prefix[i] + 32 : prefix[i]);
    snprintf(pattern, sizeof pattern, "%s%%", lower);
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "SELECT case_id, spec_json FROM cases WHERE case_id LIKE ? ORDER BY case_id", err,
                      errlen))
        return -1;
    sqlite3_bind_text(st, 1, pattern, -1, SQLITE_TRANSIENT);
    int found = 0, step;
    while ((step = ug_db_step_row(db, st, err, errlen)) == 1) {
        const char *cid = (const char *)sqlite3_column_text(st, 0);
        if (++found == 1) {
            snprintf(id, UG_ID_LEN + 1, "%s", cid);
            *spec = strdup((const char *)sqlite3_column_text(st, 1));
        }
        size_t used = list ? strlen(list) : 0;
        if (list && found <= 5)
            snprintf(list + used, listlen - used, "%s%s", found > 1 ? ", " : "", cid);
        else if (list && found == 6)
            snprintf(list + used, listlen - used, ", ...");
    }
    sqlite3_finalize(st);
    if (step < 0) {
        free(*spec);
        *spec = NULL;
        return step;
    }
    if (found && !*spec) {
        snprintf(err, errlen, "out of memory reading case %s", id);
        return -1;
    }
    return found;
}

int ug_db_find_case(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *err, size_t errlen)
{
    int found = ug_db_find_cases(db, prefix, id, spec, NULL, 0, err, errlen);
    if (found == 1) return 0;
    if (found < 0) return found;
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
    if (ug_db_prepare(db, &st, sql, err, errlen)) return -1;
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
    int rc = ug_db_step_row(db, st, err, errlen);
    *run_id = rc == 1 ? (long)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc < 0) return rc;
    if (*run_id <= 0) {
        snprintf(err, errlen,
                 which && strcmp(which, "latest") ? "no run %s in the database" : "the database has no runs", which);
        return -2;
    }
    return 0;
}

void ug_db_col_text(sqlite3_stmt *st, int i, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int ug_db_run_get(ug_db *db, long run_id, ug_run_record *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(
            db, &st,
            "SELECT status, plan_name, plan_path, plan_hash, backend, shard, op_filter, group_filter, started_at,"
            " finished_at, host, git_rev, seed, oracle_check, oracle_prec, cores, merged_from IS NOT NULL,"
            " case_limit, sample, jobs IS NOT NULL, no_regressions, primary_standard, backend_sha256, cost_from,"
            " cost_hash FROM runs"
            " WHERE run_id = ?",
            err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = ug_db_step_row(db, st, err, errlen);
    memset(r, 0, sizeof *r);
    if (rc == 1) {
        r->run_id = run_id;
        int i = 0;
        ug_db_col_text(st, i++, r->status, sizeof r->status);
        ug_db_col_text(st, i++, r->plan_name, sizeof r->plan_name);
        ug_db_col_text(st, i++, r->plan_path, sizeof r->plan_path);
        ug_db_col_text(st, i++, r->plan_hash, sizeof r->plan_hash);
        ug_db_col_text(st, i++, r->backend, sizeof r->backend);
        ug_db_col_text(st, i++, r->shard, sizeof r->shard);
        ug_db_col_text(st, i++, r->op_filter, sizeof r->op_filter);
        ug_db_col_text(st, i++, r->group_filter, sizeof r->group_filter);
        ug_db_col_text(st, i++, r->started_at, sizeof r->started_at);
        ug_db_col_text(st, i++, r->finished_at, sizeof r->finished_at);
        ug_db_col_text(st, i++, r->host, sizeof r->host);
        ug_db_col_text(st, i++, r->git_rev, sizeof r->git_rev);
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
        ug_db_col_text(st, i++, r->primary_standard, sizeof r->primary_standard);
        ug_db_col_text(st, i++, r->backend_sha256, sizeof r->backend_sha256);
        ug_db_col_text(st, i++, r->cost_from, sizeof r->cost_from);
        ug_db_col_text(st, i++, r->cost_hash, sizeof r->cost_hash);
    } else if (rc == 0) {
        snprintf(err, errlen, "no run %ld in the database", run_id);
    }
    sqlite3_finalize(st);
    return rc == 1 ? 0 : rc == 0 ? -2 : rc;
}

int ug_db_run_reopen(ug_db *db, long run_id, int jobs, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "UPDATE runs SET status = 'running', finished_at = NULL, resumes = resumes + 1, jobs = ?2"
                      " WHERE run_id = ?1",
                      err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, jobs);
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_result_ids(ug_db *db, long run_id, char (**ids)[UG_ID_LEN + 1], size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    *ids = NULL;
    *n = 0;
    if (ug_db_prepare(db, &st, "SELECT case_id FROM results WHERE run_id = ? ORDER BY case_id", err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int rc;
    while ((rc = ug_db_step_row(db, st, err, errlen)) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            char(*grown)[UG_ID_LEN + 1] = realloc(*ids, cap * sizeof **ids);
            if (!grown) break;
            *ids = grown;
        }
        ug_db_col_text(st, 0, (*ids)[(*n)++], UG_ID_LEN + 1);
    }
    sqlite3_finalize(st);
    if (rc != 0) {
        if (rc == 1) snprintf(err, errlen, "out of memory reading the results of run %ld", run_id);
        free(*ids);
        *ids = NULL;
        *n = 0;
        return rc == 1 ? -1 : rc;
    }
    return 0;
}
