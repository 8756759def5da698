/* sweep_engine.h — the state the files of the sweep engine share; nothing outside run/
 * includes it.
 *
 * The engine is split by job: sweep.c orchestrates one run (check the input, open the
 * run, install signal handlers, run, finish), sweep_select.c decides which cases a run is
 * made of (plan, filters, limit, shard, or a resumed run's record), workers.c is the
 * worker pool (fork, pipes, crash and timeout isolation), record.c is everything the
 * sweep reads from and writes to the database, and summary.c counts results and prints
 * the progress line and the summary. They share one ug_sweep_engine; each file's functions
 * are declared in its own header (sweep_select.h, workers.h, record.h, summary.h), so the
 * files call one another downwards only: sweep.c -> workers.c -> record.c -> summary.c. */
#ifndef UG_SWEEP_ENGINE_H
#define UG_SWEEP_ENGINE_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "db/store.h"
#include "gen/plan.h"
#include "run/exec.h"
#include "run/sweep_types.h"

/* The selection a run is made of (from the options, or from a run's record). */
typedef struct {
    char plan_path[1024], backend[600], shard[32];
    char backend_sha256[65]; /* resume: the plugin file's SHA-256 the run recorded ("" = none recorded) */
    int seed_set;
    long long seed;
    unsigned char ops[UG_OP_COUNT];
    int any_op;
    unsigned groups;
    long limit, sample;
    int oracle_check, shard_k, shard_n;
    int no_regressions;            /* leave out corpus/found/ (recorded, so a resume does the same) */
    int primary;                   /* ug_standard deciding every case (--primary, recorded); -1: each op's own */
    char cost_from[1024];          /* --cost-from: the cost database's absolute path; "" = estimates */
    char cost_hash[UG_ID_LEN + 1]; /* the fingerprint of the costs the shard is dealt by (recorded; resume checks) */
} ug_sweep_selection;

struct ug_sweep_worker;

/* One sweep in progress: its input, the worker pool, the open batch and the counts. */
typedef struct {
    const ug_sweep_opts *o;
    const ug_plan *plan;
    const ug_backend *b;
    ug_exec_opts eo;
    size_t *todo, n_todo, next; /* plan indices still to run, and the next to dispatch */
    struct ug_sweep_worker *w;  /* workers.c */
    int nw;
    pid_t parent;
    ug_db *db;
    long run_id;
    int in_tx;
    size_t in_batch;
    double tx_started, t0, last_progress;
    ug_sweep_summary *s;
    char *err;
    size_t errlen;
} ug_sweep_engine;

/* Set by SIGINT/SIGTERM (sweep.c): the pool stops dispatching and the sweep ends. */
extern volatile sig_atomic_t ug_sweep_stop_requested;

/* Monotonic seconds. */
static inline double ug_sweep_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
