/* query_bench.h — the kernel-timing tables of `ulpgym bench kernels --backend B --baseline A`
 * (schema migration 7: bench_runs, bench_scenes, bench_cases): written once per bench, in
 * one transaction, and read back for the markdown table and the HTML report. A ratio is
 * B / A: above 1, the kernel timed (B) is slower than the baseline (A). */
#ifndef UG_DB_QUERY_BENCH_H
#define UG_DB_QUERY_BENCH_H
#include <stddef.h>

#include "db/store.h"

/* One bench: what was compared, on which clocks. */
typedef struct {
    char started[32], backend[600], baseline[600], backend_sha256[65], baseline_sha256[65];
    char backend_clock[8], baseline_clock[8]; /* kernel-only clock per side: "device", "wall" or "cpu" */
    char host_clock[8];                       /* end-to-end clock: "wall" or "cpu" */
    int repeats, warmup;
    char git_rev[64], host[256], command[1024];
} ug_bench_info;

/* One case of a scene: medians (and min, max) over the repeats, per side and clock. */
typedef struct {
    const char *op, *scene, *case_id, *spec_json;
    int timed; /* 0: left out (message says why); the figures are then not stored */
    const char *message;
    double base_kernel[3], test_kernel[3], base_e2e[3], test_e2e[3]; /* median, min, max, ms */
    double kernel_ratio, e2e_ratio; /* median of the repeats' paired ratios test / base */
} ug_bench_case_row;

/* One scene of an op: the geometric mean (and min, max) of its timed cases' ratios. */
typedef struct {
    char op[64], scene[40];
    int n_cases, n_left_out;
    int has_ratios; /* 0: no case was timed; the figures are NaN */
    double kernel_ratio, kernel_min, kernel_max, e2e_ratio, e2e_min, e2e_max;
    double base_kernel_ms, test_kernel_ms, base_e2e_ms, test_e2e_ms; /* geometric means of the case medians */
} ug_bench_scene_row;

typedef struct {
    long bench_id;
    ug_bench_info info;
    int n;
    ug_bench_scene_row *rows; /* in table order */
} ug_bench_table;

/* Starts a bench row; *bench_id gets its ID. Call inside ug_db_begin / ug_db_commit with the
 * rows below, so a bench is stored whole or not at all. 0, or -1 with a message. */
int ug_db_bench_begin(ug_db *db, const ug_bench_info *info, long *bench_id, char *err, size_t errlen);
int ug_db_bench_put_case(ug_db *db, long bench_id, const ug_bench_case_row *row, char *err, size_t errlen);
/* position: the row's place in the table (0, 1, ...). */
int ug_db_bench_put_scene(ug_db *db, long bench_id, int position, const ug_bench_scene_row *row, char *err,
                          size_t errlen);
/* The latest bench's ID into *bench_id (0 when the database has none). 0, or -1 with a message. */
int ug_db_bench_latest(ug_db *db, long *bench_id, char *err, size_t errlen);
/* Reads bench bench_id with its scene rows. 0, -2 when there is no such bench, -1 with a message. */
int ug_db_bench_get(ug_db *db, long bench_id, ug_bench_table *t, char *err, size_t errlen);
void ug_bench_table_free(ug_bench_table *t);

#endif
