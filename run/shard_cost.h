/* shard_cost.h — what a case costs, and how `--shard K/N` deals a plan's cases to N shards by it.
 *
 * Without a database a case's cost is an estimate from its op's declaration (the bytes its tensors, their
 * fp64 copies and the kernel's and oracle's scratch take). With `--cost-from DB` it is the measured kernel +
 * oracle time of the same case ID's latest result in DB; a case DB has not measured gets its estimate times
 * its op's median measured/estimate ratio over the cases DB measured (every op's when the op has none). Cases
 * are dealt largest cost first (ties by case ID) to the shard with the least cost so far, so every shard
 * process computes the same partition — given the same DB: the costs' fingerprint (hash) is recorded with the
 * run, a resume refuses costs that changed and `merge` refuses shards balanced by different ones. */
#ifndef UG_SHARD_COST_H
#define UG_SHARD_COST_H
#include <stddef.h>

#include "gen/plan.h"

/* The cost of each case of a plan. */
typedef struct {
    double *cost;             /* per plan case, in plan order */
    int timed;                /* 1: milliseconds (from a database); 0: the declaration estimate (bytes) */
    size_t n_measured;        /* cases whose cost is their own measured time */
    size_t n_db;              /* cases with a measured time in the database (the fit's sample) */
    char hash[UG_ID_LEN + 1]; /* fingerprint of the case IDs and costs: equal hashes deal equal shards */
} ug_shard_costs;

/* "K/N" with 1 <= K <= N: 0, else -2 with a message. */
int ug_sweep_parse_shard(const char *text, int *k, int *n, char *err, size_t errlen);
/* Estimated relative cost of a case: the bytes its tensors, their fp64 copies and the kernel's and oracle's
 * scratch take (gen/case_memory.h, from the op's declaration), so a large step or position param weighs
 * nothing; the product of the integer params for a spec that names no implemented op. */
double ug_sweep_case_cost(const char *spec_text);
/* The cost of every case of plan: estimates (cost_db NULL), or measured and fitted times from the database at
 * cost_db, opened read-only. 0, or -2 with a message (no such file, not a ulpgym database). */
int ug_shard_costs_compute(const ug_plan *plan, const char *cost_db, ug_shard_costs *c, char *err, size_t errlen);
void ug_shard_costs_free(ug_shard_costs *c);
/* The measured kernel + oracle milliseconds of every plan case in the database at path (read-only; the same
 * latest result that ran as --cost-from takes), -1 for a case it has not measured. 0, or -2 with a message. */
int ug_shard_measured_times(const ug_plan *plan, const char *path, double *ms, char *err, size_t errlen);
/* The shard (0 .. n-1) of every plan case, dealt by cost (malloc'd, plan order). Aborts when out of memory
 * rather than deal a wrong slice. */
int *ug_shard_assign(const ug_plan *plan, const double *cost, int n);
/* Keeps shard k of n of the plan (plan order kept), dealt by costs (NULL: the declaration estimates). */
void ug_sweep_shard_select(ug_plan *plan, int k, int n, const ug_shard_costs *costs);

#endif
