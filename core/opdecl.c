/* opdecl.c — validating params against an op's declaration, filling defaults, evaluating
 * shape formulas, and printing the declaration (see opdecl.h).
 *
 * The formula language is deliberately small (arithmetic, comparisons, a few integer and
 * list functions) so that a plugin author in any language can evaluate it, and every
 * value is computed in double: sizes stay far below 2^53, where double is exact. */
#include "core/opdecl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"

const char *ug_param_type_name(ug_param_type t)
{
    static const char *names[] = {"int", "fp32", "number", "enum", "int_list", "pair_list"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static void die(const ug_params *p, const char *name, const char *what)
{
    fprintf(stderr, "ulpgym internal error: op %s reads %s \"%s\", which its declaration does not have\n",
            p->decl ? p->decl->op : "?", what, name);
    abort();
}

static int param_index(const ug_op_decl *d, int n, const char *name, size_t len)
{
    for (int i = 0; i < n && d->params[i].name; i++)
        if (strlen(d->params[i].name) == len && strncmp(d->params[i].name, name, len) == 0) return i;
    return -1;
}

static int derived_index(const ug_params *p, const char *name, size_t len)
{
    for (int i = 0; i < p->n_derived; i++)
        if (strlen(p->decl->derived[i].name) == len && strncmp(p->decl->derived[i].name, name, len) == 0) return i;
    return -1;
}

/* ---- the formula evaluator: recursive descent over the text ---- */

typedef struct {
    const ug_params *p;
    const char *s;
    char *err;
    size_t errlen;
    int failed;
} evaluator;

static double fail(evaluator *e, const char *msg)
{
    if (!e->failed) snprintf(e->err, e->errlen, "formula \"%s\": %s", e->s, msg);
    e->failed = 1;
    return 0;
}

static void skip_ws(const char **c)
{
    while (isspace((unsigned char)**c)) (*c)++;
}

static double expr(evaluator *e, const char **c);
static int in_choices(const char *choices, const char *s);
static int choice_index(const char *choices, const char *s);

/* A list operand: NAME or NAME.q / NAME.k of a pair list. Fills vals/n/stride. */
static int list_operand(evaluator *e, const char **c, int bare_pairs_ok, const long **vals, size_t *n, size_t *stride)
{
    skip_ws(c);
    const char *start = *c;
    while (isalnum((unsigned char)**c) || **c == '_') (*c)++;
    int i = param_index(e->p->decl, e->p->n, start, (size_t)(*c - start));
    if (i < 0) return fail(e, "a list function needs a list param"), -1;
    const ug_param_value *v = &e->p->v[i];
    ug_param_type t = e->p->decl->params[i].type;
    *vals = v->list;
    *n = v->n;
    *stride = 1;
    if (t == UG_PARAM_PAIR_LIST && bare_pairs_ok && **c != '.') {
        *stride = 2; /* len(P): the number of pairs */
    } else if (t == UG_PARAM_PAIR_LIST) {
        if (**c != '.' || ((*c)[1] != 'q' && (*c)[1] != 'k'))
            return fail(e, "a pair list is read as NAME.q or NAME.k"), -1;
        *vals = v->list + ((*c)[1] == 'k');
        *stride = 2;
        *c += 2;
    } else if (t != UG_PARAM_INT_LIST) {
        return fail(e, "a list function needs a list param"), -1;
    }
    return 0;
}

static int expect(evaluator *e, const char **c, char ch)
{
    skip_ws(c);
    if (**c != ch) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", ch);
        fail(e, msg);
        return -1;
    }
    (*c)++;
    return 0;
}

static double list_function(evaluator *e, const char **c, const char *fn)
{
    const long *vals;
    size_t n, stride;
    double k = 1, acc = 0;
    if (list_operand(e, c, strcmp(fn, "len") == 0, &vals, &n, &stride)) return 0;
    if (strcmp(fn, "sumcdiv") == 0) {
        if (expect(e, c, ',')) return 0;
        k = expr(e, c);
        if (k <= 0) return fail(e, "sumcdiv needs a positive divisor");
    }
    if (expect(e, c, ')')) return 0;
    if (strcmp(fn, "len") == 0) return (double)n;
    for (size_t i = 0; i < n; i++) {
        double x = (double)vals[i * stride];
        if (strcmp(fn, "maxof") == 0)
            acc = i == 0 || x > acc ? x : acc;
        else if (strcmp(fn, "minof") == 0)
            acc = i == 0 || x < acc ? x : acc;
        else
            acc += strcmp(fn, "sumcdiv") == 0 ? ceil(x / k) : x;
    }
    return acc;
}

/* is(P, choice): 1 when enum param P has that choice, else 0. */
static double enum_test(evaluator *e, const char **c)
{
    char name[2][48];
    for (int k = 0; k < 2; k++) {
        skip_ws(c);
        const char *start = *c;
        while (isalnum((unsigned char)**c) || **c == '_') (*c)++;
        snprintf(name[k], sizeof name[k], "%.*s", (int)(*c - start < 47 ? *c - start : 47), start);
        if (expect(e, c, k ? ')' : ',')) return 0;
    }
    int i = param_index(e->p->decl, e->p->n, name[0], strlen(name[0]));
    if (i < 0 || e->p->decl->params[i].type != UG_PARAM_ENUM) return fail(e, "is() needs an enum param");
    if (!in_choices(e->p->decl->params[i].choices, name[1])) return fail(e, "is(): not one of the param's choices");
    return strcmp(e->p->v[i].str, name[1]) == 0;
}

static double call(evaluator *e, const char **c, const char *fn)
{
    if (!strcmp(fn, "is")) return enum_test(e, c);
    if (!strcmp(fn, "len") || !strcmp(fn, "sum") || !strcmp(fn, "maxof") || !strcmp(fn, "minof") ||
        !strcmp(fn, "sumcdiv"))
        return list_function(e, c, fn);
    double a = expr(e, c), b = 0;
    int two = strcmp(fn, "sqrt") != 0;
    if (two && expect(e, c, ',')) return 0;
    if (two) b = expr(e, c);
    if (expect(e, c, ')')) return 0;
    if (!strcmp(fn, "sqrt")) return sqrt(a);
    if (!strcmp(fn, "min")) return a < b ? a : b;
    if (!strcmp(fn, "max")) return a > b ? a : b;
    if (b == 0) return fail(e, "division by zero");
    if (!strcmp(fn, "cdiv")) return ceil(a / b);
    if (!strcmp(fn, "fdiv")) return floor(a / b);
    return fail(e, "unknown function");
}

static double name_value(evaluator *e, const char *start, size_t len)
{
    int i = param_index(e->p->decl, e->p->n, start, len);
    if (i >= 0) {
        ug_param_type t = e->p->decl->params[i].type;
        if (t == UG_PARAM_INT || t == UG_PARAM_F32 || t == UG_PARAM_NUM) return e->p->v[i].num;
        return fail(e, "a list or enum param can only be used inside a function");
    }
    int d = derived_index(e->p, start, len);
    if (d >= 0) return e->p->derived[d];
    char msg[96];
    snprintf(msg, sizeof msg, "unknown name \"%.*s\"", (int)(len < 40 ? len : 40), start);
    return fail(e, msg);
}

static double atom(evaluator *e, const char **c)
{
    skip_ws(c);
    if (**c == '(') {
        (*c)++;
        double v = expr(e, c);
        expect(e, c, ')');
        return v;
    }
    if (**c == '-') {
        (*c)++;
        return -atom(e, c);
    }
    if (isdigit((unsigned char)**c) || **c == '.') {
        char *end;
        double v = strtod(*c, &end);
        *c = end;
        return v;
    }
    const char *start = *c;
    while (isalnum((unsigned char)**c) || **c == '_') (*c)++;
    size_t len = (size_t)(*c - start);
    if (len == 0) return fail(e, "expected a number, a name or '('");
    skip_ws(c);
    if (**c == '(') {
        char fn[16];
        snprintf(fn, sizeof fn, "%.*s", (int)(len < 15 ? len : 15), start);
        (*c)++;
        return call(e, c, fn);
    }
    return name_value(e, start, len);
}

static double term(evaluator *e, const char **c)
{
    double v = atom(e, c);
    for (;;) {
        skip_ws(c);
        if (**c == '*')
            (*c)++, v *= atom(e, c);
        else if (**c == '/') {
            (*c)++;
            double d = atom(e, c);
            v = d == 0 ? fail(e, "division by zero") : v / d;
        } else
            return v;
    }
}

static double sum_terms(evaluator *e, const char **c)
{
    double v = term(e, c);
    for (;;) {
        skip_ws(c);
        if (**c == '+')
            (*c)++, v += term(e, c);
        else if (**c == '-')
            (*c)++, v -= term(e, c);
        else
            return v;
    }
}

static double expr(evaluator *e, const char **c)
{
    double v = sum_terms(e, c);
    skip_ws(c);
    static const char *ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(ops[i]);
        if (strncmp(*c, ops[i], n)) continue;
        *c += n;
        double w = sum_terms(e, c);
        int r = i == 0 ? v == w : i == 1 ? v != w : i == 2 ? v <= w : i == 3 ? v >= w : i == 4 ? v < w : v > w;
        return r;
    }
    return v;
}

int ug_decl_eval(const ug_params *p, const char *formula, double *out, char *err, size_t errlen)
{
    evaluator e = {p, formula, err, errlen, 0};
    const char *c = formula;
    double v = expr(&e, &c);
    skip_ws(&c);
    if (!e.failed && *c) fail(&e, "unexpected text at the end");
    if (e.failed) return -2;
    *out = v;
    return 0;
}

/* ---- params ---- */

/* Parses "a,b,c" (or "q:k,q:k" with pairs) into an owned array. */
static int parse_list(const char *s, int pairs, ug_param_value *v)
{
    size_t cap = 8, n = 0;
    long *a = malloc(cap * 2 * sizeof *a);
    const char *c = s;
    if (!a) return -1;
    while (*c) {
        char *end;
        long x = strtol(c, &end, 10), y = x;
        if (end == c) goto bad;
        c = end;
        if (pairs && *c == ':') {
            y = strtol(++c, &end, 10);
            if (end == c) goto bad;
            c = end;
        }
        if (n == cap) {
            long *b = realloc(a, (cap *= 2) * 2 * sizeof *a);
            if (!b) goto bad;
            a = b;
        }
        if (pairs)
            a[2 * n] = x, a[2 * n + 1] = y;
        else
            a[n] = x;
        n++;
        if (*c == ',')
            c++;
        else if (*c)
            goto bad;
    }
    if (n == 0) goto bad;
    v->list = a;
    v->n = n;
    return 0;
bad:
    free(a);
    return -1;
}

static int range_error(const ug_op_decl *d, const ug_param_decl *pd, double x, char *err, size_t errlen)
{
    char lo[32] = "-inf", hi[32] = "inf", xs[32];
    if (pd->min > -UG_DECL_INF) ug_format_double(pd->min, lo);
    if (pd->max < UG_DECL_INF) ug_format_double(pd->max, hi);
    ug_format_double(x, xs);
    snprintf(err, errlen, "%s: param \"%s\" is %s, allowed [%s, %s]: %s", d->op, pd->name, xs, lo, hi,
             pd->doc ? pd->doc : "");
    return -2;
}

/* The position of s in choices ("a|b|c"), or -1. */
static int choice_index(const char *choices, const char *s)
{
    size_t n = strlen(s);
    int k = 0;
    for (const char *c = choices; c && *c; k++) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, s, n) == 0) return k;
        c = bar ? bar + 1 : c + len;
    }
    return -1;
}

static int in_choices(const char *choices, const char *s) { return choice_index(choices, s) >= 0; }

/* The JSON item for pd: the given one, or its default made into an item of tree. */
static const cJSON *item_or_default(ug_params *p, int i, const cJSON *given, char *err, size_t errlen)
{
    const ug_param_decl *pd = &p->decl->params[i];
    if (given) return given;
    if (!pd->def) {
        snprintf(err, errlen, "%s: param \"%s\" is required: %s", p->decl->op, pd->name, pd->doc ? pd->doc : "");
        return NULL;
    }
    cJSON *item;
    if (pd->type == UG_PARAM_ENUM || pd->type == UG_PARAM_INT_LIST || pd->type == UG_PARAM_PAIR_LIST) {
        item = cJSON_CreateString(pd->def);
    } else {
        double x;
        p->n = i; /* a default sees the params declared before it */
        if (ug_decl_eval(p, pd->def, &x, err, errlen)) return NULL;
        item = cJSON_CreateNumber(x);
    }
    if (!item) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cJSON_AddItemToObject(p->tree, pd->name, item);
    return item;
}

static int read_value(ug_params *p, int i, const cJSON *it, char *err, size_t errlen)
{
    const ug_op_decl *d = p->decl;
    const ug_param_decl *pd = &d->params[i];
    ug_param_value *v = &p->v[i];
    if (pd->type == UG_PARAM_ENUM) {
        if (!cJSON_IsString(it) || !in_choices(pd->choices, it->valuestring)) {
            snprintf(err, errlen, "%s: param \"%s\" must be one of %s", d->op, pd->name, pd->choices);
            return -2;
        }
        v->str = it->valuestring;
        return 0;
    }
    if (pd->type == UG_PARAM_INT_LIST || pd->type == UG_PARAM_PAIR_LIST) {
        int pairs = pd->type == UG_PARAM_PAIR_LIST;
        if (!cJSON_IsString(it) || parse_list(it->valuestring, pairs, v)) {
            snprintf(err, errlen, "%s: param \"%s\" must be a string of %s: %s", d->op, pd->name,
                     pairs ? "comma-separated q:k pairs (\"n\" = n:n)" : "comma-separated integers",
                     pd->doc ? pd->doc : "");
            return -2;
        }
        for (size_t k = 0; k < v->n * (pairs ? 2 : 1); k++)
            if (v->list[k] < pd->min || v->list[k] > pd->max)
                return range_error(d, pd, (double)v->list[k], err, errlen);
        return 0;
    }
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
        snprintf(err, errlen, "%s: param \"%s\" must be a number", d->op, pd->name);
        return -2;
    }
    double x = it->valuedouble;
    if (pd->type == UG_PARAM_INT && (x != floor(x) || fabs(x) > 0x1p53)) {
        snprintf(err, errlen, "%s: param \"%s\" must be an integer", d->op, pd->name);
        return -2;
    }
    if (x < pd->min || x > pd->max) return range_error(d, pd, x, err, errlen);
    v->num = pd->type == UG_PARAM_F32 ? ug_dtype_round(UG_DT_FP32, x) : x; /* rounds: fp32 attribute, RNE */
    return 0;
}

static int reject_unknown(const ug_op_decl *d, const cJSON *params, char *err, size_t errlen)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, params)
    {
        if (param_index(d, UG_MAX_PARAMS, it->string, strlen(it->string)) >= 0) continue;
        int len = snprintf(err, errlen, "%s: unknown param \"%s\"; its params are", d->op, it->string);
        for (int i = 0; d->params[i].name && len > 0 && (size_t)len < errlen; i++)
            len += snprintf(err + len, errlen - (size_t)len, "%s %s", i ? "," : "", d->params[i].name);
        return -2;
    }
    return 0;
}

static int derive(ug_params *p, char *err, size_t errlen)
{
    for (int i = 0; p->decl->derived && p->decl->derived[i].name; i++) {
        if (i >= UG_MAX_DERIVED) {
            snprintf(err, errlen, "internal: %s declares more than %d derived sizes", p->decl->op, UG_MAX_DERIVED);
            return -2;
        }
        if (ug_decl_eval(p, p->decl->derived[i].formula, &p->derived[i], err, errlen)) return -2;
        p->n_derived = i + 1;
    }
    return 0;
}

/* The op's typed params (ug_typed_layouts, generated from the same declaration) from the
 * validated values: the one place they are written. */
static void fill_typed(ug_params *p)
{
    p->layout = NULL;
    for (const ug_typed_layout *l = ug_typed_layouts; l->op && !p->layout; l++)
        if (strcmp(l->op, p->decl->op) == 0) p->layout = l;
    for (const ug_typed_field *f = p->layout ? p->layout->fields : NULL; f && f->name; f++) {
        unsigned char *at = p->typed + f->offset;
        int i = param_index(p->decl, p->n, f->name, strlen(f->name));
        if (f->kind == UG_TF_DERIVED) {
            int k = derived_index(p, f->name, strlen(f->name));
            long v = k >= 0 ? (long)p->derived[k] : 0;
            memcpy(at, &v, sizeof v);
        } else if (i < 0) {
            die(p, f->name, "typed param"); /* the generated layout and the declaration disagree */
        } else if (f->kind == UG_TF_INT) {
            long v = (long)p->v[i].num;
            memcpy(at, &v, sizeof v);
        } else if (f->kind == UG_TF_REAL) {
            memcpy(at, &p->v[i].num, sizeof p->v[i].num);
        } else if (f->kind == UG_TF_LIST) {
            ug_plist l = {p->v[i].list, p->v[i].n};
            memcpy(at, &l, sizeof l);
        } else { /* ENUM: the choice's index in the declared list, and its text */
            int choice = choice_index(p->decl->params[i].choices, p->v[i].str);
            memcpy(at, &choice, sizeof choice);
            memcpy(p->typed + f->offset_name, &p->v[i].str, sizeof p->v[i].str);
        }
    }
}

/* ug_params_parse without the canonical text (out->json stays NULL). */
static int params_read(const ug_op_decl *d, const cJSON *params, ug_params *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->decl = d;
    if (!cJSON_IsObject(params)) {
        snprintf(err, errlen, "%s: params must be a JSON object", d->op);
        return -2;
    }
    if (reject_unknown(d, params, err, errlen)) return -2;
    out->tree = cJSON_Duplicate(params, 1);
    if (!out->tree) goto oom;
    for (int i = 0; d->params[i].name; i++) {
        if (i >= UG_MAX_PARAMS) {
            snprintf(err, errlen, "internal: %s declares more than %d params", d->op, UG_MAX_PARAMS);
            goto fail;
        }
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(out->tree, d->params[i].name);
        if (!(it = item_or_default(out, i, it, err, errlen)) || read_value(out, i, it, err, errlen)) goto fail;
        out->n = i + 1;
    }
    if (derive(out, err, errlen)) goto fail;
    fill_typed(out);
    if (d->check && d->check(out, err, errlen)) goto fail;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    ug_params_free(out);
    return -2;
}

int ug_params_parse(const ug_op_decl *d, const cJSON *params, ug_params *out, char *err, size_t errlen)
{
    if (params_read(d, params, out, err, errlen)) return -2;
    if ((out->json = ug_json_canonical(out->tree)) != NULL) return 0;
    snprintf(err, errlen, "out of memory");
    ug_params_free(out);
    return -2;
}

int ug_params_check(const ug_op_decl *d, const cJSON *params, ug_params *out, char *err, size_t errlen)
{
    return params_read(d, params, out, err, errlen);
}

int ug_params_parse_text(const ug_op_decl *d, const char *text, ug_params *out, char *err, size_t errlen)
{
    cJSON *json = cJSON_Parse(text ? text : "");
    if (!json) {
        memset(out, 0, sizeof *out);
        snprintf(err, errlen, "%s: params_json is not valid JSON", d->op);
        return -2;
    }
    int rc = ug_params_parse(d, json, out, err, errlen);
    cJSON_Delete(json);
    return rc;
}

void ug_params_free(ug_params *p)
{
    if (!p) return;
    for (int i = 0; i < UG_MAX_PARAMS; i++) free(p->v[i].list);
    free(p->json);
    cJSON_Delete(p->tree);
    memset(p, 0, sizeof *p);
}

/* ---- typed reads ---- */

static int find_param(const ug_params *p, const char *name) { return param_index(p->decl, p->n, name, strlen(name)); }

long ug_p_int(const ug_params *p, const char *name)
{
    int i = find_param(p, name);
    if (i >= 0 && p->decl->params[i].type == UG_PARAM_INT) return (long)p->v[i].num;
    int d = derived_index(p, name, strlen(name));
    if (d < 0) die(p, name, "int param");
    return (long)p->derived[d];
}

double ug_p_num(const ug_params *p, const char *name)
{
    int i = find_param(p, name);
    if (i < 0) {
        int d = derived_index(p, name, strlen(name));
        if (d < 0) die(p, name, "number param");
        return p->derived[d];
    }
    ug_param_type t = p->decl->params[i].type;
    if (t != UG_PARAM_F32 && t != UG_PARAM_NUM && t != UG_PARAM_INT) die(p, name, "number param");
    return p->v[i].num;
}

const char *ug_p_str(const ug_params *p, const char *name)
{
    int i = find_param(p, name);
    if (i < 0 || p->decl->params[i].type != UG_PARAM_ENUM) die(p, name, "enum param");
    return p->v[i].str;
}

int ug_p_is(const ug_params *p, const char *name, const char *choice)
{
    int i = find_param(p, name);
    if (i < 0 || !in_choices(p->decl->params[i].choices, choice)) die(p, choice, "enum choice");
    return strcmp(ug_p_str(p, name), choice) == 0;
}

size_t ug_p_list(const ug_params *p, const char *name, const long **vals)
{
    int i = find_param(p, name);
    if (i < 0 || (p->decl->params[i].type != UG_PARAM_INT_LIST && p->decl->params[i].type != UG_PARAM_PAIR_LIST))
        die(p, name, "list param");
    *vals = p->v[i].list;
    return p->v[i].n;
}

int ug_p_has(const ug_params *p, const char *name) { return find_param(p, name) >= 0; }

const void *ug_params_typed(const ug_params *p, const char *op)
{
    if (!p->layout || strcmp(p->layout->op, op) != 0) die(p, op, "typed params of op");
    return p->typed;
}

/* ---- tensors ---- */

int ug_decl_dtype_for(const char *rule, ug_dtype case_dtype)
{
    if (strcmp(rule, "case") == 0) return case_dtype;
    if (!strchr(rule, ':')) return ug_dtype_parse(rule);
    const char *want = ug_dtype_name(case_dtype);
    for (const char *c = rule; *c;) {
        const char *colon = strchr(c, ':'), *comma = strchr(c, ',');
        if (!colon) break;
        size_t klen = (size_t)(colon - c), vlen = comma ? (size_t)(comma - colon - 1) : strlen(colon + 1);
        if (klen == strlen(want) && strncmp(c, want, klen) == 0) {
            char v[16];
            snprintf(v, sizeof v, "%.*s", (int)(vlen < 15 ? vlen : 15), colon + 1);
            return ug_dtype_parse(v);
        }
        if (!comma) break;
        c = comma + 1;
    }
    return -1;
}

int ug_decl_tensor_shape(const ug_params *p, const ug_tensor_decl *t, ug_dtype case_dtype, ug_dtype *dt, int *ndim,
                         int64_t *shape, char *err, size_t errlen)
{
    char msg[160];
    double x;
    if (t->when) {
        if (ug_decl_eval(p, t->when, &x, msg, sizeof msg)) goto bad;
        if (x == 0) return 1;
    }
    int d = ug_decl_dtype_for(t->dtype, case_dtype);
    if (d < 0) {
        snprintf(err, errlen, "%s: tensor \"%s\" has no dtype for case dtype %s", p->decl->op, t->name,
                 ug_dtype_name(case_dtype));
        return -2;
    }
    *dt = (ug_dtype)d;
    *ndim = 0;
    for (const char *c = t->shape; c && *c;) {
        const char *comma = strchr(c, ',');
        char f[128];
        size_t flen = comma ? (size_t)(comma - c) : strlen(c);
        if (flen >= sizeof f) flen = sizeof f - 1;
        memcpy(f, c, flen), f[flen] = 0;
        if (*ndim >= 8) {
            snprintf(msg, sizeof msg, "more than 8 dimensions");
            goto bad;
        }
        if (ug_decl_eval(p, f, &x, msg, sizeof msg)) goto bad;
        if (x < 0 || x != floor(x) || x > 0x1p53) {
            snprintf(err, errlen, "%s: tensor \"%s\" dimension %d (%s) is %g, not a size", p->decl->op, t->name, *ndim,
                     f, x);
            return -2;
        }
        shape[(*ndim)++] = (int64_t)x;
        c = comma ? comma + 1 : c + strlen(c);
    }
    return 0;
bad:
    snprintf(err, errlen, "%s: tensor \"%s\": %s", p->decl->op, t->name, msg);
    return -2;
}

/* The declared drawn input named name, or NULL. */
static const ug_tensor_decl *drawn_input(const ug_op_decl *d, const char *name)
{
    for (const ug_tensor_decl *t = d->tensors; t && t->name; t++)
        if (t->role == UG_TENSOR_INPUT && strcmp(t->name, name) == 0) return t;
    return NULL;
}

/* "x, y, z": the op's drawn inputs, for a message. */
static void drawn_names(const ug_op_decl *d, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (const ug_tensor_decl *t = d->tensors; t && t->name && n < len; t++)
        if (t->role == UG_TENSOR_INPUT) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", t->name);
}

int ug_decl_check_tensors(const ug_params *p, ug_dtype case_dtype, const cJSON *dist, char *err, size_t errlen)
{
    const ug_op_decl *d = p->decl;
    char names[256];
    for (const cJSON *e = dist ? dist->child : NULL; e; e = e->next)
        if (!e->string || !drawn_input(d, e->string)) {
            drawn_names(d, names, sizeof names);
            snprintf(err, errlen, "%s: \"dist\" names \"%.64s\", which is not one of its drawn inputs (%s)", d->op,
                     e->string ? e->string : "", names);
            return -2;
        }
    for (const ug_tensor_decl *t = d->tensors; t && t->name; t++) {
        ug_dtype dt;
        int ndim;
        int64_t shape[8];
        int rc = ug_decl_tensor_shape(p, t, case_dtype, &dt, &ndim, shape, err, errlen);
        if (rc < 0) return rc;
        if (rc == 0 && t->role == UG_TENSOR_INPUT && !cJSON_GetObjectItemCaseSensitive(dist, t->name)) {
            snprintf(err, errlen, "%s: \"dist\" has no distribution for input \"%s\"", d->op, t->name);
            return -2;
        }
    }
    return 0;
}

/* ---- the declaration as JSON ---- */

static cJSON *param_json(const ug_param_decl *pd)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", pd->name);
    cJSON_AddStringToObject(o, "type", ug_param_type_name(pd->type));
    if (pd->def)
        cJSON_AddStringToObject(o, "default", pd->def);
    else
        cJSON_AddBoolToObject(o, "required", 1);
    if (pd->type == UG_PARAM_ENUM)
        cJSON_AddStringToObject(o, "choices", pd->choices);
    else {
        if (pd->min > -UG_DECL_INF) cJSON_AddNumberToObject(o, "min", pd->min);
        if (pd->max < UG_DECL_INF) cJSON_AddNumberToObject(o, "max", pd->max);
    }
    if (pd->doc) cJSON_AddStringToObject(o, "doc", pd->doc);
    return o;
}

static cJSON *tensor_json(const ug_tensor_decl *t, const char *dtypes)
{
    static const char *roles[] = {"input", "built", "output"};
    cJSON *o = cJSON_CreateObject(), *dt = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "role", roles[t->role]);
    char buf[64];
    snprintf(buf, sizeof buf, "%s", dtypes);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int cd = ug_dtype_parse(tok), d = cd < 0 ? -1 : ug_decl_dtype_for(t->dtype, (ug_dtype)cd);
        if (d >= 0) cJSON_AddStringToObject(dt, tok, ug_dtype_name((ug_dtype)d));
    }
    cJSON_AddItemToObject(o, "dtype", dt);
    for (const char *c = t->shape; c && *c;) {
        const char *comma = strchr(c, ',');
        size_t len = comma ? (size_t)(comma - c) : strlen(c);
        while (len && isspace((unsigned char)*c)) c++, len--;
        char f[128];
        snprintf(f, sizeof f, "%.*s", (int)len, c);
        cJSON_AddItemToArray(shape, cJSON_CreateString(f));
        c = comma ? comma + 1 : c + strlen(c);
    }
    cJSON_AddItemToObject(o, "shape", shape);
    if (t->when) cJSON_AddStringToObject(o, "when", t->when);
    if (t->optional) cJSON_AddBoolToObject(o, "optional", 1);
    if (t->doc) cJSON_AddStringToObject(o, "doc", t->doc);
    return o;
}

cJSON *ug_decl_json(const ug_op_decl *d, const char *dtypes)
{
    cJSON *o = cJSON_CreateObject(), *params = cJSON_CreateArray(), *derived = cJSON_CreateObject();
    cJSON *tensors = cJSON_CreateArray();
    for (int i = 0; d->params[i].name; i++) cJSON_AddItemToArray(params, param_json(&d->params[i]));
    for (int i = 0; d->derived && d->derived[i].name; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "formula", d->derived[i].formula);
        if (d->derived[i].doc) cJSON_AddStringToObject(x, "doc", d->derived[i].doc);
        cJSON_AddItemToObject(derived, d->derived[i].name, x);
    }
    for (int i = 0; d->tensors[i].name; i++) cJSON_AddItemToArray(tensors, tensor_json(&d->tensors[i], dtypes));
    cJSON_AddItemToObject(o, "params", params);
    cJSON_AddItemToObject(o, "derived", derived);
    cJSON_AddItemToObject(o, "tensors", tensors);
    return o;
}
