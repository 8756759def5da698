/* opdecl_json.c — reads an operator's declaration file into its definition.
 *
 * An op's declaration is data: oracles/<family>/<op>.json holds its summary, case dtypes,
 * semantics, params, derived sizes, tensors and output rules (format: docs/ADDING_AN_OPERATOR.md),
 * and the documentation of its sim kernel's variants.
 * CMake compiles every such file into the binary (op_decls.c in the build folder, like the
 * schema), and core/ops.c loads each once, on first use, into the op's ug_op_def beside
 * what only C can say: the check, builder, oracle and geometry functions of the op's
 * oracle file. Loading is strict: an unknown key, a wrong type, an unknown role, compare
 * or param type, or an output rule without an output tensor is an error naming the key,
 * so a typo in a declaration never silently drops a field. A loaded definition's strings
 * point into its parsed JSON, which is kept for the life of the process on a list that
 * a global holds (so a leak checker sees it reachable, not leaked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "core/standard.h"

const char *const ug_cmp_names[UG_CMP_COUNT] = {"numeric", "exact", "boundary_aware", "topk_set"};

typedef struct {
    const char *op, *where; /* for messages: the op and the entry being read */
    char *err;
    size_t errlen;
} reader;

static int fail(reader *r, const char *fmt, const char *a, const char *b)
{
    char what[160];
    snprintf(what, sizeof what, fmt, a, b);
    snprintf(r->err, r->errlen, "declaration of %s: %s: %s", r->op, r->where, what);
    return -1;
}

/* Every key of o must be among allowed (a NULL-ended list). */
static int known_keys(reader *r, const cJSON *o, const char *const *allowed)
{
    if (!cJSON_IsObject(o)) return fail(r, "expected an object%s%s", "", "");
    for (const cJSON *k = o->child; k; k = k->next) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++) ok = strcmp(allowed[i], k->string) == 0;
        if (!ok) return fail(r, "unknown key \"%s\"%s", k->string, "");
    }
    return 0;
}

/* A string member: *out points into the tree (kept for the life of the process). */
static int text(reader *r, const cJSON *o, const char *key, int required, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v) return required ? fail(r, "missing \"%s\"%s", key, "") : 0;
    if (!cJSON_IsString(v)) return fail(r, "\"%s\" must be a string%s", key, "");
    *out = v->valuestring;
    return 0;
}

static int number(reader *r, const cJSON *o, const char *key, double dflt, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = dflt;
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return fail(r, "\"%s\" must be a number%s", key, "");
    *out = v->valuedouble;
    return 0;
}

/* A true/false member, false when absent. */
static int flag(reader *r, const cJSON *o, const char *key, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v && !cJSON_IsBool(v)) return fail(r, "\"%s\" must be true or false%s", key, "");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A name from a fixed list (param types, roles, compares): its index. */
static int choice(reader *r, const char *s, const char *const *names, int n, const char *what, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return *out = i, 0;
    return fail(r, "unknown %s \"%s\"", what, s);
}

/* The semantics: one string, or an array of strings joined with single spaces (so a
 * long text can be kept one sentence a line). */
static int semantics(reader *r, const cJSON *o, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "semantics");
    if (cJSON_IsString(v)) return *out = v->valuestring, 0;
    if (!cJSON_IsArray(v)) return fail(r, "\"semantics\" must be a string or an array of strings%s%s", "", "");
    size_t len = 1;
    for (const cJSON *s = v->child; s; s = s->next) {
        if (!cJSON_IsString(s)) return fail(r, "\"semantics\" must be a string or an array of strings%s%s", "", "");
        len += strlen(s->valuestring) + 1;
    }
    char *t = calloc(1, len);
    for (const cJSON *s = v->child; s; s = s->next) strcat(strcat(t, s->valuestring), s->next ? " " : "");
    *out = t;
    return 0;
}

static int read_param(reader *r, const cJSON *o, ug_param_decl *p)
{
    static const char *const keys[] = {"name", "type", "default", "choices", "min", "max", "doc", NULL};
    static const char *const types[] = {"int", "fp32", "number", "enum", "int_list", "pair_list"};
    const char *type;
    int t;
    if (known_keys(r, o, keys) || text(r, o, "name", 1, &p->name) || text(r, o, "type", 1, &type) ||
        choice(r, type, types, 6, "param type", &t) || text(r, o, "default", 0, &p->def) ||
        text(r, o, "choices", t == UG_PARAM_ENUM, &p->choices) || number(r, o, "min", -UG_DECL_INF, &p->min) ||
        number(r, o, "max", UG_DECL_INF, &p->max) || text(r, o, "doc", 0, &p->doc))
        return -1;
    p->type = (ug_param_type)t;
    return 0;
}

static int read_derived(reader *r, const cJSON *o, ug_derived_decl *d)
{
    static const char *const keys[] = {"name", "formula", "doc", NULL};
    return known_keys(r, o, keys) || text(r, o, "name", 1, &d->name) || text(r, o, "formula", 1, &d->formula) ||
                   text(r, o, "doc", 0, &d->doc)
               ? -1
               : 0;
}

/* "optional": true marks an output a kernel may leave unwritten (core/opdecl.h); only an
 * output can be optional. */
static int read_optional(reader *r, const cJSON *o, ug_tensor_decl *t)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "optional");
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return fail(r, "\"optional\" must be true or false%s%s", "", "");
    t->optional = cJSON_IsTrue(v);
    if (t->optional && t->role != UG_TENSOR_OUTPUT)
        return fail(r, "\"optional\": only a tensor of role output can be optional (\"%s\" is not)%s", t->name, "");
    return 0;
}

static int read_tensor(reader *r, const cJSON *o, ug_tensor_decl *t)
{
    static const char *const keys[] = {"name", "role", "dtype", "shape", "when", "doc", "optional", NULL};
    static const char *const roles[] = {"input", "built", "output"};
    const char *role;
    int i;
    if (known_keys(r, o, keys) || text(r, o, "name", 1, &t->name) || text(r, o, "role", 1, &role) ||
        choice(r, role, roles, 3, "role", &i) || text(r, o, "dtype", 1, &t->dtype) ||
        text(r, o, "shape", 1, &t->shape) || text(r, o, "when", 0, &t->when) || text(r, o, "doc", 0, &t->doc))
        return -1;
    t->role = (ug_tensor_role)i;
    return read_optional(r, o, t);
}

/* The optional reference rule of an output: reference_atol, reference_rtol and
 * reference_source together (reference_budget optional, default 0 = every element), all
 * finite and non-negative, the budget a share at most 1. */
static int read_reference(reader *r, const cJSON *o, ug_output_rule *rule)
{
    const char *const keys[] = {"reference_atol", "reference_rtol", "reference_budget", "reference_source"};
    int any = 0;
    for (int i = 0; i < 4; i++) any |= cJSON_GetObjectItemCaseSensitive(o, keys[i]) != NULL;
    if (!any) return 0;
    if (!cJSON_GetObjectItemCaseSensitive(o, "reference_atol") ||
        !cJSON_GetObjectItemCaseSensitive(o, "reference_rtol"))
        return fail(r, "a reference rule needs \"reference_atol\" and \"reference_rtol\"%s%s", "", "");
    if (number(r, o, "reference_atol", 0, &rule->reference_atol) ||
        number(r, o, "reference_rtol", 0, &rule->reference_rtol) ||
        number(r, o, "reference_budget", 0, &rule->reference_budget) ||
        text(r, o, "reference_source", 1, &rule->reference_source))
        return -1;
    if (!(rule->reference_atol >= 0 && rule->reference_rtol >= 0 && rule->reference_budget >= 0 &&
          rule->reference_budget <= 1 && rule->reference_atol < 1e300 && rule->reference_rtol < 1e300))
        return fail(r, "reference_atol and reference_rtol must be >= 0, reference_budget in [0, 1]%s%s", "", "");
    rule->has_reference = 1;
    return 0;
}

/* reference_golden: the reference test's own golden, said in words (core/ops.h); only beside
 * a reference rule. */
static int read_reference_golden(reader *r, const cJSON *o, ug_output_rule *rule)
{
    double group = 0;
    if (text(r, o, "reference_golden", 0, &rule->reference_golden) || number(r, o, "reference_group", 0, &group))
        return -1;
    if (rule->reference_golden && !rule->has_reference)
        return fail(r, "\"reference_golden\" needs a reference rule (reference_atol, reference_rtol)%s%s", "", "");
    if (group != 0 && (!rule->reference_golden || !(group >= 1 && group <= 1e9 && group == (double)(long)group)))
        return fail(r,
                    "\"reference_group\" is a whole number of ids from 1, beside a reference rule with a "
                    "\"reference_golden\"%s%s",
                    "", "");
    rule->reference_group = (long)group;
    return 0;
}

static int read_output(reader *r, const cJSON *o, ug_output_rule *rule)
{
    static const char *const keys[] = {"name",
                                       "of",
                                       "compare",
                                       "pypto_atol",
                                       "pypto_rtol",
                                       "pypto_budget",
                                       "source",
                                       "reference_atol",
                                       "reference_rtol",
                                       "reference_budget",
                                       "reference_source",
                                       "reference_golden",
                                       "reference_group",
                                       "reference_unjudged",
                                       NULL};
    const char *cmp;
    int c;
    if (known_keys(r, o, keys) || text(r, o, "name", 1, &rule->name) || text(r, o, "of", 0, &rule->of) ||
        text(r, o, "compare", 1, &cmp) || choice(r, cmp, ug_cmp_names, UG_CMP_COUNT, "compare", &c) ||
        number(r, o, "pypto_atol", 0, &rule->pypto_atol) || number(r, o, "pypto_rtol", 0, &rule->pypto_rtol) ||
        number(r, o, "pypto_budget", 0, &rule->pypto_budget) || text(r, o, "source", 0, &rule->source) ||
        read_reference(r, o, rule) || read_reference_golden(r, o, rule) ||
        text(r, o, "reference_unjudged", 0, &rule->reference_unjudged))
        return -1;
    if (rule->reference_unjudged && rule->has_reference)
        return fail(r, "\"reference_unjudged\" says why an output has no reference rule: not beside one%s%s", "", "");
    rule->cmp = (ug_cmp)c;
    if ((rule->reference_group > 0) != (rule->cmp == UG_CMP_TOPK && rule->has_reference))
        return fail(r, "a topk_set output's reference rule is a \"reference_group\" compare, and only it is%s%s", "",
                    "");
    return 0;
}

/* Reads array key of o into a new array of n+1 zeroed elements of size sz (the last one
 * the NULL-name end), calling each for every element. */
static int read_array(reader *r, const cJSON *o, const char *key, int required, size_t sz, void **out, int *n,
                      int (*each)(reader *, const cJSON *, void *))
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL, *n = 0;
    if (!a) return required ? fail(r, "missing \"%s\"%s", key, "") : 0;
    if (!cJSON_IsArray(a)) return fail(r, "\"%s\" must be an array%s", key, "");
    char *items = calloc((size_t)cJSON_GetArraySize(a) + 1, sz);
    for (const cJSON *e = a->child; e; e = e->next, (*n)++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%d]", key, *n);
        r->where = where;
        if (each(r, e, items + (size_t)*n * sz)) return free(items), -1;
    }
    r->where = "top level";
    *out = items;
    return 0;
}

/* One sim kernel variant; its code is its name's (core/ops.c gives it when the definitions load). */
static int read_variant(reader *r, const cJSON *o, ug_kernel_variant *v)
{
    static const char *const keys[] = {"name", "desc", "beyond_plan", NULL};
    return known_keys(r, o, keys) || text(r, o, "name", 1, &v->name) || text(r, o, "desc", 1, &v->desc) ||
                   flag(r, o, "beyond_plan", &v->beyond_plan)
               ? -1
               : 0;
}

/* "primary": the numeric standard that decides the op's outcome (absent: pypto). */
static int primary_standard(reader *r, const cJSON *root, int *out)
{
    const char *name;
    *out = UG_STD_PYPTO;
    if (text(r, root, "primary", 0, &name)) return -1;
    if (!name) return 0;
    int s = ug_standard_find(name);
    if (s < 0 || ug_standard_is_discrete(s))
        return fail(r, "\"primary\" is \"%s\", not a numeric standard (`ulpgym standards` lists them)%s", name, "");
    *out = s;
    return 0;
}

static int each_param(reader *r, const cJSON *e, void *p) { return read_param(r, e, p); }
static int each_derived(reader *r, const cJSON *e, void *p) { return read_derived(r, e, p); }
static int each_tensor(reader *r, const cJSON *e, void *p) { return read_tensor(r, e, p); }
static int each_output(reader *r, const cJSON *e, void *p) { return read_output(r, e, p); }
static int each_variant(reader *r, const cJSON *e, void *p) { return read_variant(r, e, p); }

static const ug_tensor_decl *tensor_named(const ug_op_def *d, const char *name)
{
    const ug_tensor_decl *t = d->decl.tensors;
    while (t->name && strcmp(t->name, name) != 0) t++;
    return t->name ? t : NULL;
}

/* Every output rule judges a declared output tensor: by its name, or (a view) by "of",
 * under a name no tensor has. */
static int rules_match_outputs(reader *r, const ug_op_def *d)
{
    int goldens = 0;
    for (int i = 0; i < d->n_outputs; i++) goldens += d->outputs[i].reference_golden != NULL;
    if (goldens && !d->reference_golden)
        return fail(r, "an output rule declares \"reference_golden\" but the op's oracle file computes none%s%s", "",
                    "");
    if (!goldens && d->reference_golden)
        return fail(r,
                    "the op's oracle file computes a reference golden but no output rule declares "
                    "\"reference_golden\"%s%s",
                    "", "");
    for (int i = 0; i < d->n_outputs; i++) {
        const ug_output_rule *o = &d->outputs[i];
        const ug_tensor_decl *t = tensor_named(d, o->of ? o->of : o->name);
        if (!t || t->role != UG_TENSOR_OUTPUT)
            return fail(r, "output rule \"%s\" names no tensor of role output%s", o->of ? o->of : o->name,
                        o->of ? " (its \"of\")" : "");
        if (o->of && tensor_named(d, o->name))
            return fail(r, "output rule \"%s\" is a view (\"of\") and must not take a tensor's name%s", o->name, "");
        if (o->of && strlen(o->name) >= 32)
            return fail(r, "output rule \"%s\": a view's name has at most 31 characters%s", o->name, "");
    }
    return 0;
}

/* The parsed declarations that loaded definitions point into: reachable from this global
 * for the life of the process (LeakSanitizer reported them as leaks when only interior
 * pointers to their strings remained). Loading happens once, on first use (core/ops.c). */
typedef struct kept_tree {
    cJSON *tree;
    struct kept_tree *next;
} kept_tree;
static kept_tree *kept_trees;

/* Keeps tree on the list: 0, or -1 when out of memory. */
static int keep_tree(cJSON *tree)
{
    kept_tree *k = malloc(sizeof *k);
    if (!k) return -1;
    k->tree = tree;
    k->next = kept_trees;
    kept_trees = k;
    return 0;
}

/* Where the params and derived sizes come from: this file, or the file of the op named by
 * "params_from" (two ops over one input set, such as an attention and its gradient),
 * which must then leave both out. */
static int params_source(reader *r, const cJSON *root, const cJSON **src)
{
    const char *from;
    *src = root;
    if (text(r, root, "params_from", 0, &from) || !from) return -!!r->err[0];
    if (cJSON_GetObjectItemCaseSensitive(root, "params") || cJSON_GetObjectItemCaseSensitive(root, "derived"))
        return fail(r, "\"params_from\" %s leaves \"params\" and \"derived\" out%s", from, "");
    for (const ug_embedded_decl *e = ug_embedded_decls; e->op; e++)
        if (strcmp(e->op, from) == 0) {
            *src = cJSON_Parse(e->json); /* kept with root (ug_op_def_load) */
            return *src ? 0 : fail(r, "\"params_from\" %s is not valid JSON%s", from, "");
        }
    return fail(r, "\"params_from\": no declaration file %s.json%s", from, "");
}

/* Frees the trees of a declaration that did not load (src: the params_from file's, or root). */
static void drop_trees(cJSON *root, const cJSON *src)
{
    if (src && src != root) cJSON_Delete((cJSON *)src);
    cJSON_Delete(root);
}

int ug_op_def_load(ug_op_def *d, const char *op, const char *json, char *err, size_t errlen)
{
    static const char *const keys[] = {"op",        "summary",      "dtypes",      "semantics", "primary",
                                       "check_all", "params",       "params_from", "derived",   "tensors",
                                       "outputs",   "sim_variants", NULL};
    reader r = {op, "top level", err, errlen};
    cJSON *root = cJSON_Parse(json); /* kept: the definition's strings point into it */
    if (!root) return fail(&r, "not valid JSON near \"%.40s\"%s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "", "");
    const char *name;
    const cJSON *src = root;
    void *params, *derived, *tensors, *outputs, *variants;
    int n;
    err[0] = 0;
    if (known_keys(&r, root, keys) || text(&r, root, "op", 1, &name) || params_source(&r, root, &src) ||
        (strcmp(name, op) != 0 && fail(&r, "\"op\" is \"%s\", the file is %s.json", name, op)) ||
        text(&r, root, "summary", 1, &d->summary) || text(&r, root, "dtypes", 1, &d->dtypes) ||
        semantics(&r, root, &d->semantics) || primary_standard(&r, root, &d->primary) ||
        flag(&r, root, "check_all", &d->check_all) ||
        read_array(&r, src, "params", 1, sizeof(ug_param_decl), &params, &n, each_param) ||
        read_array(&r, src, "derived", 0, sizeof(ug_derived_decl), &derived, &n, each_derived) ||
        read_array(&r, root, "tensors", 1, sizeof(ug_tensor_decl), &tensors, &n, each_tensor) ||
        read_array(&r, root, "outputs", 1, sizeof(ug_output_rule), &outputs, &d->n_outputs, each_output) ||
        read_array(&r, root, "sim_variants", 0, sizeof(ug_kernel_variant), &variants, &d->n_variants, each_variant))
        return drop_trees(root, src), -1;
    d->decl.op = name;
    d->decl.params = params, d->decl.derived = derived, d->decl.tensors = tensors;
    d->outputs = outputs;
    d->variants = variants;
    if (rules_match_outputs(&r, d)) return drop_trees(root, src), -1;
    if (keep_tree(root) || (src != root && keep_tree((cJSON *)src))) {
        snprintf(err, errlen, "declaration of %s: out of memory", op);
        return -1; /* the trees stay allocated: d may point into them */
    }
    return 0;
}
