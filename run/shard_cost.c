/* shard_cost.c — the cost of a plan's cases and the deal of them to shards (see shard_cost.h). The
 * declaration estimate needs nothing but the spec; --cost-from reads one grouped query of the cost database
 * (db/query_cost.c) and fits, per op, the median ratio of measured time to estimate, for the cases it lacks. */
#include "run/shard_cost.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "db/query_cost.h"
#include "gen/case_memory.h"

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

/* ---- measured costs ---- */

/* What the cost database says: the measured cases (in case ID order, as the query yields them) and, per
 * op, the ratios measured time / estimate the unmeasured cases are scaled by. */
typedef struct {
    char id[UG_ID_LEN + 1];
    double ms;
} measured_case;

typedef struct {
    double ratio; /* measured / estimate */
    int op;
} op_ratio;

typedef struct {
    measured_case *cases;
    size_t n, cap;
    op_ratio *ratios; /* one per measured case of an op this build knows */
    size_t n_ratio, cap_ratio;
    int out_of_memory;
} measured_costs;

/* Makes room for need elements of size bytes in *p (capacity *cap): 0, or -1 when out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need) c *= 2;
    void *g = realloc(*p, c * size);
    if (!g) return -1;
    *p = g;
    *cap = c;
    return 0;
}

static int add_measured(const ug_db_case_time *row, void *ctx)
{
    measured_costs *m = ctx;
    if (grow((void **)&m->cases, &m->cap, m->n + 1, sizeof *m->cases) ||
        grow((void **)&m->ratios, &m->cap_ratio, m->n_ratio + 1, sizeof *m->ratios)) {
        m->out_of_memory = 1;
        return 1;
    }
    measured_case *mc = &m->cases[m->n++];
    snprintf(mc->id, sizeof mc->id, "%s", row->case_id ? row->case_id : "");
    mc->ms = row->ms > 0 ? row->ms : 0;
    int op = row->op ? ug_op_find(row->op) : -1;
    if (op >= 0 && row->spec_json && mc->ms > 0)
        m->ratios[m->n_ratio++] = (op_ratio){mc->ms / ug_sweep_case_cost(row->spec_json), op};
    return 0;
}

static void measured_free(measured_costs *m)
{
    free(m->cases);
    free(m->ratios);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place); 0 when n is 0. */
static double median(double *v, size_t n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per op, the median ratio of its measured cases; every op's median for an op with none (1 when nothing at
 * all was measured). scratch holds n_ratio doubles. */
static void fit_ratios(const measured_costs *m, double *scratch, double ratio_of_op[UG_OP_COUNT])
{
    for (size_t i = 0; i < m->n_ratio; i++) scratch[i] = m->ratios[i].ratio;
    double global = m->n_ratio ? median(scratch, m->n_ratio) : 1;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        size_t k = 0;
        for (size_t i = 0; i < m->n_ratio; i++)
            if (m->ratios[i].op == op) scratch[k++] = m->ratios[i].ratio;
        ratio_of_op[op] = k ? median(scratch, k) : global;
    }
}

static int cmp_id_case(const void *key, const void *elem) { return strcmp(key, ((const measured_case *)elem)->id); }

/* Reads the measured times of the database at path (opened read-only, and refused when
 * quick_check finds it damaged: a damaged file would deal by the times it still shows)
 * into m. 0, or -2 with a message. */
static int load_measured(const char *path, measured_costs *m, char *err, size_t errlen)
{
    ug_db *db;
    char inner[768];
    memset(m, 0, sizeof *m);
    if (ug_db_open(path, UG_DB_READONLY, &db, inner, sizeof inner) || ug_db_quick_check(db, inner, sizeof inner)) {
        ug_db_close(db);
        snprintf(err, errlen, "%s", inner);
        return -2;
    }
    int rc = ug_db_case_times(db, add_measured, m, inner, sizeof inner);
    ug_db_close(db);
    if (!rc) return 0;
    snprintf(err, errlen, "%s: %s", path, m->out_of_memory ? "out of memory" : inner);
    measured_free(m);
    return -2;
}

static const measured_case *find_measured(const measured_costs *m, const char *id)
{
    return m->n ? bsearch(id, m->cases, m->n, sizeof *m->cases, cmp_id_case) : NULL;
}

/* Reads the cost database and fills c->cost: measured where it has the case, else the fitted estimate. */
static int costs_from_db(const ug_plan *plan, const char *path, ug_shard_costs *c, char *err, size_t errlen)
{
    measured_costs m;
    if (load_measured(path, &m, err, errlen)) return -2;
    double ratio_of_op[UG_OP_COUNT], *scratch = malloc((m.n_ratio ? m.n_ratio : 1) * sizeof *scratch);
    if (!scratch) {
        snprintf(err, errlen, "out of memory");
        measured_free(&m);
        return -2;
    }
    fit_ratios(&m, scratch, ratio_of_op);
    for (size_t i = 0; i < plan->n; i++) {
        const measured_case *hit = find_measured(&m, plan->cases[i].id);
        if (hit) c->n_measured++;
        c->cost[i] = hit ? hit->ms : ug_sweep_case_cost(plan->cases[i].spec) * ratio_of_op[plan->cases[i].op];
    }
    c->n_db = m.n;
    c->timed = 1;
    free(scratch);
    measured_free(&m);
    return 0;
}

int ug_shard_measured_times(const ug_plan *plan, const char *path, double *ms, char *err, size_t errlen)
{
    measured_costs m;
    if (load_measured(path, &m, err, errlen)) return -2;
    for (size_t i = 0; i < plan->n; i++) {
        const measured_case *hit = find_measured(&m, plan->cases[i].id);
        ms[i] = hit ? hit->ms : -1;
    }
    measured_free(&m);
    return 0;
}

int ug_shard_costs_compute(const ug_plan *plan, const char *cost_db, ug_shard_costs *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->cost = malloc((plan->n ? plan->n : 1) * sizeof *c->cost);
    if (!c->cost) {
        snprintf(err, errlen, "out of memory costing %zu cases", plan->n);
        return -2;
    }
    if (cost_db) {
        char inner[1024];
        if (costs_from_db(plan, cost_db, c, inner, sizeof inner)) {
            snprintf(err, errlen, "--cost-from: %s", inner);
            ug_shard_costs_free(c);
            return -2;
        }
    } else {
        for (size_t i = 0; i < plan->n; i++) c->cost[i] = ug_sweep_case_cost(plan->cases[i].spec);
    }
    uint64_t h = UG_HASH64_INIT;
    for (size_t i = 0; i < plan->n; i++) {
        char num[32];
        ug_format_double(c->cost[i], num);
        h = ug_hash64_update(h, plan->cases[i].id, strlen(plan->cases[i].id));
        h = ug_hash64_update(h, num, strlen(num) + 1);
    }
    snprintf(c->hash, sizeof c->hash, "%016llx", (unsigned long long)ug_hash64_finish(h));
    return 0;
}

void ug_shard_costs_free(ug_shard_costs *c)
{
    free(c->cost);
    c->cost = NULL;
}

/* ---- the deal ---- */

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

int *ug_shard_assign(const ug_plan *plan, const double *cost, int n)
{
    costed *c = malloc((plan->n ? plan->n : 1) * sizeof *c);
    double *load = calloc((size_t)n, sizeof *load);
    int *shard = malloc((plan->n ? plan->n : 1) * sizeof *shard);
    if (!c || !load || !shard) { /* out of memory: stop rather than run a wrong slice */
        fprintf(stderr, "ulpgym: out of memory selecting a shard\n");
        abort();
    }
    for (size_t i = 0; i < plan->n; i++) c[i] = (costed){cost[i], i, plan->cases[i].id};
    qsort(c, plan->n, sizeof *c, cmp_costed);
    for (size_t i = 0; i < plan->n; i++) {
        int best = 0;
        for (int s = 1; s < n; s++)
            if (load[s] < load[best]) best = s;
        load[best] += c[i].cost;
        shard[c[i].idx] = best;
    }
    free(c);
    free(load);
    return shard;
}

void ug_sweep_shard_select(ug_plan *plan, int k, int n, const ug_shard_costs *costs)
{
    ug_shard_costs own = {0};
    char err[256];
    if (!costs && ug_shard_costs_compute(plan, NULL, &own, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s\n", err);
        abort();
    }
    int *shard = ug_shard_assign(plan, costs ? costs->cost : own.cost, n);
    size_t w = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (shard[i] == k - 1)
            plan->cases[w++] = plan->cases[i];
        else
            free(plan->cases[i].spec), free(plan->cases[i].source);
    }
    plan->n = w;
    free(shard);
    ug_shard_costs_free(&own);
}
