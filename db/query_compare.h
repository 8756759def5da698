/* query_compare.h — what changed between two runs, case by case: every case of run B with its
 * result in run A (when A has one), and the one classification the nightly report, `ulpgym
 * diff --like-for-like` and scripts/nightly.sh share:
 *   new failure     B's outcome is neither PASS nor SKIP, and A had no result or PASS/SKIP
 *   fixed           B passes, A failed (neither PASS nor SKIP)
 *   still failing   both failed
 *   drift           both pass, but B used over UG_DRIFT_FLOOR of what its deciding standard
 *                   allows and more than drift_factor times what A used (headroom lost before
 *                   anything fails: results.used, oracles/figure.h)
 * Rows come to a callback with text valid only during the call, as stored. */
#ifndef UG_DB_QUERY_COMPARE_H
#define UG_DB_QUERY_COMPARE_H
#include <stddef.h>

#include "db/store.h"

#define UG_DRIFT_FACTOR_DEFAULT 4.0
#define UG_DRIFT_FLOOR 0.25 /* a passing case drifts only once it uses a quarter of its allowance */

typedef enum {
    UG_CHANGE_NONE,
    UG_CHANGE_NEW_FAIL,
    UG_CHANGE_FIXED,
    UG_CHANGE_STILL_FAILING,
    UG_CHANGE_DRIFT
} ug_change;
#define UG_CHANGE_COUNT 5

typedef struct {
    const char *group, *op, *dtype, *case_id;
    const char *verdict_a; /* "" when A has no result for the case */
    const char *verdict_b, *message_b;
    double used_a, used_b;                 /* headroom used (results.used); NaN when not judged or not stored */
    double max_ulp_a, max_ulp_b;           /* the largest over the case's outputs; NaN when none */
    const char *certified_a, *certified_b; /* the certified verdict: PASS, FAIL, NA; "" when none stored */
} ug_db_compare_row;

/* Every case with a result in run b, with its result in run a, by group, op and case ID. 0,
 * the callback's non-zero value, or -1 with a message. */
int ug_db_compare_runs(ug_db *db, long a, long b, int (*cb)(const ug_db_compare_row *row, void *ctx), void *ctx,
                       char *err, size_t errlen);
ug_change ug_change_classify(const ug_db_compare_row *row, double drift_factor);
/* "new failure", "fixed", "still failing", "drift", "unchanged"; the JSON keys: new_failures, fixed,
 * still_failing, drift. */
const char *ug_change_name(ug_change c);
const char *ug_change_key(ug_change c);

#endif
