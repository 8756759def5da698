/* verdict.h — metrics of docs/STANDARDS.md and the precision standards that judge them.
 *
 * Per output tensor: the kernel's values a, the oracle's exact values g* (nearest
 * double) and g (correctly rounded to the output dtype), and the naive benchmark's
 * values b, all over the same checked elements. ug_metrics_compute() derives every
 * metric; ug_standard_judge() applies one standard to them and returns the verdict with
 * the thresholds it used (JSON text), so a stored verdict explains itself. */
#ifndef UG_VERDICT_H
#define UG_VERDICT_H
#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "core/standard.h"

typedef enum { UG_V_PASS, UG_V_FAIL, UG_V_NA } ug_vstate;

/* Case outcomes: PASS/FAIL judge numbers; the rest are failure classes kept apart. */
typedef enum {
    UG_OUT_PASS,
    UG_OUT_FAIL,
    UG_OUT_SKIP,
    UG_OUT_ERROR, /* the kernel returned an error */
    UG_OUT_CRASH,
    UG_OUT_TIMEOUT,
    UG_OUT_SHAPE,    /* shape or dtype mismatch */
    UG_OUT_NONFINITE /* NaN/Inf mismatch: fails every standard */
} ug_outcome;

const char *ug_vstate_name(ug_vstate v);
const char *ug_outcome_name(ug_outcome o);
int ug_outcome_find(const char *name);

typedef struct {
    size_t n;                    /* elements checked */
    size_t n_total;              /* elements in the output */
    size_t n_nonfinite_mismatch; /* NaN/Inf where g* has none, or the reverse */
    double max_abs, max_rel, max_ulp, mean_ulp;
    size_t max_abs_idx, max_rel_idx, max_ulp_idx; /* flat indices into the output */
    double mere, mare, rmse, eb, small_err_ratio, cosine;
    size_t n_small, n_small_err;
    /* the same for the naive benchmark evaluation */
    double b_max_abs, b_mere, b_mare, b_rmse, b_small_err_ratio;
    size_t b_n_small_err;
} ug_metrics;

/* The stored metric fields, listed once (verdict.c): in the metrics table's column order after
 * (run_id, case_id, output, dtype), each named as its column and as its key in a judged case's
 * JSON. The store, the result JSON and an output the kernel did not provide iterate this list. */
typedef enum {
    UG_MF_COUNT, /* a count of elements (size_t) */
    UG_MF_REAL,  /* a figure (double); NaN where nothing was measured, stored as NULL */
    UG_MF_INDEX  /* a flat element index (size_t); none where no element was checked */
} ug_metric_kind;
typedef struct {
    const char *name;
    size_t offset; /* offsetof(ug_metrics, the field) */
    ug_metric_kind kind;
} ug_metric_field;
extern const ug_metric_field ug_metric_fields[];
extern const int ug_metric_nfields;
/* Field f of m, as a double. */
double ug_metric_value(const ug_metrics *m, const ug_metric_field *f);
/* m for an output with no element checked: every count and index 0, every figure NaN, n_total total. */
void ug_metrics_none(ug_metrics *m, size_t total);

/* What a standard judges: one output's values and metrics. */
typedef struct {
    const char *name;
    ug_dtype dt;
    const ug_output_rule *rule;
    int bench_level;
    size_t n;
    const size_t *idx;
    const double *a, *gstar, *g, *bench;
    const ug_metrics *m;
    const double *bound; /* the device bound B per element (certified); NULL: not evaluated */
    double cert_c;       /* c of the certified standard (0: UG_CERT_C) */
    /* The reference test's own golden per element where the output's rule declares one
     * (reference_golden, core/ops.h); NULL: the reference rule judges against g. */
    const double *ref_golden;
    /* The golden the tolerance rules compare a with per element, ug_tie_golden(dt, a, g, g*,
     * bound) where there is a bound, computed once for all the standards (ug_judged_goldens);
     * NULL: computed at each use. */
    const double *tie_g;
} ug_judged;

/* j's tie_g: a malloc'd array (free it) when j has a bound, NULL otherwise or without memory
 * (the standards then compute each golden where they use it). */
double *ug_judged_goldens(const ug_judged *j);

/* c of the certified standard: covers the second-order terms the first-order device bound
 * leaves out (docs/STANDARDS.md). */
#define UG_CERT_C 2.0

void ug_metrics_compute(ug_dtype dt, size_t n, const size_t *idx, size_t n_total, const double *a, const double *gstar,
                        const double *bench, ug_metrics *m);
/* How near the checked elements come to the per-element rules of output j: the largest
 * |a - g| / (atol + rtol*|g|) under its pypto tolerances, or |a - g*| / (c*B + ulp(g)/2)
 * of the certified standard (1 = on the edge); +inf for a
 * NaN/Inf mismatch or any differing code of a discrete output. run/exec.c re-checks every
 * element of a sampled case whose margin exceeds UG_RECHECK_MARGIN. */
double ug_tolerance_margin(const ug_judged *j);
#define UG_RECHECK_MARGIN 0.5

/* The golden of an element for the tolerance standards (pypto, reference, allclose,
 * mixed_tolerance): g, the exact value correctly rounded (RNE), except at an exact tie:
 * where g* lies halfway between g and its neighbour in the output's dtype and the element's
 * device bound is positive, a legal device's result lies a rounding error off the tie, so
 * either neighbour is a correct rounding of it, and the golden is the one the kernel (a) gave.
 * An element computed exactly before its one rounding (device bound 0: a cast, an exact
 * sum) keeps RNE's even neighbour (docs/STANDARDS.md "Exact ties"). */
double ug_tie_golden(ug_dtype dt, double a, double g, double gstar, double bound);

/* A quantised code's exact tie: 1 where v/sd is exactly k + 1/2 (a device's one fp32 division
 * forms such a tie exactly), with *code the int8 code RNE gives it (the even one, saturated);
 * 0 elsewhere, and always for sd NaN (a scale not known exactly). The caller decides whether
 * every correct device holds v (docs/STANDARDS.md "Exact ties of quantised codes"). */
int ug_int8_exact_tie(double v, double sd, double *code);

/* |a - g| / (reference_atol + reference_rtol*|g|) under output rule r's reference rule:
 * above 1, element a is outside it against g; NaN where a or g is not finite (judged as a
 * NaN/Inf mismatch). The judge (oracles/judge.c) asks it too, to find where a test's own golden
 * is worth forming. */
double ug_reference_ratio(const ug_output_rule *r, double a, double g);

/* Applies standard s; writes the thresholds used as JSON into thr (thrlen bytes). */
ug_vstate ug_standard_judge(int s, const ug_judged *j, char *thr, size_t thrlen);

#define UG_THR_LEN 384 /* bytes of one standard's thresholds JSON */

/* A judged case, as the store keeps it: per output the metrics, each standard's verdict
 * and the thresholds it applied (JSON text), then the case's verdict per standard and its
 * outcome. Plain data (no pointers), so a sweep worker can ship it through a pipe and the
 * store can write it without knowing how it was computed (oracles/judge.c fills it). */
typedef struct {
    char name[32];
    ug_dtype dtype;
    ug_metrics m;
    ug_vstate verdict[UG_STD_COUNT];
    char thresholds[UG_STD_COUNT][UG_THR_LEN];
    double margin; /* ug_tolerance_margin of the checked elements (not stored) */
    /* 1: an optional output the kernel did not provide (core/registry.h): every verdict NA,
     * thresholds {"provided":false}, metrics over no element (n = 0, stored as NULLs) */
    int not_provided;
} ug_output_result;

typedef struct {
    char case_id[UG_ID_LEN + 1];
    int op;
    ug_dtype dtype;
    ug_outcome outcome;
    int primary;                     /* ug_standard */
    ug_vstate verdict[UG_STD_COUNT]; /* per standard, over all outputs */
    char message[512];
    double kernel_ms, oracle_ms;
    uint64_t out_digest;       /* ug_case_outputs_digest of the kernel's outputs (0: it did not return) */
    unsigned long n_fallback;  /* oracle elements settled by MPFR */
    unsigned long n_raised;    /* of those, settled only above twice the working precision */
    unsigned long n_unsettled; /* of those, not settled at UG_ORACLE_PREC_MAX bits */
    unsigned long n_selfcheck, n_selfcheck_mismatch;
    /* Headroom used: of what the deciding standard allows, the share the case used, the largest
     * over its outputs of that standard's "used" figure (1 = at the limit, above 1 fails: the
     * thresholds JSON of pypto, reference, allclose, certified, ... carry it); +inf for a NaN/Inf
     * mismatch, NaN when no output was judged (SKIP, ERROR, CRASH, ...). oracles/figure.h. */
    double used;
    int n_out;
    ug_output_result out[UG_MAX_TENSORS];
} ug_result;

/* Sets r->verdict[s] for every standard from the outputs' verdicts in r->out[0..n_out):
 * FAIL if any output fails s, else PASS if any passes, else NA (no output judged by s). */
void ug_verdict_combine_outputs(ug_result *r);
/* The case outcome once ug_verdict_combine_outputs() has run: NONFINITE if any output has
 * a NaN/Inf mismatch; FAIL if the primary standard (r->primary) fails, or any discrete
 * compare (exact, boundary_aware, topk_set) fails, since discrete outputs are judged by
 * their own compare; PASS otherwise. Reads r only. */
ug_outcome ug_verdict_decide_outcome(const ug_result *r);

/* Small-value threshold and atol of the benchmark standard (msprobe's values). */
void ug_small_value(ug_dtype dt, double *threshold, double *atol);

/* Discrete compares (docs/STANDARDS.md). boundary_aware: code a may differ from the correctly
 * rounded code g by one quantum only where the exact pre-rounding value gstar lies
 * within budget of the rounding boundary between them. Returns 1 if legal. (The standard
 * also admits a code further off where a value within budget of gstar rounds to it, which
 * only a budget wider than a quantum allows: verdict.c, code_reached.) */
int ug_boundary_ok(double a, double g, double gstar, double quantum, double budget);
/* topk_set: kernel and oracle index sets (k each) may differ only by indices whose
 * exact scores tie within budget with the k-th largest exact score. scores[i] is the
 * exact score of candidate i (n candidates). Returns 1 if legal. */
int ug_topk_set_ok(const int *kernel_idx, const int *oracle_idx, int k, const double *scores, int n, double budget);

#endif
