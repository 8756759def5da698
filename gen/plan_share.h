/* plan_share.h — a stratified share of a plan: per operator, a subset of its cases that
 * still covers what the op's space varies, for the runs that cannot afford every case of
 * every mutant (the per-op ctest entries in CI). The full plan runs in the nightly.
 *
 * Of each op's cases the share keeps, in plan order:
 *   1. every "required" entry of the op's space (smallest shape, decode, tile edges, the
 *      production length, the stress distributions: the space's own list of musts);
 *   2. the first case of every dtype and of every input distribution set;
 *   3. for every param, the first case holding its smallest and its largest value (a
 *      string param: the first case of each of its values);
 *   4. then evenly spaced cases of the rest, until the op has `per_op` cases.
 * Items 1–3 are kept even beyond per_op; an op with at most per_op cases keeps them all.
 * The choice depends only on the plan's cases and their order, so a share is as stable
 * as the plan. */
#ifndef UG_PLAN_SHARE_H
#define UG_PLAN_SHARE_H
#include <stddef.h>

#include "gen/plan.h"

#define UG_SHARE_PER_OP 120 /* the ctest share per op (docs/SWEEP.md, "The CI share") */

/* Reduces plan to its stratified share, per op (above). 0, or -1 without memory or on a
 * spec that does not parse (err says which). */
int ug_plan_stratify(ug_plan *plan, size_t per_op, char *err, size_t errlen);

/* The share size a per-op test should use: $ULPGYM_PLAN_SHARE when set ("full": 0 = keep
 * every case; a positive number), else UG_SHARE_PER_OP. -1 (err set) on a bad value. */
long ug_plan_share_from_env(char *err, size_t errlen);

#endif
