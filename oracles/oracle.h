/* oracle.h — the oracle engine: which elements to check, the certified fast path with
 * its exact fallback, the naive benchmark evaluation, and the precision self-check.
 *
 * An operator's oracle (ug_op_def.oracle) evaluates its reference for a selection of
 * output elements in a given arithmetic (oracles/mp/arith.h). ug_oracle_run() drives it:
 * CERT first; elements whose error interval straddles a rounding boundary of the output
 * dtype are re-evaluated in EXACT (MPFR) by Ziv's strategy: at the working precision and at
 * twice it, and those whose rounding differs between the two again at 4x, 8x, ... up to
 * UG_ORACLE_PREC_MAX, each keeping its value of the highest precision; then NAIVE (the
 * input dtype) for the benchmark standard; then DEVICE for the certified standard's bound.
 * The self-check re-evaluates a sample in EXACT at the working precision and at twice it
 * and reports any rounded output that differs, or that differs from the fast path's. */
#ifndef UG_ORACLE_H
#define UG_ORACLE_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/mp/arith.h"

/* Elements to check, per output: flat row-major indices, sorted, no repeats. */
typedef struct ug_selection {
    int n_out;
    size_t n[UG_MAX_TENSORS];
    size_t *idx[UG_MAX_TENSORS];
} ug_selection;

#define UG_ORACLE_PREC 128 /* default working precision, bits */
/* The exact fallback raises an element's precision (doubling from the working precision)
 * while its rounding still changes, up to this many bits (or twice the working precision
 * if that is more); an element whose rounding changes at the last doubling is counted in
 * n_unsettled and keeps its value at this precision. */
#define UG_ORACLE_PREC_MAX 4096
/* Elements judged per output: every one by default (0 = all), since a sample costs nearly the
 * same (the oracle's engine evaluates whole rows and tiles either way). A case whose
 * every-element check does not fit the case memory budget (gen/case_memory.h) is judged on
 * UG_SAMPLE_PARTIAL elements an output instead, and so are the benchmarks by default. */
#define UG_SAMPLE_DEFAULT 0
#define UG_SAMPLE_PARTIAL 512

typedef struct {
    size_t sample;    /* elements per output; 0 = all */
    mpfr_prec_t prec; /* working precision of EXACT */
    ug_ar_mode mode;  /* UG_AR_CERT (default) or, for benchmarks, EXACT / F64 */
    int naive;        /* also evaluate the naive benchmark arithmetic */
    int device_bound; /* also evaluate UG_AR_DEVICE: the bound the certified standard uses */
    int self_check;   /* re-evaluate a sample at prec and 2*prec */
} ug_oracle_opts;

enum { UG_PASS_ENGINE, UG_PASS_NAIVE, UG_PASS_DEVICE, UG_PASS_SELF_CHECK, UG_ORACLE_PASSES };

typedef struct {
    ug_selection sel;
    double *gstar[UG_MAX_TENSORS]; /* exact value, nearest double */
    double *g[UG_MAX_TENSORS];     /* exact value rounded to the output dtype */
    double *bench[UG_MAX_TENSORS]; /* naive evaluation rounded to the output dtype */
    double *bound[UG_MAX_TENSORS]; /* device error bound (UG_AR_DEVICE); NULL unless asked, and for a discrete output */
    unsigned long n_fallback;      /* elements the fast path handed to MPFR */
    unsigned long n_raised;        /* of those, rounded differently at prec and 2*prec: raised further */
    unsigned long n_unsettled;     /* of those, still rounded differently at UG_ORACLE_PREC_MAX */
    int bench_cold;                /* bench is fresh zeros, never written (no naive pass): freed, not pooled */
    unsigned long n_checked_twice; /* self-check: elements re-evaluated */
    unsigned long n_mismatch;      /* self-check: elements whose rounding differed */
    /* This thread's CPU seconds in each pass: the engine (exact values, MPFR fallback
     * included), the naive values, the device bound, the self-check (bench oracle's columns). */
    double cpu_s[UG_ORACLE_PASSES];
} ug_oracle_result;

void ug_oracle_opts_default(ug_oracle_opts *o);
/* Builds the default selection of a case's outputs (sample elements each, 0 = all). */
int ug_selection_build(const ug_case *c, size_t sample, ug_selection *sel);
void ug_selection_free(ug_selection *sel);
/* The first position in output o's selection (sorted flat indices) whose index is >= idx
 * (sel->n[o] when none is). */
size_t ug_selection_lower_bound(const ug_selection *sel, int o, size_t idx);
/* Position of flat index idx in output o's selection, or -1. */
long ug_selection_find(const ug_selection *sel, int o, size_t idx);
/* Positions [*b, *e) in output o's selection of the elements with flat index in [lo, hi)
 * (an empty range for an output the case does not judge, o < 0). */
void ug_selection_range(const ug_selection *sel, int o, size_t lo, size_t hi, size_t *b, size_t *e);

int ug_oracle_run(const ug_case *c, const ug_oracle_opts *o, ug_oracle_result *r, char *err, size_t errlen);
/* Same, on a given selection (copied). */
int ug_oracle_run_sel(const ug_case *c, const ug_oracle_opts *o, const ug_selection *sel, ug_oracle_result *r,
                      char *err, size_t errlen);
void ug_oracle_result_free(ug_oracle_result *r);
/* The scale of output out over every one of its elements, from the oracle in plain double
 * (UG_AR_F64) on the whole output: the mean and the largest |g| of its finite elements
 * (either pointer may be NULL). A figure of the case alone, so a tolerance set from it
 * (ug_op_def.adjust_rule) is the same at --sample 512 and --sample all. Both 0 when the
 * evaluation fails or no element is finite (a tolerance built on them is then stricter). */
void ug_oracle_output_scale(const ug_case *c, int out, double *mean_abs, double *max_abs);

/* Geometry of an output viewed as (product of leading dims) x (last dim), with the
 * kernel's tiles along both: what most ops' geometry() needs. */
void ug_geom_last_dim(const ug_tensor *t, size_t row_tile, size_t col_tile, ug_geom *g);

/* Bytes one ug_num of an oracle's scratch array can hold with its MPFR value at twice the
 * default precision (the self-check's): a bound for the case memory estimate's scratch
 * terms (ug_op_def.scratch). */
#define UG_NUM_BYTES 96

/* Helpers for operator oracles. Loads element i of a tensor as an exact double. */
static inline double ug_tload(const ug_tensor *t, size_t i)
{
    return t->values ? t->values[i] : ug_dtype_load(t->dtype, t->data, i); /* inline: ops call it per element */
}
/* Whether positions pos .. pos+len-1 of output o's selection are the whole run of elements
 * first .. first+len-1 (the selection is sorted and distinct, so its two ends decide): a
 * row an op can then emit by a plain loop, without a division per element to find it. */
static inline int ug_sel_is_run(const ug_selection *sel, int o, size_t pos, size_t first, size_t len)
{
    return len && pos + len <= sel->n[o] && sel->idx[o][pos] == first && sel->idx[o][pos + len - 1] == first + len - 1;
}
/* Loads a whole tensor into a malloc'd double array (NULL on failure). */
double *ug_tload_all(const ug_tensor *t);

#endif
