/* exec.h — one case end to end: spec -> inputs -> kernel -> oracle -> metrics -> verdicts.
 *
 * This is the pure function the sweep, triage, check and the fuzzers all call; it never
 * touches the database. The result is a plain struct so the sweep engine can ship it
 * from a worker process to the writer. With keep set, the case, the oracle's values and
 * the kernel's values stay attached for triage to print. */
#ifndef UG_EXEC_H
#define UG_EXEC_H
#include <stddef.h>

#include "core/registry.h"
#include "kernels/backend.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

typedef struct {
    ug_oracle_opts oracle;
    const ug_selection *selection; /* NULL: the default sample */
    int keep;                      /* keep case and values for the caller (triage) */
    int primary_set;               /* primary decides every case (`sweep --primary`); 0: each op's own */
    int primary;                   /* ug_standard: a numeric one (ug_exec_parse_primary) */
    double contain_s;              /* > 0: the kernel runs in a contained child with this time limit, and a crash
                                      or hang is the case's CRASH / TIMEOUT (run/contain.h; triage, case); 0: in
                                      this process (a sweep worker is contained already) */
} ug_exec_opts;

/* The standard a --primary option names: 0 with *std set, or -2 with a message listing the numeric standards
 * for an unknown name or a discrete compare (exact, boundary_aware, topk_set: those judge discrete outputs
 * only, and every one of them already decides a case's outcome). */
int ug_exec_parse_primary(const char *name, int *std, char *err, size_t errlen);

/* What keep retains: free with ug_exec_detail_free(). */
typedef struct {
    ug_case c;
    ug_oracle_result oracle;
    double *a[UG_MAX_TENSORS]; /* kernel values at the selected elements */
    int have_case, have_oracle;
} ug_exec_detail;

void ug_exec_opts_default(ug_exec_opts *o);
/* Runs the case described by canonical spec text. Never fails for a kernel or input
 * problem: those become the result's outcome and message. Returns <0 only when the spec
 * itself is bad (message in r->message). */
int ug_exec_case(const char *spec_text, const ug_backend *b, const ug_exec_opts *o, ug_result *r,
                 ug_exec_detail *detail);
void ug_exec_detail_free(ug_exec_detail *d);
/* Judges kernel outputs already in c (filled by a kernel, a plugin or replayed files); sets
 * r->primary (o's --primary, else the op's) as ug_exec_case does. */
int ug_exec_judge(ug_case *c, const ug_exec_opts *o, ug_result *r, ug_exec_detail *detail);

/* For a process that runs case after case: freed memory up to 256 MiB a block stays in the
 * heap for the next case instead of going back to the kernel (a page fault per 4 KiB on its
 * next use). */
void ug_exec_keep_freed_memory(void);

#endif
