/* spec.c — parsing, validation and identity of case specs (see spec.h). */
#include "core/spec.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "core/ops.h"
#include "core/utf8.h"

void ug_spec_id_of(const char *canonical, char id[UG_ID_LEN + 1])
{
    snprintf(id, UG_ID_LEN + 1, "%016llx", (unsigned long long)ug_hash64(canonical, strlen(canonical)));
}

int ug_case_id_prefix_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 6 || n > UG_ID_LEN) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* What is wrong with the first key or string value in j that is not plain text (a
 * control character, which a pasted reproduce line or a report must not carry, or bytes
 * that are not UTF-8, which make a JSON report invalid): NULL if none. */
static const char *text_problem(const cJSON *j)
{
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
        const char *bad = ug_utf8_plain_problem(c->string);
        if (!bad && cJSON_IsString(c)) bad = ug_utf8_plain_problem(c->valuestring);
        if (!bad) bad = text_problem(c);
        if (bad) return bad;
    }
    return NULL;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A key that appears twice in object j (cJSON keeps both; a lookup sees the first only). */
static const char *duplicate_in(const cJSON *j)
{
    size_t n = 0, k = 0;
    for (const cJSON *c = j->child; c; c = c->next) n++;
    if (n < 2) return NULL;
    if (n <= 16) { /* pairwise */
        for (const cJSON *a = j->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (a->string && b->string && strcmp(a->string, b->string) == 0) return a->string;
        return NULL;
    }
    const char **names = malloc(n * sizeof *names), *dup = NULL;
    if (!names) return NULL;
    for (const cJSON *c = j->child; c; c = c->next) names[k++] = c->string ? c->string : "";
    qsort(names, n, sizeof *names, cmp_name);
    for (k = 1; k < n && !dup; k++)
        if (strcmp(names[k - 1], names[k]) == 0) dup = names[k];
    free(names);
    return dup;
}

const char *ug_json_duplicate_key(const cJSON *j, int deep)
{
    const char *dup = cJSON_IsObject(j) ? duplicate_in(j) : NULL;
    for (const cJSON *c = j && deep ? j->child : NULL; c && !dup; c = c->next) dup = ug_json_duplicate_key(c, 1);
    return dup;
}

/* The first top-level key of a spec that is none of its fields, or NULL. */
static const char *unknown_field(const cJSON *json)
{
    static const char *const known[] = {"v", "op", "dtype", "params", "dist", "seed", "plan", "inject"};
    for (const cJSON *c = json->child; c; c = c->next) {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(c->string, known[k])) k++;
        if (k == sizeof known / sizeof *known) return c->string;
    }
    return NULL;
}

/* The checks of a spec's whole text: plain strings, no key twice, no unknown field. */
static int check_texts(const cJSON *json, char *err, size_t errlen)
{
    const char *bad = text_problem(json), *dup = bad ? NULL : ug_json_duplicate_key(json, 1);
    const char *unknown = bad || dup ? NULL : unknown_field(json);
    char shown[128];
    ug_utf8_sanitize(dup ? dup : unknown ? unknown : "", shown, sizeof shown); /* the spec's own text, printed safe */
    if (bad)
        snprintf(err, errlen, "case spec: a key or string %s", bad);
    else if (dup)
        snprintf(err, errlen, "case spec: key \"%s\" appears twice in one object", shown);
    else if (unknown)
        snprintf(err, errlen,
                 "case spec: unknown field \"%s\" (a spec has v, op, dtype, params, dist, seed, plan "
                 "and inject)",
                 shown);
    return bad || dup || unknown ? -2 : 0;
}

int ug_spec_from_json(cJSON *json, ug_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->json = json;
    if (!cJSON_IsObject(json)) {
        snprintf(err, errlen, "case spec is not a JSON object");
        goto fail;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "v");
    if (v && !(cJSON_IsNumber(v) && v->valuedouble == UG_SPEC_VERSION)) {
        snprintf(err, errlen, "case spec: field \"v\" (spec version) must be %d, the version this ulpgym reads",
                 UG_SPEC_VERSION);
        goto fail;
    }
    if (check_texts(json, err, errlen)) goto fail;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(json, "op");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(json, "dtype");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(json, "seed");
    out->params = cJSON_GetObjectItemCaseSensitive(json, "params");
    out->dist = cJSON_GetObjectItemCaseSensitive(json, "dist");
    if (!cJSON_IsString(op)) {
        snprintf(err, errlen, "case spec: field \"op\" is missing or not a string");
        goto fail;
    }
    out->op = ug_op_find(op->valuestring);
    if (out->op < 0) {
        snprintf(err, errlen, "case spec: unknown op \"%s\" (see `ulpgym ops`)", op->valuestring);
        goto fail;
    }
    if (!ug_op_def_get(out->op)) {
        snprintf(err, errlen, "case spec: op \"%s\" is not implemented yet", op->valuestring);
        goto fail;
    }
    if (!cJSON_IsString(dt) || ug_dtype_parse(dt->valuestring) < 0) {
        snprintf(err, errlen, "case spec: field \"dtype\" is missing or not a known dtype");
        goto fail;
    }
    out->dtype = (ug_dtype)ug_dtype_parse(dt->valuestring);
    if (!cJSON_IsObject(out->params)) {
        snprintf(err, errlen, "case spec: field \"params\" is missing or not an object");
        goto fail;
    }
    if (!cJSON_IsObject(out->dist)) {
        snprintf(err, errlen, "case spec: field \"dist\" is missing or not an object");
        goto fail;
    }
    if (!cJSON_IsNumber(seed) || seed->valuedouble < 0 || seed->valuedouble >= 0x1p53 ||
        seed->valuedouble != floor(seed->valuedouble)) {
        snprintf(err, errlen, "case spec: field \"seed\" must be an integer in [0, 2^53)");
        goto fail;
    }
    out->seed = (uint64_t)seed->valuedouble;
    out->canonical = ug_json_canonical(json);
    if (!out->canonical) {
        snprintf(err, errlen, "case spec: holds a non-finite number or memory ran out");
        goto fail;
    }
    ug_spec_id_of(out->canonical, out->id);
    return 0;
fail:
    cJSON_Delete(json);
    memset(out, 0, sizeof *out);
    return -2;
}

int ug_json_has_nul_escape(const char *text)
{
    for (const char *p = text; *p; p++)
        if (*p == '\\') {
            if (strncmp(p + 1, "u0000", 5) == 0) return 1;
            if (!*++p) break; /* skip the escaped character */
        }
    return 0;
}

int ug_spec_parse(const char *text, ug_spec *out, char *err, size_t errlen)
{
    /* the whole text is one JSON value (no trailing bytes), and no \u0000 escape */
    int nul = ug_json_has_nul_escape(text);
    cJSON *json = nul ? NULL : cJSON_ParseWithOpts(text, NULL, 1);
    if (!json) {
        memset(out, 0, sizeof *out);
        snprintf(err, errlen,
                 nul ? "case spec holds a \\u0000 escape" : "case spec is not valid JSON (or has bytes after its end)");
        return -2;
    }
    return ug_spec_from_json(json, out, err, errlen);
}

void ug_spec_free(ug_spec *s)
{
    if (!s) return;
    cJSON_Delete(s->json);
    free(s->canonical);
    memset(s, 0, sizeof *s);
}

int ug_param_num(const cJSON *params, const char *key, double def, double *out, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(it)) {
        snprintf(err, errlen, "param \"%s\" must be a number", key);
        return -2;
    }
    *out = it->valuedouble;
    return 0;
}

int ug_param_int(const cJSON *params, const char *key, long def, long *out, char *err, size_t errlen)
{
    double d;
    if (ug_param_num(params, key, (double)def, &d, err, errlen)) return -2;
    if (d != floor(d) || fabs(d) > 0x1p53) {
        snprintf(err, errlen, "param \"%s\" must be an integer", key);
        return -2;
    }
    *out = (long)d;
    return 0;
}

int ug_param_str(const cJSON *params, const char *key, const char *def, const char **out, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsString(it)) {
        snprintf(err, errlen, "param \"%s\" must be a string", key);
        return -2;
    }
    *out = it->valuestring;
    return 0;
}
