/* standard.h — the precision standards by name (docs/STANDARDS.md): the vocabulary an op's
 * declaration ("primary"), the commands' --primary and every report use. What each one
 * judges, and how, is oracles/verdict.c's; here are only the names, where each comes from
 * and its rule in a line, so the declaration loader (core/opdecl_json.c) can read them. */
#ifndef UG_STANDARD_H
#define UG_STANDARD_H

typedef enum {
    UG_STD_PYPTO,
    UG_STD_ALLCLOSE,
    UG_STD_DUAL_THOUSANDTH,
    UG_STD_MIXED_TOLERANCE,
    UG_STD_MERE_MARE,
    UG_STD_ULP,
    UG_STD_BENCHMARK,
    UG_STD_CERTIFIED,      /* |a - g*| <= c*B + ulp(g)/2, B the device bound (UG_AR_DEVICE) */
    UG_STD_REFERENCE,      /* the reference test's own rule (output rule's reference_*); NA without one */
    UG_STD_EXACT,          /* discrete: bitwise */
    UG_STD_BOUNDARY_AWARE, /* discrete: one quantum only near a rounding boundary */
    UG_STD_TOPK_SET,       /* discrete: index sets equal up to exact ties */
    UG_STD_COUNT
} ug_standard;

const char *ug_standard_name(int s); /* "?" for none */
const char *ug_standard_source(int s);
const char *ug_standard_rule(int s);
int ug_standard_find(const char *name); /* -1 if unknown */
/* 1 for the discrete compares (exact, boundary_aware, topk_set): they judge only discrete
 * outputs and never a numeric one. */
int ug_standard_is_discrete(int s);
#endif
