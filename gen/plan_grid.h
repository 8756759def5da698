/* plan_grid.h — a space's grid with every point's case ID, in ID order, without building
 * each point's spec as JSON (plan_grid.c says how). The plan keeps the points with the
 * smallest IDs up to the op's quota and writes out only those (ug_grid_spec). */
#ifndef UG_PLAN_GRID_H
#define UG_PLAN_GRID_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include "core/spec.h"

typedef struct {
    uint64_t id;  /* the case ID as a number (its text: ug_grid_id) */
    size_t point; /* mixed-radix index over (dtype, dist, param axes) */
} ug_grid_point;

typedef struct {
    /* canonical text of every fragment, made once */
    char **dtype_txt, **dist_txt, *op_txt, *tag_txt;
    char *key_txt[32], **value_txt[32];
    /* the space's own items behind them (borrowed: the space outlives the grid) */
    const cJSON *dtypes, *dists, *params, *dist_sets; /* grid axes dtype, dist, params; the space's "dists" */
    const char *op;
    size_t order[32]; /* param axes in sorted key order */
    size_t size[34], n_axes, n_params;
    uint64_t seed;
    ug_grid_point *pts;    /* the kept points (the smallest IDs), in ID order */
    size_t n, keep, total; /* kept, kept at most, points in the grid */
    char *buf;             /* scratch: the text of the point last written */
    size_t len, cap;
} ug_grid;

/* Expands the grid of a space (its "grid" and "dists" objects) of op for plan tag and
 * seed: validates it (exit-2 errors name `where`), computes every point's ID and keeps the
 * `want` points with the smallest IDs, in ID order, in pts[0..n-1] (SIZE_MAX keeps all).
 * 0, -2 (bad space) or -1 (no memory). Close it with ug_grid_close in every case. */
int ug_grid_open(ug_grid *g, const char *op, const cJSON *dists, const cJSON *grid, const char *tag, uint64_t seed,
                 size_t max_points, size_t want, const char *where, char *err, size_t errlen);
/* Keeps more points (the `want` smallest IDs; recomputes them): 0 or -1 (no memory). */
int ug_grid_keep(ug_grid *g, size_t want);
/* The canonical spec text (malloc'd) of the k-th point in ID order, checked against its
 * ID; NULL (err set) without memory or on a mismatch. */
char *ug_grid_spec(ug_grid *g, size_t k, char *err, size_t errlen);
/* The k-th point in ID order as a spec object (op, dtype, params, dist) whose items
 * refer to the space's (no text written or parsed: what ug_plan_check_spec reads), NULL
 * without memory; cJSON_Delete frees it and leaves the space's items alone. */
cJSON *ug_grid_spec_json(const ug_grid *g, size_t k);
/* The text of the k-th point's ID (16 hex digits). */
void ug_grid_id(const ug_grid *g, size_t k, char id[UG_ID_LEN + 1]);
void ug_grid_close(ug_grid *g);

#endif
