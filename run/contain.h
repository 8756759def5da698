/* contain.h — how a process that runs a kernel under test is kept from harming ulpgym:
 * the sweep's workers (run/workers.c) and the single-case commands' kernel process
 * (triage, case: ug_exec_opts.contain_s) share these rules and messages.
 *
 * A kernel may segfault, hang, or fork children that keep running and keep the
 * descriptors they inherited. So the process that runs it leads its own process group
 * (its children are in that group unless they leave it with setsid), writes no core
 * files, dies with its parent, and adopts orphaned descendants (a subreaper), and the
 * group is killed when the case ends. Its death is seen through waitpid, never through
 * a pipe's EOF, which a leftover child would hold off. docs/SWEEP.md, "What a plugin can
 * and cannot do to a sweep". */
#ifndef UG_CONTAIN_H
#define UG_CONTAIN_H
#include <stddef.h>
#include <sys/types.h>

#include "core/registry.h"

/* ug_contain_kernel's results beside the backend's own (0 ok, 1 unsupported, <0 error). */
#define UG_CONTAIN_CRASH (-1000)
#define UG_CONTAIN_TIMEOUT (-1001)

/* In the forked child, first thing: its own process group, no core files, SIGKILL when the
 * parent dies, subreaper of its descendants, stdout sent to stderr (a noisy kernel cannot
 * corrupt a command's output, e.g. `case --json`), and its address space capped
 * (RLIMIT_AS) at its size now plus the case memory budget and a quarter more for the
 * estimate's margin (gen/case_memory.h), so a kernel that allocates without bound fails
 * its own allocation instead of pushing the machine into the OOM killer. oom_note, a
 * flag in memory the parent shares (or NULL), is set when the process then dies of
 * SIGSEGV, SIGBUS or SIGABRT while errno says an allocation failed (ENOMEM): the crash
 * message says "out of memory". Returns -1 when the parent is already gone. */
int ug_contain_enter(pid_t parent, volatile int *oom_note);
/* In the parent right after fork: the same process group (closes the race with the child). */
void ug_contain_adopt(pid_t pid);
/* SIGKILL to pid's process group: the kernel's process and everything it forked. */
void ug_contain_kill_group(pid_t pid);
/* In a contained process between cases: kills and reaps every descendant it has. */
void ug_contain_kill_descendants(void);
/* In a process that runs kernels (a sweep worker, the single-case kernel process): a
 * SIGSEGV in a guard page of a case's buffer (core/guard.h) first writes what the kernel
 * did ("wrote past the end of output y") into note, memory the parent reads (a shared
 * mapping); then the process dies of the signal as it would have. */
void ug_contain_watch_faults(char *note, size_t len);
/* The CRASH message for a wait status: "worker killed by signal 11 (SIGSEGV) after 3 ms",
 * "worker exited with status N after 3 ms", led by the watched fault's note when there
 * is one ("wrote past the end of output y: worker killed by signal 11 (SIGSEGV) ..."); oom
 * (its oom flag was set) adds "out of memory: an allocation failed under the case memory
 * limit". */
void ug_contain_crash_message(int status, double ms, const char *note, int oom, char *buf, size_t len);
/* The TIMEOUT message: "no result after 2.0 s (limit 2 s): worker killed". */
void ug_contain_timeout_message(double ms, double limit_s, char *buf, size_t len);

/* Runs run(ctx, c, err, errlen) — a kernel filling c's outputs, and checking its guards —
 * in a contained child with a time limit, and copies the outputs' data back. Returns
 * run's status, or UG_CONTAIN_CRASH / UG_CONTAIN_TIMEOUT with the message in err, or -1
 * when no child could be started (err says why). */
typedef int (*ug_contain_run_fn)(const void *ctx, ug_case *c, char *err, size_t errlen);
int ug_contain_kernel(ug_contain_run_fn run, const void *ctx, ug_case *c, double limit_s, char *err, size_t errlen);

#endif
