/* tightness.h — how tight an op's verdicts are: over the op's plan cases and its legal
 * kernels (the correct sim kernel and every legal_* variant: the contract computed in other
 * legal ways), the worst share of what a standard allows that a legal kernel used, per
 * output. 1.0 means a legal kernel sits at the limit; 0.01 means a bug 100 times larger
 * than any legal kernel's error can still pass. Read off each standard's "used" figure
 * (docs/STANDARDS.md "Headroom used"), under the op's primary standard and under certified.
 *
 * One implementation for `ulpgym ops show OP --tightness` and its JSON; it runs the
 * cases through run/mutant_scan.c (legal variants only), so "legal" means what the mutant
 * scan means by it. */
#ifndef UG_TIGHTNESS_H
#define UG_TIGHTNESS_H
#include <stddef.h>

#include "gen/plan.h"
#include "run/exec.h"

/* The tightness of one output under one standard: the worst used figure and where. */
typedef struct {
    double worst;                /* largest "used" over legal kernels and cases; NaN: never judged */
    char case_id[UG_ID_LEN + 1]; /* the case that reached it */
    const char *variant;         /* the legal kernel that reached it (static name) */
    size_t n_judged;             /* case x kernel pairs whose figure was read */
} ug_tight_cell;

typedef struct {
    char name[32];
    int numeric;             /* 0: a discrete compare (exact, boundary_aware, topk_set) */
    ug_tight_cell primary;   /* under the op's primary standard */
    ug_tight_cell certified; /* under certified */
} ug_tight_output;

typedef struct {
    int op;
    int primary;         /* ug_standard */
    size_t n_cases;      /* plan cases */
    int n_kernels;       /* the correct kernel + legal variants run */
    size_t false_alarms; /* case x kernel pairs that FAIL/NONFINITE: must be 0 */
    size_t not_judged;   /* ERROR / SKIP / other outcomes */
    int n_out;
    ug_tight_output out[UG_MAX_TENSORS];
} ug_tightness;

/* Runs op's cases of the default plan at plan seed seed (-1: the plan's own) with the
 * correct kernel and every legal variant, filling *t. 0, or -2 with a message. */
int ug_tightness_scan(int op, long long seed, ug_tightness *t, char *err, size_t errlen);

#endif
