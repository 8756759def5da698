/* plan_coverage.h — structural coverage of a plan: how many of an op's plan cases hold
 * each structural axis its space declares (gen/ops/<op>.json "coverage": [{"axis": what it
 * is, "when": a formula over the case's params and derived sizes (core/opdecl.h: names,
 * + - * /, min, max, cdiv, fdiv, len, sum, maxof, minof, sumcdiv, is(P, choice), comparisons; a
 * product of comparisons is an "and"), "dist": optional name of one of the space's
 * distribution sets}]). The rule (docs/SWEEP.md "Structural coverage"): every axis holds
 * at least UG_COVERAGE_MIN cases or UG_COVERAGE_SHARE of the op's plan cases, whichever is
 * larger, so a bug that only shows on one structure (a wrong kv-head map, a running max
 * started at 0) fails on many cases, not one. `ulpgym plan --coverage` prints it. */
#ifndef UG_PLAN_COVERAGE_H
#define UG_PLAN_COVERAGE_H
#include <stddef.h>

#include "gen/plan.h"

#define UG_COVERAGE_MIN 20
#define UG_COVERAGE_SHARE 0.05
#define UG_COVERAGE_MAX_AXES 16

typedef struct {
    char axis[160]; /* what the axis is, from the space */
    size_t n;       /* the op's plan cases that hold it */
} ug_coverage_axis;

typedef struct {
    int op;
    size_t n_cases; /* the op's cases in the plan */
    size_t need;    /* cases each axis must hold: max(UG_COVERAGE_MIN, ceil(UG_COVERAGE_SHARE * n_cases)) */
    int n_axes;     /* 0: the space declares none */
    ug_coverage_axis axes[UG_COVERAGE_MAX_AXES];
} ug_op_coverage;

/* Counts, for op's cases in p, the cases holding each axis of the op's space in the data
 * tree (gen/ops/<op>.json). 0, or -2 with a message (a malformed "coverage" entry, a
 * formula that does not evaluate, an unknown dist set). */
int ug_plan_coverage(const ug_plan *p, int op, ug_op_coverage *out, char *err, size_t errlen);

#endif
