/* scenes.h — an operator's timing scenes: the named workloads (low_latency,
 * high_throughput, pre_training, ...) `ulpgym bench kernels --backend B --baseline A`
 * times a kernel in, declared in the op's space file gen/ops/<op>.json as
 *
 *     "scenes": [{"name": "low_latency", "about": "decode, one token",
 *                 "cases": [{"dtype": "bf16", "dist": "normal", "params": {...}}, ...]}, ...]
 *
 * Each case is written as a "required" entry of the space is (dtype, a dist set of the
 * space's "dists", params), so a scene is a small set of explicit, reproducible case specs:
 * realistic shapes chosen for timing, not the plan's edge cases. The key is read strictly:
 * an unknown key, a bad name, a repeated name or case, an empty scene or a bad dtype or
 * dist set is refused with a message naming the file and the field. The specs carry the
 * tag "scenes/1" (not a plan's): a scene case is not a plan case, and its ID says so. */
#ifndef UG_GEN_SCENES_H
#define UG_GEN_SCENES_H
#include <stddef.h>

#include "core/registry.h"

#define UG_SCENE_NAME_LEN 32
#define UG_SCENES_MAX 16      /* scenes per op */
#define UG_SCENE_CASES_MAX 32 /* cases per scene */

typedef struct {
    char name[UG_SCENE_NAME_LEN + 1];
    char *about;  /* owned; "" when the scene has none */
    size_t n;     /* cases */
    char **specs; /* n canonical spec texts, owned */
    char (*ids)[UG_ID_LEN + 1];
} ug_scene;

typedef struct {
    int op;
    size_t n; /* 0: the space declares no scenes */
    ug_scene *scenes;
} ug_scene_set;

/* Reads op's scenes from <ops_dir>/<op>.json into set: 0 (set->n = 0 when the space has no
 * "scenes" key), or -2 with a message naming the file and the field (also for a missing
 * or unreadable space file). */
int ug_scenes_load(const char *ops_dir, int op, ug_scene_set *set, char *err, size_t errlen);
/* The folder of the op spaces a plan reads (<the plan's folder>/../ops; plan_path as
 * `--plan` takes it: a file or a plan name), into buf. */
void ug_scenes_dir_of_plan(const char *plan_path, char *buf, size_t len);
/* Adds a scene named name with copies of the n spec texts specs (the fallback scene "plan"
 * of an op without scenes). 0, or -1 without memory. */
int ug_scenes_add(ug_scene_set *set, const char *name, const char *about, char *const *specs, size_t n);
void ug_scenes_free(ug_scene_set *set);

#endif
