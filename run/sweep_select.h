/* sweep_select.h — which cases a sweep is made of: from its options or from a resumed
 * run's record, then the plan expanded and filtered, limited and sharded (sweep_select.c). */
#ifndef UG_SWEEP_SELECT_H
#define UG_SWEEP_SELECT_H
#include "run/sweep_engine.h"

/* The selection the sweep options ask for: -2 with a message for a --primary that is not a numeric standard. */
int ug_sweep_selection_from_opts(const ug_sweep_opts *o, ug_sweep_selection *x, char *err, size_t errlen);
/* The selection run r was made with (for --resume): -2 with a message if it names an op,
 * group, shard or --primary standard this build cannot take. */
int ug_sweep_selection_from_record(const ug_run_record *r, ug_sweep_selection *x, char *err, size_t errlen);
/* Comma list of the selected op names (groups 0) or group names (groups 1); "" for all. */
void ug_sweep_selection_names(const ug_sweep_selection *x, int groups, char *buf, size_t len);
/* Expands the plan and applies filter, corpus/found/, limit and shard, in that order. A shard dealt by
 * --cost-from sets x->cost_hash, or, when x holds one (a resume), refuses costs that changed since. -2 with a
 * message if the plan or the cost database cannot be read or the costs changed. */
int ug_sweep_selection_expand(ug_sweep_selection *x, ug_plan *plan, char *err, size_t errlen);

#endif
