/* sweep.h — the sweep engine: expand a plan, run each case, store every result.
 *
 * The parent process is the only database writer; results are committed in batches of
 * UG_SWEEP_BATCH (and when a SIGINT/SIGTERM stops the sweep), each result's rows in the
 * same transaction, so a crash loses at most the open batch and never half a result. */
#ifndef UG_SWEEP_H
#define UG_SWEEP_H
#include <stddef.h>
#include <stdio.h>

#include "core/registry.h"
#include "run/exec.h"

#define UG_SWEEP_BATCH 64

typedef struct {
    const char *plan_path;         /* NULL: default plan */
    long long seed;                /* < 0: the plan's own */
    const unsigned char *ops;      /* NULL: all ops */
    unsigned groups;               /* 0: all groups */
    long limit;                    /* 0: all cases */
    const char *db_path;
    const char *backend;           /* "sim", "sim:VARIANT", "plugin:PATH" */
    long sample;                   /* elements per output, 0 = all */
    int oracle_check;              /* self-check at twice the precision */
    int quiet;
    const char *command;           /* recorded in runs.command */
} ug_sweep_opts;

typedef struct {
    long run_id;
    size_t n_cases, n_outcome[8];
    size_t per_op_cases[UG_OP_COUNT], per_op_pass[UG_OP_COUNT];
    unsigned long selfcheck_elems, selfcheck_mismatch;
    double seconds;
    int interrupted;
} ug_sweep_summary;

/* Runs the sweep. Bad input (plan, op, backend, database) returns -2 before any row is
 * written; err says what is wrong. */
int ug_sweep_run(const ug_sweep_opts *o, ug_sweep_summary *s, char *err, size_t errlen);
void ug_sweep_print_summary(const ug_sweep_summary *s, FILE *f);

#endif
