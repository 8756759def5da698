/* failures.h — a run's failing cases ranked by severity: case ID, op, dtype, verdict, the
 * deciding figure (oracles/figure.h) and its severity (failed / allowed elements, the worst
 * ratio to a bound: scale-free, never raw ulps). `ulpgym failures` and the summaries of
 * `sweep` and `check` print them (cli/failure_list.h), every report format lists them.
 *
 * Strings are the database's as stored: a database may come from another machine, so the
 * writers escape them and build a command line only from a valid case ID. */
#ifndef UG_REPORTS_FAILURES_H
#define UG_REPORTS_FAILURES_H
#include <stddef.h>

#include <cjson/cJSON.h>

#include "db/query_failures.h"

typedef struct {
    char *case_id, *op, *dtype, *verdict, *figure; /* as stored (raw); figure built from what was stored */
    char *message;                                 /* the stored message, raw */
    double severity;
    double used;             /* headroom used (results.used), NaN when not stored */
    double max_abs, max_ulp; /* the largest over the outputs: secondary figures */
    int has_metrics;         /* 0: no output was judged (CRASH, ERROR, TIMEOUT) */
    cJSON *standards;        /* names of the standards the figure reads (array) */
    cJSON *thresholds;       /* {standard: {output: thresholds}} of those standards; NULL unless asked */
} ug_failure;

typedef struct {
    ug_failure *v;
    size_t n, cap;
} ug_failure_list;

/* Reads the failures of filter f, most severe first (then by case ID); with_thresholds
 * keeps each one's thresholds for JSON. 0, or -1 with a message in err. */
int ug_failures_read(ug_db *db, const ug_db_failure_filter *f, int with_thresholds, ug_failure_list *l, char *err,
                     size_t errlen);
void ug_failures_free(ug_failure_list *l);

/* 1 when s is a case ID ulpgym makes: exactly 16 lowercase hex digits. */
int ug_failure_id_ok(const char *s);

/* text as valid UTF-8, every other byte kept as \xNN (core/utf8.h). malloc'd; NULL without memory. */
char *ug_failure_clean_utf8(const char *text);

#endif
