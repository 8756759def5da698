/* contract.c — the tensor contract of an operator, read off built cases (see contract.h).
 *
 * Sampling: the op's plan cases are ordered by a size proxy (the product of their
 * integer params) and the cheapest case of every dtype plus the next cheapest ones are
 * built, up to UG_CONTRACT_SAMPLES cases, so deriving a contract costs milliseconds
 * while the sample still varies each param. Formulas are tried simplest first and a
 * formula is reported only when it is the single one of its kind that fits every
 * sample; otherwise the dimension is "?" (never a guess). */
#include "kernels/contract.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/registry.h"
#include "gen/case.h"
#include "gen/plan.h"

#define UG_CONTRACT_SAMPLES 40
#define MAX_PARAMS 16
#define MAX_CT (2 * UG_MAX_TENSORS)

typedef struct {
    char name[32];
    int output;      /* 0 input, 1 output */
    int filled;      /* inputs: drawn from spec.dist */
    int ndim;        /* -1: varies across samples */
    int dt[UG_DT_COUNT]; /* tensor dtype per case dtype, -1 unseen, -2 varies */
} ctensor;

typedef struct {
    char id[UG_ID_LEN + 1];
    ug_dtype dtype;
    cJSON *params;                 /* owned copy */
    long long pv[MAX_PARAMS];
    unsigned char has[MAX_PARAMS];
    int present[MAX_CT];
    int64_t shape[MAX_CT][ULPGYM_MAX_DIMS];
} csample;

typedef struct {
    int np;
    char pname[MAX_PARAMS][32];
    long long pdef[MAX_PARAMS];    /* documented integer default ("default 512" in params_doc) */
    unsigned char has_def[MAX_PARAMS];
    int nt;
    ctensor t[MAX_CT];
    int ns;
    csample s[UG_CONTRACT_SAMPLES];
} cstate;

/* ---- formulas ---- */

typedef enum { F_PARAM, F_MULK, F_DIVK, F_CEILK, F_MUL2, F_ADD2, F_MUL3, F_CONST } fkind;

typedef struct {
    fkind kind;
    int a, b, c;
    long long k;
} formula;

static int fval(const formula *f, const csample *s, long long *v)
{
    if (f->kind == F_CONST) return *v = f->k, 1;
    if (!s->has[f->a]) return 0;
    long long a = s->pv[f->a], b = 0, c = 0;
    if (f->kind == F_MUL2 || f->kind == F_ADD2 || f->kind == F_MUL3) {
        if (!s->has[f->b]) return 0;
        b = s->pv[f->b];
    }
    if (f->kind == F_MUL3) {
        if (!s->has[f->c]) return 0;
        c = s->pv[f->c];
    }
    switch (f->kind) {
    case F_PARAM: *v = a; return 1;
    case F_MULK: *v = a * f->k; return 1;
    case F_DIVK: *v = a / f->k; return a % f->k == 0;
    case F_CEILK: *v = (a + f->k - 1) / f->k; return 1;
    case F_MUL2: *v = a * b; return 1;
    case F_ADD2: *v = a + b; return 1;
    case F_MUL3: *v = a * b * c; return 1;
    default: return 0;
    }
}

static void fname(const cstate *st, const formula *f, char *buf, size_t len)
{
    const char *a = st->pname[f->a], *b = st->pname[f->b], *c = st->pname[f->c];
    switch (f->kind) {
    case F_PARAM: snprintf(buf, len, "%s", a); break;
    case F_MULK: snprintf(buf, len, "%lld*%s", f->k, a); break;
    case F_DIVK: snprintf(buf, len, "%s/%lld", a, f->k); break;
    case F_CEILK: snprintf(buf, len, "ceil(%s/%lld)", a, f->k); break;
    case F_MUL2: snprintf(buf, len, "%s*%s", a, b); break;
    case F_ADD2: snprintf(buf, len, "%s+%s", a, b); break;
    case F_MUL3: snprintf(buf, len, "%s*%s*%s", a, b, c); break;
    case F_CONST: snprintf(buf, len, "%lld", f->k); break;
    }
}

/* Does f give dimension d of tensor t in every sample that has t? */
static int fits(const cstate *st, const formula *f, int t, int d)
{
    for (int i = 0; i < st->ns; i++) {
        long long v;
        if (!st->s[i].present[t]) continue;
        if (!fval(f, &st->s[i], &v) || v != st->s[i].shape[t][d]) return 0;
    }
    return 1;
}

/* Counts the formulas of one kind that fit (stopping at 2); *out is the first. */
static int try_kind(const cstate *st, fkind kind, int t, int d, formula *out)
{
    static const long long ks[] = {2, 4, 8, 16, 32, 64, 128};
    int found = 0, np = st->np, with_k = kind == F_MULK || kind == F_DIVK || kind == F_CEILK;
    int arity = kind == F_MUL3 ? 3 : kind == F_MUL2 || kind == F_ADD2 ? 2 : 1;
    int nk = with_k ? (int)(sizeof ks / sizeof *ks) : 1;
    for (int a = 0; a < np; a++)
        for (int b = arity >= 2 ? a + 1 : a; b < (arity >= 2 ? np : a + 1); b++)
            for (int c = arity == 3 ? b + 1 : b; c < (arity == 3 ? np : b + 1); c++)
                for (int ki = 0; ki < nk; ki++) {
                    formula f = {kind, a, b, c, with_k ? ks[ki] : 0};
                    if (!fits(st, &f, t, d)) continue;
                    if (found++) return 2;
                    *out = f;
                }
    return found;
}

static void shape_formula(const cstate *st, int t, int d, char *buf, size_t len)
{
    static const fkind order[] = {F_PARAM, F_MULK, F_DIVK, F_CEILK, F_MUL2, F_ADD2, F_MUL3};
    formula f;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        int r = try_kind(st, order[i], t, d, &f);
        if (r == 1) return fname(st, &f, buf, len);
        if (r == 2) break; /* several equally simple explanations: do not guess */
    }
    for (int i = 0; i < st->ns; i++) /* a constant, if the dimension never changes */
        if (st->s[i].present[t]) {
            f = (formula){F_CONST, 0, 0, 0, st->s[i].shape[t][d]};
            if (fits(st, &f, t, d)) return fname(st, &f, buf, len);
            break;
        }
    snprintf(buf, len, "?");
}

/* ---- sampling ---- */

typedef struct {
    size_t index;
    double cost;
    int dtype;
} cand;

static int by_cost(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return a->cost < b->cost ? -1 : a->cost > b->cost ? 1 : a->index < b->index ? -1 : 1;
}

static double size_proxy(const cJSON *params)
{
    double c = 1;
    for (const cJSON *p = params ? params->child : NULL; p; p = p->next)
        if (cJSON_IsNumber(p) && p->valuedouble == (double)(long long)p->valuedouble && p->valuedouble > 1)
            c *= p->valuedouble;
    return c;
}

static int param_slot(cstate *st, const char *name)
{
    for (int i = 0; i < st->np; i++)
        if (strcmp(st->pname[i], name) == 0) return i;
    if (st->np == MAX_PARAMS) return -1;
    snprintf(st->pname[st->np], sizeof st->pname[0], "%s", name);
    return st->np++;
}

static int tensor_slot(cstate *st, const ug_tensor *x, int output)
{
    for (int i = 0; i < st->nt; i++)
        if (st->t[i].output == output && strcmp(st->t[i].name, x->name) == 0) return i;
    if (st->nt == MAX_CT) return -1;
    ctensor *t = &st->t[st->nt];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", x->name);
    t->output = output;
    t->ndim = x->ndim;
    for (int d = 0; d < UG_DT_COUNT; d++) t->dt[d] = -1;
    return st->nt++;
}

static void record(cstate *st, const ug_case *c)
{
    csample *s = &st->s[st->ns++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", c->spec.id);
    s->dtype = c->spec.dtype;
    s->params = cJSON_Duplicate(c->spec.params, 1);
    for (const cJSON *p = c->spec.params->child; p; p = p->next) {
        if (!cJSON_IsNumber(p) || p->valuedouble != (double)(long long)p->valuedouble) continue;
        int k = param_slot(st, p->string);
        if (k >= 0) s->pv[k] = (long long)p->valuedouble, s->has[k] = 1;
    }
    for (int k = 0; k < st->np; k++) /* an absent param takes its documented default */
        if (!s->has[k] && st->has_def[k]) s->pv[k] = st->pdef[k], s->has[k] = 1;
    for (int io = 0; io < 2; io++) {
        int n = io ? c->n_out : c->n_in;
        for (int i = 0; i < n; i++) {
            const ug_tensor *x = io ? &c->out[i] : &c->in[i];
            int k = tensor_slot(st, x, io);
            if (k < 0) continue;
            ctensor *t = &st->t[k];
            s->present[k] = 1;
            if (t->ndim != x->ndim) t->ndim = -1;
            for (int d = 0; d < x->ndim; d++) s->shape[k][d] = x->shape[d];
            int *dt = &t->dt[c->spec.dtype];
            *dt = *dt == -1 || *dt == (int)x->dtype ? (int)x->dtype : -2;
            if (!io && cJSON_GetObjectItemCaseSensitive(c->spec.dist, x->name)) t->filled = 1;
        }
    }
}

/* Integer defaults the op documents ("default 512", "default and production 128") become the value of a param a
 * case leaves out. A wrong reading cannot mislead: every formula is still checked
 * against every sampled case. */
static void read_defaults(cstate *st, const char *params_doc)
{
    cJSON *doc = cJSON_Parse(params_doc ? params_doc : "{}");
    for (const cJSON *d = doc ? doc->child : NULL; d; d = d->next) {
        const char *at = cJSON_IsString(d) ? strstr(d->valuestring, "default") : NULL;
        if (!at) continue;
        at += 7; /* "default 512", "default: 64", "default and production 128" */
        for (int skip = 0; *at && !isdigit((unsigned char)*at) && skip < 24; at++, skip++)
            if (!isalpha((unsigned char)*at) && !strchr(" :=", *at)) break;
        if (!isdigit((unsigned char)*at)) continue;
        char *end;
        long long v = strtoll(at, &end, 10);
        if (*end && !strchr(" ,;)", *end)) continue; /* 1e-6, 1/sqrt(D), 2*x: not a plain integer */
        int k = param_slot(st, d->string);
        if (k >= 0) st->pdef[k] = v, st->has_def[k] = 1;
    }
    cJSON_Delete(doc);
}

static int collect(cstate *st, int op, const ug_plan *plan, char *err, size_t errlen)
{
    read_defaults(st, ug_op_def_get(op)->params_doc);
    ug_plan own;
    if (!plan) {
        if (ug_plan_load(ug_plan_default_path(), -1, &own, err, errlen)) return -2;
        plan = &own;
    }
    /* this op's cases, in plan order */
    size_t n = 0;
    const ug_plan_case **mine = calloc(plan->n ? plan->n : 1, sizeof *mine);
    for (size_t i = 0; mine && i < plan->n; i++)
        if (plan->cases[i].op == op) mine[n++] = &plan->cases[i];
    cand *cs = mine ? calloc(n ? n : 1, sizeof *cs) : NULL;
    int rc = cs ? 0 : -1;
    for (size_t i = 0; cs && i < n; i++) {
        cJSON *j = cJSON_Parse(mine[i]->spec);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
        cs[i] = (cand){i, size_proxy(cJSON_GetObjectItemCaseSensitive(j, "params")),
                       cJSON_IsString(dt) ? ug_dtype_parse(dt->valuestring) : -1};
        cJSON_Delete(j);
    }
    if (cs) qsort(cs, n, sizeof *cs, by_cost);
    unsigned char taken_dt[UG_DT_COUNT] = {0};
    for (int pass = 0; pass < 2 && cs; pass++) /* pass 0: cheapest of each dtype; pass 1: the rest */
        for (size_t i = 0; i < n && st->ns < UG_CONTRACT_SAMPLES; i++) {
            int first_of_dt = cs[i].dtype >= 0 && !taken_dt[cs[i].dtype];
            if (pass == 0 ? !first_of_dt : cs[i].cost < 0) continue;
            if (cs[i].dtype >= 0) taken_dt[cs[i].dtype] = 1;
            ug_spec spec;
            ug_case c;
            char inner[256];
            if (ug_spec_parse(mine[cs[i].index]->spec, &spec, inner, sizeof inner) == 0 &&
                ug_case_build(&c, &spec, inner, sizeof inner) == 0)
                record(st, &c);
            ug_case_free(&c);
            cs[i].cost = -1; /* taken */
        }
    free(cs);
    free(mine);
    if (plan == &own) ug_plan_free(&own);
    if (!rc && st->ns == 0) {
        snprintf(err, errlen, "the plan has no buildable case of %s to derive its contract from", ug_op_name(op));
        rc = -2;
    }
    return rc;
}

/* ---- JSON ---- */

static cJSON *tensor_json(const cstate *st, int k)
{
    const ctensor *t = &st->t[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "role", t->output ? "output" : "input");
    if (!t->output) cJSON_AddStringToObject(o, "filled", t->filled ? "random" : "built");
    int present = 0;
    for (int i = 0; i < st->ns; i++) present += st->s[i].present[k];
    if (present < st->ns) cJSON_AddBoolToObject(o, "optional", 1);
    cJSON_AddNumberToObject(o, "ndim", t->ndim);
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < t->ndim; d++) {
        char f[96];
        shape_formula(st, k, d, f, sizeof f);
        cJSON_AddItemToArray(shape, cJSON_CreateString(f));
    }
    cJSON *dt = cJSON_AddObjectToObject(o, "dtype");
    for (int d = 0; d < UG_DT_COUNT; d++)
        if (t->dt[d] != -1)
            cJSON_AddStringToObject(dt, ug_dtype_name((ug_dtype)d), t->dt[d] == -2 ? "varies" : ug_dtype_name((ug_dtype)t->dt[d]));
    return o;
}

static cJSON *example_json(const cstate *st, const csample *s)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "case_id", s->id);
    cJSON_AddStringToObject(e, "dtype", ug_dtype_name(s->dtype));
    cJSON_AddItemToObject(e, "params", cJSON_Duplicate(s->params, 1));
    cJSON *io[2] = {cJSON_AddObjectToObject(e, "inputs"), cJSON_AddObjectToObject(e, "outputs")};
    for (int k = 0; k < st->nt; k++) {
        if (!s->present[k]) continue;
        cJSON *dims = cJSON_CreateArray();
        for (int d = 0; d < st->t[k].ndim; d++) cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)s->shape[k][d]));
        cJSON_AddItemToObject(io[st->t[k].output], st->t[k].name, dims);
    }
    return e;
}

cJSON *ug_contract_json(int op, const ug_plan *plan, char *err, size_t errlen)
{
    if (!ug_op_def_get(op)) {
        snprintf(err, errlen, "op %s is not implemented in this build", ug_op_name(op));
        return NULL;
    }
    cstate *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    cJSON *o = NULL;
    if (collect(st, op, plan, err, errlen) == 0) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "layout", "dense C order (row-major), strides NULL; little-endian elements");
        cJSON_AddNumberToObject(o, "samples", st->ns);
        cJSON *defs = cJSON_AddObjectToObject(o, "defaults");
        for (int k = 0; k < st->np; k++)
            if (st->has_def[k]) cJSON_AddNumberToObject(defs, st->pname[k], (double)st->pdef[k]);
        cJSON *ins = cJSON_AddArrayToObject(o, "inputs"), *outs = cJSON_AddArrayToObject(o, "outputs");
        for (int k = 0; k < st->nt; k++) cJSON_AddItemToArray(st->t[k].output ? outs : ins, tensor_json(st, k));
        cJSON *ex = cJSON_AddArrayToObject(o, "examples");
        unsigned char shown[UG_DT_COUNT] = {0};
        for (int i = 0; i < st->ns; i++)
            if (!shown[st->s[i].dtype]++) cJSON_AddItemToArray(ex, example_json(st, &st->s[i]));
    }
    for (int i = 0; i < st->ns; i++) cJSON_Delete(st->s[i].params);
    free(st);
    return o;
}

/* ---- evaluation of a formula string (for users of the contract and the tests) ---- */

typedef struct {
    const char *p;
    const cJSON *params, *defaults;
    int bad;
} fparser;

static long long f_expr(fparser *q);

static long long f_atom(fparser *q)
{
    while (*q->p == ' ') q->p++;
    if (isdigit((unsigned char)*q->p)) return strtoll(q->p, (char **)&q->p, 10);
    if (strncmp(q->p, "ceil(", 5) == 0) {
        q->p += 5;
        long long a = f_atom(q);
        if (*q->p != '/') return q->bad = 1, 0;
        q->p++;
        long long b = f_atom(q);
        if (*q->p != ')' || b <= 0) return q->bad = 1, 0;
        q->p++;
        return (a + b - 1) / b;
    }
    char name[32];
    size_t n = 0;
    while ((isalnum((unsigned char)*q->p) || *q->p == '_') && n + 1 < sizeof name) name[n++] = *q->p++;
    name[n] = 0;
    const cJSON *v = n ? cJSON_GetObjectItemCaseSensitive(q->params, name) : NULL;
    if (!v && n) v = cJSON_GetObjectItemCaseSensitive(q->defaults, name);
    if (!cJSON_IsNumber(v)) return q->bad = 1, 0;
    return (long long)v->valuedouble;
}

static long long f_term(fparser *q)
{
    long long v = f_atom(q);
    while (!q->bad && (*q->p == '*' || (*q->p == '/' && q->p[1] != 0))) {
        char op = *q->p++;
        long long w = f_atom(q);
        if (op == '*') v *= w;
        else if (w > 0 && v % w == 0) v /= w;
        else q->bad = 1;
    }
    return v;
}

static long long f_expr(fparser *q)
{
    long long v = f_term(q);
    while (!q->bad && *q->p == '+') {
        q->p++;
        v += f_term(q);
    }
    return v;
}

long long ug_contract_eval(const char *formula, const cJSON *params, const cJSON *defaults)
{
    fparser q = {formula, params, defaults, 0};
    long long v = f_expr(&q);
    return q.bad || *q.p ? -1 : v;
}
