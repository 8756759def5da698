/* tightness.c — the tightness scan (see tightness.h): the op's plan cases with its legal
 * kernels, keeping per output the worst "used" figure under the primary standard and
 * under certified. */
#include "run/tightness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/mutant_scan.h"

/* The "used" figure of one output's thresholds JSON; NaN where it has none (NA, an
 * optional output left unwritten, a figure the JSON writes as null: +inf). */
static double used_of(const char *thresholds)
{
    cJSON *j = cJSON_Parse(thresholds);
    const cJSON *u = j ? cJSON_GetObjectItem(j, "used") : NULL;
    double v = cJSON_IsNumber(u) ? u->valuedouble : cJSON_IsNull(u) ? INFINITY : NAN;
    cJSON_Delete(j);
    return v;
}

static void keep(ug_tight_cell *c, double used, const char *case_id, const char *variant)
{
    if (isnan(used)) return;
    c->n_judged++;
    if (!isnan(c->worst) && used <= c->worst) return;
    c->worst = used;
    snprintf(c->case_id, sizeof c->case_id, "%s", case_id);
    c->variant = variant;
}

static void on_case(void *ctx, int v, const ug_plan_case *pc, const ug_result *r)
{
    ug_tightness *t = ctx;
    (void)pc;
    const char *variant = ug_op_variants(t->op)[v].name;
    if (r->outcome == UG_OUT_FAIL || r->outcome == UG_OUT_NONFINITE)
        t->false_alarms++;
    else if (r->outcome != UG_OUT_PASS) {
        t->not_judged++;
        return;
    }
    for (int i = 0; i < r->n_out; i++) {
        const ug_output_result *o = &r->out[i];
        int k = 0;
        while (k < t->n_out && strcmp(t->out[k].name, o->name)) k++;
        if (k == t->n_out || o->not_provided || !t->out[k].numeric) continue;
        keep(&t->out[k].primary, used_of(o->thresholds[t->primary]), r->case_id, variant);
        keep(&t->out[k].certified, used_of(o->thresholds[UG_STD_CERTIFIED]), r->case_id, variant);
    }
}

int ug_tightness_scan(int op, long long seed, ug_tightness *t, char *err, size_t errlen)
{
    const ug_op_def *d = ug_op_def_get(op);
    memset(t, 0, sizeof *t);
    if (!d) {
        snprintf(err, errlen, "%s is not implemented in this build", ug_op_name(op));
        return -2;
    }
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    ug_plan p;
    if (ug_plan_load_only(ug_plan_default_path(), seed, ops, 0, &p, err, errlen)) return -2;
    t->op = op;
    t->primary = d->primary;
    t->n_cases = p.n;
    t->n_out = d->n_outputs < UG_MAX_TENSORS ? d->n_outputs : UG_MAX_TENSORS;
    for (int k = 0; k < t->n_out; k++) {
        snprintf(t->out[k].name, sizeof t->out[k].name, "%s", d->outputs[k].name);
        t->out[k].numeric = d->outputs[k].cmp == UG_CMP_NUMERIC;
        t->out[k].primary.worst = t->out[k].certified.worst = NAN;
    }
    ug_scan_opts so = {.legal_only = 1, .on_case = on_case, .ctx = t};
    int n;
    ug_variant_scan *s = ug_mutant_scan(op, &p, &so, &n);
    for (int v = 0; v < n; v++) t->n_kernels += !s[v].unavailable;
    free(s);
    ug_plan_free(&p);
    return 0;
}
