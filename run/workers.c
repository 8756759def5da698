/* workers.c — the sweep's worker pool: fork, pipes, crash and timeout isolation.
 *
 * Why processes and not threads: a kernel under test may segfault, abort, hang or
 * scribble over memory; in a forked worker that costs one case, never the sweep. The
 * protocol is deliberately small: the parent writes a 4-byte case index to a worker's
 * task pipe (workers share the expanded plan by fork), the worker answers with a 4-byte
 * length and the used prefix of its ug_result (a plain struct, no pointers). One case is
 * outstanding per worker, so the parent always knows which case a dead or late worker
 * held. Only the parent touches SQLite (record.c); workers leave with _exit(). */
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#endif
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/canon.h"
#include "run/contain.h"
#include "run/exec.h"
#include "run/record.h"
#include "run/summary.h"
#include "run/workers.h"

/* Set by the sweep's signal handlers (sweep.c); the pool stops handing out cases. It
 * lives here, with the loop that reads it, so sweep.c depends on the pool and not the
 * other way round. */
volatile sig_atomic_t ug_sweep_stop_requested;

struct ug_sweep_worker {
    pid_t pid;
    int task_fd, res_fd; /* parent ends: write case indices, read results */
    long busy;           /* plan index of the case it holds, -1 idle */
    double started;
    int reaped, status; /* the parent already waited for it (it died holding no EOF): its wait status */
    volatile int *oom;  /* in a page shared with the worker: it died of a failed allocation (run/contain.h) */
    size_t got;         /* bytes of the current message read so far */
    unsigned char *buf; /* 4-byte length + ug_result */
    char *note;         /* shared with the worker: what a guard page fault says (ug_contain_watch_faults) */
};
typedef struct ug_sweep_worker ug_sweep_worker;

#define MSG_MAX (4 + sizeof(ug_result))
#define NOTE_MAX 256

static size_t result_bytes(const ug_result *r)
{
    int n = r->n_out < 0 ? 0 : r->n_out > UG_MAX_TENSORS ? UG_MAX_TENSORS : r->n_out;
    return offsetof(ug_result, out) + (size_t)n * sizeof(ug_output_result);
}

static _Noreturn void worker_main(const ug_sweep_engine *e, int task_fd, int res_fd, char *note, volatile int *oom)
{
    signal(SIGINT, SIG_IGN); /* the parent decides when workers stop */
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL); /* the parent ignores it for its own writes; a kernel's process keeps the default */
    /* own process group, subreaper, no cores, stdout to stderr, address space capped (run/contain.h) */
    if (ug_contain_enter(e->parent, oom)) _exit(0);
    ug_contain_watch_faults(note, NOTE_MAX);
    ug_exec_keep_freed_memory();
    static ug_result r;
    uint32_t idx;
    while (ug_io_full(task_fd, &idx, sizeof idx, 0) == 0 && idx < e->plan->n) {
        note[0] = 0; /* a note is about this case's kernel only */
        errno = 0;   /* an ENOMEM from here on is this case's */
        ug_exec_case(e->plan->cases[idx].spec, e->b, &e->eo, &r, NULL);
        fflush(NULL);                  /* what the kernel printed, to stderr, before the worker may _exit */
        ug_contain_kill_descendants(); /* what the kernel forked ends with its case */
        uint32_t len = (uint32_t)result_bytes(&r);
        if (ug_io_full(res_fd, &len, sizeof len, 1) || ug_io_full(res_fd, &r, len, 1)) _exit(3);
    }
    _exit(0);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int worker_spawn(ug_sweep_engine *e, int i, char *err, size_t errlen)
{
    ug_sweep_worker *w = &e->w[i];
    int task[2], res[2];
    if (pipe(task)) goto fail;
    if (pipe(res)) {
        close(task[0]);
        close(task[1]);
        goto fail;
    }
    w->note[0] = 0; /* the last worker's note died with it */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(task[0]), close(task[1]), close(res[0]), close(res[1]);
        goto fail;
    }
    if (pid == 0) {
        for (int j = 0; j < e->nw; j++) { /* other workers' pipes: keep their EOFs working */
            if (e->w[j].task_fd >= 0) close(e->w[j].task_fd);
            if (e->w[j].res_fd >= 0) close(e->w[j].res_fd);
        }
        close(task[1]);
        close(res[0]);
        fcntl(task[0], F_SETFD, FD_CLOEXEC); /* a kernel that forks and execs does not inherit them */
        fcntl(res[1], F_SETFD, FD_CLOEXEC);
        worker_main(e, task[0], res[1], w->note, w->oom);
    }
    ug_contain_adopt(pid);
    close(task[0]);
    close(res[1]);
    fcntl(res[0], F_SETFL, fcntl(res[0], F_GETFL) | O_NONBLOCK);
    fcntl(res[0], F_SETFD, FD_CLOEXEC); /* the next worker's kernel must not hold these */
    fcntl(task[1], F_SETFD, FD_CLOEXEC);
    w->pid = pid;
    w->task_fd = task[1];
    w->res_fd = res[0];
    w->busy = -1;
    w->got = 0;
    w->reaped = 0;
    return 0;
fail:
    snprintf(err, errlen, "cannot start a worker process: %s", strerror(errno));
    return -1;
}

/* Kills (if asked) and reaps worker i (unless the parent already did), then kills what
 * is left of its process group; returns its wait status. */
static int worker_reap(ug_sweep_engine *e, int i, int kill_it)
{
    ug_sweep_worker *w = &e->w[i];
    int status = w->status;
    close_fd(&w->task_fd);
    close_fd(&w->res_fd);
    if (w->pid > 0) {
        if (kill_it) ug_contain_kill_group(w->pid);
        while (!w->reaped && waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {}
        ug_contain_kill_group(w->pid); /* a kernel's leftover children never outlive their worker */
    }
    w->pid = 0;
    w->busy = -1;
    w->reaped = 0;
    return status;
}

static double case_timeout(const ug_sweep_engine *e, int op)
{
    double t = op >= 0 && op < UG_OP_COUNT ? e->o->op_timeout[op] : 0;
    if (t <= 0) t = e->o->case_timeout;
    return t > 0 ? t : UG_SWEEP_TIMEOUT_DEFAULT;
}

/* A result the parent writes itself for a case whose worker died or ran out of time. */
static void result_synth(const ug_sweep_engine *e, const ug_plan_case *pc, ug_outcome out, double ms, const char *msg,
                         ug_result *r)
{
    memset(r, 0, offsetof(ug_result, out));
    snprintf(r->case_id, sizeof r->case_id, "%s", pc->id);
    r->op = pc->op;
    r->outcome = out;
    const ug_op_def *d = ug_op_def_get(pc->op);
    r->primary = e->eo.primary_set ? e->eo.primary : d ? d->primary : 0; /* as the worker would have decided */
    r->kernel_ms = ms;
    snprintf(r->message, sizeof r->message, "%s", msg);
}

/* Worker i stopped answering (EOF or a garbled message): record CRASH for its case, if
 * it held one, and start a replacement. */
static int worker_died(ug_sweep_engine *e, int i, const char *why)
{
    ug_sweep_worker *w = &e->w[i];
    long idx = w->busy;
    double ms = (ug_sweep_now_s() - w->started) * 1e3;
    int st = worker_reap(e, i, 1);
    int rc = 0;
    if (idx >= 0) {
        char msg[256];
        if (why)
            snprintf(msg, sizeof msg, "worker %s after %.0f ms", why, ms);
        else
            ug_contain_crash_message(st, ms, w->note, *w->oom, msg, sizeof msg);
        static ug_result r;
        result_synth(e, &e->plan->cases[idx], UG_OUT_CRASH, ms, msg, &r);
        rc = ug_sweep_record_result(e, (size_t)idx, &r);
    }
    return rc ? rc : worker_spawn(e, i, e->err, e->errlen);
}

static int worker_timed_out(ug_sweep_engine *e, int i, double limit)
{
    ug_sweep_worker *w = &e->w[i];
    long idx = w->busy;
    double ms = (ug_sweep_now_s() - w->started) * 1e3;
    worker_reap(e, i, 1);
    char msg[256];
    ug_contain_timeout_message(ms, limit, msg, sizeof msg);
    static ug_result r;
    result_synth(e, &e->plan->cases[idx], UG_OUT_TIMEOUT, ms, msg, &r);
    return ug_sweep_record_result(e, (size_t)idx, &r) ? -1 : worker_spawn(e, i, e->err, e->errlen);
}

/* Reads what worker i has written; records a complete result. */
static int worker_read(ug_sweep_engine *e, int i)
{
    ug_sweep_worker *w = &e->w[i];
    for (;;) {
        size_t want = w->got < 4 ? 4 - w->got : 0;
        if (!want) {
            uint32_t len;
            memcpy(&len, w->buf, 4);
            if (len < offsetof(ug_result, out) || len > sizeof(ug_result))
                return worker_died(e, i, "sent a garbled result");
            want = 4 + len - w->got;
        }
        if (!want) break;
        ssize_t k = read(w->res_fd, w->buf + w->got, want);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno == EAGAIN) return 0;
        if (k <= 0) return worker_died(e, i, NULL);
        w->got += (size_t)k;
    }
    static ug_result r;
    memset(&r, 0, sizeof r);
    memcpy(&r, w->buf + 4, w->got - 4);
    long idx = w->busy;
    w->busy = -1;
    w->got = 0;
    if (idx < 0) return worker_died(e, i, "answered without a case");
    return ug_sweep_record_result(e, (size_t)idx, &r);
}

/* Worker i may have died while a child it forked holds its result pipe open, so no EOF
 * comes: waitpid tells. A result it wrote before dying is still read; a busy worker's
 * case is then CRASH, an idle one is replaced. */
static int worker_check_alive(ug_sweep_engine *e, int i)
{
    ug_sweep_worker *w = &e->w[i];
    if (w->pid <= 0 || w->reaped || waitpid(w->pid, &w->status, WNOHANG) != w->pid) return 0;
    w->reaped = 1;
    if (w->busy >= 0 && worker_read(e, i)) return -1;
    if (!w->reaped) return 0; /* worker_read met the EOF and replaced it */
    if (w->busy >= 0) return worker_died(e, i, NULL);
    worker_reap(e, i, 1);
    return worker_spawn(e, i, e->err, e->errlen);
}

static int dispatch(ug_sweep_engine *e, int i)
{
    ug_sweep_worker *w = &e->w[i];
    if (w->busy < 0 && worker_check_alive(e, i)) return -1;
    while (w->busy < 0 && e->next < e->n_todo) {
        uint32_t idx = (uint32_t)e->todo[e->next];
        if (ug_io_full(w->task_fd, &idx, sizeof idx, 1) == 0) {
            e->next++;
            *w->oom = 0;
            w->busy = (long)idx;
            w->started = ug_sweep_now_s();
            w->got = 0;
            return 0;
        }
        /* died while idle (EPIPE): not the case's fault; replace it and try again */
        worker_reap(e, i, 1);
        if (worker_spawn(e, i, e->err, e->errlen)) return -1;
    }
    return 0;
}

/* One round: dispatch, wait for results or a deadline, enforce timeouts, commit. */
static int engine_step(ug_sweep_engine *e, struct pollfd *pfd)
{
    double now = ug_sweep_now_s(), wait = e->in_tx ? e->tx_started + UG_SWEEP_COMMIT_S - now : 0.25;
    for (int i = 0; i < e->nw; i++) {
        if (dispatch(e, i)) return -1;
        pfd[i].fd = e->w[i].res_fd;
        pfd[i].events = POLLIN;
        pfd[i].revents = 0;
        if (e->w[i].busy >= 0) {
            double left = e->w[i].started + case_timeout(e, e->plan->cases[e->w[i].busy].op) - now;
            if (left < wait) wait = left;
        }
    }
    if (wait > 0.25) wait = 0.25; /* progress ticks and stop requests */
    int n = poll(pfd, (nfds_t)e->nw, wait > 0 ? (int)(wait * 1e3) + 1 : 0);
    if (n < 0 && errno != EINTR) {
        snprintf(e->err, e->errlen, "poll: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; n > 0 && i < e->nw; i++)
        if (pfd[i].revents && worker_read(e, i)) return -1;
    for (int i = 0; i < e->nw; i++)
        if (worker_check_alive(e, i)) return -1;
    now = ug_sweep_now_s();
    for (int i = 0; i < e->nw; i++) {
        ug_sweep_worker *w = &e->w[i];
        if (w->busy < 0) continue;
        double limit = case_timeout(e, e->plan->cases[w->busy].op);
        if (now - w->started > limit && worker_timed_out(e, i, limit)) return -1;
    }
    if (e->in_tx && now - e->tx_started >= UG_SWEEP_COMMIT_S && ug_sweep_commit(e)) return -1;
    ug_sweep_progress(e, 0);
    return 0;
}

static int busy_count(const ug_sweep_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->nw; i++) n += e->w[i].busy >= 0;
    return n;
}

int ug_sweep_workers_run(ug_sweep_engine *e)
{
    int rc = 0;
    struct pollfd *pfd = calloc((size_t)e->nw, sizeof *pfd);
    e->w = calloc((size_t)e->nw, sizeof *e->w);
    size_t notes_size = (size_t)e->nw * sizeof(int); /* each worker's out-of-memory flag, shared with it */
    int *notes = mmap(NULL, notes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!pfd || !e->w || notes == MAP_FAILED) rc = -1;
    for (int i = 0; !rc && i < e->nw; i++) {
        e->w[i].task_fd = e->w[i].res_fd = -1;
        e->w[i].busy = -1;
        e->w[i].oom = &notes[i];
        if (!(e->w[i].buf = malloc(MSG_MAX))) rc = -1;
        e->w[i].note = mmap(NULL, NOTE_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (e->w[i].note == MAP_FAILED) e->w[i].note = NULL, rc = -1;
    }
    if (rc) snprintf(e->err, e->errlen, "out of memory starting %d workers", e->nw);
    for (int i = 0; !rc && i < e->nw; i++) rc = worker_spawn(e, i, e->err, e->errlen);
    while (!rc && !ug_sweep_stop_requested && (e->next < e->n_todo || busy_count(e))) rc = engine_step(e, pfd);
    for (int i = 0; e->w && i < e->nw; i++) { /* idle workers leave on EOF; busy ones are killed */
        close_fd(&e->w[i].task_fd);
        worker_reap(e, i, e->w[i].busy >= 0 || rc || ug_sweep_stop_requested);
        free(e->w[i].buf);
        if (e->w[i].note) munmap(e->w[i].note, NOTE_MAX);
    }
    if (e->in_tx) {
        if (rc)
            ug_db_rollback(e->db);
        else
            rc = ug_sweep_commit(e);
    }
    free(e->w);
    e->w = NULL;
    free(pfd);
    if (notes != MAP_FAILED) munmap(notes, notes_size);
    return rc;
}
