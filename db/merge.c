/* merge.c — `ulpgym merge`: joins the shard databases of one sweep into one run.
 *
 * Kept apart from store.c because it is the one place that opens a second database and
 * copies rows between connections. Tables are copied column by column by name (so the
 * copy follows the schema, whatever migration added), inside one transaction of the
 * destination. Every input is read and checked (quick_check, shards of one sweep) before
 * the destination is opened, so a refused merge leaves it as it was: a database the merge
 * created and then could not fill is removed again. */
#include "db/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/internal.h"

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
    for (int i = 0; i < nc && n < sizeof sql; i++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", i ? ",?" : ") VALUES (?");
    if (n < sizeof sql) snprintf(sql + n, sizeof sql - n, ")");
    if (sqlite3_prepare_v2(dst, sql, -1, &ins, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: table %s does not match this database: %s", in_path, table, sqlite3_errmsg(dst));
        rc = -2;
        goto done;
    }
    int s;
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        for (int i = 0; i < nc; i++) {
            if (i == run_col)
                sqlite3_bind_int64(ins, i + 1, new_run);
            else
                sqlite3_bind_value(ins, i + 1, sqlite3_column_value(q, i));
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
    if (s == SQLITE_DONE)
        rc = 0;
    else if (ug_db_code_damaged(s)) {
        ug_db_damaged(in_path, sqlite3_errmsg(src), err, errlen);
        rc = -2;
    } else
        snprintf(err, errlen, "%s: %s", in_path, sqlite3_errmsg(src));
done:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

/* Reads the latest run of the database at path (upgrading its schema like any command),
 * once quick_check has found the file sound: a damaged shard is refused, never merged as a
 * smaller one. */
static int merge_read_input(const char *path, ug_run_record *r, char *err, size_t errlen)
{
    ug_db *in;
    char inner[1024];
    if (ug_db_open(path, UG_DB_READONLY, &in, inner, sizeof inner)) {
        snprintf(err, errlen, "merge: %s", inner);
        return -2;
    }
    long run;
    int rc = ug_db_quick_check(in, inner, sizeof inner);
    if (rc) {
        snprintf(err, errlen, "merge: %s", inner);
        ug_db_close(in);
        return -2;
    }
    rc = ug_db_resolve_run(in, "latest", &run, inner, sizeof inner);
    if (!rc) rc = ug_db_run_get(in, run, r, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "merge: %s: %s", path, inner);
    ug_db_close(in);
    return rc ? -2 : 0;
}

static int merge_check(const ug_run_record *a, const char *pa, const ug_run_record *b, const char *pb, char *err,
                       size_t errlen)
{
    const char *what =
        strcmp(a->plan_hash, b->plan_hash)             ? "plan hash"
        : strcmp(a->backend, b->backend)               ? "backend"
        : strcmp(a->backend_sha256, b->backend_sha256) ? "plugin file contents (SHA-256)"
        : a->sample != b->sample                       ? "sample"
        : a->oracle_prec != b->oracle_prec             ? "oracle precision"
        : strcmp(a->op_filter, b->op_filter) || strcmp(a->group_filter, b->group_filter) || a->limit != b->limit
            ? "case selection (--op/--group/--limit)"
        : strcmp(a->primary_standard, b->primary_standard) ? "deciding standard (--primary)"
        : strcmp(a->cost_hash, b->cost_hash)               ? "the costs their shards were dealt by (--cost-from)"
                                                           : NULL;
    if (what) {
        snprintf(err, errlen, "merge: %s (run %ld) and %s (run %ld) differ in %s: not shards of one sweep", pa,
                 a->run_id, pb, b->run_id, what);
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
                            int complete, char *err, size_t errlen)
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
    if (ug_db_run_finish(db, run_id, done && complete ? "done" : "partial", err, errlen)) goto done;
    sqlite3_stmt *st;
    if (ug_db_prepare(
            db, &st,
            "UPDATE runs SET started_at = ?2, finished_at = ?3, host = ?4, cores = ?5, git_rev = ?6, shard = ?7,"
            " merged_from = ?8 WHERE run_id = ?1",
            err, errlen))
        goto done;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, start, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, end[0] ? end : NULL, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, hosts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, cores);
    sqlite3_bind_text(st, 6, revs, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, shards, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, from, -1, SQLITE_TRANSIENT);
    rc = ug_db_step_done(db, st, err, errlen);
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
    if (ug_db_sqlite_open_ro(path, &src) != SQLITE_OK) {
        snprintf(err, errlen, "merge: cannot open %s: %s", path, sqlite3_errmsg(src));
        sqlite3_close(src);
        return -2;
    }
    int rc = copy_rows(src, db->h, "cases",
                       "SELECT * FROM cases WHERE case_id IN (SELECT case_id FROM results WHERE run_id = ?1)", old_run,
                       new_run, "INSERT OR IGNORE", path, err, errlen);
    if (!rc)
        rc = copy_rows(src, db->h, "results", "SELECT * FROM results WHERE run_id = ?1", old_run, new_run, "INSERT",
                       path, err, errlen);
    if (!rc)
        rc = copy_rows(src, db->h, "metrics", "SELECT * FROM metrics WHERE run_id = ?1", old_run, new_run, "INSERT",
                       path, err, errlen);
    if (!rc)
        rc = copy_rows(src, db->h, "verdicts", "SELECT * FROM verdicts WHERE run_id = ?1", old_run, new_run, "INSERT",
                       path, err, errlen);
    sqlite3_close(src);
    return rc;
}

/* Every shard K/N of the sweep is present once (runs without a shard are not checked).
 * The number of missing shards (allowed only when partial), or -2 naming them. */
static int merge_complete(const ug_run_record *recs, int n, int partial, char *err, size_t errlen)
{
    int total = 0, k, m;
    unsigned char seen[4097] = {0};
    for (int i = 0; i < n; i++) {
        if (!recs[i].shard[0] || sscanf(recs[i].shard, "%d/%d", &k, &m) != 2 || m < 1 || m > 4096 || k < 1 || k > m)
            continue;
        if (total && m != total) {
            snprintf(err, errlen, "merge: shards of %d and of %d parts given: not one sweep", total, m);
            return -2;
        }
        total = m;
        seen[k] = 1;
    }
    char missing[256] = "";
    size_t len = 0;
    int n_missing = 0;
    for (k = 1; k <= total; k++)
        if (!seen[k] && n_missing++ < 8 && len < sizeof missing)
            len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%d/%d", len ? ", " : "", k, total);
    if (!n_missing || partial) return n_missing;
    snprintf(err, errlen,
             "merge: %d of %d shards missing (%s%s); give every shard database, or --partial to merge "
             "what is there (the run is then marked partial)",
             n_missing, total, missing, n_missing > 8 ? ", ..." : "");
    return -2;
}

/* Reads and checks every input (recs[i] its latest run): 0 and the number of missing
 * shards in *missing, or -2 naming what is wrong. */
static int merge_inputs(const char *const *inputs, int n, int partial, ug_run_record *recs, int *missing, char *err,
                        size_t errlen)
{
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = merge_read_input(inputs[i], &recs[i], err, errlen);
        for (int j = 0; j < i && !rc; j++) rc = merge_check(&recs[j], inputs[j], &recs[i], inputs[i], err, errlen);
        if (!rc && recs[i].merged) {
            snprintf(err, errlen, "merge: the latest run of %s is itself a merge; give the shard databases", inputs[i]);
            rc = -2;
        }
    }
    *missing = rc ? 0 : merge_complete(recs, n, partial, err, errlen);
    return rc ? rc : *missing < 0 ? *missing : 0;
}

/* Copies the checked inputs into one new run of db, in one transaction. */
static int merge_into(ug_db *db, const char *const *inputs, const ug_run_record *recs, int n, int missing,
                      const char *command, long *run_id, char *err, size_t errlen)
{
    const ug_run_record *r0 = &recs[0];
    ug_run_info info = {r0->plan_name,
                        r0->plan_path,
                        r0->plan_hash,
                        r0->backend,
                        NULL,
                        command,
                        r0->oracle_prec,
                        r0->sample,
                        r0->seed_set,
                        r0->seed,
                        r0->op_filter[0] ? r0->op_filter : NULL,
                        r0->group_filter[0] ? r0->group_filter : NULL,
                        r0->limit,
                        r0->oracle_check,
                        0,
                        r0->no_regressions,
                        r0->primary_standard[0] ? r0->primary_standard : NULL,
                        r0->backend_sha256[0] ? r0->backend_sha256 : NULL,
                        r0->cost_from[0] ? r0->cost_from : NULL,
                        r0->cost_hash[0] ? r0->cost_hash : NULL};
    int rc;
    if ((rc = ug_db_begin(db, err, errlen)) || (rc = ug_db_run_begin(db, &info, run_id, err, errlen))) goto undo;
    for (int i = 0; i < n && !rc; i++) rc = merge_copy_input(db, inputs[i], recs[i].run_id, *run_id, err, errlen);
    if (!rc) rc = merge_update_run(db, *run_id, recs, inputs, n, missing == 0, err, errlen);
    if (!rc) rc = ug_db_commit(db, err, errlen);
undo:
    if (rc) ug_db_rollback(db);
    return rc;
}

/* Removes the database file a failed merge created, with what SQLite kept beside it. */
static void remove_created(const char *path)
{
    static const char *const tails[] = {"", "-wal", "-shm", "-journal"};
    char name[4200];
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        snprintf(name, sizeof name, "%s%s", path, tails[i]);
        unlink(name);
    }
}

int ug_db_merge(const char *out_path, const char *const *inputs, int n, int partial, const char *command, long *run_id,
                char *err, size_t errlen)
{
    ug_run_record *recs = calloc((size_t)(n > 0 ? n : 1), sizeof *recs);
    if (!recs) return -1;
    int missing = 0, existed = access(out_path, F_OK) == 0;
    int rc = merge_inputs(inputs, n, partial, recs, &missing, err, errlen);
    ug_db *db = NULL;
    if (!rc && (rc = ug_db_open(out_path, UG_DB_CREATE, &db, err, errlen)) == 0) {
        rc = merge_into(db, inputs, recs, n, missing, command, run_id, err, errlen);
        ug_db_close(db);
    }
    if (rc && !existed && db) remove_created(out_path);
    free(recs);
    return rc;
}
