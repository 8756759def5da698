/* formats.h — what the writers of report.h share beyond it (reports/lookup.c): a run's
 * failures and changes found by case ID, headroom and numbers as text, a case's readable
 * test name; and the writers added with issue 34: JSON with the run's recorded options,
 * CSV (reports/csv.c). docs/REPORTS.md describes every format. */
#ifndef UG_REPORTS_FORMATS_H
#define UG_REPORTS_FORMATS_H
#include <stdio.h>

#include "reports/report.h"

/* r's failures and changes sorted by case ID, for look-ups while a writer walks cases. */
typedef struct {
    const ug_failure **fail;
    size_t n_fail;
    const ug_report_change **chg;
    size_t n_chg;
} ug_report_index;

/* 0, or -1 without memory (ix then empty: every look-up finds nothing). */
int ug_report_index_build(const ug_report *r, ug_report_index *ix);
void ug_report_index_free(ug_report_index *ix);
/* The failure / change of case_id in the indexed run; NULL when it has none. */
const ug_failure *ug_report_index_failure(const ug_report_index *ix, const char *case_id);
const ug_report_change *ug_report_index_change(const ug_report_index *ix, const char *case_id);

/* The changes of kind k, most severe first for new failures and still failing (by their
 * failure's severity), largest headroom used now first for drift, by op and case ID for
 * fixed. malloc'd array of *n pointers into r->changes (NULL when none or out of memory). */
const ug_report_change **ug_report_changes_of(const ug_report *r, const ug_report_index *ix, ug_change k, size_t *n);

/* x as the shortest text that reads back as x ("%.15g" .. "%.17g"); "inf", "-inf", "nan"
 * for the others. Returns buf. */
const char *ug_report_num(double x, char buf[32]);
/* A headroom used as a person reads it: "0.42", "2.5", "∞" (a NaN/Inf mismatch), none
 * when not judged (NaN). Returns buf. */
const char *ug_report_used_text(double used, const char *none, char buf[32]);

/* The readable name of a case for CI (JUnit, the reports' test names): dtype and params of
 * its spec, long lists abbreviated, cut with "…" so the whole stays under about 120
 * characters, ended by the case ID: "fp32 rows=3 cols=257 [00130a90f2f205f0]". Only the
 * spec and the ID name it, so the name lasts across plan edits that leave the case alone.
 * Text as stored (the caller escapes it). */
void ug_report_case_name(const char *dtype, const char *spec_json, const char *case_id, char *buf, size_t len);

/* The JSON report (ulpgym-report/1) with the run's recorded options (seed, sample,
 * selection, shard, command; run NULL: those are null). ug_report_write_json is this with
 * run NULL. */
void ug_report_write_json_run(const ug_report *r, const ug_run_record *run, FILE *f);

/* One row per case x output (reports/csv.c): RFC 4180, UTF-8, msprobe-style column
 * names. 0, or -1 with a message. */
int ug_report_write_csv(ug_db *db, const ug_report *r, FILE *f, char *err, size_t errlen);

#endif
