/* scenes.c — an op's timing scenes read from its space file (see scenes.h). Strict on
 * purpose: a scene that silently lost a case (a misspelt key) would change a timing table
 * without anyone noticing. */
#include "gen/scenes.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "gen/plan.h"

#define UG_SCENE_TAG "scenes/1"

/* 1 when every key of object o is one of the NULL-terminated names; else 0 with the first
 * other key in *bad. */
static int only_keys(const cJSON *o, const char *const *names, const char **bad)
{
    for (const cJSON *k = o->child; k; k = k->next) {
        int known = 0;
        for (const char *const *n = names; *n && !known; n++) known = strcmp(k->string, *n) == 0;
        if (!known) {
            *bad = k->string;
            return 0;
        }
    }
    return 1;
}

/* A scene name: a lower-case letter, then lower-case letters, digits and '_'. */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > UG_SCENE_NAME_LEN || s[0] < 'a' || s[0] > 'z') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
    return 1;
}

static ug_scene *scene_push(ug_scene_set *set)
{
    ug_scene *grown = realloc(set->scenes, (set->n + 1) * sizeof *grown);
    if (!grown) return NULL;
    set->scenes = grown;
    ug_scene *s = &set->scenes[set->n++];
    memset(s, 0, sizeof *s);
    return s;
}

/* Appends a spec text (taken over) and its ID to scene s; -2 when s has that case already. */
static int scene_add_spec(ug_scene *s, char *text, const char *where, char *err, size_t errlen)
{
    char id[UG_ID_LEN + 1];
    ug_spec_id_of(text, id);
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0) {
            snprintf(err, errlen, "%s: the same case as cases[%zu] (case %s): a scene lists each case once", where, i,
                     id);
            free(text);
            return -2;
        }
    char **specs = realloc(s->specs, (s->n + 1) * sizeof *specs);
    if (specs) s->specs = specs;
    char(*ids)[UG_ID_LEN + 1] = specs ? realloc(s->ids, (s->n + 1) * sizeof *ids) : NULL;
    if (!ids) {
        free(text);
        snprintf(err, errlen, "out of memory reading scenes");
        return -1;
    }
    s->ids = ids;
    s->specs[s->n] = text;
    memcpy(s->ids[s->n++], id, sizeof id);
    return 0;
}

/* One entry of a scene's "cases": {"dtype", "dist", "params"}, as a space's "required". */
static int scene_case(ug_scene *s, const char *op, const cJSON *dists, const cJSON *e, const char *where, char *err,
                      size_t errlen)
{
    static const char *const keys[] = {"dtype", "dist", "params", NULL};
    const char *bad = NULL;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *dn = cJSON_GetObjectItemCaseSensitive(e, "dist");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(e, "params");
    if (!cJSON_IsObject(e) || !only_keys(e, keys, &bad) || !cJSON_IsString(dt) || !cJSON_IsString(dn) ||
        !cJSON_IsObject(pr)) {
        snprintf(err, errlen, "%s: needs exactly a string \"dtype\", a string \"dist\" and an object \"params\"%s%s%s",
                 where, bad ? " (unknown key \"" : "", bad ? bad : "", bad ? "\")" : "");
        return -2;
    }
    cJSON *spec = ug_plan_entry_spec(op, dists, dt->valuestring, pr, dn->valuestring, where, err, errlen);
    if (!spec) return -2;
    char *text = ug_plan_finish_spec(spec, UG_SCENE_TAG, 0);
    cJSON_Delete(spec);
    if (!text) {
        snprintf(err, errlen, "out of memory reading scenes");
        return -1;
    }
    ug_spec parsed; /* op, dtype and the params' types; values against the op's declaration when the case is built */
    int rc = ug_spec_parse(text, &parsed, err, errlen);
    if (rc) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "%s: %s", where, inner);
        free(text);
        return -2;
    }
    ug_spec_free(&parsed);
    return scene_add_spec(s, text, where, err, errlen);
}

/* One element of "scenes": {"name", "about"?, "cases"}. */
static int scene_entry(ug_scene_set *set, const char *op, const cJSON *dists, const cJSON *e, const char *where,
                       char *err, size_t errlen)
{
    static const char *const keys[] = {"name", "about", "cases", NULL};
    const char *bad = NULL;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name"),
                *about = cJSON_GetObjectItemCaseSensitive(e, "about");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(e, "cases");
    int n = cJSON_GetArraySize(cases);
    if (!cJSON_IsObject(e) || !only_keys(e, keys, &bad) || !cJSON_IsString(name) || (about && !cJSON_IsString(about)) ||
        !cJSON_IsArray(cases) || n < 1 || n > UG_SCENE_CASES_MAX) {
        snprintf(err, errlen,
                 "%s: needs a string \"name\", an array \"cases\" of 1 to %d cases and optionally a string "
                 "\"about\"%s%s%s",
                 where, UG_SCENE_CASES_MAX, bad ? " (unknown key \"" : "", bad ? bad : "", bad ? "\")" : "");
        return -2;
    }
    if (!name_ok(name->valuestring) || strcmp(name->valuestring, "plan") == 0 ||
        strcmp(name->valuestring, "mean") == 0) {
        snprintf(err, errlen,
                 "%s: scene name \"%s\" must be 1 to %d of a-z, 0-9 and _, starting with a letter, and not "
                 "\"plan\" or \"mean\" (the names the table gives)",
                 where, name->valuestring, UG_SCENE_NAME_LEN);
        return -2;
    }
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->scenes[i].name, name->valuestring) == 0) {
            snprintf(err, errlen, "%s: scene \"%s\" is declared twice", where, name->valuestring);
            return -2;
        }
    ug_scene *s = scene_push(set);
    if (!s || !(s->about = strdup(about ? about->valuestring : ""))) {
        snprintf(err, errlen, "out of memory reading scenes");
        return -1;
    }
    snprintf(s->name, sizeof s->name, "%s", name->valuestring);
    int i = 0, rc = 0;
    for (const cJSON *c = cases->child; c && !rc; c = c->next, i++) {
        char at[1400];
        snprintf(at, sizeof at, "%s (\"%s\"): cases[%d]", where, s->name, i);
        rc = scene_case(s, op, dists, c, at, err, errlen);
    }
    return rc;
}

int ug_scenes_load(const char *ops_dir, int op, ug_scene_set *set, char *err, size_t errlen)
{
    memset(set, 0, sizeof *set);
    set->op = op;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.json", ops_dir, ug_op_name(op));
    char *text = ug_text_file_read(path, err, errlen);
    if (!text) return -2;
    cJSON *space = ug_json_has_nul_escape(text) ? NULL : cJSON_Parse(text);
    free(text);
    if (!space) {
        snprintf(err, errlen, "%s: not valid JSON", path);
        return -2;
    }
    const cJSON *scenes = cJSON_GetObjectItemCaseSensitive(space, "scenes");
    const cJSON *dists = cJSON_GetObjectItemCaseSensitive(space, "dists");
    int n = cJSON_GetArraySize(scenes), rc = 0;
    if (scenes && (!cJSON_IsArray(scenes) || n < 1 || n > UG_SCENES_MAX || !cJSON_IsObject(dists))) {
        snprintf(err, errlen, "%s: \"scenes\" must be an array of 1 to %d scenes (and the space needs its \"dists\")",
                 path, UG_SCENES_MAX);
        rc = -2;
    }
    int i = 0;
    for (const cJSON *e = scenes && !rc ? scenes->child : NULL; e && !rc; e = e->next, i++) {
        char where[1300];
        snprintf(where, sizeof where, "%s: scenes[%d]", path, i);
        rc = scene_entry(set, ug_op_name(op), dists, e, where, err, errlen);
    }
    cJSON_Delete(space);
    if (rc) ug_scenes_free(set);
    return rc;
}

void ug_scenes_dir_of_plan(const char *plan_path, char *buf, size_t len)
{
    char file[1200];
    int light;
    ug_plan_resolve(plan_path, file, sizeof file, &light);
    snprintf(buf, len, "%s/../ops", dirname(file));
}

int ug_scenes_add(ug_scene_set *set, const char *name, const char *about, char *const *specs, size_t n)
{
    char err[128];
    ug_scene *s = scene_push(set);
    if (!s || !(s->about = strdup(about))) return -1;
    snprintf(s->name, sizeof s->name, "%s", name);
    for (size_t i = 0; i < n; i++) {
        char *text = strdup(specs[i]);
        if (!text || scene_add_spec(s, text, name, err, sizeof err)) return -1;
    }
    return 0;
}

void ug_scenes_free(ug_scene_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        ug_scene *s = &set->scenes[i];
        for (size_t k = 0; k < s->n; k++) free(s->specs[k]);
        free(s->specs);
        free(s->ids);
        free(s->about);
    }
    free(set->scenes);
    memset(set, 0, sizeof *set);
}
