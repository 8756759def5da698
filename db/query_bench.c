/* query_bench.c — writes and reads the kernel-timing tables (see query_bench.h). A NaN
 * figure (a scene none of whose cases was timed) is stored as NULL and read back as NaN. */
#include "db/query_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/build_rev.h"
#include "db/internal.h"

static void bind_ms(sqlite3_stmt *st, int i, double x)
{
    if (isfinite(x))
        sqlite3_bind_double(st, i, x);
    else
        sqlite3_bind_null(st, i);
}

static double col_ms(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int ug_db_bench_begin(ug_db *db, const ug_bench_info *in, long *bench_id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    char host[256];
    if (ug_db_prepare_stamped(db, &st,
                              "INSERT INTO bench_runs(started_at, backend, baseline, backend_sha256, baseline_sha256,"
                              " backend_clock, baseline_clock, host_clock, repeats, warmup, git_rev, host, command)"
                              " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                              host, sizeof host, err, errlen))
        return -1;
    ug_db_bind_outside_text(st, 2, in->backend);
    ug_db_bind_outside_text(st, 3, in->baseline);
    sqlite3_bind_text(st, 4, in->backend_sha256[0] ? in->backend_sha256 : NULL, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, in->baseline_sha256[0] ? in->baseline_sha256 : NULL, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, in->backend_clock, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, in->baseline_clock, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, in->host_clock, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 9, in->repeats);
    sqlite3_bind_int(st, 10, in->warmup);
    sqlite3_bind_text(st, 11, ug_build_rev, -1, SQLITE_STATIC);
    ug_db_bind_outside_text(st, 12, host);
    ug_db_bind_outside_text(st, 13, in->command);
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    if (!rc) *bench_id = (long)sqlite3_last_insert_rowid(db->h);
    return rc;
}

int ug_db_bench_put_case(ug_db *db, long bench_id, const ug_bench_case_row *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "INSERT INTO bench_cases VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err,
                      errlen))
        return -1;
    sqlite3_bind_int64(st, 1, bench_id);
    sqlite3_bind_text(st, 2, r->op, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, r->scene, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, r->case_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, r->spec_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, r->timed ? "timed" : "left out", -1, SQLITE_STATIC);
    ug_db_bind_outside_text(st, 7, r->timed ? NULL : r->message);
    const double *figs[4] = {r->base_kernel, r->test_kernel, r->base_e2e, r->test_e2e};
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 3; j++) bind_ms(st, 8 + 3 * k + j, r->timed ? figs[k][j] : NAN);
    bind_ms(st, 20, r->timed ? r->kernel_ratio : NAN);
    bind_ms(st, 21, r->timed ? r->e2e_ratio : NAN);
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_bench_put_scene(ug_db *db, long bench_id, int position, const ug_bench_scene_row *r, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "INSERT INTO bench_scenes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, bench_id);
    sqlite3_bind_int(st, 2, position);
    sqlite3_bind_text(st, 3, r->op, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, r->scene, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, r->n_cases);
    sqlite3_bind_int(st, 6, r->n_left_out);
    const double figs[10] = {r->kernel_ratio, r->kernel_min,     r->kernel_max,     r->e2e_ratio,   r->e2e_min,
                             r->e2e_max,      r->base_kernel_ms, r->test_kernel_ms, r->base_e2e_ms, r->test_e2e_ms};
    for (int k = 0; k < 10; k++) bind_ms(st, 7 + k, r->has_ratios ? figs[k] : NAN);
    int rc = ug_db_step_done(db, st, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int ug_db_bench_latest(ug_db *db, long *bench_id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st, "SELECT coalesce(max(bench_id), 0) FROM bench_runs", err, errlen)) return -1;
    int s = ug_db_step_row(db, st, err, errlen), rc = s == 1 ? 0 : s < 0 ? s : -1;
    if (s == 0) snprintf(err, errlen, "database: no answer looking for the latest bench");
    if (!rc) *bench_id = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

static int read_info(ug_db *db, long bench_id, ug_bench_info *in, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "SELECT started_at, backend, baseline, backend_sha256, baseline_sha256, backend_clock,"
                      " baseline_clock, host_clock, repeats, warmup, git_rev, host, command FROM bench_runs"
                      " WHERE bench_id = ?",
                      err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, bench_id);
    int s = ug_db_step_row(db, st, err, errlen), rc = s < 0 ? s : 0;
    if (s == 1) {
        ug_db_col_text(st, 0, in->started, sizeof in->started);
        ug_db_col_text(st, 1, in->backend, sizeof in->backend);
        ug_db_col_text(st, 2, in->baseline, sizeof in->baseline);
        ug_db_col_text(st, 3, in->backend_sha256, sizeof in->backend_sha256);
        ug_db_col_text(st, 4, in->baseline_sha256, sizeof in->baseline_sha256);
        ug_db_col_text(st, 5, in->backend_clock, sizeof in->backend_clock);
        ug_db_col_text(st, 6, in->baseline_clock, sizeof in->baseline_clock);
        ug_db_col_text(st, 7, in->host_clock, sizeof in->host_clock);
        in->repeats = sqlite3_column_int(st, 8);
        in->warmup = sqlite3_column_int(st, 9);
        ug_db_col_text(st, 10, in->git_rev, sizeof in->git_rev);
        ug_db_col_text(st, 11, in->host, sizeof in->host);
        ug_db_col_text(st, 12, in->command, sizeof in->command);
    } else if (s == 0) {
        snprintf(err, errlen,
                 "no bench %ld in this database (`ulpgym bench kernels --backend B --baseline A` makes one)", bench_id);
        rc = -2;
    }
    sqlite3_finalize(st);
    return rc;
}

static int read_scenes(ug_db *db, long bench_id, ug_bench_table *t, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (ug_db_prepare(db, &st,
                      "SELECT op, scene, n_cases, n_left_out, kernel_ratio, kernel_ratio_min, kernel_ratio_max,"
                      " e2e_ratio, e2e_ratio_min, e2e_ratio_max, baseline_kernel_ms, backend_kernel_ms,"
                      " baseline_e2e_ms, backend_e2e_ms FROM bench_scenes WHERE bench_id = ? ORDER BY position",
                      err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, bench_id);
    int s, rc = 0;
    while (!rc && (s = ug_db_step_row(db, st, err, errlen)) == 1) {
        ug_bench_scene_row *rows = realloc(t->rows, (size_t)(t->n + 1) * sizeof *rows);
        if (!rows) {
            snprintf(err, errlen, "out of memory reading bench %ld", bench_id);
            rc = -1;
            break;
        }
        t->rows = rows;
        ug_bench_scene_row *r = &t->rows[t->n++];
        memset(r, 0, sizeof *r);
        ug_db_col_text(st, 0, r->op, sizeof r->op);
        ug_db_col_text(st, 1, r->scene, sizeof r->scene);
        r->n_cases = sqlite3_column_int(st, 2);
        r->n_left_out = sqlite3_column_int(st, 3);
        double *figs[10] = {&r->kernel_ratio, &r->kernel_min,     &r->kernel_max,     &r->e2e_ratio,   &r->e2e_min,
                            &r->e2e_max,      &r->base_kernel_ms, &r->test_kernel_ms, &r->base_e2e_ms, &r->test_e2e_ms};
        for (int k = 0; k < 10; k++) *figs[k] = col_ms(st, 4 + k);
        r->has_ratios = isfinite(r->kernel_ratio);
    }
    if (!rc && s < 0) rc = s;
    sqlite3_finalize(st);
    return rc;
}

int ug_db_bench_get(ug_db *db, long bench_id, ug_bench_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->bench_id = bench_id;
    int rc = read_info(db, bench_id, &t->info, err, errlen);
    if (!rc) rc = read_scenes(db, bench_id, t, err, errlen);
    if (rc) ug_bench_table_free(t);
    return rc;
}

void ug_bench_table_free(ug_bench_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}
