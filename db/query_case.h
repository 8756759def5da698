/* query_case.h — read-only lookups about one case or run that `triage` and `check` need:
 * the stored metrics of a case's output, to show that a rerun reproduces them, and the
 * run a named replay batch stores into. */
#ifndef UG_DB_QUERY_CASE_H
#define UG_DB_QUERY_CASE_H
#include <stddef.h>

#include "db/store.h"

/* The metrics triage compares, as columns of the metrics table. */
enum {
    UG_DB_MC_N_CHECKED,
    UG_DB_MC_MAX_ABS,
    UG_DB_MC_MAX_REL,
    UG_DB_MC_MAX_ULP,
    UG_DB_MC_MEAN_ULP,
    UG_DB_MC_MERE,
    UG_DB_MC_MARE,
    UG_DB_MC_RMSE,
    UG_DB_MC_EB,
    UG_DB_MC_SMALL_ERR_RATIO,
    UG_DB_MC_COSINE,
    UG_DB_MC_BENCH_MARE,
    UG_DB_MC_MAX_ULP_INDEX,
    UG_DB_MC_COUNT
};

typedef struct {
    double v[UG_DB_MC_COUNT];
    unsigned char is_null[UG_DB_MC_COUNT]; /* stored as NULL (a NaN metric); v is then 0 */
} ug_db_metric_row;

/* The metrics column name of UG_DB_MC_* c (e.g. "max_ulp_index"), for messages. */
const char *ug_db_metric_column(int c);
/* m's values in UG_DB_MC_* order, as ug_db_put_result stores them. */
void ug_db_metric_values(const ug_metrics *m, double v[UG_DB_MC_COUNT]);
/* Reads the stored metrics of (run_id, case_id, output): 1 found, 0 no such row, -1 a
 * database error (message in err). */
int ug_db_get_metrics(ug_db *db, long run_id, const char *case_id, const char *output, ug_db_metric_row *row, char *err,
                      size_t errlen);
/* The stored verdict and message of (run_id, case_id): 1 found, 0 no such row, -1 a
 * database error (message in err). */
int ug_db_get_verdict(ug_db *db, long run_id, const char *case_id, char *verdict, size_t vlen, char *message,
                      size_t mlen, char *err, size_t errlen);
/* The folder a replayed result's outputs were read from (results.outputs_dir, migration 9)
 * into dir: 1 found, 0 none recorded (another backend, or stored before), -1 a database
 * error. ug_db_set_outputs_dir records it for a result just put (same transaction). */
int ug_db_get_outputs_dir(ug_db *db, long run_id, const char *case_id, char *dir, size_t len, char *err, size_t errlen);
int ug_db_set_outputs_dir(ug_db *db, long run_id, const char *case_id, const char *dir, char *err, size_t errlen);
/* The latest run of backend "replay" named plan_name (`check --name`): its id, or 0. */
long ug_db_latest_replay_run(ug_db *db, const char *plan_name);

#endif
