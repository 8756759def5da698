/* query_failures.h — the failing cases of a run, as `ulpgym failures` lists them and the
 * summaries of `sweep` and `check` end with them, and the look-ups behind `--fail-on new`:
 * the like-for-like run before a sweep, and a case's latest earlier result.
 *
 * Rows come to a callback with text valid only during the call. Every string is the
 * database's as stored, and a database may come from another machine: the caller escapes
 * what it prints and validates a case ID before it builds a command line from it. */
#ifndef UG_DB_QUERY_FAILURES_H
#define UG_DB_QUERY_FAILURES_H
#include <stddef.h>

#include "db/store.h"

/* Which results of a run count as failures. */
typedef struct {
    long run;                 /* the run read */
    const unsigned char *ops; /* ops[i] != 0 selects op i (UG_OP_COUNT entries); NULL: every op */
    int standard;             /* -1: the outcome is neither PASS nor SKIP; else the stored verdict under this
                                 standard (ug_standard) is FAIL */
    long compare_run;         /* > 0: only failures that are new against that run (no result there, or one
                                 that did not fail by the same rule); 0: every failure */
} ug_db_failure_filter;

typedef struct {
    const char *case_id, *op, *dtype, *verdict, *message, *primary_standard; /* as stored ("" for NULL) */
    /* The stored result as far as it parses: outcome (ERROR for a verdict this build does not
     * know), primary (-1 when unknown), the verdict per standard, the headroom used (NaN when
     * not stored), per output its name, checked elements, NaN/Inf mismatches, max abs and max
     * ulp, and each standard's thresholds (oracles/figure.h reads them). */
    const ug_result *r;
} ug_db_failure_row;

/* Every failure of the filter, in case ID order: 0, the callback's non-zero value, or -1
 * with a message. */
int ug_db_failures(ug_db *db, const ug_db_failure_filter *f, int (*cb)(const ug_db_failure_row *row, void *ctx),
                   void *ctx, char *err, size_t errlen);
/* How many failures the filter selects: >= 0, or -1 with a message. */
long ug_db_count_failures(ug_db *db, const ug_db_failure_filter *f, char *err, size_t errlen);

/* The last earlier finished run like run: the same plan hash, backend, op and group
 * filters, case limit, shard, sample and --primary (not a merge): its id, 0 when there is
 * none, -1 with a message. */
long ug_db_comparable_run(ug_db *db, long run, char *err, size_t errlen);

/* The verdict of case_id's latest result in a run before before_run (<= 0: any run) whose
 * backend is of kind backend_kind (the part before ':': sim, plugin, replay, ...) and that
 * was decided by standard (results.primary_standard): 1 with verdict, 0 none, -1 with a
 * message. */
int ug_db_previous_verdict(ug_db *db, const char *case_id, long before_run, const char *backend_kind,
                           const char *standard, char *verdict, size_t vlen, char *err, size_t errlen);

#endif
