/* failures.c — a run's failing cases read from the database and ranked by severity (see
 * failures.h): worded by oracles/figure.h, read through db/query_failures.h. */
#include "reports/failures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "oracles/figure.h"

int ug_failure_id_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n == UG_ID_LEN;
}

/* s as valid UTF-8 (malloc'd; NULL without memory). */
char *ug_failure_clean_utf8(const char *s)
{
    size_t len = 4 * strlen(s) + 1;
    char *c = malloc(len);
    if (c) ug_utf8_sanitize(s, c, len);
    return c;
}

/* The thresholds object of standards list[0..m) in r: {standard: {output: {...}}}. */
static cJSON *thresholds_of(const ug_result *r, const int *list, int m)
{
    cJSON *all = cJSON_CreateObject();
    for (int i = 0; i < m; i++) {
        cJSON *per = cJSON_AddObjectToObject(all, ug_standard_name(list[i]));
        for (int k = 0; k < r->n_out && per; k++) {
            char *name = ug_failure_clean_utf8(r->out[k].name),
                 *thr = ug_failure_clean_utf8(r->out[k].thresholds[list[i]]);
            cJSON *v = thr ? cJSON_Parse(thr) : NULL;
            cJSON_AddItemToObject(per, name ? name : "?", v ? v : cJSON_CreateNull());
            free(name);
            free(thr);
        }
    }
    return all;
}

typedef struct {
    ug_failure_list *l;
    int standard, with_thresholds;
} read_ctx;

static char *dup(const char *s) { return strdup(s ? s : ""); }

static int keep_row(const ug_db_failure_row *row, void *vctx)
{
    read_ctx *ctx = vctx;
    ug_failure_list *l = ctx->l;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        ug_failure *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    char figure[2048];
    int list[UG_STD_COUNT], m = ctx->standard >= 0 ? 1 : ug_verdict_deciding(row->r, list);
    if (ctx->standard >= 0) {
        list[0] = ctx->standard;
        ug_standard_figure(row->r, ctx->standard, figure, sizeof figure);
    } else {
        ug_verdict_figure(row->r, figure, sizeof figure);
    }
    ug_failure *x = &l->v[l->n++];
    *x = (ug_failure){dup(row->case_id),
                      dup(row->op),
                      dup(row->dtype),
                      dup(row->verdict),
                      dup(figure),
                      dup(row->message),
                      ug_verdict_severity(row->r, ctx->standard),
                      row->r->used,
                      0.0,
                      0.0,
                      row->r->n_out > 0,
                      cJSON_CreateArray(),
                      NULL};
    for (int k = 0; k < row->r->n_out; k++) {
        x->max_abs = fmax(x->max_abs, row->r->out[k].m.max_abs);
        x->max_ulp = fmax(x->max_ulp, row->r->out[k].m.max_ulp);
    }
    for (int i = 0; i < m; i++) cJSON_AddItemToArray(x->standards, cJSON_CreateString(ug_standard_name(list[i])));
    if (ctx->with_thresholds) x->thresholds = thresholds_of(row->r, list, m);
    if (isnan(x->severity)) x->severity = 0;
    return x->case_id && x->op && x->dtype && x->verdict && x->figure && x->message ? 0 : -1;
}

/* Most severe first, then by case ID. */
static int by_severity(const void *a, const void *b)
{
    const ug_failure *x = a, *y = b;
    if (x->severity != y->severity) return x->severity > y->severity ? -1 : 1;
    return strcmp(x->case_id, y->case_id);
}

int ug_failures_read(ug_db *db, const ug_db_failure_filter *f, int with_thresholds, ug_failure_list *l, char *err,
                     size_t errlen)
{
    memset(l, 0, sizeof *l);
    read_ctx ctx = {l, f->standard, with_thresholds};
    if (errlen) err[0] = 0;
    int rc = ug_db_failures(db, f, keep_row, &ctx, err, errlen);
    if (rc && errlen && !err[0]) snprintf(err, errlen, "out of memory reading the failures");
    if (rc) {
        ug_failures_free(l);
        return -1;
    }
    if (l->n) qsort(l->v, l->n, sizeof *l->v, by_severity);
    return 0;
}

void ug_failures_free(ug_failure_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        ug_failure *x = &l->v[i];
        char *texts[] = {x->case_id, x->op, x->dtype, x->verdict, x->figure, x->message};
        for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) free(texts[k]);
        cJSON_Delete(x->standards);
        cJSON_Delete(x->thresholds);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
