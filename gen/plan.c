/* plan.c — plan loading and expansion (see plan.h). */
#include "gen/plan.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/canon.h"
#include "gen/dist.h"
#include "gen/plan_grid.h"

#define MAX_GRID 2000000

const char *ug_plan_default_path(void)
{
    static char buf[1024];
    const char *p = getenv("ULPGYM_PLAN");
    if (p && *p) return p;
    snprintf(buf, sizeof buf, "%s/gen/plans/nightly.json", ug_data_dir());
    return buf;
}

static cJSON *read_json(const char *path, uint64_t *hash, char *err, size_t errlen)
{
    char *text = ug_text_file_read(path, err, errlen);
    if (!text) return NULL;
    *hash = ug_hash64(text, strlen(text)) ^ (*hash * 0x9E3779B97F4A7C15ULL);
    const char *end = NULL;
    cJSON *j = ug_json_has_nul_escape(text) ? NULL : cJSON_ParseWithOpts(text, &end, 1);
    if (!j && ug_json_has_nul_escape(text)) snprintf(err, errlen, "%s: holds a \\u0000 escape", path);
    else if (!j) {
        long line = 1;
        for (const char *q = text; end && q < end; q++) line += *q == '\n';
        snprintf(err, errlen, "%s: not valid JSON (near line %ld)", path, line);
    }
    free(text);
    return j;
}

char *ug_plan_finish_spec(cJSON *spec, const char *plan_tag, uint64_t plan_seed)
{
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "seed");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "plan");
    if (!cJSON_GetObjectItemCaseSensitive(spec, "v")) cJSON_AddNumberToObject(spec, "v", UG_SPEC_VERSION);
    cJSON_AddStringToObject(spec, "plan", plan_tag);
    char *base = ug_json_canonical(spec);
    if (!base) return NULL;
    uint64_t seed = (ug_hash64(base, strlen(base)) ^ plan_seed) & ((1ULL << 53) - 1);
    free(base);
    cJSON_AddNumberToObject(spec, "seed", (double)seed);
    return ug_json_canonical(spec);
}

typedef struct {
    ug_plan *plan;
    size_t cap;
    char tag[96];
    uint64_t seed;
    int light; /* drop explicit cases marked "heavy" */
    char (*dropped)[UG_ID_LEN + 1]; /* the IDs of the heavy cases light dropped: a case */
    size_t n_dropped;               /* listed twice is refused in both selections */
    const unsigned char *ops; /* the ops whose spaces are expanded (NULL: all) */
    unsigned groups;          /* and their groups (bitmask; 0: all) */
} expander;

/* 1 when op is in ops (NULL: any) and its group in groups (0: any): the selection rule of
 * ug_plan_filter and ug_plan_load_only. */
static int op_wanted(const unsigned char *ops, unsigned groups, int op)
{
    return (!ops || ops[op]) && (!groups || (groups >> ug_op_group(op) & 1u));
}

static int push_case(expander *x, char *text, int op, char *err, size_t errlen)
{
    if (x->plan->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 1024;
        ug_plan_case *nc = realloc(x->plan->cases, cap * sizeof *nc);
        if (!nc) {
            free(text);
            snprintf(err, errlen, "out of memory expanding the plan");
            return -1;
        }
        x->plan->cases = nc;
        x->cap = cap;
    }
    ug_plan_case *c = &x->plan->cases[x->plan->n++];
    memset(c, 0, sizeof *c);
    c->origin = NULL;
    c->spec = text;
    c->op = op;
    ug_spec_id_of(text, c->id);
    return 0;
}

cJSON *ug_plan_entry_spec(const char *op, const cJSON *dists, const char *dtype, const cJSON *params,
                          const char *dist_name, const char *where, char *err, size_t errlen)
{
    const cJSON *dset = cJSON_GetObjectItemCaseSensitive(dists, dist_name);
    if (!cJSON_IsObject(dset)) {
        snprintf(err, errlen, "%s: unknown dist set \"%s\"", where, dist_name);
        return NULL;
    }
    for (const cJSON *d = dset->child; d; d = d->next)
        if (ug_dist_validate(d, err, errlen)) {
            char inner[256];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, errlen, "%s: dist set \"%s\", input \"%s\": %s", where, dist_name, d->string, inner);
            return NULL;
        }
    if (ug_dtype_parse(dtype) < 0) {
        snprintf(err, errlen, "%s: unknown dtype \"%s\"", where, dtype);
        return NULL;
    }
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "op", op);
    cJSON_AddStringToObject(s, "dtype", dtype);
    cJSON_AddItemToObject(s, "params", cJSON_Duplicate(params, 1));
    cJSON_AddItemToObject(s, "dist", cJSON_Duplicate(dset, 1));
    return s;
}


/* 1 when one of cases from..to-1 has this ID. */
static int seen(const ug_plan *p, size_t from, size_t to, const char *id)
{
    for (size_t i = from; i < to; i++)
        if (strcmp(p->cases[i].id, id) == 0) return 1;
    return 0;
}

static int expand_op(expander *x, const char *dir, const char *op, long quota, uint64_t *hash, char *err,
                     size_t errlen)
{
    int opi = ug_op_find(op);
    if (opi < 0) {
        snprintf(err, errlen, "plan: unknown op \"%s\" (see `ulpgym ops`)", op);
        return -2;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/../ops/%s.json", dir, op);
    if (!ug_op_def_get(opi)) {
        x->plan->skipped[opi] = quota > 0 ? quota : 0;
        return 0;
    }
    cJSON *space = read_json(path, hash, err, errlen);
    if (!space) return -2;
    int rc = 0;
    if (quota < 0) { /* the plan takes the op's quota from its space */
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(space, "nightly_cases");
        if (!cJSON_IsNumber(q) || q->valuedouble < 0 || q->valuedouble > 1e6) {
            snprintf(err, errlen, "%s: needs a number \"nightly_cases\" from 0 to 1000000 (the plan takes the "
                     "op's quota from its space)", path);
            cJSON_Delete(space);
            return -2;
        }
        quota = (long)q->valuedouble;
    }
    if (!op_wanted(x->ops, x->groups, opi)) goto done; /* read for the plan's hash, not expanded */
    const cJSON *dists = cJSON_GetObjectItemCaseSensitive(space, "dists");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(space, "required");
    const cJSON *grid = cJSON_GetObjectItemCaseSensitive(space, "grid");
    size_t start = x->plan->n;
    if (!cJSON_IsObject(dists) || (req && !cJSON_IsArray(req))) {
        snprintf(err, errlen, "%s: needs an object \"dists\" and an array \"required\"", path);
        rc = -2;
        goto done;
    }
    int i = 0;
    for (const cJSON *e = req ? req->child : NULL; e && !rc; e = e->next, i++) {
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *dn = cJSON_GetObjectItemCaseSensitive(e, "dist");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(e, "params");
        char where[1300];
        snprintf(where, sizeof where, "%s: required[%d]", path, i);
        if (!cJSON_IsString(dt) || !cJSON_IsString(dn) || !cJSON_IsObject(pr)) {
            snprintf(err, errlen, "%s: needs string \"dtype\", string \"dist\", object \"params\"", where);
            rc = -2;
            break;
        }
        cJSON *s = ug_plan_entry_spec(op, dists, dt->valuestring, pr, dn->valuestring, where, err, errlen);
        if (!s) {
            rc = -2;
            break;
        }
        char *text = ug_plan_finish_spec(s, x->tag, x->seed);
        cJSON_Delete(s);
        char id[UG_ID_LEN + 1];
        if (text) ug_spec_id_of(text, id);
        if (!text) rc = -1;
        else if (seen(x->plan, start, x->plan->n, id)) free(text);
        else if (!(rc = push_case(x, text, opi, err, errlen))) x->plan->cases[x->plan->n - 1].required = 1;
    }
    if (!rc && (long)(x->plan->n - start) > quota) {
        snprintf(err, errlen, "%s: %zu required cases exceed the plan's quota of %ld", path, x->plan->n - start, quota);
        rc = -2;
    }
    if (!rc && grid) {
        char where[1300];
        snprintf(where, sizeof where, "%s: grid", path);
        ug_grid g;
        size_t required_end = x->plan->n;
        /* the quota's worth of smallest IDs in order, more only if some are skipped */
        size_t want = (size_t)quota + 16;
        rc = ug_grid_open(&g, op, dists, grid, x->tag, x->seed, MAX_GRID, want, where, err, errlen);
        for (size_t k = 0; !rc && k < g.total && (long)(x->plan->n - start) < quota; k++) {
            if (k == g.n && g.n < g.total && (rc = ug_grid_keep(&g, 2 * k)) != 0) { /* more were skipped */
                snprintf(err, errlen, "out of memory expanding the plan");
                break;
            }
            char id[UG_ID_LEN + 1];
            ug_grid_id(&g, k, id);
            if (k && g.pts[k].id == g.pts[k - 1].id) continue; /* two points with one text (a repeated value) */
            if (seen(x->plan, start, required_end, id)) continue; /* a required case */
            char *text = ug_grid_spec(&g, k, err, errlen);
            rc = text ? push_case(x, text, opi, err, errlen) : -1;
        }
        ug_grid_close(&g);
    }
    if (!rc && (long)(x->plan->n - start) < quota) {
        snprintf(err, errlen, "%s: space yields %zu distinct cases, plan asks for %ld", path, x->plan->n - start, quota);
        rc = -2;
    }
done:
    cJSON_Delete(space);
    return rc;
}

/* The keys an explicit case may carry besides its spec: "source" and "note" strings,
 * "heavy" a boolean. Checked, copied out and removed from c, so they never reach the
 * spec or its ID. */
static int case_extras(cJSON *c, char **source, int *heavy, const char *where, char *err, size_t errlen)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(c, "source"), *hv = cJSON_GetObjectItemCaseSensitive(c, "heavy");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(c, "note");
    if ((src && (!cJSON_IsString(src) || !*src->valuestring)) || (hv && !cJSON_IsBool(hv)) || (note && !cJSON_IsString(note))) {
        snprintf(err, errlen, "%s: \"source\" and \"note\" must be non-empty strings, \"heavy\" true or false", where);
        return -2;
    }
    *heavy = cJSON_IsTrue(hv);
    *source = src ? strdup(src->valuestring) : NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(c, "source");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "heavy");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "note");
    return 0;
}

static int was_dropped(const expander *x, const char *id)
{
    for (size_t i = 0; i < x->n_dropped; i++)
        if (strcmp(x->dropped[i], id) == 0) return 1;
    return 0;
}

/* Notes a heavy case that light leaves out. 0, or -1 out of memory. */
static int remember_dropped(expander *x, const char *id)
{
    char(*d)[UG_ID_LEN + 1] = realloc(x->dropped, (x->n_dropped + 1) * sizeof *d);
    if (!d) return -1;
    x->dropped = d;
    snprintf(d[x->n_dropped++], UG_ID_LEN + 1, "%s", id);
    return 0;
}

/* One explicit case: its canonical text (the plan's seed derivation unless it names a
 * seed) pushed with its source and weight. */
static int explicit_case(expander *x, const cJSON *c, const char *where, char *err, size_t errlen)
{
    char inner[400], *source = NULL;
    int heavy = 0;
    ug_spec s;
    cJSON *raw = cJSON_Duplicate(c, 1);
    if (!cJSON_IsObject(raw) || case_extras(raw, &source, &heavy, where, err, errlen)) {
        if (!cJSON_IsObject(raw)) snprintf(err, errlen, "%s: a case must be an object", where);
        cJSON_Delete(raw);
        return -2;
    }
    cJSON *dup = cJSON_Duplicate(raw, 1);
    cJSON *seed = cJSON_GetObjectItemCaseSensitive(dup, "seed");
    int has_seed = seed != NULL;
    if (!seed) cJSON_AddNumberToObject(dup, "seed", 0); /* finish_spec derives it */
    int rc = ug_spec_from_json(dup, &s, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "%s: %s", where, inner);
    char *text = rc ? NULL : has_seed ? strdup(s.canonical) : ug_plan_finish_spec(raw, x->tag, x->seed);
    int op = rc ? -1 : s.op;
    if (!rc) ug_spec_free(&s);
    cJSON_Delete(raw);
    char id[UG_ID_LEN + 1];
    if (text) ug_spec_id_of(text, id);
    if (text && (seen(x->plan, 0, x->plan->n, id) || was_dropped(x, id))) { /* counted twice, stored once */
        snprintf(err, errlen, "%s: case %s is listed twice (an explicit case, or one the op's space gives): a plan "
                 "lists each case once", where, id);
        rc = -2;
    }
    if (rc || (heavy && x->light)) {
        int oom = !rc && text && remember_dropped(x, id);
        free(text);
        free(source);
        return rc ? -2 : oom ? -1 : 0;
    }
    if (!text || push_case(x, text, op, err, errlen)) return free(source), -1;
    x->plan->cases[x->plan->n - 1].source = source;
    x->plan->cases[x->plan->n - 1].heavy = heavy;
    return 0;
}

static int explicit_cases(expander *x, const cJSON *cases, const char *path, char *err, size_t errlen)
{
    int i = 0;
    for (const cJSON *c = cases->child; c; c = c->next, i++) {
        char where[1200];
        snprintf(where, sizeof where, "%s: cases[%d]", path, i);
        int rc = explicit_case(x, c, where, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* "unmatched": [{"source": "...", "why": "..."}], the reference tests without a case. */
static int read_unmatched(ug_plan *plan, const cJSON *um, const char *path, char *err, size_t errlen)
{
    if (!um) return 0;
    int n = cJSON_GetArraySize(um), i = 0;
    if (!cJSON_IsArray(um) || !(plan->unmatched = calloc((size_t)n + 1, sizeof *plan->unmatched))) {
        snprintf(err, errlen, "%s: \"unmatched\" must be an array of {\"source\", \"why\"}", path);
        return -2;
    }
    for (const cJSON *e = um->child; e; e = e->next, i++) {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source"), *why = cJSON_GetObjectItemCaseSensitive(e, "why");
        if (!cJSON_IsString(src) || !cJSON_IsString(why) || cJSON_GetArraySize(e) != 2) {
            snprintf(err, errlen, "%s: unmatched[%d] needs exactly a string \"source\" and a string \"why\"", path, i);
            return -2;
        }
        plan->unmatched[plan->n_unmatched].source = strdup(src->valuestring);
        plan->unmatched[plan->n_unmatched++].why = strdup(why->valuestring);
    }
    return 0;
}

/* "deviations": [{"source", "standard", "why"}]: cases the correct kernels fail, and why. */
static int read_deviations(ug_plan *plan, const cJSON *dv, const char *path, char *err, size_t errlen)
{
    if (!dv) return 0;
    int n = cJSON_GetArraySize(dv), i = 0;
    if (!cJSON_IsArray(dv) || !(plan->deviations = calloc((size_t)n + 1, sizeof *plan->deviations))) {
        snprintf(err, errlen, "%s: \"deviations\" must be an array of {\"source\", \"standard\", \"why\"}", path);
        return -2;
    }
    for (const cJSON *e = dv->child; e; e = e->next, i++) {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source"), *why = cJSON_GetObjectItemCaseSensitive(e, "why");
        const cJSON *std = cJSON_GetObjectItemCaseSensitive(e, "standard");
        if (!cJSON_IsString(src) || !cJSON_IsString(why) || !cJSON_IsString(std) || cJSON_GetArraySize(e) != 3) {
            snprintf(err, errlen, "%s: deviations[%d] needs exactly strings \"source\", \"standard\" and \"why\"", path, i);
            return -2;
        }
        ug_plan_deviation *d = &plan->deviations[plan->n_deviations++];
        d->source = strdup(src->valuestring), d->standard = strdup(std->valuestring), d->why = strdup(why->valuestring);
    }
    return 0;
}

/* Expands a parsed plan (j is consumed). path names it in messages; dir is where the
 * spaces are found (dir/../ops/<op>.json). */
static int plan_from_json(cJSON *j, const char *path, const char *dir, uint64_t hash, long long seed_override,
                          int light, const unsigned char *ops_sel, unsigned groups_sel, ug_plan *plan, char *err,
                          size_t errlen)
{
    int rc = 0;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name"), *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed"), *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(j, "groups"), *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    if (!cJSON_IsString(name) || !cJSON_IsNumber(ver) || (ops && !cJSON_IsObject(ops)) ||
        (cases && !cJSON_IsArray(cases)) || (!ops && !cases)) {
        snprintf(err, errlen, "%s: a plan needs string \"name\", number \"version\" and an object \"ops\" or an array \"cases\"",
                 path);
        rc = -2;
        goto done;
    }
    snprintf(plan->name, sizeof plan->name, "%s", name->valuestring);
    plan->version = ver->valueint;
    expander x = {.plan = plan, .seed = cJSON_IsNumber(seed) ? (uint64_t)seed->valuedouble : 0, .light = light,
                  .ops = ops_sel, .groups = groups_sel};
    if (light) hash ^= 0x4C49474854ULL; /* "LIGHT": another selection, another plan hash */
    if (seed_override >= 0) {
        x.seed = (uint64_t)seed_override;
        hash ^= (uint64_t)seed_override * 0xD6E8FEB86659FD93ULL;
    }
    snprintf(x.tag, sizeof x.tag, "%s/%d", plan->name, plan->version);
    for (const cJSON *g = groups ? groups->child : NULL; g; g = g->next) {
        int gi = ug_group_find(g->string);
        if (gi < 0 || !cJSON_IsNumber(g)) {
            snprintf(err, errlen, "%s: groups: \"%s\" is not a group with a case count", path, g->string);
            rc = -2;
            goto done;
        }
        plan->group_target[gi] = (long)g->valuedouble;
    }
    for (const cJSON *o = ops ? ops->child : NULL; o && !rc; o = o->next) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "cases");
        if (!cJSON_IsNumber(q) || q->valuedouble < 0 || q->valuedouble > 1e6) {
            snprintf(err, errlen, "%s: ops.%s needs a number \"cases\" from 0 to 1000000", path, o->string);
            rc = -2;
            break;
        }
        rc = expand_op(&x, dir, o->string, (long)q->valuedouble, &hash, err, errlen);
    }
    /* "quotas_from_spaces": every other op whose space file exists joins with the quota
     * its space states ("nightly_cases"), so adding an op edits no plan file. */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "quotas_from_spaces")))
        for (int op = 0; op < UG_OP_COUNT && !rc; op++) {
            char space[1200];
            snprintf(space, sizeof space, "%s/../ops/%s.json", dir, ug_op_name(op));
            if (!cJSON_GetObjectItemCaseSensitive(ops, ug_op_name(op)) && access(space, R_OK) == 0)
                rc = expand_op(&x, dir, ug_op_name(op), -1, &hash, err, errlen);
        }
    if (!rc && cases) rc = explicit_cases(&x, cases, path, err, errlen);
    free(x.dropped);
    if (!rc) rc = read_unmatched(plan, cJSON_GetObjectItemCaseSensitive(j, "unmatched"), path, err, errlen);
    if (!rc) rc = read_deviations(plan, cJSON_GetObjectItemCaseSensitive(j, "deviations"), path, err, errlen);
    snprintf(plan->hash, sizeof plan->hash, "%016llx", (unsigned long long)hash);
    if (!rc) ug_plan_filter(plan, ops_sel, groups_sel); /* the explicit cases */
done:
    cJSON_Delete(j);
    if (rc) ug_plan_free(plan);
    return rc;
}

static void plan_init(ug_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int g = 0; g < UG_GROUP_COUNT; g++) plan->group_target[g] = -1;
}

void ug_plan_resolve(const char *path, char *buf, size_t len, int *light)
{
    size_t n = strlen(path);
    *light = n > 6 && strcmp(path + n - 6, ":light") == 0;
    snprintf(buf, len, "%.*s", (int)(*light ? n - 6 : n), path);
    size_t m = strlen(buf);
    int is_name = !strchr(buf, '/') && !(m > 5 && strcmp(buf + m - 5, ".json") == 0) && access(buf, R_OK) != 0;
    if (is_name && m) {
        char name[256];
        snprintf(name, sizeof name, "%s", buf);
        snprintf(buf, len, "%s/gen/plans/%s.json", ug_data_dir(), name);
    }
}

void ug_plan_absolute(const char *path, char *buf, size_t len)
{
    char file[1200], abs[PATH_MAX];
    int light;
    ug_plan_resolve(path, file, sizeof file, &light);
    if (!realpath(file, abs) || snprintf(buf, len, "%s%s", abs, light ? ":light" : "") >= (int)len)
        snprintf(buf, len, "%s", path);
}

int ug_plan_load(const char *path, long long seed_override, ug_plan *plan, char *err, size_t errlen)
{
    return ug_plan_load_only(path, seed_override, NULL, 0, plan, err, errlen);
}

int ug_plan_load_only(const char *path, long long seed_override, const unsigned char *ops, unsigned groups,
                      ug_plan *plan, char *err, size_t errlen)
{
    plan_init(plan);
    uint64_t hash = 0;
    char file[1200];
    int light;
    ug_plan_resolve(path, file, sizeof file, &light);
    cJSON *j = read_json(file, &hash, err, errlen);
    if (!j && !ug_data_dir()[0]) { /* no installed share/ulpgym and no source tree: say where data comes from */
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, " (no data folder found: install with `cmake --install`, or set ULPGYM_DATA "
                                      "to the folder holding gen/plans)");
    }
    if (!j) return -2;
    char *pathcopy = strdup(file);
    int rc = plan_from_json(j, file, pathcopy ? dirname(pathcopy) : ".", hash, seed_override, light, ops, groups, plan,
                            err, errlen);
    free(pathcopy);
    return rc;
}

int ug_plan_parse(const char *text, const char *dir, long long seed_override, ug_plan *plan, char *err, size_t errlen)
{
    plan_init(plan);
    cJSON *j = cJSON_Parse(text);
    if (!j) {
        snprintf(err, errlen, "plan: not valid JSON");
        return -2;
    }
    return plan_from_json(j, "plan", dir, ug_hash64(text, strlen(text)), seed_override, 0, NULL, 0, plan, err, errlen);
}

void ug_plan_filter(ug_plan *plan, const unsigned char *ops, unsigned groups)
{
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        ug_plan_case *c = &plan->cases[i];
        if (op_wanted(ops, groups, c->op)) plan->cases[w++] = *c;
        else free(c->spec), free(c->source);
    }
    plan->n = w;
}

void ug_plan_keep_first(ug_plan *p, long per_op, long limit)
{
    size_t count[UG_OP_COUNT] = {0}, kept = 0;
    for (size_t i = 0; i < p->n; i++) {
        int keep = (per_op <= 0 || count[p->cases[i].op]++ < (size_t)per_op) && (limit <= 0 || kept < (size_t)limit);
        if (keep) p->cases[kept++] = p->cases[i];
        else free(p->cases[i].spec), free(p->cases[i].source);
    }
    p->n = kept;
}

void ug_plan_free(ug_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) free(plan->cases[i].spec), free(plan->cases[i].source);
    free(plan->cases);
    plan->cases = NULL;
    plan->n = 0;
    for (size_t i = 0; i < plan->n_unmatched; i++) free(plan->unmatched[i].source), free(plan->unmatched[i].why);
    free(plan->unmatched);
    plan->unmatched = NULL;
    plan->n_unmatched = 0;
    for (size_t i = 0; i < plan->n_deviations; i++) {
        ug_plan_deviation *d = &plan->deviations[i];
        free(d->source), free(d->standard), free(d->why);
    }
    free(plan->deviations);
    plan->deviations = NULL;
    plan->n_deviations = 0;
}
