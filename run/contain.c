/* contain.c — the containment rules of every process that runs a kernel under test (see
 * contain.h): process group, subreaper, messages, and the single-case contained kernel. */
#include "run/contain.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int ug_contain_enter(pid_t parent)
{
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphaned process spinning in a hung kernel */
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* a kernel's grandchildren stay ours to kill */
#endif
    struct rlimit no_core = {0, 0}; /* a nightly of crashing kernels must not fill the disk with cores */
    setrlimit(RLIMIT_CORE, &no_core);
    return getppid() == parent ? 0 : -1;
}

void ug_contain_adopt(pid_t pid) { setpgid(pid, pid); }

void ug_contain_kill_group(pid_t pid)
{
    if (pid > 0) kill(-pid, SIGKILL);
}

/* Kills and reaps every child listed in /proc/self/task/TID/children; how many it named. */
static int kill_children(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = e->d_name[0] == '.' ? NULL : fopen(path, "r");
        long pid;
        while (f && fscanf(f, "%ld", &pid) == 1) {
            kill((pid_t)pid, SIGKILL);
            while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR) {}
            n++;
        }
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return n;
}

void ug_contain_kill_descendants(void)
{
    /* grandchildren are handed to us (subreaper) when their parent dies: repeat until none */
    for (int round = 0; round < 64 && kill_children(); round++) {}
}

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
                 {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"},
                 {SIGXFSZ, "SIGXFSZ"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig) return names[i].name;
    return "a signal";
}

void ug_contain_crash_message(int status, double ms, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "worker killed by signal %d (%s) after %.0f ms", WTERMSIG(status),
                 signal_name(WTERMSIG(status)), ms);
    else snprintf(buf, len, "worker exited with status %d after %.0f ms", WEXITSTATUS(status), ms);
}

void ug_contain_timeout_message(double ms, double limit_s, char *buf, size_t len)
{
    snprintf(buf, len, "no result after %.1f s (limit %g s): worker killed", ms / 1e3, limit_s);
}

/* The shared page the kernel's child answers in: status, message, then each output's
 * bytes and guard region, in order. */
typedef struct {
    int rc, done;
    char err[512];
} kernel_reply;

static size_t output_bytes(const ug_tensor *t) { return t->numel * ug_dtype_size(t->dtype) + UG_GUARD_BYTES; }

static size_t reply_size(const ug_case *c)
{
    size_t n = sizeof(kernel_reply);
    for (int k = 0; k < c->n_out; k++) n += output_bytes(&c->out[k]);
    return n;
}

/* Copies the outputs into (to_reply) or out of the reply's area. */
static void copy_outputs(ug_case *c, kernel_reply *rep, int to_reply)
{
    unsigned char *p = (unsigned char *)(rep + 1);
    for (int k = 0; k < c->n_out; k++) {
        size_t n = output_bytes(&c->out[k]);
        if (to_reply) memcpy(p, c->out[k].data, n);
        else memcpy(c->out[k].data, p, n);
        p += n;
    }
}

static _Noreturn void kernel_child(ug_contain_run_fn run, const void *ctx, ug_case *c, kernel_reply *rep, pid_t parent)
{
    if (ug_contain_enter(parent)) _exit(0);
    rep->rc = run(ctx, c, rep->err, sizeof rep->err);
    copy_outputs(c, rep, 1);
    rep->done = 1;
    _exit(0);
}

/* Waits for pid until limit_s; 1 with *status when it ended, 0 at the limit. */
static int wait_limited(pid_t pid, double t0, double limit_s, int *status)
{
    for (double pause = 0.2;; pause = pause < 20 ? pause * 2 : 20) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) return 1;
        if (now_ms() - t0 > limit_s * 1e3) return 0;
        struct timespec ts = {0, (long)(pause * 1e6)};
        nanosleep(&ts, NULL);
    }
}

int ug_contain_kernel(ug_contain_run_fn run, const void *ctx, ug_case *c, double limit_s, char *err, size_t errlen)
{
    size_t size = reply_size(c);
    kernel_reply *rep = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rep == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %zu bytes for the kernel's outputs: %s", size, strerror(errno));
        return -1;
    }
    fflush(NULL);
    double t0 = now_ms();
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) kernel_child(run, ctx, c, rep, parent);
    int rc = -1, status = 0;
    if (pid < 0) snprintf(err, errlen, "cannot start the kernel's process: %s", strerror(errno));
    else {
        ug_contain_adopt(pid);
        int ended = wait_limited(pid, t0, limit_s, &status);
        ug_contain_kill_group(pid); /* whatever it forked goes with it */
        if (!ended) while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        double ms = now_ms() - t0;
        if (!ended) ug_contain_timeout_message(ms, limit_s, err, errlen), rc = UG_CONTAIN_TIMEOUT;
        else if (!rep->done) ug_contain_crash_message(status, ms, err, errlen), rc = UG_CONTAIN_CRASH;
        else {
            rc = rep->rc;
            snprintf(err, errlen, "%s", rep->err);
            copy_outputs(c, rep, 0);
        }
    }
    munmap(rep, size);
    return rc;
}
