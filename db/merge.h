/* merge.h — `ulpgym merge`: joins shard databases of one sweep into one run (merge.c). */
#ifndef UG_DB_MERGE_H
#define UG_DB_MERGE_H
#include <stddef.h>

#include "db/store.h"

/* Joins the latest run of each input database into one new run of db (`ulpgym merge`):
 * the inputs must share plan hash, backend, sample and oracle precision, and no case
 * may have a result in two inputs, and every shard K/N of the sweep must be there unless
 * partial (the run is then marked partial). All or nothing: on error nothing is written.
 * Returns 0 (run id in *run_id), -2 for bad input (message says which file). */
int ug_db_merge(ug_db *db, const char *const *inputs, int n_inputs, int partial, const char *command, long *run_id,
                char *err, size_t errlen);

#endif
