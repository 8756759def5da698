/* contain.c — the containment rules of every process that runs a kernel under test (see
 * contain.h): process group, subreaper, messages, and the single-case contained kernel. */
#include "run/contain.h"
#include "core/guard.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "gen/case_memory.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile int *oom_note; /* the parent's flag: this process died of a failed allocation */
static char *fault_note;       /* shared with the parent: what a guard page fault says */
static size_t fault_note_len;

/* Whether the fault was a write, where the machine says so (x86-64: bit 1 of the page
 * fault's error code); elsewhere "accessed". */
static const char *fault_access(const void *context)
{
#if defined(__x86_64__) && defined(REG_ERR)
    return ((const ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2 ? "wrote" : "read";
#else
    (void)context;
    return "accessed";
#endif
}

/* SIGSEGV, SIGBUS, SIGABRT in a process that runs kernels: notes an out-of-memory death
 * (errno is the interrupted code's: ENOMEM right after a malloc that returned NULL, or the
 * one a bad_alloc came from) and, for a machine fault in a guard page of a case's buffer
 * (core/guard.h), what the kernel did; then lets the signal take its default course. */
static void on_fatal_signal(int sig, siginfo_t *si, void *context)
{
    if (errno == ENOMEM && oom_note) *oom_note = 1;
    if (sig == SIGSEGV && si && si->si_code > 0 && fault_note) /* raised by the machine, not sent */
        ug_guard_describe_fault(si->si_addr, fault_access(context), fault_note, fault_note_len);
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns; a fault would also recur */
}

static void install_fatal_handler(void)
{
    static char alt_stack[1 << 16]; /* a handler that runs after a stack overflow too */
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) sigaction(fatal[i], &sa, NULL);
}

/* Bytes of this process's address space now (Linux /proc/self/statm); 0 when unknown. */
static uint64_t address_space_bytes(void)
{
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%llu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void limit_memory(volatile int *note)
{
    uint64_t budget = ug_case_memory_budget(), now = address_space_bytes();
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && now && budget < ((uint64_t)1 << 60)) {
        rlim_t cap = (rlim_t)(now + budget + budget / 4);
        if (as.rlim_max == RLIM_INFINITY || cap < as.rlim_max) as.rlim_cur = cap; /* never above a hard limit */
        setrlimit(RLIMIT_AS, &as);
    }
    oom_note = note;
    install_fatal_handler();
}

int ug_contain_enter(pid_t parent, volatile int *note)
{
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphaned process spinning in a hung kernel */
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* a kernel's grandchildren stay ours to kill */
#endif
    struct rlimit no_core = {0, 0}; /* a nightly of crashing kernels must not fill the disk with cores */
    setrlimit(RLIMIT_CORE, &no_core);
    fflush(stdout);
    dup2(STDERR_FILENO, STDOUT_FILENO); /* what a kernel prints is not the command's output */
    limit_memory(note);
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
                 {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig) return names[i].name;
    return "a signal";
}

void ug_contain_watch_faults(char *note, size_t len)
{
    fault_note = note;
    fault_note_len = len;
    install_fatal_handler();
}

void ug_contain_crash_message(int status, double ms, const char *note, int oom, char *buf, size_t len)
{
    char cause[300] = "";
    if (note && note[0]) snprintf(cause, sizeof cause, "%.256s: ", note);
    int n;
    if (WIFSIGNALED(status))
        n = snprintf(buf, len, "%sworker killed by signal %d (%s) after %.0f ms", cause, WTERMSIG(status),
                     signal_name(WTERMSIG(status)), ms);
    else
        n = snprintf(buf, len, "%sworker exited with status %d after %.0f ms", cause, WEXITSTATUS(status), ms);
    if (oom && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 ": out of memory (an allocation failed under the address space cap: the "
                 "process's own size + 1.25 x the case memory budget of %.0f MiB; --case-memory raises it)",
                 (double)ug_case_memory_budget() / 1048576.0);
}

void ug_contain_timeout_message(double ms, double limit_s, char *buf, size_t len)
{
    snprintf(buf, len, "no result after %.1f s (limit %g s): worker killed", ms / 1e3, limit_s);
}

/* The shared page the kernel's child answers in: status, message, the note of a guard
 * page fault (ug_contain_watch_faults), then each output's data, in order. */
typedef struct {
    int rc, done;
    volatile int oom; /* the child died of a failed allocation (ug_contain_enter) */
    char err[512];
    char note[256];
} kernel_reply;

static size_t output_bytes(const ug_tensor *t) { return t->numel * ug_dtype_size(t->dtype); }

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
        if (to_reply)
            memcpy(p, c->out[k].data, n);
        else
            memcpy(c->out[k].data, p, n);
        p += n;
    }
}

static _Noreturn void kernel_child(ug_contain_run_fn run, const void *ctx, ug_case *c, kernel_reply *rep, pid_t parent)
{
    if (ug_contain_enter(parent, &rep->oom)) _exit(0);
    ug_contain_watch_faults(rep->note, sizeof rep->note);
    errno = 0; /* an ENOMEM from here on is the kernel's */
    rep->rc = run(ctx, c, rep->err, sizeof rep->err);
    copy_outputs(c, rep, 1);
    rep->done = 1;
    fflush(NULL); /* what the kernel printed, to stderr */
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
    if (pid < 0)
        snprintf(err, errlen, "cannot start the kernel's process: %s", strerror(errno));
    else {
        ug_contain_adopt(pid);
        int ended = wait_limited(pid, t0, limit_s, &status);
        ug_contain_kill_group(pid); /* whatever it forked goes with it */
        if (!ended)
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        double ms = now_ms() - t0;
        if (!ended)
            ug_contain_timeout_message(ms, limit_s, err, errlen), rc = UG_CONTAIN_TIMEOUT;
        else if (!rep->done)
            ug_contain_crash_message(status, ms, rep->note, rep->oom, err, errlen), rc = UG_CONTAIN_CRASH;
        else {
            rc = rep->rc;
            snprintf(err, errlen, "%s", rep->err);
            copy_outputs(c, rep, 0);
        }
    }
    munmap(rep, size);
    return rc;
}
