/* record.h — what the sweep reads from and writes to the database (record.c). */
#ifndef UG_SWEEP_RECORD_H
#define UG_SWEEP_RECORD_H
#include "run/sweep_engine.h"

/* Resolves --resume: the run, the selection it was made with and its plan hash (hash:
 * UG_ID_LEN + 1 bytes). -2 with a message for a run that cannot be resumed. */
int ug_sweep_resume_target(ug_db *db, const char *which, ug_sweep_selection *x, long *run, char *hash, char *err,
                           size_t errlen);
/* The plan indices still to run (e->todo): all of them, or on resume those without a
 * result in resume_run; sets the summary's n_before and n_total. */
int ug_sweep_build_todo(ug_sweep_engine *e, long resume_run);
/* Opens the run: a new one, or resume_run after checking its plan is unchanged. */
int ug_sweep_open_run(ug_sweep_engine *e, const ug_sweep_selection *x, const ug_plan *plan, long resume_run,
                      const char *plan_hash_then);
/* Stores one result of plan case idx in the open batch (opening one if needed), counts
 * it, and commits when the batch is full. 0, or -1 with e->err set. */
int ug_sweep_record_result(ug_sweep_engine *e, size_t idx, ug_result *r);
/* Commits the open batch, if any. */
int ug_sweep_commit(ug_sweep_engine *e);

#endif
