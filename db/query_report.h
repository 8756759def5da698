/* query_report.h — the read-only queries a run's report is gathered from
 * (reports/gather.c), the JUnit writer's walk over every case (reports/junit.c) and the
 * CSV writer's over every output (reports/csv.c).
 * Rows come to a callback with text valid only during the call; a callback that returns
 * non-zero stops the iteration, and that value is returned. -1 is a database error with
 * a message in err. */
#ifndef UG_DB_QUERY_REPORT_H
#define UG_DB_QUERY_REPORT_H
#include <stddef.h>

#include "db/store.h"

/* One result of a run, with what the tallies, timings and ulp histogram need. */
typedef struct {
    const char *op, *dtype, *verdict; /* as stored; NULL if missing */
    double kernel_ms, oracle_ms;      /* 0 when not stored */
    int fuzz;                         /* the case's origin is "fuzz" (corpus/found/) */
    int has_max_ulp;                  /* some output stored a max ulp */
    double max_ulp;                   /* the largest over the outputs */
    long long nonfinite;              /* NaN/Inf mismatches summed over the outputs */
    const char *certified;            /* the case's certified verdict (PASS, FAIL, NA); NULL: none stored (SKIP,
                                       * ERROR, CRASH, TIMEOUT judge no output) */
    double used;                      /* headroom used (results.used): NaN when not judged or not stored */
    const char *case_id;
    long long n_checked, n_total; /* output elements judged, and held, summed over the outputs */
} ug_db_result_row;

/* Every result of run_id, in no particular order. */
int ug_db_report_results(ug_db *db, long run_id, int (*cb)(const ug_db_result_row *row, void *ctx), void *ctx,
                         char *err, size_t errlen);

/* Passes and cases not skipped per run and group over the 64 runs up to run_id of run_id's
 * backend (a mutant or plugin run never joins the sim runs' line), oldest run first. */
typedef struct {
    long run_id;
    const char *group;
    double pass, cases;
} ug_db_group_rate_row;

int ug_db_report_group_history(ug_db *db, long run_id, int (*cb)(const ug_db_group_rate_row *row, void *ctx), void *ctx,
                               char *err, size_t errlen);

/* Passes and cases not skipped per run and op, over the same runs as the group history, with
 * each run's start (UTC, ISO 8601). */
typedef struct {
    long run_id;
    const char *started, *op;
    double pass, cases;
} ug_db_op_rate_row;

int ug_db_report_op_history(ug_db *db, long run_id, int (*cb)(const ug_db_op_rate_row *row, void *ctx), void *ctx,
                            char *err, size_t errlen);

/* One case of a run for the JUnit report. */
typedef struct {
    const char *group, *op, *dtype, *case_id, *verdict;
    const char *message; /* "" when none */
    double ms;           /* kernel + oracle milliseconds */
    const char *primary_standard;
    const char *spec_json; /* the case's canonical spec */
} ug_db_case_row;

/* Every result of run_id by group, op and case ID. */
int ug_db_report_cases(ug_db *db, long run_id, int (*cb)(const ug_db_case_row *row, void *ctx), void *ctx, char *err,
                       size_t errlen);

/* One judged output of a case in a run: what was checked and the worst errors (has = 0:
 * no metric stored, e.g. a crash). */
typedef struct {
    const char *output;
    long n_checked, n_total, nonfinite_mismatch;
    double max_abs, max_rel, max_ulp;
} ug_db_output_figures;

/* The figures of case_id in run_id, one callback per output, and into thresholds (up to
 * tlen bytes) the JSON of thresholds `standard` applied ("" when it has no verdict). */
int ug_db_report_case_figures(ug_db *db, long run_id, const char *case_id, const char *standard,
                              int (*cb)(const ug_db_output_figures *f, void *ctx), void *ctx, char *thresholds,
                              size_t tlen, char *err, size_t errlen);

/* One output of one case of a run, for the CSV report (reports/csv.c). Text is as stored,
 * "" for NULL; numbers NaN where NULL. A case that stored no metrics (CRASH, ERROR, TIMEOUT,
 * SKIP) comes once, with output NULL. */
#define UG_DB_DISCRETE_STANDARDS 3 /* exact, boundary_aware, topk_set */
typedef struct {
    const char *case_id, *group, *op, *dtype, *verdict, *primary_standard, *message, *spec_json;
    double used;        /* results.used */
    const char *output; /* NULL: no metrics stored */
    const char *output_dtype;
    long n_checked, n_total, nonfinite_mismatch;
    double max_abs, max_rel, max_ulp, cosine, mere, mare, rmse;
    /* The case's stored thresholds ({"OUTPUT": {...}, ...}) under its deciding standard
     * (results.primary_standard), then under each discrete compare in ug_standard order
     * (discrete_standard[k] names it); "" where none is stored. */
    const char *primary_thresholds;
    int discrete_standard[UG_DB_DISCRETE_STANDARDS];
    const char *discrete_thresholds[UG_DB_DISCRETE_STANDARDS];
} ug_db_output_row;

/* Every output of every result of run_id, by group, op, case ID and the order the outputs
 * were stored in (their declaration's). */
int ug_db_report_outputs(ug_db *db, long run_id, int (*cb)(const ug_db_output_row *row, void *ctx), void *ctx,
                         char *err, size_t errlen);

#endif
