/* report.h — what a report says about one run, gathered once from the database and
 * written in four formats: html (self-contained, inline SVG), md (the release report's
 * generalization table), json (machine-readable) and junit (one testcase per case).
 * The gathering is separate from the writers so every format says the same thing. */
#ifndef UG_REPORT_H
#define UG_REPORT_H
#include <stdio.h>

#include "core/registry.h"
#include "db/query_bench.h"
#include "db/query_compare.h"
#include "db/store.h"
#include "reports/failures.h"

#define UG_ULP_BUCKETS 8 /* max ulp error of a case: <=0.5 <=1 <=2 <=4 <=16 <=256 >256 non-finite */

typedef struct {
    long cases, pass, fail, other; /* other: every verdict but PASS and FAIL */
    long skip;                     /* the SKIPs among other */
    /* The certified standard: cases it judged (verdict PASS or FAIL) and passed. NA cases (no numeric output) and
     * cases with no verdict (SKIP, ERROR, CRASH, TIMEOUT) are not judged: its pass rate is cert_pass/cert_judged. */
    long cert_judged, cert_pass;
} ug_tally;

/* Headroom used by a case (results.used: of what its deciding standard allows, the share it
 * used; above 1 it fails): <=0.1 <=0.25 <=0.5 <=1 <=2 <=10 >10 NaN/Inf. */
#define UG_USED_BUCKETS 8

/* A case that changed against the compared run (db/query_compare.h). */
typedef struct {
    ug_change kind;
    char case_id[UG_ID_LEN + 1]; /* as stored; validated before a command line is made of it */
    int op;                      /* -1: an op this build does not know */
    char dtype[8], verdict_a[12], verdict_b[12];
    double used_a, used_b; /* NaN when not judged */
    char message[300];     /* run B's message */
} ug_report_change;
/* One judged output of a case the page lists (db/query_report.h ug_db_output_figures), kept. */
typedef struct {
    char output[64]; /* as stored, cleaned to valid UTF-8 */
    long n_checked, n_total, nonfinite;
    double max_abs, max_rel, max_ulp;
} ug_report_output;

/* A case the HTML page gives a triage block (listed among the top failures, an op x dtype's failures, the
 * changes, or the passing case nearest its limit): what the database holds on it for this run. Strings are
 * the database's, cleaned to valid UTF-8 (still to be escaped); NULL when not stored. */
typedef struct {
    char case_id[UG_ID_LEN + 1]; /* a valid ID (reports/failures.h ug_failure_id_ok): only those are listed */
    char verdict[16];            /* this run's outcome, "" when the walk found no result */
    char standard[32];           /* the deciding standard: results.primary_standard */
    char *message, *spec;        /* the stored message; the case's canonical spec (the reproduce hint) */
    char *thresholds;            /* the deciding standard's verdict JSON: {output: {thresholds, figures, used}} */
    long failure;                /* its index in failures, -1 when it is not failing */
    long change;                 /* its index in changes, -1 when unchanged or no compared run */
    ug_report_output *out;
    size_t n_out;
} ug_report_detail;

typedef struct ug_report {
    long run_id;
    char started[32], finished[32], status[16], backend[600], plan[64], plan_hash[24], git_rev[24], host[64];
    char primary[32];   /* the run's `sweep --primary` standard; "" = each op's own primary decided */
    char db_path[1100]; /* the database read (set by the CLI): every format's triage lines name it
                           (core/paths.h ug_triage_line: quoted, absolute, the run pinned) */
    ug_tally total;
    ug_tally group[UG_GROUP_COUNT];
    ug_tally op[UG_OP_COUNT];
    ug_tally op_dtype[UG_OP_COUNT][UG_DT_COUNT];
    long ulp_hist[UG_OP_COUNT][UG_ULP_BUCKETS];         /* secondary: the max ulp error of each case */
    long ulp_hist_notpass[UG_OP_COUNT][UG_ULP_BUCKETS]; /* of ulp_hist, the cases whose outcome is not PASS */
    long used_hist[UG_OP_COUNT][UG_USED_BUCKETS];       /* the headroom each case used (what decides) */
    long used_hist_notpass[UG_OP_COUNT][UG_USED_BUCKETS];
    double closest_used[UG_OP_COUNT]; /* the passing case nearest its limit: its used, -1 none */
    char closest_case[UG_OP_COUNT][UG_ID_LEN + 1];
    long regressions; /* cases of origin fuzz (corpus/found/) among total */
    double seconds_kernel, seconds_oracle;
    long long elems_judged, elems_total; /* output elements the verdicts rest on, of all the outputs hold */
    ug_failure_list failures;            /* every failing case, most severe first (reports/failures.h) */
    int top;                             /* how many of them the writers list */
    /* Against the last like-for-like run (same plan hash, selection, backend, sample and standard:
     * db/query_failures.h ug_db_comparable_run): 0 when there is none. changes: new failures, fixed,
     * still failing and drift, in that order (by op and case ID within each) */
    long compared_run;
    long n_change[UG_CHANGE_COUNT];
    ug_report_change *changes;
    size_t n_changes;
    /* pass-rate history per group and per op over the runs up to this one with the same backend (oldest
     * first; a mutant or plugin run is another line, never a sawtooth in this one); SKIP left out */
    int n_hist;
    long hist_run[64];
    char hist_started[64][24];            /* each run's start, UTC ISO 8601 */
    double hist_rate[64][UG_GROUP_COUNT]; /* -1 where the run had no case of the group */
    double hist_op_rate[64][UG_OP_COUNT]; /* -1 where the run had no case of the op */
    /* the database's latest kernel-timing table (`bench kernels --backend B --baseline A`), shown by the HTML
     * and markdown reports; has_bench 0 when the database holds none */
    int has_bench;
    ug_bench_table bench;
    /* The cases the HTML page lists, sorted by case ID (ug_report_detail_find): the top failures, each op x
     * dtype's first `top` failures, each change kind's (ug_report_changes_ranked) and every op's closest pass */
    ug_report_detail *details;
    size_t n_details;
} ug_report;

/* The paste-ready command that triages case_id as r's run judged it (malloc'd; NULL without
 * memory): every format prints it. */
char *ug_report_triage_line(const ug_report *r, const char *case_id);

/* The changes of `kind` a page lists, most severe first — new failures, still failing and drift by the headroom
 * this run used, fixed by what the compared run used; a case not judged (a crash: NaN) first, then by case ID —
 * at most r->top of them: their indices in changes into idx (room for n_changes); returns how many. */
size_t ug_report_changes_ranked(const ug_report *r, ug_change kind, size_t *idx);
/* The detail of case_id (NULL when the page does not list it: no triage block to link to). */
const ug_report_detail *ug_report_detail_find(const ug_report *r, const char *case_id);

extern const char *const ug_ulp_bucket_names[UG_ULP_BUCKETS];
extern const char *const ug_used_bucket_names[UG_USED_BUCKETS];

/* Pass rates in percent: of the outcome among the cases not skipped (SKIP is no verdict on
 * the kernel: a plugin declining a dtype neither passes nor fails), -1 when every case was
 * skipped; and of the certified standard (-1 when it judged none). */
double ug_tally_pass_rate(const ug_tally *t);
double ug_tally_cert_rate(const ug_tally *t);
/* The pass rate as a table cell ("93.75 %"), or none when every case was skipped. */
const char *ug_tally_pass_cell(const ug_tally *t, const char *none, char *buf, size_t len);
/* The certified pass rate as a table cell ("93.75 %"), or none when the standard judged no case. */
const char *ug_tally_cert_cell(const ug_tally *t, const char *none, char *buf, size_t len);

/* Gathers run run_id; its writers list the top max_failures failures (all are read). -2 with a
 * message if unknown. drift_factor: see db/query_compare.h (UG_DRIFT_FACTOR_DEFAULT). */
int ug_report_gather(ug_db *db, long run_id, int max_failures, double drift_factor, ug_report *r, char *err,
                     size_t errlen);
void ug_report_free(ug_report *r);

void ug_report_write_md(const ug_report *r, FILE *f);
void ug_report_write_json(const ug_report *r, FILE *f);
void ug_report_write_html(const ug_report *r, FILE *f);
/* JUnit needs every case: it walks them in the database (db/query_report.h). */
int ug_report_write_junit(ug_db *db, const ug_report *r, FILE *f, char *err, size_t errlen);

#endif
