/* sweep_select.c — which cases a sweep runs: shards of a plan (balanced by estimated
 * cost), and the selection a run is made of, from the sweep options or, on --resume, from
 * the options the run recorded, so a resumed run rebuilds exactly the same case list. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/case_memory.h"
#include "run/found.h"
#include "run/sweep_internal.h"

int ug_sweep_parse_shard(const char *text, int *k, int *n, char *err, size_t errlen)
{
    char *end;
    long a = strtol(text, &end, 10), b = 0;
    int ok = end != text && *end == '/';
    if (ok) {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        ok = end != q && *end == 0 && a >= 1 && b >= 1 && a <= b && b <= 1000000;
    }
    if (!ok) {
        snprintf(err, errlen, "--shard takes K/N with 1 <= K <= N (e.g. 2/8), not \"%s\"", text);
        return -2;
    }
    *k = (int)a;
    *n = (int)b;
    return 0;
}

/* The old estimate, for a spec that names no implemented op: the product of its integer
 * params. */
static double params_product(const cJSON *p)
{
    double cost = 1;
    for (const cJSON *x = p ? p->child : NULL; x; x = x->next)
        if (cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble == (double)(long long)x->valuedouble)
            cost *= x->valuedouble;
    return cost;
}

double ug_sweep_case_cost(const char *spec_text)
{
    ug_spec spec;
    char err[256];
    if (ug_spec_parse(spec_text, &spec, err, sizeof err)) {
        cJSON *j = cJSON_Parse(spec_text);
        double cost = params_product(cJSON_GetObjectItemCaseSensitive(j, "params"));
        cJSON_Delete(j);
        return cost;
    }
    const ug_op_def *def = ug_op_def_get(spec.op);
    ug_params p;
    ug_case_memory m;
    double cost = 1;
    if (def && ug_params_parse(&def->decl, spec.params, &p, err, sizeof err) == 0) {
        /* the bytes the case touches: its tensors, their fp64 copies and the kernel's and
         * oracle's scratch, all from the declaration; a step or position param weighs nothing */
        if (ug_case_memory_estimate(def, &p, spec.dtype, &m, err, sizeof err) == 0)
            cost = 1.0 + (double)m.total - (double)UG_CASE_MEMORY_BASE; /* the fixed base is no work */
        ug_params_free(&p);
    }
    ug_spec_free(&spec);
    return cost;
}

typedef struct {
    double cost;
    size_t idx;
    const char *id;
} costed;

static int cmp_costed(const void *a, const void *b)
{
    const costed *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

void ug_sweep_shard_select(ug_plan *plan, int k, int n)
{
    costed *c = malloc((plan->n ? plan->n : 1) * sizeof *c);
    double *load = calloc((size_t)n, sizeof *load);
    unsigned char *keep = calloc(plan->n ? plan->n : 1, 1);
    if (!c || !load || !keep) { /* out of memory: stop rather than run a wrong slice */
        fprintf(stderr, "ulpgym: out of memory selecting a shard\n");
        abort();
    }
    for (size_t i = 0; i < plan->n; i++) c[i] = (costed){ug_sweep_case_cost(plan->cases[i].spec), i, plan->cases[i].id};
    qsort(c, plan->n, sizeof *c, cmp_costed);
    for (size_t i = 0; i < plan->n; i++) {
        int best = 0;
        for (int s = 1; s < n; s++)
            if (load[s] < load[best]) best = s;
        load[best] += c[i].cost;
        keep[c[i].idx] = best == k - 1;
    }
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (keep[i]) plan->cases[w++] = plan->cases[i];
        else free(plan->cases[i].spec), free(plan->cases[i].source);
    }
    plan->n = w;
    free(c);
    free(load);
    free(keep);
}

int ug_sweep_selection_from_opts(const ug_sweep_opts *o, ug_sweep_selection *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->primary = -1;
    if (o->primary && ug_exec_parse_primary(o->primary, &x->primary, err, errlen)) return -2;
    /* recorded absolute, so a resume or report from another directory reads the same file */
    ug_plan_absolute(o->plan_path ? o->plan_path : ug_plan_default_path(), x->plan_path, sizeof x->plan_path);
    snprintf(x->backend, sizeof x->backend, "%s", o->backend ? o->backend : "sim");
    x->seed_set = o->seed >= 0;
    x->seed = o->seed;
    if (o->ops) {
        memcpy(x->ops, o->ops, sizeof x->ops);
        x->any_op = 1;
    }
    x->groups = o->groups;
    x->limit = o->limit;
    x->sample = o->sample;
    x->oracle_check = o->oracle_check;
    x->no_regressions = o->no_regressions;
    x->shard_k = o->shard_k;
    x->shard_n = o->shard_n;
    if (o->shard_n) snprintf(x->shard, sizeof x->shard, "%d/%d", o->shard_k, o->shard_n);
    return 0;
}

void ug_sweep_selection_names(const ug_sweep_selection *x, int groups, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    int count = groups ? UG_GROUP_COUNT : UG_OP_COUNT;
    for (int i = 0; i < count && n < len; i++) {
        int on = groups ? (int)(x->groups >> i & 1u) : x->any_op && x->ops[i];
        if (on) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", groups ? ug_group_name((ug_group)i) : ug_op_name(i));
    }
}

int ug_sweep_selection_from_record(const ug_run_record *r, ug_sweep_selection *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    snprintf(x->plan_path, sizeof x->plan_path, "%s", r->plan_path);
    snprintf(x->backend, sizeof x->backend, "%s", r->backend);
    snprintf(x->backend_sha256, sizeof x->backend_sha256, "%s", r->backend_sha256);
    snprintf(x->shard, sizeof x->shard, "%s", r->shard);
    x->seed_set = r->seed_set;
    x->seed = r->seed_set ? r->seed : -1;
    x->limit = r->limit;
    x->sample = r->sample;
    x->oracle_check = r->oracle_check;
    x->no_regressions = r->no_regressions;
    x->primary = -1;
    if (r->primary_standard[0] && ug_exec_parse_primary(r->primary_standard, &x->primary, err, errlen)) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "run %ld was decided by standard \"%s\", which this ulpgym cannot take (%s)", r->run_id,
                 r->primary_standard, why);
        return -2;
    }
    if (r->shard[0] && ug_sweep_parse_shard(r->shard, &x->shard_k, &x->shard_n, err, errlen)) return -2;
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", r->op_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int op = ug_op_find(t);
        if (op < 0) {
            snprintf(err, errlen, "run %ld was filtered to op \"%s\", which this ulpgym does not know", r->run_id, t);
            return -2;
        }
        x->ops[op] = 1;
        x->any_op = 1;
    }
    snprintf(list, sizeof list, "%s", r->group_filter);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int g = ug_group_find(t);
        if (g < 0) {
            snprintf(err, errlen, "run %ld was filtered to unknown group \"%s\"", r->run_id, t);
            return -2;
        }
        x->groups |= 1u << g;
    }
    return 0;
}

int ug_sweep_selection_expand(const ug_sweep_selection *x, ug_plan *plan, char *err, size_t errlen)
{
    if (ug_plan_load(x->plan_path, x->seed_set ? x->seed : -1, plan, err, errlen)) return -2;
    ug_plan_filter(plan, x->any_op ? x->ops : NULL, x->groups);
    if (!x->no_regressions) ug_found_append(plan, x->any_op ? x->ops : NULL, x->groups);
    if (x->limit > 0 && plan->n > (size_t)x->limit) {
        for (size_t i = (size_t)x->limit; i < plan->n; i++) free(plan->cases[i].spec), free(plan->cases[i].source);
        plan->n = (size_t)x->limit;
    }
    if (x->shard_n) ug_sweep_shard_select(plan, x->shard_k, x->shard_n);
    return 0;
}
