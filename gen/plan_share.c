/* plan_share.c — the stratified share of a plan (plan_share.h says what it keeps). Each
 * op's cases are parsed once; coverage is tracked with small string sets (an op has a
 * handful of dtypes, distribution sets and param values) and per-param extremes. */
#include "gen/plan_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define MAX_CATEGORIES 8 /* a string param with more distinct values is not covered value by value */

/* One case of the op being reduced: its index in the plan and the parsed spec. */
typedef struct {
    size_t at;
    cJSON *spec;
    int keep;
} share_case;

/* Keeps the first case whose `key` text (a dtype, a distribution set, "param=value") is
 * not kept yet: one pass over the op's cases per coverage kind. */
static void keep_first_of_each(share_case *c, size_t n, char *(*key)(const cJSON *spec, const char *name),
                               const char *name)
{
    char **seen = NULL;
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        char *k = key(c[i].spec, name);
        if (!k) continue;
        size_t j = 0;
        while (j < n_seen && strcmp(seen[j], k)) j++;
        if (j < n_seen || n_seen == MAX_CATEGORIES * 4) {
            free(k);
            continue;
        }
        char **grown = realloc(seen, (n_seen + 1) * sizeof *seen);
        if (!grown) {
            free(k);
            break;
        }
        seen = grown;
        seen[n_seen++] = k;
        c[i].keep = 1;
    }
    for (size_t j = 0; j < n_seen; j++) free(seen[j]);
    free(seen);
}

static char *dtype_key(const cJSON *spec, const char *name)
{
    (void)name;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "dtype");
    return cJSON_IsString(d) ? strdup(d->valuestring) : NULL;
}

static char *dist_key(const cJSON *spec, const char *name)
{
    (void)name;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "dist");
    return d ? cJSON_PrintUnformatted(d) : NULL;
}

/* A string (or list) param's value, as text. */
static char *param_text_key(const cJSON *spec, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "params"), name);
    return v && !cJSON_IsNumber(v) ? cJSON_PrintUnformatted(v) : NULL;
}

/* How many distinct text values param `name` takes over the op's cases (counting stops
 * past MAX_CATEGORIES). */
static size_t text_values(share_case *c, size_t n, const char *name)
{
    char *seen[MAX_CATEGORIES + 1];
    size_t n_seen = 0;
    for (size_t i = 0; i < n && n_seen <= MAX_CATEGORIES; i++) {
        char *k = param_text_key(c[i].spec, name);
        if (!k) continue;
        size_t j = 0;
        while (j < n_seen && strcmp(seen[j], k)) j++;
        if (j < n_seen)
            free(k);
        else
            seen[n_seen++] = k;
    }
    for (size_t j = 0; j < n_seen; j++) free(seen[j]);
    return n_seen;
}

static const cJSON *param(const cJSON *spec, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "params"), name);
}

/* Keeps the first case with the smallest and the first with the largest value of a
 * numeric param. */
static void keep_extremes(share_case *c, size_t n, const char *name)
{
    size_t lo = n, hi = n;
    for (size_t i = 0; i < n; i++) {
        const cJSON *v = param(c[i].spec, name);
        if (!cJSON_IsNumber(v)) continue;
        if (lo == n || v->valuedouble < param(c[lo].spec, name)->valuedouble) lo = i;
        if (hi == n || v->valuedouble > param(c[hi].spec, name)->valuedouble) hi = i;
    }
    if (lo < n) c[lo].keep = 1;
    if (hi < n) c[hi].keep = 1;
}

/* Covers one param: its extremes when numeric, each of its values when it takes few. */
static void keep_param(share_case *c, size_t n, const char *name)
{
    keep_extremes(c, n, name);
    if (text_values(c, n, name) <= MAX_CATEGORIES) keep_first_of_each(c, n, param_text_key, name);
}

/* Calls keep_param once for every param name any case uses. */
static void keep_params(share_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(c[i].spec, "params")->child; p; p = p->next) {
            size_t j = 0;
            while (j < i && !param(c[j].spec, p->string)) j++;
            if (j == i) keep_param(c, n, p->string); /* first case naming it */
        }
}

/* Marks what items 1-3 of plan_share.h keep, then spaces the rest out up to per_op. */
static void choose(const ug_plan *plan, share_case *c, size_t n, size_t per_op)
{
    for (size_t i = 0; i < n; i++) c[i].keep = plan->cases[c[i].at].required;
    keep_first_of_each(c, n, dtype_key, NULL);
    keep_first_of_each(c, n, dist_key, NULL);
    keep_params(c, n);
    size_t kept = 0, rest = 0;
    for (size_t i = 0; i < n; i++) kept += c[i].keep;
    rest = n - kept;
    size_t want = per_op > kept ? per_op - kept : 0;
    if (want > rest) want = rest;
    for (size_t j = 0, r = 0, i = 0; j < want; j++) { /* the (j*rest/want)-th of the rest */
        size_t target = j * rest / want;
        for (; i < n; i++) {
            if (c[i].keep) continue;
            if (r++ == target) {
                c[i++].keep = 2;
                break;
            }
        }
    }
}

/* Reduces the cases of op in place (their relative order kept); 0 or -1. */
static int stratify_op(ug_plan *plan, int op, size_t per_op, unsigned char *drop, char *err, size_t errlen)
{
    size_t n = 0;
    for (size_t i = 0; i < plan->n; i++) n += plan->cases[i].op == op;
    if (n <= per_op) return 0;
    share_case *c = calloc(n, sizeof *c);
    if (!c) return snprintf(err, errlen, "out of memory choosing the plan share"), -1;
    int rc = 0;
    for (size_t i = 0, k = 0; i < plan->n && !rc; i++) {
        if (plan->cases[i].op != op) continue;
        c[k].at = i;
        c[k].spec = cJSON_Parse(plan->cases[i].spec);
        if (!c[k].spec || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c[k].spec, "params"))) {
            snprintf(err, errlen, "plan share: case %s has no parsable spec with params", plan->cases[i].id);
            rc = -1;
        }
        k++;
    }
    if (!rc) choose(plan, c, n, per_op);
    for (size_t k = 0; k < n; k++) {
        drop[c[k].at] = !c[k].keep;
        cJSON_Delete(c[k].spec);
    }
    free(c);
    return rc;
}

int ug_plan_stratify(ug_plan *plan, size_t per_op, char *err, size_t errlen)
{
    if (per_op == 0) return 0;
    unsigned char *drop = calloc(plan->n + 1, 1);
    if (!drop) return snprintf(err, errlen, "out of memory choosing the plan share"), -1;
    int rc = 0;
    for (int op = 0; op < UG_OP_COUNT && !rc; op++) rc = stratify_op(plan, op, per_op, drop, err, errlen);
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (!rc && drop[i]) {
            free(plan->cases[i].spec), free(plan->cases[i].source);
            continue;
        }
        plan->cases[w++] = plan->cases[i];
    }
    plan->n = w;
    free(drop);
    return rc;
}

long ug_plan_share_from_env(char *err, size_t errlen)
{
    const char *v = getenv("ULPGYM_PLAN_SHARE");
    if (!v || !*v) return UG_SHARE_PER_OP;
    if (!strcmp(v, "full")) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n <= 0) {
        snprintf(err, errlen, "ULPGYM_PLAN_SHARE=%s: use \"full\" or a positive number of cases per op", v);
        return -1;
    }
    return n;
}
