/* sweep.c — the sweep engine: case selection, the parent/worker loop, batched writes.
 *
 * Why processes and not threads: a kernel under test may segfault, abort, hang or
 * scribble over memory; in a forked worker that costs one case, never the sweep. The
 * protocol is deliberately small: the parent writes a 4-byte case index to a worker's
 * task pipe (workers share the expanded plan by fork), the worker answers with a 4-byte
 * length and the used prefix of its ug_result (a plain struct, no pointers). One case is
 * outstanding per worker, so the parent always knows which case a dead or late worker
 * held. Only the parent touches SQLite; workers leave with _exit(). */
#include "run/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "db/store.h"
#include "run/found.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- case selection: shards ---- */

int ug_sweep_parse_shard(const char *text, int *k, int *n, char *err, size_t errlen)
{
    char *end;
    long a = strtol(text, &end, 10), b = 0;
    int ok = end != text && *end == '/';
    if (ok) {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        ok = end != q && *end == 0 && a >= 1 && b >= 1 && a <= b && b <= 1000000;
    }
    if (!ok) {
        snprintf(err, errlen, "--shard takes K/N with 1 <= K <= N (e.g. 2/8), not \"%s\"", text);
        return -2;
    }
    *k = (int)a;
    *n = (int)b;
    return 0;
}

double ug_sweep_case_cost(const char *spec_text)
{
    cJSON *j = cJSON_Parse(spec_text);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "params");
    double cost = 1;
    for (const cJSON *x = p ? p->child : NULL; x; x = x->next)
        if (cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble == (double)(long long)x->valuedouble)
            cost *= x->valuedouble; /* rows, cols, heads, ...: elements scale with their product */
    cJSON_Delete(j);
    return cost;
}

typedef struct {
    double cost;
    size_t idx;
    const char *id;
} costed;

static int cmp_costed(const void *a, const void *b)
{
    const costed *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

void ug_sweep_shard_select(ug_plan *plan, int k, int n)
{
    costed *c = malloc((plan->n ? plan->n : 1) * sizeof *c);
    double *load = calloc((size_t)n, sizeof *load);
    unsigned char *keep = calloc(plan->n ? plan->n : 1, 1);
    if (!c || !load || !keep) { /* out of memory: stop rather than run a wrong slice */
        fprintf(stderr, "ulpgym: out of memory selecting a shard\n");
        abort();
    }
    for (size_t i = 0; i < plan->n; i++) c[i] = (costed){ug_sweep_case_cost(plan->cases[i].spec), i, plan->cases[i].id};
    qsort(c, plan->n, sizeof *c, cmp_costed);
    for (size_t i = 0; i < plan->n; i++) {
        int best = 0;
        for (int s = 1; s < n; s++)
            if (load[s] < load[best]) best = s;
        load[best] += c[i].cost;
        keep[c[i].idx] = best == k - 1;
    }
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (keep[i]) plan->cases[w++] = plan->cases[i];
        else free(plan->cases[i].spec);
    }
    plan->n = w;
    free(c);
    free(load);
    free(keep);
}

/* ---- the selection a run is made of (from the options, or from a run's record) ---- */

typedef struct {
    char plan_path[1024], backend[600], shard[32];
    int seed_set;
    long long seed;
    unsigned char ops[UG_OP_COUNT];
    int any_op;
    unsigned groups;
    long limit, sample;
    int oracle_check, shard_k, shard_n;
    int no_regressions; /* leave out corpus/found/ (recorded, so a resume does the same) */
} selection;

static void selection_from_opts(const ug_sweep_opts *o, selection *x)
{
    memset(x, 0, sizeof *x);
    snprintf(x->plan_path, sizeof x->plan_path, "%s", o->plan_path ? o->plan_path : ug_plan_default_path());
    snprintf(x->backend, sizeof x->backend, "%s", o->backend ? o->backend : "sim");
    x->seed_set = o->seed >= 0;
    x->seed = o->seed;
    if (o->ops) {
        memcpy(x->ops, o->ops, sizeof x->ops);
        x->any_op = 1;
    }
    x->groups = o->groups;
    x->limit = o->limit;
    x->sample = o->sample;
    x->oracle_check = o->oracle_check;
    x->no_regressions = o->no_regressions;
    x->shard_k = o->shard_k;
    x->shard_n = o->shard_n;
    if (o->shard_n) snprintf(x->shard, sizeof x->shard, "%d/%d", o->shard_k, o->shard_n);
}

/* Comma list of names: ops or groups. */
static void names_of(const selection *x, int groups, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    int count = groups ? UG_GROUP_COUNT : UG_OP_COUNT;
    for (int i = 0; i < count && n < len; i++) {
        int on = groups ? (int)(x->groups >> i & 1u) : x->any_op && x->ops[i];
        if (on) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", groups ? ug_group_name((ug_group)i) : ug_op_name(i));
    }
}

static int selection_from_record(const ug_run_record *r, selection *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    snprintf(x->plan_path, sizeof x->plan_path, "%s", r->plan_path);
    snprintf(x->backend, sizeof x->backend, "%s", r->backend);
    snprintf(x->shard, sizeof x->shard, "%s", r->shard);
    x->seed_set = r->seed_set;
    x->seed = r->seed_set ? r->seed : -1;
    x->limit = r->limit;
    x->sample = r->sample;
    x->oracle_check = r->oracle_check;
    x->no_regressions = r->no_regressions;
    if (r->shard[0] && ug_sweep_parse_shard(r->shard, &x->shard_k, &x->shard_n, err, errlen)) return -2;
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", r->op_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int op = ug_op_find(t);
        if (op < 0) {
            snprintf(err, errlen, "run %ld was filtered to op \"%s\", which this ulpgym does not know", r->run_id, t);
            return -2;
        }
        x->ops[op] = 1;
        x->any_op = 1;
    }
    snprintf(list, sizeof list, "%s", r->group_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int g = ug_group_find(t);
        if (g < 0) {
            snprintf(err, errlen, "run %ld was filtered to unknown group \"%s\"", r->run_id, t);
            return -2;
        }
        x->groups |= 1u << g;
    }
    return 0;
}

/* Expands the plan and applies filter, limit and shard, in that order. */
static int selection_expand(const selection *x, ug_plan *plan, char *err, size_t errlen)
{
    if (ug_plan_load(x->plan_path, x->seed_set ? x->seed : -1, plan, err, errlen)) return -2;
    ug_plan_filter(plan, x->any_op ? x->ops : NULL, x->groups);
    if (!x->no_regressions) ug_found_append(plan, x->any_op ? x->ops : NULL, x->groups);
    if (x->limit > 0 && plan->n > (size_t)x->limit) {
        for (size_t i = (size_t)x->limit; i < plan->n; i++) free(plan->cases[i].spec);
        plan->n = (size_t)x->limit;
    }
    if (x->shard_n) ug_sweep_shard_select(plan, x->shard_k, x->shard_n);
    return 0;
}

/* ---- the engine ---- */

typedef struct {
    pid_t pid;
    int task_fd, res_fd; /* parent ends: write case indices, read results */
    long busy;           /* plan index of the case it holds, -1 idle */
    double started;
    size_t got;          /* bytes of the current message read so far */
    unsigned char *buf;  /* 4-byte length + ug_result */
} worker;

typedef struct {
    const ug_sweep_opts *o;
    const ug_plan *plan;
    const ug_backend *b;
    ug_exec_opts eo;
    size_t *todo, n_todo, next; /* plan indices still to run, and the next to dispatch */
    worker *w;
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
} engine;

#define MSG_MAX (4 + sizeof(ug_result))

static size_t result_bytes(const ug_result *r)
{
    int n = r->n_out < 0 ? 0 : r->n_out > UG_MAX_TENSORS ? UG_MAX_TENSORS : r->n_out;
    return offsetof(ug_result, out) + (size_t)n * sizeof(ug_output_result);
}

static int io_full(int fd, void *p, size_t n, int writing)
{
    unsigned char *c = p;
    while (n) {
        ssize_t k = writing ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static _Noreturn void worker_main(const engine *e, int task_fd, int res_fd)
{
    signal(SIGINT, SIG_IGN); /* the parent decides when workers stop */
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_DFL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphaned worker spinning in a hung kernel */
#endif
    if (getppid() != e->parent) _exit(0);
    struct rlimit no_core = {0, 0}; /* a nightly of crashing kernels must not fill the disk with cores */
    setrlimit(RLIMIT_CORE, &no_core);
    static ug_result r;
    uint32_t idx;
    while (io_full(task_fd, &idx, sizeof idx, 0) == 0 && idx < e->plan->n) {
        ug_exec_case(e->plan->cases[idx].spec, e->b, &e->eo, &r, NULL);
        uint32_t len = (uint32_t)result_bytes(&r);
        if (io_full(res_fd, &len, sizeof len, 1) || io_full(res_fd, &r, len, 1)) _exit(3);
    }
    _exit(0);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int worker_spawn(engine *e, int i, char *err, size_t errlen)
{
    worker *w = &e->w[i];
    int task[2], res[2];
    if (pipe(task)) goto fail;
    if (pipe(res)) {
        close(task[0]);
        close(task[1]);
        goto fail;
    }
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
        worker_main(e, task[0], res[1]);
    }
    close(task[0]);
    close(res[1]);
    fcntl(res[0], F_SETFL, fcntl(res[0], F_GETFL) | O_NONBLOCK);
    w->pid = pid;
    w->task_fd = task[1];
    w->res_fd = res[0];
    w->busy = -1;
    w->got = 0;
    return 0;
fail:
    snprintf(err, errlen, "cannot start a worker process: %s", strerror(errno));
    return -1;
}

/* Kills (if asked) and reaps worker i; returns its wait status. */
static int worker_reap(engine *e, int i, int kill_it)
{
    worker *w = &e->w[i];
    int status = 0;
    close_fd(&w->task_fd);
    close_fd(&w->res_fd);
    if (w->pid > 0) {
        if (kill_it) kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {}
    }
    w->pid = 0;
    w->busy = -1;
    return status;
}

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
                 {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig) return names[i].name;
    return "a signal";
}

static double case_timeout(const engine *e, int op)
{
    double t = op >= 0 && op < UG_OP_COUNT ? e->o->op_timeout[op] : 0;
    if (t <= 0) t = e->o->case_timeout;
    return t > 0 ? t : UG_SWEEP_TIMEOUT_DEFAULT;
}

/* A result the parent writes itself for a case whose worker died or ran out of time. */
static void result_synth(const ug_plan_case *pc, ug_outcome out, double ms, const char *msg, ug_result *r)
{
    memset(r, 0, offsetof(ug_result, out));
    snprintf(r->case_id, sizeof r->case_id, "%s", pc->id);
    r->op = pc->op;
    r->outcome = out;
    const ug_op_def *d = ug_op_def_get(pc->op);
    r->primary = d ? d->primary : 0;
    r->kernel_ms = ms;
    snprintf(r->message, sizeof r->message, "%s", msg);
}

static void progress(engine *e, int final)
{
    const ug_sweep_summary *s = e->s;
    if (e->o->quiet) return;
    int tty = isatty(STDERR_FILENO);
    double t = now_s();
    if (!final && t - e->last_progress < (tty ? 0.2 : 5.0)) return;
    e->last_progress = t;
    double rate = (double)s->n_cases / (t - e->t0 > 1e-9 ? t - e->t0 : 1e-9);
    size_t done = s->n_before + s->n_cases;
    char eta[32] = "-";
    if (rate > 0) snprintf(eta, sizeof eta, "%.0fs", (double)(s->n_total - done) / rate);
    size_t other = s->n_cases - s->n_outcome[UG_OUT_PASS] - s->n_outcome[UG_OUT_FAIL];
    fprintf(stderr, "%s%zu/%zu  pass %zu  fail %zu  other %zu  %.1f cases/s  ETA %s%s", tty ? "\r" : "", done,
            s->n_total, s->n_outcome[UG_OUT_PASS], s->n_outcome[UG_OUT_FAIL], other, rate, eta,
            tty && !final ? "   " : "\n");
    fflush(stderr);
}

static int commit(engine *e)
{
    if (!e->in_tx) return 0;
    e->in_tx = 0;
    e->in_batch = 0;
    return ug_db_commit(e->db, e->err, e->errlen);
}

/* Stores one result of plan case idx (in the open batch) and counts it. */
static int record(engine *e, size_t idx, ug_result *r)
{
    const ug_plan_case *pc = &e->plan->cases[idx];
    snprintf(r->case_id, sizeof r->case_id, "%s", pc->id);
    if (!e->in_tx) {
        if (ug_db_begin(e->db, e->err, e->errlen)) return -1;
        e->in_tx = 1;
        e->tx_started = now_s();
    }
    if (ug_db_put_case(e->db, pc->id, pc->spec, pc->origin ? pc->origin : "plan", e->err, e->errlen) ||
        ug_db_put_result(e->db, e->run_id, r, e->err, e->errlen))
        return -1;
    ug_sweep_summary *s = e->s;
    s->n_cases++;
    s->n_outcome[r->outcome & 7]++;
    s->per_op_cases[pc->op]++;
    s->per_op_pass[pc->op] += r->outcome == UG_OUT_PASS;
    s->selfcheck_elems += r->n_selfcheck;
    s->selfcheck_mismatch += r->n_selfcheck_mismatch;
    if (++e->in_batch >= UG_SWEEP_BATCH && commit(e)) return -1;
    return 0;
}

/* Worker i stopped answering (EOF or a garbled message): record CRASH for its case, if
 * it held one, and start a replacement. */
static int worker_died(engine *e, int i, const char *why)
{
    worker *w = &e->w[i];
    long idx = w->busy;
    double ms = (now_s() - w->started) * 1e3;
    int st = worker_reap(e, i, 1);
    int rc = 0;
    if (idx >= 0) {
        char msg[256];
        if (why) snprintf(msg, sizeof msg, "worker %s after %.0f ms", why, ms);
        else if (WIFSIGNALED(st))
            snprintf(msg, sizeof msg, "worker killed by signal %d (%s) after %.0f ms", WTERMSIG(st),
                     signal_name(WTERMSIG(st)), ms);
        else snprintf(msg, sizeof msg, "worker exited with status %d after %.0f ms", WEXITSTATUS(st), ms);
        static ug_result r;
        result_synth(&e->plan->cases[idx], UG_OUT_CRASH, ms, msg, &r);
        rc = record(e, (size_t)idx, &r);
    }
    return rc ? rc : worker_spawn(e, i, e->err, e->errlen);
}

static int worker_timed_out(engine *e, int i, double limit)
{
    worker *w = &e->w[i];
    long idx = w->busy;
    double ms = (now_s() - w->started) * 1e3;
    worker_reap(e, i, 1);
    char msg[256];
    snprintf(msg, sizeof msg, "no result after %.1f s (limit %g s): worker killed", ms / 1e3, limit);
    static ug_result r;
    result_synth(&e->plan->cases[idx], UG_OUT_TIMEOUT, ms, msg, &r);
    return record(e, (size_t)idx, &r) ? -1 : worker_spawn(e, i, e->err, e->errlen);
}

/* Reads what worker i has written; records a complete result. */
static int worker_read(engine *e, int i)
{
    worker *w = &e->w[i];
    for (;;) {
        size_t want = w->got < 4 ? 4 - w->got : 0;
        if (!want) {
            uint32_t len;
            memcpy(&len, w->buf, 4);
            if (len < offsetof(ug_result, out) || len > sizeof(ug_result)) return worker_died(e, i, "sent a garbled result");
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
    return record(e, (size_t)idx, &r);
}

static int dispatch(engine *e, int i)
{
    worker *w = &e->w[i];
    while (w->busy < 0 && e->next < e->n_todo) {
        uint32_t idx = (uint32_t)e->todo[e->next];
        if (io_full(w->task_fd, &idx, sizeof idx, 1) == 0) {
            e->next++;
            w->busy = (long)idx;
            w->started = now_s();
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
static int engine_step(engine *e, struct pollfd *pfd)
{
    double now = now_s(), wait = e->in_tx ? e->tx_started + UG_SWEEP_COMMIT_S - now : 0.25;
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
    now = now_s();
    for (int i = 0; i < e->nw; i++) {
        worker *w = &e->w[i];
        if (w->busy < 0) continue;
        double limit = case_timeout(e, e->plan->cases[w->busy].op);
        if (now - w->started > limit && worker_timed_out(e, i, limit)) return -1;
    }
    if (e->in_tx && now - e->tx_started >= UG_SWEEP_COMMIT_S && commit(e)) return -1;
    progress(e, 0);
    return 0;
}

static int busy_count(const engine *e)
{
    int n = 0;
    for (int i = 0; i < e->nw; i++) n += e->w[i].busy >= 0;
    return n;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs e->todo through the workers. Returns 0, or -1 with e->err set. */
static int engine_run(engine *e)
{
    int rc = 0;
    struct pollfd *pfd = calloc((size_t)e->nw, sizeof *pfd);
    e->w = calloc((size_t)e->nw, sizeof *e->w);
    if (!pfd || !e->w) rc = -1;
    for (int i = 0; !rc && i < e->nw; i++) {
        e->w[i].task_fd = e->w[i].res_fd = -1;
        e->w[i].busy = -1;
        if (!(e->w[i].buf = malloc(MSG_MAX))) rc = -1;
    }
    if (rc) snprintf(e->err, e->errlen, "out of memory starting %d workers", e->nw);
    for (int i = 0; !rc && i < e->nw; i++) rc = worker_spawn(e, i, e->err, e->errlen);
    while (!rc && !stop_requested && (e->next < e->n_todo || busy_count(e))) rc = engine_step(e, pfd);
    for (int i = 0; e->w && i < e->nw; i++) { /* idle workers leave on EOF; busy ones are killed */
        close_fd(&e->w[i].task_fd);
        worker_reap(e, i, e->w[i].busy >= 0 || rc || stop_requested);
        free(e->w[i].buf);
    }
    if (e->in_tx) {
        if (rc) ug_db_rollback(e->db);
        else rc = commit(e);
    }
    free(e->w);
    e->w = NULL;
    free(pfd);
    return rc;
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

/* The plan indices still to run: all of them, or on resume those without a result. */
static int build_todo(engine *e, long resume_run)
{
    char(*done)[UG_ID_LEN + 1] = NULL;
    size_t n_done = 0;
    if (resume_run && ug_db_result_ids(e->db, resume_run, &done, &n_done, e->err, e->errlen)) return -1;
    e->todo = malloc((e->plan->n ? e->plan->n : 1) * sizeof *e->todo);
    if (!e->todo) {
        free(done);
        snprintf(e->err, e->errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < e->plan->n; i++)
        if (!n_done || !bsearch(e->plan->cases[i].id, done, n_done, sizeof *done, cmp_id)) e->todo[e->n_todo++] = i;
    e->s->n_before = e->plan->n - e->n_todo;
    e->s->n_total = e->plan->n;
    free(done);
    return 0;
}

/* Opens the run: a new one, or the resumed one after checking its plan is unchanged. */
static int open_run(engine *e, const selection *x, const ug_plan *plan, long resume_run, const char *plan_hash_then)
{
    const ug_sweep_opts *o = e->o;
    if (resume_run) {
        if (strcmp(plan_hash_then, plan->hash) != 0) {
            snprintf(e->err, e->errlen,
                     "run %ld: the plan %s changed since the run started (hash %s, now %s); start a new sweep instead",
                     resume_run, x->plan_path, plan_hash_then, plan->hash);
            return -2;
        }
        e->run_id = resume_run;
        return ug_db_run_reopen(e->db, resume_run, e->nw, e->err, e->errlen);
    }
    char backend_name[600], ops[1024], groups[128];
    ug_backend_describe(e->b, backend_name, sizeof backend_name);
    names_of(x, 0, ops, sizeof ops);
    names_of(x, 1, groups, sizeof groups);
    ug_run_info info = {plan->name, x->plan_path, plan->hash, backend_name, x->shard[0] ? x->shard : NULL,
                        o->command, UG_ORACLE_PREC, x->sample, x->seed_set, x->seed, ops[0] ? ops : NULL,
                        groups[0] ? groups : NULL, x->limit, x->oracle_check, e->nw, x->no_regressions};
    return ug_db_run_begin(e->db, &info, &e->run_id, e->err, e->errlen);
}

/* Resolves --resume: the run and the selection it was made with. */
static int resume_target(ug_db *db, const char *which, selection *x, long *run, char *hash, char *err, size_t errlen)
{
    ug_run_record rec;
    if (ug_db_resolve_run(db, which, run, err, errlen) || ug_db_run_get(db, *run, &rec, err, errlen)) return -2;
    if (rec.merged) {
        snprintf(err, errlen, "run %ld was merged from shard databases; resume the shards there and merge again", *run);
        return -2;
    }
    if (!rec.has_options) {
        snprintf(err, errlen, "run %ld was made by an older ulpgym that did not record its sweep options; it cannot be resumed",
                 *run);
        return -2;
    }
    snprintf(hash, UG_ID_LEN + 1, "%s", rec.plan_hash);
    return selection_from_record(&rec, x, err, errlen);
}

int ug_sweep_run(const ug_sweep_opts *o, ug_sweep_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    engine e = {0};
    e.o = o;
    e.s = s;
    e.err = err;
    e.errlen = errlen;
    e.parent = getpid();
    selection x;
    ug_plan plan = {0};
    ug_backend b = {0};
    long resume_run = 0;
    char hash_then[UG_ID_LEN + 1] = "";
    int rc = 0, have_backend = 0;
    /* Everything a user can get wrong is checked before the database is touched (a new
     * run) or before the run is reopened (resume). */
    if (o->resume) {
        if (ug_db_open(ug_db_default_path(o->db_path), 0, &e.db, err, errlen)) return -2;
        rc = resume_target(e.db, o->resume, &x, &resume_run, hash_then, err, errlen);
    } else {
        selection_from_opts(o, &x);
    }
    if (!rc) rc = selection_expand(&x, &plan, err, errlen);
    if (!rc) rc = ug_backend_open(&b, x.backend, err, errlen);
    have_backend = !rc;
    for (size_t i = 0; !rc && i < plan.n; i++) rc = ug_backend_check_op(&b, plan.cases[i].op, err, errlen);
    if (!rc && !e.db) rc = ug_db_open(ug_db_default_path(o->db_path), 1, &e.db, err, errlen);
    if (rc) goto done;
    e.plan = &plan;
    e.b = &b;
    ug_exec_opts_default(&e.eo);
    e.eo.oracle.sample = (size_t)x.sample;
    e.eo.oracle.self_check = x.oracle_check;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    e.nw = o->jobs > 0 ? o->jobs : cores > 0 ? (int)cores : 1;
    s->jobs = e.nw;
    if ((rc = build_todo(&e, resume_run))) goto done;
    if ((size_t)e.nw > e.n_todo) e.nw = e.n_todo ? (int)e.n_todo : 1;
    if ((rc = open_run(&e, &x, &plan, resume_run, hash_then))) goto done;
    s->run_id = e.run_id;
    stop_requested = 0;
    struct sigaction sa, old_int, old_term, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN; /* a dead worker's pipe is an EPIPE, not the parent's death */
    sigaction(SIGPIPE, &sa, &old_pipe);
    double cpu0 = cpu_s();
    e.t0 = now_s();
    e.last_progress = 0;
    if (e.n_todo) rc = engine_run(&e);
    s->interrupted = stop_requested != 0;
    s->seconds = now_s() - e.t0;
    s->parent_cpu_s = cpu_s() - cpu0;
    progress(&e, 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    char ferr[256];
    ug_db_run_finish(e.db, s->run_id, rc ? "failed" : s->interrupted ? "interrupted" : "done", ferr, sizeof ferr);
done:
    {
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

void ug_sweep_print_summary(const ug_sweep_summary *s, FILE *f)
{
    fprintf(f, "run %ld: %zu cases in %.1f s with %d workers%s\n", s->run_id, s->n_cases, s->seconds, s->jobs,
            s->interrupted ? " (interrupted: `ulpgym sweep --resume latest` runs the rest)" : "");
    if (s->n_before)
        fprintf(f, "  resumed: %zu of the run's %zu cases were stored before, %zu now\n", s->n_before, s->n_total,
                s->n_before + s->n_cases);
    for (int k = 0; k < 8; k++)
        if (s->n_outcome[k]) fprintf(f, "  %-9s %zu\n", ug_outcome_name((ug_outcome)k), s->n_outcome[k]);
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (s->per_op_cases[op])
            fprintf(f, "  %-38s %5zu/%-5zu pass (%.1f%%)\n", ug_op_name(op), s->per_op_pass[op], s->per_op_cases[op],
                    100.0 * (double)s->per_op_pass[op] / (double)s->per_op_cases[op]);
    if (s->selfcheck_elems)
        fprintf(f, "  oracle self-check: %lu elements re-evaluated at twice the precision, %lu differ\n",
                s->selfcheck_elems, s->selfcheck_mismatch);
}
