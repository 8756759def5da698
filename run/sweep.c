/* sweep.c — the sweep engine's orchestration (see sweep.h): checks everything a user
 * can get wrong before the database is touched, opens or reopens the run, installs the
 * signal handlers that stop a sweep cleanly, runs the worker pool and finishes the run.
 * The parts: sweep_select.c (which cases), workers.c (the worker processes), record.c
 * (the database) and summary.c (counts, progress line, summary). */
#include "run/sweep.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen/case_memory.h"
#include "run/record.h"
#include "run/summary.h"
#include "run/sweep_select.h"
#include "run/workers.h"

static void on_signal(int sig)
{
    (void)sig;
    ug_sweep_stop_requested = 1;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The cost database must not be the one the sweep writes: its own results would change the costs, and a
 * resume would deal the shard anew. */
static int cost_from_apart(const ug_sweep_selection *x, const char *db_path, char *err, size_t errlen)
{
    struct stat a, b;
    if (!x->cost_from[0] || stat(x->cost_from, &a) || stat(db_path, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return 0;
    snprintf(err, errlen,
             "--cost-from %s is the database this sweep writes: its own results would change the "
             "shard's cases on resume; give the costs of an earlier run's database (or a copy)",
             x->cost_from);
    return -2;
}

/* A resume loads a plugin only when the user names it again: the backend stored in the
 * database is data someone else may have written. `given` (sweep --backend) must name
 * the run's own plugin file; a run on sim or replay takes no --backend. */
static int resume_backend_named(const ug_sweep_selection *x, const char *given, char *err, size_t errlen)
{
    if (!ug_backend_names_code(x->backend)) {
        if (!given) return 0;
        snprintf(err, errlen, "--resume uses the run's own backend (%s); drop --backend", x->backend);
        return -2;
    }
    char want[PATH_MAX], have[PATH_MAX];
    int same = given && ug_backend_names_code(given) && realpath(given + 7, have) && realpath(x->backend + 7, want) &&
               strcmp(want, have) == 0;
    if (same) return 0;
    snprintf(err, errlen, "the run loaded %s; a resume runs a plugin only when you name it: add --backend %s%s",
             x->backend, x->backend, given ? " (you gave another)" : "");
    return -2;
}

/* Records how the run ended: done, interrupted, or (rc != 0: the engine failed, e.g. a
 * full disk) failed, with err completed to say what became of the run. A run that cannot
 * be marked done is an engine failure too. Returns rc, or -1 when only the marking failed. */
static int finish_run(ug_sweep_engine *e, int rc)
{
    const ug_sweep_summary *s = e->s;
    char ferr[256];
    int marked = ug_db_run_finish(e->db, s->run_id,
                                  rc               ? "failed"
                                  : s->interrupted ? "interrupted"
                                                   : "done",
                                  ferr, sizeof ferr) == 0;
    size_t n = strlen(e->err);
    if (rc && marked)
        snprintf(e->err + n, e->errlen - n,
                 "; run %ld marked failed, the results stored before it kept: fix the cause "
                 "and `ulpgym sweep --resume %ld` runs the rest",
                 s->run_id, s->run_id);
    else if (rc)
        snprintf(e->err + n, e->errlen - n,
                 "; run %ld could not be marked failed either (%s) and reads running: fix "
                 "the cause and `ulpgym sweep --resume %ld` runs the rest",
                 s->run_id, ferr, s->run_id);
    else if (!marked)
        snprintf(e->err, e->errlen,
                 "run %ld could not be marked %s (%s) and reads running: fix the cause and "
                 "`ulpgym sweep --resume %ld` finishes it",
                 s->run_id, s->interrupted ? "interrupted" : "done", ferr, s->run_id);
    return rc ? rc : marked ? 0 : -1;
}

int ug_sweep_run(const ug_sweep_opts *o, ug_sweep_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->primary = -1;
    ug_sweep_engine e = {0};
    e.o = o;
    e.s = s;
    e.err = err;
    e.errlen = errlen;
    e.parent = getpid();
    ug_sweep_selection x;
    ug_plan plan = {0};
    ug_backend b = {0};
    long resume_run = 0;
    char hash_then[UG_ID_LEN + 1] = "";
    int rc = 0, have_backend = 0;
    /* Everything a user can get wrong is checked before the database is touched (a new
     * run) or before the run is reopened (resume). */
    if (o->resume) {
        if (ug_db_open(ug_db_default_path(o->db_path), 0, &e.db, err, errlen)) return -2;
        rc = ug_sweep_resume_target(e.db, o->resume, &x, &resume_run, hash_then, err, errlen);
    } else {
        rc = ug_sweep_selection_from_opts(o, &x, err, errlen);
        if (!rc) rc = cost_from_apart(&x, ug_db_default_path(o->db_path), err, errlen);
    }
    if (!rc) rc = ug_sweep_selection_expand(&x, &plan, err, errlen);
    if (!rc && o->resume) rc = resume_backend_named(&x, o->backend, err, errlen);
    if (!rc) rc = ug_backend_open(&b, x.backend, err, errlen);
    have_backend = !rc;
    if (!rc && o->resume && x.backend_sha256[0] && strcmp(x.backend_sha256, b.sha256)) {
        snprintf(err, errlen,
                 "%s changed since the run started (SHA-256 %.12s…, now %.12s…): its results would mix two "
                 "kernels; start a new sweep",
                 b.path, x.backend_sha256, b.sha256);
        rc = -2;
    }
    for (size_t i = 0; !rc && i < plan.n; i++) rc = ug_backend_check_op(&b, plan.cases[i].op, err, errlen);
    if (!rc && !e.db) rc = ug_db_open(ug_db_default_path(o->db_path), 1, &e.db, err, errlen);
    if (rc) goto done;
    e.plan = &plan;
    e.b = &b;
    ug_exec_opts_default(&e.eo);
    e.eo.oracle.sample = (size_t)x.sample;
    e.eo.oracle.self_check = x.oracle_check;
    e.eo.primary_set = x.primary >= 0;
    e.eo.primary = x.primary;
    s->primary = x.primary;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    e.nw = o->jobs > 0 ? o->jobs : cores > 0 ? (int)cores : 1;
    s->jobs = e.nw;
    if ((rc = ug_sweep_build_todo(&e, resume_run))) goto done;
    if ((size_t)e.nw > e.n_todo) e.nw = e.n_todo ? (int)e.n_todo : 1;
    ug_case_memory_set_workers(e.nw); /* the default case memory budget is shared by the workers */
    if ((rc = ug_sweep_open_run(&e, &x, &plan, resume_run, hash_then))) goto done;
    s->run_id = e.run_id;
    ug_sweep_stop_requested = 0;
    struct sigaction sa, old_int, old_term, old_pipe, old_xfsz;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN; /* a dead worker's pipe is an EPIPE, not the parent's death */
    sigaction(SIGPIPE, &sa, &old_pipe);
    sigaction(SIGXFSZ, &sa, &old_xfsz); /* past `ulimit -f` a write fails (EFBIG): an engine failure, not a death */
    double cpu0 = cpu_s();
    e.t0 = ug_sweep_now_s();
    e.last_progress = 0;
    if (e.n_todo) rc = ug_sweep_workers_run(&e);
    s->interrupted = ug_sweep_stop_requested != 0;
    s->seconds = ug_sweep_now_s() - e.t0;
    s->parent_cpu_s = cpu_s() - cpu0;
    ug_sweep_progress(&e, 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    sigaction(SIGXFSZ, &old_xfsz, NULL);
    rc = finish_run(&e, rc);
done : {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    s->parent_rss_kb = ru.ru_maxrss;
}
    free(e.todo);
    ug_db_close(e.db);
    if (have_backend) ug_backend_close(&b);
    ug_plan_free(&plan);
    return rc;
}
