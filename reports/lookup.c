/* lookup.c — what the report writers share (formats.h): a run's failures and changes by
 * case ID, the changes of one kind in the order the reports list them, numbers and
 * headroom as text, and a case's readable test name. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "reports/formats.h"

static int by_failure_id(const void *a, const void *b)
{
    return strcmp((*(const ug_failure *const *)a)->case_id, (*(const ug_failure *const *)b)->case_id);
}

static int by_change_id(const void *a, const void *b)
{
    return strcmp((*(const ug_report_change *const *)a)->case_id, (*(const ug_report_change *const *)b)->case_id);
}

int ug_report_index_build(const ug_report *r, ug_report_index *ix)
{
    memset(ix, 0, sizeof *ix);
    if (r->failures.n && !(ix->fail = malloc(r->failures.n * sizeof *ix->fail))) return -1;
    if (r->n_changes && !(ix->chg = malloc(r->n_changes * sizeof *ix->chg))) {
        ug_report_index_free(ix);
        return -1;
    }
    for (size_t i = 0; i < r->failures.n; i++) ix->fail[ix->n_fail++] = &r->failures.v[i];
    for (size_t i = 0; i < r->n_changes; i++) ix->chg[ix->n_chg++] = &r->changes[i];
    if (ix->n_fail) qsort(ix->fail, ix->n_fail, sizeof *ix->fail, by_failure_id);
    if (ix->n_chg) qsort(ix->chg, ix->n_chg, sizeof *ix->chg, by_change_id);
    return 0;
}

void ug_report_index_free(ug_report_index *ix)
{
    free(ix->fail);
    free(ix->chg);
    memset(ix, 0, sizeof *ix);
}

const ug_failure *ug_report_index_failure(const ug_report_index *ix, const char *case_id)
{
    if (!ix->n_fail || !case_id) return NULL;
    ug_failure key = {.case_id = (char *)case_id};
    const ug_failure *k = &key, *const *hit = bsearch(&k, ix->fail, ix->n_fail, sizeof *ix->fail, by_failure_id);
    return hit ? *hit : NULL;
}

const ug_report_change *ug_report_index_change(const ug_report_index *ix, const char *case_id)
{
    if (!ix->n_chg || !case_id) return NULL;
    ug_report_change key;
    snprintf(key.case_id, sizeof key.case_id, "%s", case_id);
    const ug_report_change *k = &key, *const *hit = bsearch(&k, ix->chg, ix->n_chg, sizeof *ix->chg, by_change_id);
    return hit ? *hit : NULL;
}

/* Sorting the changes of one kind needs the index (severities); qsort has no context. */
static const ug_report_index *sort_ix;

static double change_severity(const ug_report_change *c)
{
    const ug_failure *x = ug_report_index_failure(sort_ix, c->case_id);
    return x ? x->severity : 0.0;
}

/* A larger figure first (NaN last), then by op and case ID. */
static int larger_first(double a, double b)
{
    if (isnan(a) != isnan(b)) return isnan(a) ? 1 : -1;
    return a > b ? -1 : a < b ? 1 : 0;
}

static int by_op_id(const ug_report_change *x, const ug_report_change *y)
{
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return strcmp(x->case_id, y->case_id);
}

static int by_order(const void *a, const void *b)
{
    const ug_report_change *x = *(const ug_report_change *const *)a, *y = *(const ug_report_change *const *)b;
    int c = 0;
    if (x->kind == UG_CHANGE_NEW_FAIL || x->kind == UG_CHANGE_STILL_FAILING)
        c = larger_first(change_severity(x), change_severity(y));
    else if (x->kind == UG_CHANGE_DRIFT)
        c = larger_first(x->used_b, y->used_b);
    return c ? c : by_op_id(x, y);
}

const ug_report_change **ug_report_changes_of(const ug_report *r, const ug_report_index *ix, ug_change k, size_t *n)
{
    *n = 0;
    size_t m = 0;
    for (size_t i = 0; i < r->n_changes; i++) m += r->changes[i].kind == k;
    const ug_report_change **v = m ? malloc(m * sizeof *v) : NULL;
    if (!v) return NULL;
    for (size_t i = 0; i < r->n_changes; i++)
        if (r->changes[i].kind == k) v[(*n)++] = &r->changes[i];
    sort_ix = ix;
    qsort(v, *n, sizeof *v, by_order);
    sort_ix = NULL;
    return v;
}

const char *ug_report_num(double x, char buf[32])
{
    if (isnan(x)) return strcpy(buf, "nan");
    if (isinf(x)) return strcpy(buf, x > 0 ? "inf" : "-inf");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    return buf;
}

const char *ug_report_used_text(double used, const char *none, char buf[32])
{
    if (isnan(used))
        snprintf(buf, 32, "%s", none);
    else if (isinf(used))
        snprintf(buf, 32, "∞");
    else
        snprintf(buf, 32, "%.3g", used);
    return buf;
}

/* ---- a case's readable name ---- */

typedef struct {
    char *buf;
    size_t len, n;
} name_buf;

/* Appends s when the whole of it fits in the name's readable part (limit bytes): 1, else 0. */
static int put(name_buf *b, const char *s, size_t limit)
{
    size_t k = strlen(s);
    if (b->n + k > limit || b->n + k >= b->len) return 0;
    memcpy(b->buf + b->n, s, k + 1);
    b->n += k;
    return 1;
}

/* A list of items as its first three and its length: "4,41,78,…(120)"; short lists whole. */
static void abbreviate(const char *items, size_t count, char *out, size_t len)
{
    if (count <= 4) {
        snprintf(out, len, "%s", items);
        return;
    }
    const char *p = items;
    for (int commas = 0; *p && commas < 3; p++) commas += *p == ',';
    snprintf(out, len, "%.*s…(%zu)", (int)(p - items), items, count);
}

/* One param's value as a name shows it: lists (a JSON array, or a string of comma-separated
 * entries as plans write them) abbreviated, other long text cut. */
static void param_text(const cJSON *p, char *out, size_t len)
{
    char *v = cJSON_IsString(p) ? strdup(p->valuestring) : cJSON_PrintUnformatted(p);
    if (!v) {
        snprintf(out, len, "?");
        return;
    }
    char *items = v;
    size_t count = 1, vl = strlen(v);
    if (cJSON_IsArray(p) && vl >= 2) { /* "[1,2,3]": the items inside the brackets */
        v[vl - 1] = 0;
        items = v + 1;
        count = (size_t)cJSON_GetArraySize(p);
    } else
        for (const char *q = v; *q; q++) count += *q == ',';
    if (count > 1 || !cJSON_IsString(p))
        abbreviate(items, count, out, len);
    else if (vl > 24)
        snprintf(out, len, "%.20s…", v);
    else
        snprintf(out, len, "%s", v);
    free(v);
}

/* Appends " name=value" of param p; 0 when it did not fit (the name then ends with " …"). */
static int put_param(name_buf *b, const cJSON *p, size_t limit)
{
    char one[160], val[128];
    param_text(p, val, sizeof val);
    snprintf(one, sizeof one, " %s=%s", p->string ? p->string : "?", val);
    if (put(b, one, limit - 4)) return 1; /* room kept for " …" */
    put(b, " …", limit);
    return 0;
}

/* Whether decl declares a param called name. */
static int declared(const ug_op_decl *decl, const char *name)
{
    for (const ug_param_decl *d = decl ? decl->params : NULL; d && d->name; d++)
        if (name && strcmp(d->name, name) == 0) return 1;
    return 0;
}

void ug_report_case_name(const char *dtype, const char *spec_json, const char *case_id, char *buf, size_t len)
{
    enum { READABLE = 100 }; /* bytes of dtype and params; with " [ID]" the name stays under ~120 */
    name_buf b = {buf, len, 0};
    if (!len) return;
    buf[0] = 0;
    put(&b, dtype && *dtype ? dtype : "?", READABLE);
    cJSON *spec = cJSON_Parse(spec_json ? spec_json : "");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(spec, "params"),
                *op = cJSON_GetObjectItemCaseSensitive(spec, "op");
    const ug_op_def *def = cJSON_IsString(op) ? ug_op_def_get(ug_op_find(op->valuestring)) : NULL;
    const ug_op_decl *decl = def ? &def->decl : NULL;
    int fits = cJSON_IsObject(params);
    /* the declaration's order first (rows before cols, as the op is described), then any other */
    for (const ug_param_decl *d = decl ? decl->params : NULL; fits && d && d->name; d++) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(params, d->name);
        if (p) fits = put_param(&b, p, READABLE);
    }
    for (const cJSON *p = fits ? params->child : NULL; fits && p; p = p->next)
        if (!declared(decl, p->string)) fits = put_param(&b, p, READABLE);
    cJSON_Delete(spec);
    char id[64];
    snprintf(id, sizeof id, " [%.40s]", case_id ? case_id : "");
    if (b.n + strlen(id) < len) strcat(buf, id);
}
