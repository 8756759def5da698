/* mutant_scan.h — the mutant scan: an op's plan cases run with each of its kernel
 * variants, counting per variant the cases that catch it.
 *
 * One implementation for `ulpgym ops show OP --mutants` and tests/test_plan_ops.c, so
 * the CLI and the test agree on what "caught" means: a case catches a variant when its
 * outcome says the numbers are wrong (FAIL, or NONFINITE: a NaN/Inf mismatch). ERROR
 * (kernel, input or oracle failure) and SKIP (the kernel declined) say nothing about
 * precision, so they are counted apart and never as catches: a correct kernel must
 * show 0 caught AND 0 errors/skips, and a mutant "caught" only through errors is not
 * caught. It lives in run/ (the layer that may call ug_exec_case) so tests can link it. */
#ifndef UG_MUTANT_SCAN_H
#define UG_MUTANT_SCAN_H
#include <stddef.h>

#include "gen/plan.h"
#include "run/exec.h"

#define UG_SCAN_FIRST 3 /* catching case IDs kept per variant */

/* One variant's scan. */
typedef struct {
    const char *variant;         /* the variant's name (points into the op's static table) */
    int beyond_plan;             /* the variant's beyond_plan mark (registry.h) */
    int legal;                   /* a legal variant (ug_variant_legal): every catch is a false alarm */
    int unavailable;             /* the sim backend would not open it; message says why, counts are 0 */
    size_t n_cases;              /* cases run */
    size_t caught;               /* outcome FAIL or NONFINITE */
    size_t caught_certified;     /* the same outcome decided with `certified` as the primary standard */
    size_t changed;              /* cases whose outputs differ in some bit from the correct kernel's (variant 0: 0) */
    size_t caught_changed;       /* of those, caught: "fails in most of the cases where it changes the output" */
    size_t errors;               /* outcome ERROR: not a catch */
    size_t skips;                /* outcome SKIP: not a catch */
    size_t other;                /* any other outcome (SHAPE; CRASH and TIMEOUT only arise in the
                            sweep's worker processes, never in-process): not a catch */
    size_t selfcheck_mismatches; /* cases whose oracle self check saw a rounding change */
    size_t n_first;
    char first[UG_SCAN_FIRST][UG_ID_LEN + 1]; /* the first catching case IDs, plan order */
    char message[640];                        /* unavailable: why; else the first ERROR/SKIP/other case and message */
} ug_variant_scan;

/* Called with every case result of every variant (v indexes the op's variants). */
typedef void (*ug_scan_case_fn)(void *ctx, int v, const ug_plan_case *pc, const ug_result *r);

typedef struct {
    int self_check_correct;  /* run variant 0 (the correct kernel) with the oracle self check */
    int legal_only;          /* run only the correct kernel and the legal variants (the others: unavailable) */
    ug_scan_case_fn on_case; /* optional */
    void *ctx;
} ug_scan_opts;

/* Loads the default plan (gen/plan.h) and keeps only op's cases. -2 with a message when
 * the op is not implemented in this build or the plan does not load. */
int ug_mutant_scan_plan(int op, ug_plan *p, char *err, size_t errlen);
/* Runs every case of p with every kernel variant of op (o may be NULL: defaults).
 * Returns a malloc'ed array, one entry per variant in the op's order (variant 0 is the
 * correct kernel), with its length in *n; NULL (and *n = 0) if op is not implemented or
 * memory runs out. The caller frees it. */
ug_variant_scan *ug_mutant_scan(int op, const ug_plan *p, const ug_scan_opts *o, int *n);

#endif
