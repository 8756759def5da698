/* workers.h — the sweep's worker pool (workers.c). */
#ifndef UG_SWEEP_WORKERS_H
#define UG_SWEEP_WORKERS_H
#include "run/sweep_engine.h"

/* Runs e->todo through e->nw worker processes, recording every result (a dead or late
 * worker's case as CRASH or TIMEOUT), until done or ug_sweep_stop_requested; commits or
 * (on error) rolls back the open batch. Returns 0, or -1 with e->err set. */
int ug_sweep_workers_run(ug_sweep_engine *e);

#endif
