/* plan.c — plan loading and expansion (see plan.h). */
#include "gen/plan.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/canon.h"
#include "core/utf8.h"
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

/* j, or NULL (j freed, err set) when one of its objects holds a key twice: cJSON keeps
 * both and every lookup sees the first, so a second "cases" would be silently ignored. */
static cJSON *no_duplicate_keys(cJSON *j, const char *path, char *err, size_t errlen)
{
    const char *top = ug_json_duplicate_key(j, 0), *dup = top ? top : ug_json_duplicate_key(j, 1);
    if (!dup) return j;
    char shown[128];
    ug_utf8_sanitize(dup, shown, sizeof shown); /* a key is the file's text: printed safe */
    snprintf(err, errlen, "%s: key \"%s\" appears twice in %s: write each key once", path, shown,
             top ? "the top-level object" : "one object");
    cJSON_Delete(j);
    return NULL;
}

static cJSON *read_json(const char *path, uint64_t *hash, char *err, size_t errlen)
{
    char *text = ug_text_file_read(path, err, errlen);
    if (!text) return NULL;
    *hash = ug_hash64(text, strlen(text)) ^ (*hash * 0x9E3779B97F4A7C15ULL);
    const char *end = NULL;
    cJSON *j = ug_json_has_nul_escape(text) ? NULL : cJSON_ParseWithOpts(text, &end, 1);
    if (!j && ug_json_has_nul_escape(text))
        snprintf(err, errlen, "%s: holds a \\u0000 escape", path);
    else if (!j) {
        long line = 1;
        for (const char *q = text; end && q < end; q++) line += *q == '\n';
        snprintf(err, errlen, "%s: not valid JSON (near line %ld)", path, line);
    }
    free(text);
    return no_duplicate_keys(j, path, err, errlen);
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

/* A set of case IDs (as numbers): open addressing, linear probing, at most half full, so
 * a plan of n cases checks its duplicates in O(n) (a scan per case made 40k cases take
 * 26 s). */
typedef struct {
    uint64_t *slot; /* 0: empty (the ID 0 is kept in `zero`) */
    size_t cap, n;
    int zero;
} id_set;

static uint64_t id_value(const char *id) { return strtoull(id, NULL, 16); }

static int id_set_has(const id_set *s, uint64_t k)
{
    if (k == 0) return s->zero;
    if (!s->cap) return 0;
    for (size_t i = ug_hash64(&k, sizeof k) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
        if (s->slot[i] == k) return 1;
    return 0;
}

static void id_set_put(id_set *s, uint64_t k)
{
    size_t i = ug_hash64(&k, sizeof k) & (s->cap - 1);
    while (s->slot[i] && s->slot[i] != k) i = (i + 1) & (s->cap - 1);
    s->n += !s->slot[i];
    s->slot[i] = k;
}

/* Adds k; 0, or -1 without memory. */
static int id_set_add(id_set *s, uint64_t k)
{
    if (k == 0) return (s->zero = 1), 0;
    if (2 * (s->n + 1) > s->cap) {
        id_set grown = {calloc(s->cap ? 2 * s->cap : 1024, sizeof *grown.slot), s->cap ? 2 * s->cap : 1024, 0, s->zero};
        if (!grown.slot) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) id_set_put(&grown, s->slot[i]);
        free(s->slot);
        *s = grown;
    }
    id_set_put(s, k);
    return 0;
}

typedef struct {
    ug_plan *plan;
    size_t cap;
    char tag[96];
    uint64_t seed;
    int light;                /* drop explicit cases marked "heavy" */
    id_set ids;               /* every case ID taken so far, and those of the heavy cases light dropped (a case
                   listed twice is refused in both selections): one lookup per case */
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
    if (id_set_add(&x->ids, id_value(c->id))) {
        snprintf(err, errlen, "out of memory expanding the plan");
        return -1;
    }
    return 0;
}

/* Whether dtype is one of the comma-separated list. */
static int dtype_listed(const char *list, const char *dtype)
{
    size_t n = strlen(dtype);
    for (const char *c = list; c && *c;) {
        size_t len = strcspn(c, ",");
        if (len == n && strncmp(c, dtype, n) == 0) return 1;
        c += len + (c[len] == ',');
    }
    return 0;
}

/* Every "dist" entry a valid distribution (gen/dist.h). */
static int check_dists(const cJSON *dist, char *err, size_t errlen)
{
    char inner[300];
    for (const cJSON *d = dist ? dist->child : NULL; d; d = d->next)
        if (ug_dist_validate(d, inner, sizeof inner)) {
            snprintf(err, errlen, "\"dist\" of input \"%.64s\": %s", d->string, inner);
            return -2;
        }
    return 0;
}

int ug_plan_check_spec(const cJSON *spec, char *err, size_t errlen)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(spec, "op"),
                *dt = cJSON_GetObjectItemCaseSensitive(spec, "dtype");
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(spec, "dist");
    int opi = cJSON_IsString(op) ? ug_op_find(op->valuestring) : -1;
    const ug_op_def *def = opi >= 0 ? ug_op_def_get(opi) : NULL;
    if (!def || !cJSON_IsString(dt) || !cJSON_IsObject(dist)) {
        snprintf(err, errlen, "not a case of an implemented op with a dtype and a \"dist\" object");
        return -2;
    }
    if (!dtype_listed(def->dtypes, dt->valuestring) || ug_dtype_parse(dt->valuestring) < 0) {
        snprintf(err, errlen, "%s: dtype \"%.32s\" is not one of its dtypes (%s)", ug_op_name(opi), dt->valuestring,
                 def->dtypes);
        return -2;
    }
    ug_params p;
    if (ug_params_check(&def->decl, cJSON_GetObjectItemCaseSensitive(spec, "params"), &p, err, errlen)) return -2;
    int rc = ug_decl_check_tensors(&p, (ug_dtype)ug_dtype_parse(dt->valuestring), dist, err, errlen);
    ug_params_free(&p);
    return rc ? rc : check_dists(dist, err, errlen);
}

/* ug_plan_check_spec with the message prefixed by where the case comes from. */
static int check_case(const cJSON *spec, const char *where, char *err, size_t errlen)
{
    char inner[600];
    int rc = ug_plan_check_spec(spec, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "%s: %s", where, inner);
    return rc;
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

/* Grid point k (its ID id) checked against the op's declaration (check_case). */
static int grid_point_check(ug_grid *g, size_t k, const char *where, const char *id, char *err, size_t errlen)
{
    char at[1400];
    cJSON *spec = ug_grid_spec_json(g, k);
    snprintf(at, sizeof at, "%s point %s", where, id);
    int rc = spec ? check_case(spec, at, err, errlen) : -1;
    if (!spec) snprintf(err, errlen, "out of memory expanding the plan");
    cJSON_Delete(spec);
    return rc;
}

static int expand_op(expander *x, const char *dir, const char *op, long quota, uint64_t *hash, char *err, size_t errlen)
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
            snprintf(err, errlen,
                     "%s: needs a number \"nightly_cases\" from 0 to 1000000 (the plan takes the "
                     "op's quota from its space)",
                     path);
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
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"),
                    *dn = cJSON_GetObjectItemCaseSensitive(e, "dist");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(e, "params");
        char where[1300];
        snprintf(where, sizeof where, "%s: required[%d]", path, i);
        if (!cJSON_IsString(dt) || !cJSON_IsString(dn) || !cJSON_IsObject(pr)) {
            snprintf(err, errlen, "%s: needs string \"dtype\", string \"dist\", object \"params\"", where);
            rc = -2;
            break;
        }
        cJSON *s = ug_plan_entry_spec(op, dists, dt->valuestring, pr, dn->valuestring, where, err, errlen);
        if (!s || check_case(s, where, err, errlen)) {
            cJSON_Delete(s);
            rc = -2;
            break;
        }
        char *text = ug_plan_finish_spec(s, x->tag, x->seed);
        cJSON_Delete(s);
        char id[UG_ID_LEN + 1];
        if (text) ug_spec_id_of(text, id);
        if (!text)
            rc = -1;
        else if (id_set_has(&x->ids, id_value(id)))
            free(text); /* required twice */
        else if (!(rc = push_case(x, text, opi, err, errlen)))
            x->plan->cases[x->plan->n - 1].required = 1;
    }
    if (!rc && (long)(x->plan->n - start) > quota) {
        snprintf(err, errlen, "%s: %zu required cases exceed the plan's quota of %ld", path, x->plan->n - start, quota);
        rc = -2;
    }
    if (!rc && grid) {
        char where[1300];
        snprintf(where, sizeof where, "%s: grid", path);
        ug_grid g;
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
            if (id_set_has(&x->ids, g.pts[k].id)) continue;    /* a required case */
            if ((rc = grid_point_check(&g, k, where, id, err, errlen))) break;
            char *text = ug_grid_spec(&g, k, err, errlen);
            rc = text ? push_case(x, text, opi, err, errlen) : -1;
        }
        ug_grid_close(&g);
    }
    if (!rc && (long)(x->plan->n - start) < quota) {
        snprintf(err, errlen, "%s: space yields %zu distinct cases, plan asks for %ld", path, x->plan->n - start,
                 quota);
        rc = -2;
    }
done:
    cJSON_Delete(space);
    return rc;
}

/* Each string of items[0..n) (a NULL item or a non-string is skipped) must be plain text
 * (core/utf8.h): what reaches the database and every report. -2 naming the field (where,
 * then the entry's prefix and the item's key) otherwise. */
static int plain_texts(const char *where, const char *entry, const cJSON *const *items, size_t n, char *err,
                       size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const char *bad = cJSON_IsString(items[i]) ? ug_utf8_plain_problem(items[i]->valuestring) : NULL;
        if (bad) {
            snprintf(err, errlen, "%s: %s\"%s\" %s: write it as plain UTF-8 text", where, entry, items[i]->string, bad);
            return -2;
        }
    }
    return 0;
}

/* The keys an explicit case may carry besides its spec: "source" and "note" strings,
 * "heavy" a boolean. Checked, copied out and removed from c, so they never reach the
 * spec or its ID. */
static int case_extras(cJSON *c, char **source, int *heavy, const char *where, char *err, size_t errlen)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(c, "source"),
                *hv = cJSON_GetObjectItemCaseSensitive(c, "heavy");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(c, "note");
    if ((src && (!cJSON_IsString(src) || !*src->valuestring)) || (hv && !cJSON_IsBool(hv)) ||
        (note && !cJSON_IsString(note))) {
        snprintf(err, errlen, "%s: \"source\" and \"note\" must be non-empty strings, \"heavy\" true or false", where);
        return -2;
    }
    if (plain_texts(where, "", (const cJSON *[]){src, note}, 2, err, errlen)) return -2;
    *heavy = cJSON_IsTrue(hv);
    *source = src ? strdup(src->valuestring) : NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(c, "source");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "heavy");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "note");
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
    if (rc)
        snprintf(err, errlen, "%s: %s", where, inner);
    else if ((rc = check_case(s.json, where, err, errlen)))
        ug_spec_free(&s);
    char *text = rc ? NULL : has_seed ? strdup(s.canonical) : ug_plan_finish_spec(raw, x->tag, x->seed);
    int op = rc ? -1 : s.op;
    if (!rc) ug_spec_free(&s);
    cJSON_Delete(raw);
    char id[UG_ID_LEN + 1];
    if (text) ug_spec_id_of(text, id);
    if (text && id_set_has(&x->ids, id_value(id))) { /* counted twice, stored once */
        snprintf(err, errlen,
                 "%s: case %s is listed twice (an explicit case, or one the op's space gives): a plan "
                 "lists each case once",
                 where, id);
        rc = -2;
    }
    if (rc || (heavy && x->light)) {
        int oom = !rc && text && id_set_add(&x->ids, id_value(id));
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
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source"),
                    *why = cJSON_GetObjectItemCaseSensitive(e, "why");
        char entry[32];
        snprintf(entry, sizeof entry, "unmatched[%d] ", i);
        if (!cJSON_IsString(src) || !cJSON_IsString(why) || cJSON_GetArraySize(e) != 2) {
            snprintf(err, errlen, "%s: unmatched[%d] needs exactly a string \"source\" and a string \"why\"", path, i);
            return -2;
        }
        if (plain_texts(path, entry, (const cJSON *[]){src, why}, 2, err, errlen)) return -2;
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
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source"),
                    *why = cJSON_GetObjectItemCaseSensitive(e, "why");
        const cJSON *std = cJSON_GetObjectItemCaseSensitive(e, "standard");
        char entry[32];
        snprintf(entry, sizeof entry, "deviations[%d] ", i);
        if (!cJSON_IsString(src) || !cJSON_IsString(why) || !cJSON_IsString(std) || cJSON_GetArraySize(e) != 3) {
            snprintf(err, errlen, "%s: deviations[%d] needs exactly strings \"source\", \"standard\" and \"why\"", path,
                     i);
            return -2;
        }
        if (plain_texts(path, entry, (const cJSON *[]){src, std, why}, 3, err, errlen)) return -2;
        ug_plan_deviation *d = &plan->deviations[plan->n_deviations++];
        d->source = strdup(src->valuestring), d->standard = strdup(std->valuestring), d->why = strdup(why->valuestring);
    }
    return 0;
}

/* The keys a plan may have: anything else (a typo such as "case") is refused. */
static const char *unknown_plan_key(const cJSON *j)
{
    static const char *const known[] = {
        "name", "version", "seed", "about", "groups", "ops", "quotas_from_spaces", "cases", "unmatched", "deviations"};
    for (const cJSON *c = j->child; c; c = c->next) {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(c->string, known[k])) k++;
        if (k == sizeof known / sizeof *known) return c->string;
    }
    return NULL;
}

/* "name": plain text (core/utf8.h) of 1 to 63 bytes: it tags every spec and is stored
 * with every run. */
static int plan_name(const cJSON *name, const char *path, ug_plan *plan, char *err, size_t errlen)
{
    const char *bad = cJSON_IsString(name) ? ug_utf8_plain_problem(name->valuestring) : "is not a string";
    if (!bad && (!*name->valuestring || strlen(name->valuestring) >= sizeof plan->name))
        bad = "is empty or longer than 63 bytes";
    if (bad) return snprintf(err, errlen, "%s: \"name\" %s: a plan needs a plain name of 1 to 63 bytes", path, bad), -2;
    snprintf(plan->name, sizeof plan->name, "%s", name->valuestring);
    return 0;
}

/* "groups": the release report's case total per group, each a count from 0 to 10^9. */
static int plan_groups(const cJSON *groups, const char *path, ug_plan *plan, char *err, size_t errlen)
{
    if (groups && !cJSON_IsObject(groups))
        return snprintf(err, errlen, "%s: \"groups\" must be an object of case counts per group", path), -2;
    for (const cJSON *g = groups ? groups->child : NULL; g; g = g->next) {
        int gi = ug_group_find(g->string);
        if (gi < 0 || !cJSON_IsNumber(g) || !(g->valuedouble >= 0 && g->valuedouble <= 1e9) ||
            g->valuedouble != (double)(long)g->valuedouble) {
            snprintf(err, errlen, "%s: groups: \"%.64s\" is not a group with a case count from 0 to 10^9", path,
                     g->string);
            return -2;
        }
        plan->group_target[gi] = (long)g->valuedouble;
    }
    return 0;
}

/* The plan's own fields, checked before any case: known keys only, "name" (plan_name),
 * "version" 1 (the plan format this ulpgym reads), "seed" an integer in [0, 2^53) (the
 * plan's seed: 0 when absent), "ops" an object or "cases" an array, "groups". */
static int plan_header(const cJSON *j, const char *path, ug_plan *plan, uint64_t *seed, char *err, size_t errlen)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version"),
                *sd = cJSON_GetObjectItemCaseSensitive(j, "seed");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops"),
                *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    const cJSON *qfs = cJSON_GetObjectItemCaseSensitive(j, "quotas_from_spaces");
    const char *unknown = cJSON_IsObject(j) ? unknown_plan_key(j) : NULL;
    char shown[80];
    if (unknown)
        return ug_utf8_sanitize(unknown, shown, sizeof shown),
               snprintf(err, errlen,
                        "%s: unknown key \"%s\" (a plan has name, version, seed, about, groups, ops, "
                        "quotas_from_spaces, cases, unmatched and deviations)",
                        path, shown),
               -2;
    if (!cJSON_IsObject(j) || (ops && !cJSON_IsObject(ops)) || (cases && !cJSON_IsArray(cases)) || (!ops && !cases))
        return snprintf(err, errlen,
                        "%s: a plan needs string \"name\", number \"version\" and an object \"ops\" or "
                        "an array \"cases\"",
                        path),
               -2;
    if (plan_name(cJSON_GetObjectItemCaseSensitive(j, "name"), path, plan, err, errlen)) return -2;
    if (!cJSON_IsNumber(ver) || ver->valuedouble != UG_PLAN_VERSION)
        return snprintf(err, errlen,
                        "%s: \"version\" must be %d, the plan format this ulpgym reads (a newer ulpgym "
                        "wrote it, or it is not a number)",
                        path, UG_PLAN_VERSION),
               -2;
    plan->version = UG_PLAN_VERSION;
    if (sd && (!cJSON_IsNumber(sd) || !(sd->valuedouble >= 0 && sd->valuedouble < 0x1p53) ||
               sd->valuedouble != floor(sd->valuedouble)))
        return snprintf(err, errlen, "%s: \"seed\" must be an integer in [0, 2^53)", path), -2;
    *seed = sd ? (uint64_t)sd->valuedouble : 0;
    if (qfs && !cJSON_IsBool(qfs))
        return snprintf(err, errlen, "%s: \"quotas_from_spaces\" must be true or false", path), -2;
    if (cJSON_GetObjectItemCaseSensitive(j, "about") && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "about")))
        return snprintf(err, errlen, "%s: \"about\" must be a string", path), -2;
    return plan_groups(cJSON_GetObjectItemCaseSensitive(j, "groups"), path, plan, err, errlen);
}

/* Expands a parsed plan (j is consumed). path names it in messages; dir is where the
 * spaces are found (dir/../ops/<op>.json). */
static int plan_from_json(cJSON *j, const char *path, const char *dir, uint64_t hash, long long seed_override,
                          int light, const unsigned char *ops_sel, unsigned groups_sel, ug_plan *plan, char *err,
                          size_t errlen)
{
    int rc = 0;
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops"),
                *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    uint64_t seed = 0;
    if ((rc = plan_header(j, path, plan, &seed, err, errlen))) goto done;
    expander x = {.plan = plan, .seed = seed, .light = light, .ops = ops_sel, .groups = groups_sel};
    if (light) hash ^= 0x4C49474854ULL; /* "LIGHT": another selection, another plan hash */
    if (seed_override >= 0) {
        x.seed = (uint64_t)seed_override;
        hash ^= (uint64_t)seed_override * 0xD6E8FEB86659FD93ULL;
    }
    snprintf(x.tag, sizeof x.tag, "%s/%d", plan->name, plan->version);
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
    free(x.ids.slot);
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
    const char *bad = ug_utf8_plain_problem(file);
    if (bad) { /* the path is stored with every run and printed in every report */
        snprintf(err, errlen, "plan path %s: rename the file or give it through a link with a plain name", bad);
        return -2;
    }
    cJSON *j = read_json(file, &hash, err, errlen);
    if (!j && !ug_data_dir()[0]) { /* no installed share/ulpgym and no source tree: say where data comes from */
        size_t n = strlen(err);
        snprintf(err + n, errlen - n,
                 " (no data folder found: install with `cmake --install`, or set ULPGYM_DATA "
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
    int nul = ug_json_has_nul_escape(text);
    cJSON *j = nul ? NULL : cJSON_Parse(text);
    if (!j) {
        snprintf(err, errlen, nul ? "plan: holds a \\u0000 escape" : "plan: not valid JSON");
        return -2;
    }
    if (!(j = no_duplicate_keys(j, "plan", err, errlen))) return -2;
    return plan_from_json(j, "plan", dir, ug_hash64(text, strlen(text)), seed_override, 0, NULL, 0, plan, err, errlen);
}

void ug_plan_filter(ug_plan *plan, const unsigned char *ops, unsigned groups)
{
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        ug_plan_case *c = &plan->cases[i];
        if (op_wanted(ops, groups, c->op))
            plan->cases[w++] = *c;
        else
            free(c->spec), free(c->source);
    }
    plan->n = w;
}

void ug_plan_keep_first(ug_plan *p, long per_op, long limit)
{
    size_t count[UG_OP_COUNT] = {0}, kept = 0;
    for (size_t i = 0; i < p->n; i++) {
        int keep = (per_op <= 0 || count[p->cases[i].op]++ < (size_t)per_op) && (limit <= 0 || kept < (size_t)limit);
        if (keep)
            p->cases[kept++] = p->cases[i];
        else
            free(p->cases[i].spec), free(p->cases[i].source);
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
