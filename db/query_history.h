/* query_history.h — read-only queries across runs: pass rates per run, flaky cases,
 * regressions (`ulpgym history`; the case-by-case comparison of two runs behind `ulpgym
 * diff` is db/query_compare.h). Rows come to a callback with text valid only during the
 * call; a callback that returns non-zero stops the iteration, and that value is returned. */
#ifndef UG_DB_QUERY_HISTORY_H
#define UG_DB_QUERY_HISTORY_H
#include <stddef.h>

#include "db/store.h"

typedef enum { UG_DB_BY_NONE, UG_DB_BY_GROUP, UG_DB_BY_OP, UG_DB_BY_DTYPE } ug_db_history_by;

/* Which results the history queries look at. */
typedef struct {
    const unsigned char *ops; /* ops[i] != 0 selects op i (UG_OP_COUNT entries); NULL: every op */
    unsigned groups;          /* bit g selects group g; 0: every group */
    const char *since;        /* runs started at or after this ISO date/time; NULL: all */
    long last;                /* pass rates: the last N runs of the database */
    ug_db_history_by by;      /* pass rates: one row per run, or per run and group/op/dtype */
} ug_db_history_filter;

typedef struct {
    long long run_id;
    const char *started_at, *status, *backend, *plan_name; /* plan_name "-" when none */
    const char *key; /* the group, op or dtype of the row; "" with UG_DB_BY_NONE */
    long n, pass;
    long long fail, other; /* other: every verdict but PASS and FAIL */
    /* The certified standard's verdicts of the row's cases: judged counts the cases whose certified verdict is PASS
     * or FAIL, pass those that pass. Left out of judged: NA (no numeric output) and cases with no verdict at all
     * (SKIP, ERROR, CRASH, TIMEOUT); their share is n - cert_judged. */
    long cert_judged, cert_pass;
    const char *primary; /* the run's `sweep --primary` standard; "" = each op's own decided */
} ug_db_rate_row;

/* A case the flaky or regression query found. */
typedef struct {
    const char *case_id, *op, *dtype;
    const char *verdicts;          /* flaky: "RUN:VERDICT ..." over the runs that disagree */
    long long first_failing_run;   /* regressions: the first failing run after a passing one */
    const char *verdict, *backend; /* regressions: that run's verdict and backend */
} ug_db_history_case;

/* Pass rate rows of the filter's last runs, oldest first (then by key). 0, the
 * callback's non-zero value, or -1 with a message. */
int ug_db_history_rates(ug_db *db, const ug_db_history_filter *f, int (*cb)(const ug_db_rate_row *row, void *ctx),
                        void *ctx, char *err, size_t errlen);
/* Flaky cases: the same case under the same plan hash, git revision, backend and deciding
 * standard (results.primary_standard) got different verdicts (at most 200, by op then case
 * ID). Fills verdicts. */
int ug_db_history_flaky(ug_db *db, const ug_db_history_filter *f, int (*cb)(const ug_db_history_case *c, void *ctx),
                        void *ctx, char *err, size_t errlen);
/* Regressions: per case and backend, the first run that did not pass after an earlier
 * run of the same backend passed it under the same deciding standard (at most 200,
 * oldest first). Fills first_failing_run, verdict and backend. */
int ug_db_history_regressions(ug_db *db, const ug_db_history_filter *f,
                              int (*cb)(const ug_db_history_case *c, void *ctx), void *ctx, char *err, size_t errlen);

#endif
