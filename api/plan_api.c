/* plan_api.c — libulpgym's catalogue side: version, the cases of a plan, a case by its ID,
 * an op's contract, element conversions, and the error convention every api/ file uses
 * (ulpgym/ulpgym.h). */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/internal.h"
#include "core/dtype.h"
#include "core/paths.h"
#include "gen/plan.h"
#include "run/find_case.h"
#include "run/found.h"
#include "run/op_contract.h"

int api_fail(char **err, const char *fmt, ...)
{
    if (!err) return -2;
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *err = strdup(buf);
    return -2;
}

char *api_print(cJSON *j, char **err)
{
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text) api_fail(err, "out of memory");
    return text;
}

cJSON *api_parse_object(const char *what, const char *query_json, const char *const *allowed, char **err)
{
    cJSON *j = query_json ? cJSON_Parse(query_json) : cJSON_CreateObject();
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        api_fail(err, "%s: not a JSON object", what);
        return NULL;
    }
    for (const cJSON *k = j->child; k; k = k->next) {
        int known = 0;
        for (int i = 0; allowed[i] && !known; i++) known = strcmp(k->string, allowed[i]) == 0;
        if (!known) {
            api_fail(err, "%s: unknown key \"%s\"", what, k->string);
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

int ulpgym_api_version(void) { return ULPGYM_API_VERSION; }

const char *ulpgym_version(void) { return ug_version_line(); }

void ulpgym_free(void *p) { free(p); }

/* names: a string or an array of strings, each found by find (ug_op_find / ug_group_find);
 * sets mark[index] = 1. 0, or -2 naming the unknown one. */
static int mark_names(const cJSON *names, const char *what, int (*find)(const char *), unsigned char *mark, char **err)
{
    const cJSON *one = cJSON_IsString(names) ? names : NULL, *e = one ? one : names ? names->child : NULL;
    if (names && !one && !cJSON_IsArray(names)) return api_fail(err, "\"%ss\": give a name or a list of names", what);
    for (; e; e = one ? NULL : e->next) {
        int k = cJSON_IsString(e) ? find(e->valuestring) : -1;
        if (k < 0)
            return api_fail(err, "unknown %s \"%s\" (see `ulpgym ops`)", what,
                            cJSON_IsString(e) ? e->valuestring : "?");
        mark[k] = 1;
    }
    return 0;
}

/* A non-negative integer key of q (absent: def). -2 when it is something else. */
static int int_key(const cJSON *q, const char *key, long long def, long long *out, char **err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9e15)
        return api_fail(err, "\"%s\" takes a non-negative integer", key);
    *out = (long long)v->valuedouble;
    return 0;
}

static cJSON *case_entry(const ug_plan_case *pc)
{
    cJSON *e = cJSON_CreateObject(), *spec = cJSON_Parse(pc->spec);
    cJSON_AddStringToObject(e, "id", pc->id);
    cJSON_AddStringToObject(e, "op", ug_op_name(pc->op));
    cJSON_AddStringToObject(e, "group", ug_group_name(ug_op_group(pc->op)));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(spec, "dtype");
    cJSON_AddStringToObject(e, "dtype", cJSON_IsString(dt) ? dt->valuestring : "");
    cJSON_AddItemToObject(e, "params", cJSON_DetachItemFromObjectCaseSensitive(spec, "params"));
    cJSON_AddStringToObject(e, "spec", pc->spec);
    cJSON_AddStringToObject(e, "origin", pc->origin ? pc->origin : "plan");
    if (pc->source) cJSON_AddStringToObject(e, "source", pc->source);
    cJSON_AddBoolToObject(e, "heavy", pc->heavy);
    cJSON_AddBoolToObject(e, "required", pc->required);
    cJSON_Delete(spec);
    return e;
}

static char *plan_json(const ug_plan *p, const char *path, char **err)
{
    cJSON *j = cJSON_CreateObject(), *info = cJSON_AddObjectToObject(j, "plan");
    char abs[PATH_MAX + 16];
    ug_plan_absolute(path, abs, sizeof abs);
    cJSON_AddStringToObject(info, "name", p->name);
    cJSON_AddNumberToObject(info, "version", p->version);
    cJSON_AddStringToObject(info, "hash", p->hash);
    cJSON_AddStringToObject(info, "path", abs);
    cJSON *cases = cJSON_AddArrayToObject(j, "cases");
    for (size_t i = 0; i < p->n; i++) cJSON_AddItemToArray(cases, case_entry(&p->cases[i]));
    return api_print(j, err);
}

char *ulpgym_plan_cases(const char *query_json, char **err)
{
    static const char *const keys[] = {"plan", "ops", "groups", "limit", "per_op", "seed", "regressions", NULL};
    cJSON *q = api_parse_object("plan query", query_json, keys, err);
    if (!q) return NULL;
    unsigned char ops[UG_OP_COUNT] = {0}, groups[UG_GROUP_COUNT] = {0};
    const cJSON *plan = cJSON_GetObjectItemCaseSensitive(q, "plan"), *opl = cJSON_GetObjectItemCaseSensitive(q, "ops");
    const cJSON *grl = cJSON_GetObjectItemCaseSensitive(q, "groups");
    long long limit, per_op, seed;
    int bad =
        (plan && !cJSON_IsNull(plan) && !cJSON_IsString(plan) && api_fail(err, "\"plan\" takes a name or a path")) ||
        mark_names(opl, "op", ug_op_find, ops, err) || mark_names(grl, "group", ug_group_find, groups, err) ||
        int_key(q, "limit", 0, &limit, err) || int_key(q, "per_op", 0, &per_op, err) ||
        int_key(q, "seed", -1, &seed, err);
    unsigned gmask = 0;
    for (int g = 0; g < UG_GROUP_COUNT; g++) gmask |= (unsigned)groups[g] << g;
    const char *path = cJSON_IsString(plan) ? plan->valuestring : ug_plan_default_path();
    int regressions = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "regressions"));
    ug_plan p;
    char perr[1024];
    char *out = NULL;
    if (!bad && ug_plan_load_only(path, seed, opl ? ops : NULL, gmask, &p, perr, sizeof perr) == 0) {
        if (regressions) ug_found_append(&p, opl ? ops : NULL, gmask);
        ug_plan_keep_first(&p, (long)per_op, (long)limit);
        out = plan_json(&p, path, err);
        ug_plan_free(&p);
    } else if (!bad) {
        api_fail(err, "%s", perr);
    }
    cJSON_Delete(q);
    return out;
}

char *ulpgym_find_case(const char *id, const char *db_path, const char *plan, char **err)
{
    if (!id) return api_fail(err, "give a case ID"), NULL;
    ug_db *db = NULL;
    char msg[1400], found[UG_ID_LEN + 1];
    if (db_path && access(db_path, F_OK) == 0 && ug_db_open(db_path, UG_DB_READONLY, &db, msg, sizeof msg))
        return api_fail(err, "%s", msg), NULL;
    char *spec = NULL;
    if (ug_find_case(db, plan, id, found, &spec, NULL, msg, sizeof msg)) api_fail(err, "%s", msg);
    ug_db_close(db);
    return spec;
}

char *ulpgym_op_contract(const char *op, char **err)
{
    int k = op ? ug_op_find(op) : -1;
    if (k < 0) return api_fail(err, "unknown op \"%s\" (see `ulpgym ops`)", op ? op : ""), NULL;
    return api_print(ug_op_contract_json(k, 1), err);
}

int ulpgym_encode(const char *dtype, const double *values, size_t n, void *out, char **err)
{
    int dt = dtype ? ug_dtype_parse(dtype) : -1;
    if (dt < 0) return api_fail(err, "unknown dtype \"%s\"", dtype ? dtype : "");
    for (size_t i = 0; i < n; i++) ug_dtype_store((ug_dtype)dt, out, i, values[i]); /* rounds: RNE to dt, once */
    return 0;
}

int ulpgym_decode(const char *dtype, const void *data, size_t n, double *values, char **err)
{
    int dt = dtype ? ug_dtype_parse(dtype) : -1;
    if (dt < 0) return api_fail(err, "unknown dtype \"%s\"", dtype ? dtype : "");
    for (size_t i = 0; i < n; i++) values[i] = ug_dtype_load((ug_dtype)dt, data, i); /* exact */
    return 0;
}
