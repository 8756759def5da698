/* plan_coverage.c — the structural coverage count of plan_coverage.h: each declared axis
 * evaluated on every plan case of the op (its params parsed with the op's declaration, so
 * defaults and derived sizes are there, and its input distribution compared with the
 * named set). */
#include "gen/plan_coverage.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "core/paths.h"

typedef struct {
    const char *when;  /* formula */
    const cJSON *dist; /* the named distribution set, or NULL */
} axis_test;

/* 1 when case spec text holds the axis, 0 when not, -2 with a message. */
static int holds(const ug_op_def *d, const char *spec, const axis_test *t, char *err, size_t errlen)
{
    cJSON *j = cJSON_Parse(spec);
    if (!j) return snprintf(err, errlen, "a plan case's spec does not parse"), -2;
    int rc = 1;
    if (t->dist && !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, "dist"), t->dist, 1)) rc = 0;
    ug_params P;
    if (rc == 1 && ug_params_parse(&d->decl, cJSON_GetObjectItemCaseSensitive(j, "params"), &P, err, errlen))
        rc = -2;
    else if (rc == 1) {
        double v;
        if (ug_decl_eval(&P, t->when, &v, err, errlen))
            rc = -2;
        else
            rc = v != 0;
        ug_params_free(&P);
    }
    cJSON_Delete(j);
    return rc;
}

/* The axes of the op's space into out (names) and tests; the space JSON stays alive in *space. */
static int read_axes(int op, cJSON **space, ug_op_coverage *out, axis_test *tests, char *err, size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/gen/ops/%s.json", ug_data_dir(), ug_op_name(op));
    char *text = ug_text_file_read(path, err, errlen);
    if (!text) return -2;
    *space = cJSON_Parse(text);
    free(text);
    if (!*space) return snprintf(err, errlen, "%s: not valid JSON", path), -2;
    const cJSON *cov = cJSON_GetObjectItemCaseSensitive(*space, "coverage");
    const cJSON *dists = cJSON_GetObjectItemCaseSensitive(*space, "dists");
    if (!cov) return 0;
    if (!cJSON_IsArray(cov) || cJSON_GetArraySize(cov) > UG_COVERAGE_MAX_AXES)
        return snprintf(err, errlen, "%s: \"coverage\" must be an array of at most %d axes", path,
                        UG_COVERAGE_MAX_AXES),
               -2;
    for (const cJSON *a = cov->child; a; a = a->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "axis"),
                    *when = cJSON_GetObjectItemCaseSensitive(a, "when");
        const cJSON *dn = cJSON_GetObjectItemCaseSensitive(a, "dist");
        if (!cJSON_IsString(name) || !cJSON_IsString(when) || (dn && !cJSON_IsString(dn)))
            return snprintf(err, errlen, "%s: coverage[%d] needs strings \"axis\" and \"when\" (and \"dist\" if given)",
                            path, out->n_axes),
                   -2;
        axis_test *t = &tests[out->n_axes];
        t->when = when->valuestring;
        t->dist = dn ? cJSON_GetObjectItemCaseSensitive(dists, dn->valuestring) : NULL;
        if (dn && !t->dist)
            return snprintf(err, errlen, "%s: coverage[%d]: no dist set \"%.60s\"", path, out->n_axes, dn->valuestring),
                   -2;
        snprintf(out->axes[out->n_axes++].axis, sizeof out->axes[0].axis, "%s", name->valuestring);
    }
    return 0;
}

int ug_plan_coverage(const ug_plan *p, int op, ug_op_coverage *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->op = op;
    const ug_op_def *d = ug_op_def_get(op);
    if (!d) return snprintf(err, errlen, "%s is not implemented in this build", ug_op_name(op)), -2;
    for (size_t i = 0; i < p->n; i++) out->n_cases += p->cases[i].op == op;
    double share = ceil(UG_COVERAGE_SHARE * (double)out->n_cases);
    out->need = share > UG_COVERAGE_MIN ? (size_t)share : UG_COVERAGE_MIN;
    cJSON *space = NULL;
    axis_test tests[UG_COVERAGE_MAX_AXES];
    int rc = read_axes(op, &space, out, tests, err, errlen);
    for (int a = 0; !rc && a < out->n_axes; a++)
        for (size_t i = 0; !rc && i < p->n; i++) {
            if (p->cases[i].op != op) continue;
            char why[256];
            int h = holds(d, p->cases[i].spec, &tests[a], why, sizeof why);
            if (h < 0) {
                snprintf(err, errlen, "%s: coverage axis \"%.80s\" on case %s: %s", ug_op_name(op), out->axes[a].axis,
                         p->cases[i].id, why);
                rc = -2;
            } else
                out->axes[a].n += (size_t)h;
        }
    cJSON_Delete(space);
    return rc;
}
