/* plan.h — a plan (gen/plans/NAME.json) expanded into case specs.
 *
 * A plan names, per operator, how many cases it takes from that operator's
 * generalization space (gen/ops/<op>.json, resolved relative to the plan's folder as
 * ../ops/<op>.json). A space has "dists" (named input-distribution sets), "required"
 * entries (always taken, in order: smallest shape, decode, tile edges, production
 * length, ...) and a "grid" (cartesian product of dtype, dist and params axes). The op's
 * quota is filled with the required entries, then with grid points in order of their
 * case ID, a deterministic pseudo-random subset that does not depend on the order axes
 * are written in. A plan may also list explicit "cases" (full specs).
 * Operators the plan names that this build does not implement yet are skipped, their
 * quotas kept in plan.skipped so `ulpgym plan --count` can say what is missing.
 * An explicit case may carry "source" (the reference test it reproduces, a string),
 * "heavy" (true: too costly for a ctest) and "note" (a string); none of them is part of
 * the spec or its ID. A plan may list "unmatched": [{"source", "why"}], the reference
 * tests it has no case for (`ulpgym report --unmatched`), and "deviations": [{"source",
 * "standard", "why"}], the cases the correct kernels are known to fail under a standard.
 * Each spec gets "plan":"<name>/<version>" and a seed derived from its own content, so a
 * case keeps its ID and inputs as long as its spec is unchanged. */
#ifndef UG_PLAN_H
#define UG_PLAN_H
#define UG_PLAN_VERSION 1 /* the plan format: a plan's "version" must be it */
#include <stddef.h>
#include <stdint.h>

#include "core/paths.h" /* ug_data_dir */
#include "core/registry.h"

typedef struct {
    char *spec; /* canonical spec text (owned) */
    char id[UG_ID_LEN + 1];
    int op;
    const char *origin; /* NULL: the plan; "fuzz": a regression case from corpus/found/ */
    char *source;       /* an explicit case's "source" (the reference test it reproduces), owned; or NULL */
    int heavy;          /* an explicit case marked "heavy": dropped by a ":light" plan */
    int required;       /* one of its space's "required" entries (not a grid point) */
} ug_plan_case;

/* A reference test the plan has no case for, and why ("unmatched" in the plan file). */
typedef struct {
    char *source, *why;
} ug_plan_unmatched;

/* A case the correct kernel is known to fail under a standard, and why ("deviations"). */
typedef struct {
    char *source, *standard, *why;
} ug_plan_deviation;

typedef struct {
    char name[64];
    int version;
    char hash[UG_ID_LEN + 1];          /* hash of the plan file and every space it read */
    long group_target[UG_GROUP_COUNT]; /* the plan's declared group totals (-1 if none) */
    long skipped[UG_OP_COUNT];         /* quota of ops the plan names but this build lacks */
    ug_plan_case *cases;
    size_t n;
    ug_plan_unmatched *unmatched;
    size_t n_unmatched;
    ug_plan_deviation *deviations;
    size_t n_deviations;
} ug_plan;

/* Default plan: $ULPGYM_PLAN, else <data dir>/gen/plans/nightly.json, where the data dir
 * is core/paths.h's ($ULPGYM_DATA, the installed share/ulpgym, or a build's source tree). */
const char *ug_plan_default_path(void);
/* Loads and expands a plan; -2 with a message naming the file and field on bad input:
 * a file that is not regular or over 256 MiB, a key twice, an unknown top-level key, a
 * "version" other than UG_PLAN_VERSION, a "seed" not an integer in [0, 2^53), a name or
 * text (source, note, unmatched, deviations) that is not plain UTF-8 (core/utf8.h), and
 * any case that fails ug_plan_check_spec. Loading is linear in the cases.
 * seed_override >= 0 replaces the plan's seed (new inputs, new case IDs). path is a file,
 * or a plan name without '/' or ".json" that names <data dir>/gen/plans/<name>.json
 * (`--plan reference`); a ":light" suffix on either drops the explicit cases marked
 * "heavy" (the part a ctest can afford; the nightly runs the whole plan). */
int ug_plan_load(const char *path, long long seed_override, ug_plan *plan, char *err, size_t errlen);
/* ug_plan_load then ug_plan_filter(plan, ops, groups), without expanding the spaces of
 * the ops left out (each is still read: the plan's hash is the same). A command about
 * one op pays for that op's space only. */
int ug_plan_load_only(const char *path, long long seed_override, const unsigned char *ops, unsigned groups,
                      ug_plan *plan, char *err, size_t errlen);
/* The same as ug_plan_load from text; spaces are read from dir/../ops/. */
int ug_plan_parse(const char *text, const char *dir, long long seed_override, ug_plan *plan, char *err, size_t errlen);
/* Keeps only cases whose op is in ops (array indexed by ug_op, nonzero = keep; NULL =
 * any) and group in groups (bitmask; 0 = any). */
void ug_plan_filter(ug_plan *plan, const unsigned char *ops, unsigned groups);
/* Keeps the first per_op cases of each op (plan order: required cases first), then the
 * first limit of those; 0 leaves either out. */
void ug_plan_keep_first(ug_plan *plan, long per_op, long limit);
void ug_plan_free(ug_plan *plan);
/* Where ug_plan_load finds path (the name resolved, ":light" removed) into buf; *light
 * gets whether the suffix was there. */
void ug_plan_resolve(const char *path, char *buf, size_t len, int *light);
/* path as an absolute file path that ug_plan_load reads the same from any directory (a
 * plan name resolved in the data dir, a relative file made absolute, ":light" kept), into
 * buf; path itself when the file cannot be found (loading it then says why). */
void ug_plan_absolute(const char *path, char *buf, size_t len);
/* Checks a case spec object against its op's declaration, as ug_case_build would meet it
 * later: the op implemented, the dtype one of its dtypes, every param (type, range, the
 * required ones, the op's own check: core/opdecl.h), every tensor's shape, each drawn input
 * given a distribution and each "dist" entry a valid distribution of a drawn input the op
 * declares. 0, or -2 with a message naming the param or input and what is allowed. Every
 * case a plan yields is checked when it loads (explicit cases, a space's required entries
 * and grid points; the regression cases of run/found.c), so a bad case is refused with
 * exit 2 before anything runs instead of becoming an ERROR verdict. */
int ug_plan_check_spec(const cJSON *spec, char *err, size_t errlen);
/* Turns a spec object (without seed/plan) into a full canonical spec: adds plan tag and
 * the content-derived seed. Returns malloc'd text or NULL. */
char *ug_plan_finish_spec(cJSON *spec, const char *plan_tag, uint64_t plan_seed);
/* The spec object (without seed/plan) of one space entry: op, dtype, params and the dist set
 * dist_name of the space's "dists" (each distribution validated). NULL with a message that
 * starts with where on a bad dtype or dist set. Also what the op's "scenes" (gen/scenes.h) are made of. */
cJSON *ug_plan_entry_spec(const char *op, const cJSON *dists, const char *dtype, const cJSON *params,
                          const char *dist_name, const char *where, char *err, size_t errlen);

#endif
