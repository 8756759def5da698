/* query_cost.h — the measured cost of cases in earlier runs, read-only: what `sweep --shard
 * K/N --cost-from DB` and `plan --shard-stats` balance shards by (run/shard_cost.c). */
#ifndef UG_DB_QUERY_COST_H
#define UG_DB_QUERY_COST_H
#include <stddef.h>

#include "db/store.h"

/* One case's latest measured time. */
typedef struct {
    const char *case_id, *op, *spec_json;
    double ms; /* kernel_ms + oracle_ms of the case's latest result that ran */
} ug_db_case_time;

/* Every case with a result that ran (any verdict but SKIP and ERROR, kernel_ms stored), with the kernel +
 * oracle milliseconds of its latest such result (highest run ID), in case ID order. Rows come to cb with text
 * valid only during the call; a callback that returns non-zero stops the iteration, and that value is returned.
 * 0, or -1 with a message in err. */
int ug_db_case_times(ug_db *db, int (*cb)(const ug_db_case_time *row, void *ctx), void *ctx, char *err, size_t errlen);

#endif
