/* sweep_types.h — what a sweep is asked (ug_sweep_opts) and what it did (ug_sweep_summary),
 * with the engine's fixed limits: the types the commands and every file of the sweep
 * engine share, apart from the engine's own functions (run/sweep.h). */
#ifndef UG_SWEEP_TYPES_H
#define UG_SWEEP_TYPES_H
#include <stddef.h>
#include <stdio.h>

#include "core/registry.h"

#define UG_SWEEP_BATCH 64
#define UG_SWEEP_COMMIT_S 1.0
#define UG_SWEEP_TIMEOUT_DEFAULT 300.0 /* seconds per case unless --case-timeout says */
#define UG_SWEEP_MAX_JOBS 1024

typedef struct {
    const char *plan_path;    /* NULL: default plan */
    long long seed;           /* < 0: the plan's own */
    const unsigned char *ops; /* NULL: all ops */
    unsigned groups;          /* 0: all groups */
    long limit;               /* 0: all cases */
    const char *db_path;
    const char *backend;            /* "sim", "sim:VARIANT", "plugin:PATH" */
    long sample;                    /* elements per output, 0 = all */
    int oracle_check;               /* self-check at twice the precision */
    int no_regressions;             /* leave out the fuzz findings of corpus/found/ */
    int quiet;                      /* no progress line */
    const char *command;            /* recorded in runs.command */
    int jobs;                       /* worker processes; 0 = all cores */
    double case_timeout;            /* seconds; 0 = UG_SWEEP_TIMEOUT_DEFAULT */
    double op_timeout[UG_OP_COUNT]; /* per-op override in seconds; 0 = case_timeout */
    int shard_k, shard_n;           /* shard K of N (1-based); shard_n 0 = the whole plan */
    const char *cost_from; /* --cost-from: the database whose measured times deal the shards; NULL: estimates */
    const char *resume;    /* run ID or "latest": rerun that run's missing cases */
    const char *primary;   /* standard deciding every case (--primary); NULL: each op's own. Recorded */
} ug_sweep_opts;

typedef struct {
    long run_id;
    size_t n_cases, n_outcome[8]; /* this session's cases */
    size_t n_before, n_total;     /* resume: cases stored earlier; the run's case count */
    size_t n_regression;          /* of n_total, the regression cases from corpus/found/ (origin fuzz) */
    size_t per_op_cases[UG_OP_COUNT], per_op_pass[UG_OP_COUNT];
    unsigned long selfcheck_elems, selfcheck_mismatch;
    unsigned long oracle_mpfr, oracle_raised, oracle_unsettled; /* exact fallback: elements, raised, not settled */
    unsigned long long elems_judged, elems_total; /* output elements judged, of all the judged outputs hold */
    size_t n_sampled; /* cases judged on a sample (--sample N, or over the case memory budget) */
    double seconds;
    double parent_cpu_s; /* CPU time of the parent (dispatch + database) */
    double compute_s;    /* the cases' kernel + oracle time, summed over the workers */
    long parent_rss_kb;  /* peak resident set of the parent process */
    int jobs, interrupted;
    int primary; /* the run's --primary standard; -1: each op's own */
} ug_sweep_summary;

/* Prints what the sweep did (summary.c), as the sweep command shows it. */
void ug_sweep_print_summary(const ug_sweep_summary *s, FILE *f);

#endif
