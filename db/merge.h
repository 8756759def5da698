/* merge.h — `ulpgym merge`: joins shard databases of one sweep into one run (merge.c). */
#ifndef UG_DB_MERGE_H
#define UG_DB_MERGE_H
#include <stddef.h>

#include "db/store.h"

/* Joins the latest run of each input database into one new run of the database at
 * out_path, created if missing (`ulpgym merge`): every input must pass quick_check, the
 * inputs must share plan hash, backend, sample and oracle precision, no case may have a
 * result in two inputs, and every shard K/N of the sweep must be there unless partial (the
 * run is then marked partial). The inputs are read and checked before out_path is opened.
 * All or nothing: on error nothing is written, and a database the merge created is removed
 * again. Returns 0 (run id in *run_id), -2 for bad input (message says which file), -1 on
 * a failure. */
int ug_db_merge(const char *out_path, const char *const *inputs, int n_inputs, int partial, const char *command,
                long *run_id, char *err, size_t errlen);

#endif
