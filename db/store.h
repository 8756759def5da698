/* store.h — the SQLite store: open/migrate, runs, cases, results and lookups.
 *
 * Only the sweep's parent writes. Writes are grouped by the caller with
 * ug_db_begin()/ug_db_commit(); a crash loses at most the open batch, never a committed
 * one, and never leaves half a result (a result's rows go in one transaction).
 * No SQLite type shows here: every query is a function of db/ (merge.h, query_*.h), so
 * the layers above (run/, reports/, cli/) never write SQL. */
#ifndef UG_STORE_H
#define UG_STORE_H
#include <stddef.h>

#include "oracles/verdict.h"

#define UG_DB_SCHEMA_VERSION 11

typedef struct ug_db ug_db;

typedef struct {
    const char *plan_name, *plan_path, *plan_hash, *backend, *shard, *command;
    int oracle_prec;
    long sample;
    /* What a sweep needs to reproduce its case list on resume (schema 2). */
    int seed_set; /* seed overrides the plan's own */
    long long seed;
    const char *op_filter;    /* comma-separated op names, NULL = all */
    const char *group_filter; /* comma-separated group names, NULL = all */
    long limit;               /* 0 = all */
    int oracle_check, jobs;
    int no_regressions;           /* the run left out corpus/found/ (schema 3) */
    const char *primary_standard; /* `sweep --primary`: the standard deciding every case; NULL = each op's own (4) */
    const char *backend_sha256;   /* plugin: SHA-256 of the .so loaded; NULL otherwise (5) */
    const char *cost_from;        /* `--shard K/N --cost-from DB`: DB's absolute path; NULL otherwise (6) */
    const char *cost_hash;        /* the fingerprint of the costs the shard was dealt by (shard_cost.h); NULL (6) */
} ug_run_info;

/* A run's row as read back (for resume and merge). */
typedef struct {
    long run_id;
    char status[16], plan_name[64], plan_path[1024], plan_hash[UG_ID_LEN + 1], backend[600], shard[32];
    char op_filter[1024], group_filter[128], started_at[32], finished_at[32], host[256], git_rev[64];
    int seed_set, oracle_check, oracle_prec, cores, merged;
    int has_options; /* the sweep options were recorded (a sweep under schema 2) */
    int no_regressions;
    char primary_standard[32];     /* the run's --primary standard; "" = each op's own primary */
    char backend_sha256[65];       /* plugin: SHA-256 of the .so the run loaded; "" otherwise */
    char cost_from[1024];          /* the database --cost-from named; "" = shards dealt by estimates */
    char cost_hash[UG_ID_LEN + 1]; /* the fingerprint of the costs the shard was dealt by; "" = none */
    long long seed;
    long limit, sample;
} ug_run_record;

/* DB path: explicit, else $ULPGYM_DB, else ./ulpgym.db. */
const char *ug_db_default_path(const char *explicit_path);
/* How ug_db_open opens: an existing database for writing (migrated to the current
 * schema), creating it when missing, or read-only for the reading commands (history,
 * report, diff, export, triage): SQLite's read-only mode, no pragma that writes; an empty
 * file is refused, saying so; an older ulpgym's schema is upgraded when the file is
 * writable (as any command did before), else refused, saying why. */
enum { UG_DB_EXISTING = 0, UG_DB_CREATE = 1, UG_DB_READONLY = 2 };
/* Opens path in mode (UG_DB_*). A missing file is refused unless mode is UG_DB_CREATE. A
 * file that is not a ulpgym database is refused with a message; nothing is written to it. */
int ug_db_open(const char *path, int mode, ug_db **out, char *err, size_t errlen);
void ug_db_close(ug_db *db);

/* PRAGMA quick_check of the whole file (every page read once; seconds for a large
 * database): 0 sound; -2 damaged, err "database PATH is damaged: run `sqlite3 PATH
 * 'pragma integrity_check'` (quick_check: <its first finding>)"; -1 another error. For
 * `db check`, and for what takes another database in whole (merge's inputs, --cost-from). */
int ug_db_quick_check(ug_db *db, char *err, size_t errlen);

int ug_db_begin(ug_db *db, char *err, size_t errlen);
int ug_db_commit(ug_db *db, char *err, size_t errlen);
void ug_db_rollback(ug_db *db);

int ug_db_run_begin(ug_db *db, const ug_run_info *info, long *run_id, char *err, size_t errlen);
/* Recounts the run's results into runs.n_* and sets status (and finished_at unless
 * status is "running"). */
int ug_db_run_finish(ug_db *db, long run_id, const char *status, char *err, size_t errlen);
/* Reads run run_id: 0, or -2 when there is no such run. */
int ug_db_run_get(ug_db *db, long run_id, ug_run_record *rec, char *err, size_t errlen);
/* Marks run_id running again for `sweep --resume` (counts the resume, clears finished_at). */
int ug_db_run_reopen(ug_db *db, long run_id, int jobs, char *err, size_t errlen);
/* The case IDs that already have a result in run_id, sorted (malloc'd; *n of them). */
int ug_db_result_ids(ug_db *db, long run_id, char (**ids)[UG_ID_LEN + 1], size_t *n, char *err, size_t errlen);
/* Inserts the case if new (origin "plan", "fuzz" or "manual"). */
int ug_db_put_case(ug_db *db, const char *case_id, const char *spec_json, const char *origin, char *err, size_t errlen);
/* Inserts (or replaces) a result with its metrics and verdicts. */
int ug_db_put_result(ug_db *db, long run_id, const ug_result *r, char *err, size_t errlen);

/* Cases whose ID starts with prefix: how many (>= 0, or -1/-2 with err), the first (in ID
 * order) into id and a malloc'd spec, and up to five IDs listed in list (NULL: not wanted). */
int ug_db_find_cases(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *list, size_t listlen,
                     char *err, size_t errlen);
/* Resolves a case ID or unique prefix (6+ hex digits): 0 found, -2 unknown or ambiguous
 * (message says which). spec is malloc'd. */
int ug_db_find_case(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *err, size_t errlen);
/* The latest run that has a result for case_id: run id, or 0 when none. */
long ug_db_latest_result_run(ug_db *db, const char *case_id);
/* The run id for "latest" or a number; -2 if unknown. */
int ug_db_resolve_run(ug_db *db, const char *which, long *run_id, char *err, size_t errlen);

/* Now as UTC ISO 8601. */
void ug_db_now(char *buf, size_t len);

#endif
