/* sweep.h — the sweep engine: expand a plan, run its cases in worker processes, store
 * every result.
 *
 * The parent expands the plan (or, on --resume, the recorded plan and options of a run,
 * minus the cases that already have a result), forks N workers and streams case indices
 * to them over pipes; each worker runs ug_exec_case() and writes the plain ug_result
 * back. A worker that dies (signal, exit) or exceeds its case's timeout costs that one
 * case (CRASH / TIMEOUT, the signal or the elapsed time in the message) and is replaced.
 * The parent is the only database writer; results are committed in batches of
 * UG_SWEEP_BATCH or every UG_SWEEP_COMMIT_S seconds (and when SIGINT/SIGTERM stops the
 * sweep), each result's rows in the same transaction, so a kill -9 loses at most the
 * open batch and never half a result, and --resume runs exactly the missing cases. */
#ifndef UG_SWEEP_H
#define UG_SWEEP_H
#include <stddef.h>
#include <stdio.h>

#include "core/registry.h"
#include "gen/plan.h"
#include "run/exec.h"
#include "run/shard_cost.h"
#include "run/sweep_types.h"

/* Runs the sweep. Bad input (plan, op, backend, database, resume target) returns -2
 * before any row is written; err says what is wrong. */
int ug_sweep_run(const ug_sweep_opts *o, ug_sweep_summary *s, char *err, size_t errlen);

#endif
