/* sweep_internal.h — what the files of the sweep engine share; nothing outside run/
 * includes it.
 *
 * The engine is split by job: sweep.c orchestrates one run (check the input, open the
 * run, install signal handlers, run, finish), sweep_select.c decides which cases a run is
 * made of (plan, filters, limit, shard, or a resumed run's record), workers.c is the
 * worker pool (fork, pipes, crash and timeout isolation), record.c is everything the
 * sweep reads from and writes to the database, and summary.c counts results and prints
 * the progress line and the summary. They share one ug_sweep_engine. */
#ifndef UG_SWEEP_INTERNAL_H
#define UG_SWEEP_INTERNAL_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "db/store.h"
#include "run/sweep.h"

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

/* ---- sweep_select.c ---- */
/* The selection the sweep options ask for: -2 with a message for a --primary that is not a numeric standard. */
int ug_sweep_selection_from_opts(const ug_sweep_opts *o, ug_sweep_selection *x, char *err, size_t errlen);
/* The selection run r was made with (for --resume): -2 with a message if it names an op,
 * group, shard or --primary standard this build cannot take. */
int ug_sweep_selection_from_record(const ug_run_record *r, ug_sweep_selection *x, char *err, size_t errlen);
/* Comma list of the selected op names (groups 0) or group names (groups 1); "" for all. */
void ug_sweep_selection_names(const ug_sweep_selection *x, int groups, char *buf, size_t len);
/* Expands the plan and applies filter, corpus/found/, limit and shard, in that order. A shard dealt by
 * --cost-from sets x->cost_hash, or, when x holds one (a resume), refuses costs that changed since. -2 with a
 * message if the plan or the cost database cannot be read or the costs changed. */
int ug_sweep_selection_expand(ug_sweep_selection *x, ug_plan *plan, char *err, size_t errlen);

/* ---- workers.c ---- */
/* Runs e->todo through e->nw worker processes, recording every result (a dead or late
 * worker's case as CRASH or TIMEOUT), until done or ug_sweep_stop_requested; commits or
 * (on error) rolls back the open batch. Returns 0, or -1 with e->err set. */
int ug_sweep_workers_run(ug_sweep_engine *e);

/* ---- record.c ---- */
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

/* ---- summary.c ---- */
/* Counts one stored result of op into s. */
void ug_sweep_summary_count(ug_sweep_summary *s, int op, const ug_result *r);
/* The progress line on stderr (unless quiet): throttled to one per 0.2 s on a terminal,
 * 5 s otherwise, unless final. */
void ug_sweep_progress(ug_sweep_engine *e, int final);

#endif
