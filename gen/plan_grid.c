/* plan_grid.c — the grid of a generalization space, expanded fast (see plan_grid.h).
 *
 * A space's grid (dtype x dist x every param axis) can hold tens of thousands of points,
 * of which the plan keeps the quota with the smallest case IDs. The ID of a point is the
 * hash of its canonical spec, so every point's spec must be hashed, but it need not be
 * built as a cJSON object and canonicalised twice (once for the seed, once for the ID):
 * the canonical text of each fragment (a dist set, a dtype, a param value) is made once,
 * and a point's text is their concatenation in canonical key order, byte for byte what
 * ug_plan_finish_spec() writes for the same spec (test_plan_grid checks it on every
 * space). The hash runs over those fragments without writing the text: the state after
 * the prefix a point shares with every point of its (dtype, dist) is computed once, then
 * its params, the plan tag and the two endings (without and with the seed) are hashed on.
 * Every fixed fragment (a param's text at one value, the endings) is hashed as one jump
 * (ug_hash64_jump, core/canon.h: a multiply and a table load, the same state as hashing its
 * bytes); only the seed's digits, which differ per point, are hashed byte by byte.
 * Only the points the plan keeps are written out as strings, and each written text is
 * checked against its ID. The points are visited as an odometer over the params in key
 * order (the last key fastest), keeping the hash state after each param, so a point
 * hashes only the params that changed since the previous one plus the ending; IDs are
 * kept and sorted as integers (the order of their fixed-width hex text). */
#include "gen/plan_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "core/dtype.h"
#include "core/spec.h"
#include "gen/dist.h"

#define MAX_AXES 34 /* dtype, dist and up to 32 params */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int cmp_point(const void *a, const void *b)
{
    uint64_t x = ((const ug_grid_point *)a)->id, y = ((const ug_grid_point *)b)->id;
    return x < y ? -1 : x > y;
}

/* The canonical text of a string or of any JSON item. */
static char *canon_string(const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *t = j ? ug_json_canonical(j) : NULL;
    cJSON_Delete(j);
    return t;
}

/* Appends n bytes to the grid's scratch buffer (grown as needed); -1 without memory. */
static int put(ug_grid *g, const char *s, size_t n)
{
    if (g->len + n + 1 > g->cap) {
        size_t cap = (g->len + n + 1) * 2;
        char *b = realloc(g->buf, cap);
        if (!b) return -1;
        g->buf = b, g->cap = cap;
    }
    memcpy(g->buf + g->len, s, n);
    g->len += n;
    g->buf[g->len] = 0;
    return 0;
}

static int puts_(ug_grid *g, const char *s) { return put(g, s, strlen(s)); }

/* Point k's axis picks: pick[0] dtype, pick[1] dist, pick[2 + a] param axis a. */
static void decode(const ug_grid *g, size_t k, size_t *pick)
{
    for (size_t i = 0; i < g->n_axes; i++) {
        pick[i] = k % g->size[i];
        k /= g->size[i];
    }
}

/* Writes point k's canonical spec into the scratch buffer, with the seed when seed >= 0:
 * keys in canonical (sorted) order dist, dtype, op, params, plan, [seed,] v. */
static int write_spec(ug_grid *g, size_t k, long long seed)
{
    size_t pick[MAX_AXES];
    decode(g, k, pick);
    g->len = 0;
    int rc = puts_(g, "{\"dist\":") | puts_(g, g->dist_txt[pick[1]]) | puts_(g, ",\"dtype\":") |
             puts_(g, g->dtype_txt[pick[0]]) | puts_(g, ",\"op\":") | puts_(g, g->op_txt) | puts_(g, ",\"params\":{");
    for (size_t s = 0; s < g->n_params; s++) {
        size_t a = g->order[s]; /* the params in sorted key order */
        rc |= puts_(g, s ? "," : "") | puts_(g, g->key_txt[a]) | puts_(g, ":") | puts_(g, g->value_txt[a][pick[2 + a]]);
    }
    rc |= puts_(g, "},\"plan\":") | puts_(g, g->tag_txt);
    if (seed >= 0) {
        char num[32];
        ug_format_double((double)seed, num);
        rc |= puts_(g, ",\"seed\":") | puts_(g, num);
    }
    char v[32];
    snprintf(v, sizeof v, ",\"v\":%d}", UG_SPEC_VERSION);
    return rc | puts_(g, v);
}

static uint64_t hash_str(uint64_t h, const char *s) { return ug_hash64_update(h, s, strlen(s)); }

/* The hash state after the text a point shares with its (dtype i, dist j) row:
 * {"dist":D,"dtype":T,"op":O,"params":{ */
static uint64_t prefix_state(const ug_grid *g, size_t i, size_t j)
{
    uint64_t h = hash_str(UG_HASH64_INIT, "{\"dist\":");
    h = hash_str(hash_str(h, g->dist_txt[j]), ",\"dtype\":");
    h = hash_str(hash_str(h, g->dtype_txt[i]), ",\"op\":");
    return hash_str(hash_str(h, g->op_txt), ",\"params\":{");
}

/* The decimal digits of n, as ug_format_double writes an integer below 2^53. */
static size_t format_u53(uint64_t n, char *buf)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char rev[24];
    size_t len = 0;
    uint32_t hi = (uint32_t)(n / 100000000u), lo = (uint32_t)(n % 100000000u); /* n < 2^53 < 10^16 */
    for (int half = 0; half < 2; half++) { /* the low 8 digits (all of them when hi > 0), then hi's */
        uint32_t v = half ? hi : lo;
        if (half && v == 0) break;
        size_t start = len;
        while (v >= 100) {
            uint32_t r = v % 100;
            v /= 100;
            rev[len++] = pairs[2 * r + 1], rev[len++] = pairs[2 * r];
        }
        rev[len++] = (char)('0' + v % 10);
        if (v >= 10) rev[len++] = (char)('0' + v / 10);
        while (!half && hi && len - start < 8) rev[len++] = '0'; /* lo's leading zeros inside n */
    }
    for (size_t i = 0; i < len; i++) buf[i] = rev[len - 1 - i];
    buf[len] = 0;
    return len;
}

/* The jumps over the fixed text of a point's ending: `},"plan":TAG` after its params,
 * `,"v":N}` closing both the unseeded text (for the seed) and the seeded one, `,"seed":`
 * before the seed's digits. */
typedef struct {
    ug_hash64_jump tail, vend, seed_key;
} endings;

#define LANES 8 /* points whose endings are hashed together */

/* A batch of points whose params are hashed: their IDs are finished together. */
typedef struct {
    uint64_t h[LANES];
    size_t point[LANES], n;
} id_batch;

/* Keeps the `keep` smallest IDs seen (a max-heap on the ID). */
static void heap_offer(ug_grid *g, uint64_t id, size_t point)
{
    ug_grid_point *p = g->pts;
    size_t i;
    if (g->n < g->keep) { /* sift up */
        for (i = g->n++; i > 0 && p[(i - 1) / 2].id < id; i = (i - 1) / 2) p[i] = p[(i - 1) / 2];
    } else {
        if (g->keep == 0 || id >= p[0].id) return;
        for (i = 0;;) { /* sift the hole at the root down */
            size_t c = 2 * i + 1;
            if (c >= g->n) break;
            if (c + 1 < g->n && p[c + 1].id > p[c].id) c++;
            if (p[c].id <= id) break;
            p[i] = p[c], i = c;
        }
    }
    p[i] = (ug_grid_point){id, point};
}

/* Finishes the batch's IDs: the seed from the unseeded text (ug_plan_finish_spec's rule),
 * then the hash of the seeded text; offers each to the heap. */
static void finish_batch(ug_grid *g, const endings *e, id_batch *b)
{
    const char *text[LANES];
    size_t len[LANES];
    char num[LANES][24];
    for (size_t l = 0; l < b->n; l++) {
        b->h[l] = ug_hash64_jump_apply(&e->tail, b->h[l]);
        uint64_t unseeded = ug_hash64_jump_apply(&e->vend, b->h[l]);
        uint64_t seed = (ug_hash64_finish(unseeded) ^ g->seed) & ((1ULL << 53) - 1);
        b->h[l] = ug_hash64_jump_apply(&e->seed_key, b->h[l]);
        len[l] = format_u53(seed, num[l]), text[l] = num[l];
    }
    ug_hash64_update_lanes(b->h, b->n, text, len); /* the digits, the lanes side by side */
    for (size_t l = 0; l < b->n; l++)
        heap_offer(g, ug_hash64_finish(ug_hash64_jump_apply(&e->vend, b->h[l])), b->point[l]);
    b->n = 0;
}

/* The jump over a param value's text with its key and leading comma. */
typedef ug_hash64_jump fragment;

static void free_fragments(const ug_grid *g, fragment **frag)
{
    for (size_t s = 0; frag && s < g->n_params && frag[s]; s++) free(frag[s]);
    free(frag);
}

/* The jump over param s (in key order) at value v, with its leading comma: frag[s][v]
 * (NULL without memory). */
static fragment **param_fragments(const ug_grid *g)
{
    fragment **frag = calloc(g->n_params + 1, sizeof *frag);
    for (size_t s = 0; frag && s < g->n_params; s++) {
        size_t a = g->order[s];
        if (!(frag[s] = malloc(g->size[2 + a] * sizeof **frag))) return free_fragments(g, frag), NULL;
        for (size_t v = 0; v < g->size[2 + a]; v++) {
            size_t n = strlen(g->key_txt[a]) + strlen(g->value_txt[a][v]) + 3;
            char *txt = malloc(n);
            if (!txt) return free_fragments(g, frag), NULL;
            int len = snprintf(txt, n, "%s%s:%s", s ? "," : "", g->key_txt[a], g->value_txt[a][v]);
            ug_hash64_jump_make(&frag[s][v], txt, (size_t)len);
            free(txt);
        }
    }
    return frag;
}

/* Every point's ID, the `keep` smallest kept: for each (dtype, dist) row an odometer over
 * the params in key order (the last fastest), the hash state after param s kept in
 * state[s + 1], so a point hashes only the params that changed. */
static int all_ids(ug_grid *g, fragment **frag)
{
    size_t np = g->n_params, stride[MAX_AXES], pick[MAX_AXES];
    uint64_t state[MAX_AXES + 1];
    endings e;
    char text[32];
    size_t tag_len = strlen(g->tag_txt), tail_len = tag_len + 10;
    char *tail = malloc(tail_len);
    if (!tail) return -1;
    snprintf(tail, tail_len, "},\"plan\":%s", g->tag_txt);
    ug_hash64_jump_make(&e.tail, tail, tail_len - 1);
    free(tail);
    ug_hash64_jump_make(&e.vend, text, (size_t)snprintf(text, sizeof text, ",\"v\":%d}", UG_SPEC_VERSION));
    ug_hash64_jump_make(&e.seed_key, ",\"seed\":", 8);
    stride[0] = 1;
    for (size_t i = 1; i < g->n_axes; i++) stride[i] = stride[i - 1] * g->size[i - 1];
    id_batch b = {.n = 0};
    for (size_t i = 0; i < g->size[0]; i++)
        for (size_t j = 0; j < g->size[1]; j++) {
            memset(pick, 0, sizeof pick);
            state[0] = prefix_state(g, i, j);
            for (size_t from = 0;;) { /* from: the first param whose value changed */
                for (size_t s = from; s < np; s++) { state[s + 1] = ug_hash64_jump_apply(&frag[s][pick[s]], state[s]); }
                size_t k = i + j * stride[1];
                for (size_t s = 0; s < np; s++) k += pick[s] * stride[2 + g->order[s]];
                b.h[b.n] = state[np], b.point[b.n++] = k;
                if (b.n == LANES) finish_batch(g, &e, &b);
                size_t s = np; /* the odometer's next reading */
                while (s > 0 && ++pick[s - 1] == g->size[2 + g->order[s - 1]]) pick[--s] = 0;
                if (s == 0) break;
                from = s - 1;
            }
        }
    if (b.n) finish_batch(g, &e, &b);
    return 0;
}

/* Computes the IDs keeping the `want` smallest (all when want >= the grid's size) and
 * sorts those. */
static int keep_smallest(ug_grid *g, size_t want)
{
    free(g->pts);
    g->n = 0;
    g->keep = want < g->total ? want : g->total;
    if (!(g->pts = malloc((g->keep ? g->keep : 1) * sizeof *g->pts))) return -1;
    fragment **frag = param_fragments(g);
    int rc = frag ? all_ids(g, frag) : -1;
    free_fragments(g, frag);
    if (!rc) qsort(g->pts, g->n, sizeof *g->pts, cmp_point);
    return rc;
}

/* Point k's seed, as finish_id derives it (for writing its text). */
static long long point_seed(ug_grid *g, size_t k)
{
    if (write_spec(g, k, -1)) return -1;
    return (long long)((ug_hash64(g->buf, g->len) ^ g->seed) & ((1ULL << 53) - 1));
}

/* The fragments of the dtype and dist axes (validated once each). */
static int open_fixed_axes(ug_grid *g, const cJSON *dists, const cJSON *dts, const cJSON *dnames, const char *where,
                           char *err, size_t errlen)
{
    g->size[0] = (size_t)cJSON_GetArraySize(dts);
    g->size[1] = (size_t)cJSON_GetArraySize(dnames);
    g->dtype_txt = calloc(g->size[0] + 1, sizeof(char *));
    g->dist_txt = calloc(g->size[1] + 1, sizeof(char *));
    if (!g->dtype_txt || !g->dist_txt) return snprintf(err, errlen, "out of memory expanding the plan"), -1;
    for (size_t i = 0; i < g->size[0]; i++) {
        const cJSON *dt = cJSON_GetArrayItem(dts, (int)i);
        if (!cJSON_IsString(dt)) return snprintf(err, errlen, "%s: grid \"dtype\" must hold strings", where), -2;
        if (ug_dtype_parse(dt->valuestring) < 0)
            return snprintf(err, errlen, "%s: unknown dtype \"%s\"", where, dt->valuestring), -2;
        if (!(g->dtype_txt[i] = canon_string(dt->valuestring))) return -1;
    }
    for (size_t i = 0; i < g->size[1]; i++) {
        const cJSON *dn = cJSON_GetArrayItem(dnames, (int)i);
        if (!cJSON_IsString(dn)) return snprintf(err, errlen, "%s: grid \"dist\" must hold strings", where), -2;
        const cJSON *dset = cJSON_GetObjectItemCaseSensitive(dists, dn->valuestring);
        if (!cJSON_IsObject(dset))
            return snprintf(err, errlen, "%s: unknown dist set \"%s\"", where, dn->valuestring), -2;
        for (const cJSON *d = dset->child; d; d = d->next)
            if (ug_dist_validate(d, err, errlen)) {
                char inner[256];
                snprintf(inner, sizeof inner, "%s", err);
                snprintf(err, errlen, "%s: dist set \"%s\", input \"%s\": %s", where, dn->valuestring, d->string,
                         inner);
                return -2;
            }
        if (!(g->dist_txt[i] = ug_json_canonical(dset))) return -1;
    }
    return 0;
}

/* The fragments of the param axes, and their sorted key order. */
static int open_param_axes(ug_grid *g, const cJSON *params, const char *where, char *err, size_t errlen)
{
    g->n_params = (size_t)cJSON_GetArraySize(params);
    if (g->n_params > MAX_AXES - 2) return snprintf(err, errlen, "%s: more than 32 param axes", where), -2;
    char *keys[MAX_AXES];
    size_t a = 0;
    for (const cJSON *ax = params->child; ax; ax = ax->next, a++) {
        if (!cJSON_IsArray(ax) || cJSON_GetArraySize(ax) == 0)
            return snprintf(err, errlen, "%s: grid param \"%s\" must be a non-empty array", where, ax->string), -2;
        g->size[2 + a] = (size_t)cJSON_GetArraySize(ax);
        g->key_txt[a] = canon_string(ax->string);
        g->value_txt[a] = calloc(g->size[2 + a] + 1, sizeof(char *));
        if (!g->key_txt[a] || !g->value_txt[a]) return snprintf(err, errlen, "out of memory expanding the plan"), -1;
        size_t v = 0;
        for (const cJSON *val = ax->child; val; val = val->next, v++)
            if (!(g->value_txt[a][v] = ug_json_canonical(val)))
                return snprintf(err, errlen, "%s: grid param \"%s\" holds a value JSON cannot carry", where,
                                ax->string),
                       -2;
        keys[a] = ax->string;
    }
    /* sorted order of the keys, as the canonical writer sorts them (strcmp) */
    char *sorted[MAX_AXES];
    memcpy(sorted, keys, g->n_params * sizeof *keys);
    qsort(sorted, g->n_params, sizeof *sorted, cmp_str);
    for (size_t s = 0; s < g->n_params; s++)
        for (size_t k = 0; k < g->n_params; k++)
            if (sorted[s] == keys[k]) g->order[s] = k;
    return 0;
}

int ug_grid_open(ug_grid *g, const char *op, const cJSON *dists, const cJSON *grid, const char *tag, uint64_t seed,
                 size_t max_points, size_t want, const char *where, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->seed = seed;
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(grid, "dtype");
    const cJSON *dnames = cJSON_GetObjectItemCaseSensitive(grid, "dist");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(grid, "params");
    if (!cJSON_IsArray(dts) || !cJSON_IsArray(dnames) || !cJSON_IsObject(params))
        return snprintf(err, errlen, "%s: \"grid\" needs arrays \"dtype\", \"dist\" and an object \"params\"", where),
               -2;
    g->dist_sets = dists;
    g->dtypes = dts, g->dists = dnames, g->params = params, g->op = op;
    int rc = open_fixed_axes(g, dists, dts, dnames, where, err, errlen);
    if (!rc) rc = open_param_axes(g, params, where, err, errlen);
    if (rc) return rc;
    g->n_axes = 2 + g->n_params;
    size_t total = 1;
    for (size_t i = 0; i < g->n_axes && total <= max_points; i++) total *= g->size[i];
    if (total > max_points || total == 0)
        return snprintf(err, errlen, "%s: grid has %zu points (must be 1..%zu)", where, total, max_points), -2;
    g->total = total;
    if (!(g->op_txt = canon_string(op)) || !(g->tag_txt = canon_string(tag)) || keep_smallest(g, want))
        return snprintf(err, errlen, "out of memory expanding the plan"), -1;
    return 0;
}

int ug_grid_keep(ug_grid *g, size_t want) { return want <= g->n ? 0 : keep_smallest(g, want); }

char *ug_grid_spec(ug_grid *g, size_t k, char *err, size_t errlen)
{
    long long seed = point_seed(g, g->pts[k].point);
    if (seed < 0 || write_spec(g, g->pts[k].point, seed)) {
        snprintf(err, errlen, "out of memory expanding the plan");
        return NULL;
    }
    char id[UG_ID_LEN + 1], want[UG_ID_LEN + 1];
    ug_spec_id_of(g->buf, id);
    ug_grid_id(g, k, want);
    if (strcmp(id, want) != 0) { /* the hashed fragments and the written text disagree */
        snprintf(err, errlen, "plan grid: case %s was written as %s (internal error: please report)", want, id);
        return NULL;
    }
    return strdup(g->buf);
}

/* Item i of array a (the grid's axes are short). */
static const cJSON *nth(const cJSON *a, size_t i)
{
    const cJSON *c = a->child;
    while (c && i--) c = c->next;
    return c;
}

cJSON *ug_grid_spec_json(const ug_grid *g, size_t k)
{
    size_t pick[MAX_AXES];
    decode(g, g->pts[k].point, pick);
    cJSON *s = cJSON_CreateObject(), *params = cJSON_CreateObject();
    const cJSON *dtype = nth(g->dtypes, pick[0]);
    const cJSON *dset = cJSON_GetObjectItemCaseSensitive(g->dist_sets, nth(g->dists, pick[1])->valuestring);
    int ok = s && params && cJSON_AddItemToObject(s, "params", params);
    if (!ok) cJSON_Delete(params);
    ok = ok && cJSON_AddStringToObject(s, "op", g->op) && cJSON_AddItemReferenceToObject(s, "dtype", (cJSON *)dtype) &&
         cJSON_AddItemReferenceToObject(s, "dist", (cJSON *)dset);
    size_t a = 0;
    for (const cJSON *ax = g->params->child; ok && ax; ax = ax->next, a++)
        ok = cJSON_AddItemReferenceToObject(params, ax->string, (cJSON *)nth(ax, pick[2 + a]));
    if (!ok) cJSON_Delete(s);
    return ok ? s : NULL;
}

void ug_grid_id(const ug_grid *g, size_t k, char id[UG_ID_LEN + 1])
{
    snprintf(id, UG_ID_LEN + 1, "%016llx", (unsigned long long)g->pts[k].id);
}

void ug_grid_close(ug_grid *g)
{
    for (size_t i = 0; g->dtype_txt && g->dtype_txt[i]; i++) free(g->dtype_txt[i]);
    for (size_t i = 0; g->dist_txt && g->dist_txt[i]; i++) free(g->dist_txt[i]);
    for (size_t a = 0; a < g->n_params; a++) {
        for (size_t v = 0; g->value_txt[a] && g->value_txt[a][v]; v++) free(g->value_txt[a][v]);
        free(g->value_txt[a]);
        free(g->key_txt[a]);
    }
    free(g->dtype_txt), free(g->dist_txt), free(g->op_txt), free(g->tag_txt), free(g->pts), free(g->buf);
    memset(g, 0, sizeof *g);
}
