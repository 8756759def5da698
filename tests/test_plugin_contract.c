/* test_plugin_contract.c — the contract `ulpgym ops show OP --json` prints holds beyond
 * the sample it was learned from: for each implemented operator the derived tensor list
 * (names, roles, rank, dtype per case dtype) and every shape formula are checked
 * against the tensors build() makes for the op's first CHECKED plan cases in plan order
 * (its required cases: tile edges, production shapes, every dtype), while the contract
 * learns from the cheapest cases. Known contracts of the two worked operators pin the
 * derivation, and the formula evaluator is checked on each kind of formula. */
#include <string.h>

#include "check.h"
#include "gen/plan.h"
#include "kernels/contract.h"
#include "gen/case.h"

#define CHECKED 30

static const cJSON *find_tensor(const cJSON *contract, const char *role, const char *name)
{
    for (const cJSON *e = cJSON_GetObjectItem(contract, role)->child; e; e = e->next)
        if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) == 0) return e;
    return NULL;
}

static void check_tensor(const cJSON *e, const ug_tensor *t, const ug_spec *s, const cJSON *defaults, int *unknown_dims)
{
    CHECK(cJSON_GetObjectItem(e, "ndim")->valueint == t->ndim, "%s: ndim", t->name);
    const cJSON *dt = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "dtype"), ug_dtype_name(s->dtype));
    CHECK(cJSON_IsString(dt) && strcmp(dt->valuestring, ug_dtype_name(t->dtype)) == 0, "%s: dtype for case dtype %s",
          t->name, ug_dtype_name(s->dtype));
    const cJSON *shape = cJSON_GetObjectItem(e, "shape");
    for (int d = 0; d < t->ndim && d < cJSON_GetArraySize(shape); d++) {
        const char *f = cJSON_GetArrayItem(shape, d)->valuestring;
        if (strcmp(f, "?") == 0) {
            (*unknown_dims)++;
            continue;
        }
        long long v = ug_contract_eval(f, s->params, defaults);
        CHECK(v == t->shape[d], "case %s tensor %s dim %d: formula %s gives %lld, build() made %lld", s->id, t->name,
              d, f, v, (long long)t->shape[d]);
    }
}

static void check_op(const ug_plan *p, int op)
{
    char err[512];
    cJSON *c = ug_contract_json(op, p, err, sizeof err);
    CHECK(c != NULL, "%s: %s", ug_op_name(op), err);
    if (!c) return;
    size_t n = 0;
    int unknown = 0;
    for (size_t i = 0; i < p->n && n < CHECKED; i++) {
        if (p->cases[i].op != op) continue;
        ug_spec s;
        ug_case cs;
        if (ug_spec_parse(p->cases[i].spec, &s, err, sizeof err)) continue;
        ug_spec keep;
        ug_spec_parse(p->cases[i].spec, &keep, err, sizeof err);
        int built = ug_case_build(&cs, &s, err, sizeof err) == 0;
        CHECK(built, "%s", err);
        for (int io = 0; built && io < 2; io++) {
            int count = io ? cs.n_out : cs.n_in;
            CHECK(count == cJSON_GetArraySize(cJSON_GetObjectItem(c, io ? "outputs" : "inputs")),
                  "%s: tensor count", ug_op_name(op));
            for (int k = 0; k < count; k++) {
                const ug_tensor *t = io ? &cs.out[k] : &cs.in[k];
                const cJSON *e = find_tensor(c, io ? "outputs" : "inputs", t->name);
                CHECK(e != NULL, "%s: tensor %s missing from the contract", ug_op_name(op), t->name);
                if (e) check_tensor(e, t, &keep, cJSON_GetObjectItem(c, "defaults"), &unknown);
            }
        }
        ug_case_free(&cs);
        ug_spec_free(&keep);
        n++;
    }
    printf("  %-28s contract holds on %zu plan cases (%d dims left as \"?\")\n", ug_op_name(op), n, unknown);
    cJSON_Delete(c);
}

static const char *shape_of(const cJSON *c, const char *role, const char *name, int d)
{
    const cJSON *e = find_tensor(c, role, name);
    const cJSON *s = e ? cJSON_GetArrayItem(cJSON_GetObjectItem(e, "shape"), d) : NULL;
    return s ? s->valuestring : "(none)";
}

static void check_known(const ug_plan *p)
{
    char err[512];
    cJSON *c = ug_contract_json(ug_op_find("attn_softmax"), p, err, sizeof err);
    if (c) {
        CHECK(strcmp(shape_of(c, "inputs", "x", 0), "rows") == 0 && strcmp(shape_of(c, "inputs", "x", 1), "cols") == 0,
              "x is [rows, cols]");
        const cJSON *mask = find_tensor(c, "inputs", "mask");
        CHECK(mask && strcmp(cJSON_GetObjectItem(mask, "filled")->valuestring, "built") == 0, "mask is built");
        CHECK(mask && strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(mask, "dtype"), "bf16")->valuestring, "fp32") == 0,
              "mask is fp32 in a bf16 case");
        CHECK(find_tensor(c, "outputs", "y") != NULL, "y is an output");
        cJSON_Delete(c);
    }
    c = ug_contract_json(ug_op_find("inplace_add_rmsnorm"), p, err, sizeof err);
    if (c) {
        CHECK(strcmp(shape_of(c, "inputs", "gamma", 0), "h") == 0, "gamma is [h]");
        CHECK(strcmp(shape_of(c, "outputs", "rstd", 0), "rows") == 0, "rstd is [rows]");
        const cJSON *rstd = find_tensor(c, "outputs", "rstd");
        CHECK(rstd && strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(rstd, "dtype"), "fp16")->valuestring, "fp32") == 0,
              "rstd is fp32");
        cJSON_Delete(c);
    }
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (!ug_op_def_get(op)) { /* the first op this build lacks */
            CHECK(ug_contract_json(op, p, err, sizeof err) == NULL && strstr(err, "not implemented"),
                  "unimplemented %s: no contract", ug_op_name(op));
            break;
        }
}

static void check_eval(void)
{
    cJSON *p = cJSON_Parse("{\"b\":3,\"s\":10,\"d\":64,\"k\":7,\"mode\":\"x\",\"scale\":0.5}");
    cJSON *defs = cJSON_Parse("{\"n\":5,\"s\":99}");
    struct {
        const char *f;
        long long want;
    } t[] = {{"s", 10}, {"2*d", 128}, {"d/2", 32}, {"ceil(k/4)", 2}, {"b*s", 30}, {"s+d", 74}, {"b*s*d", 1920},
             {"48", 48}, {"?", -1}, {"k/2", -1}, {"nope", -1}, {"mode", -1}, {"s*", -1}, {"ceil(k/0)", -1},
             {"n*s", 50} /* n from the defaults; s from params, which win */};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        CHECK(ug_contract_eval(t[i].f, p, defs) == t[i].want, "eval %s = %lld, want %lld", t[i].f,
              ug_contract_eval(t[i].f, p, defs), t[i].want);
    CHECK(ug_contract_eval("n", p, NULL) == -1, "no defaults: n is unknown");
    cJSON_Delete(p);
    cJSON_Delete(defs);
}

int main(void)
{
    ug_plan p;
    char err[1024];
    int loaded = ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err) == 0;
    CHECK(loaded, "plan: %s", err);
    if (!loaded) return check_done();
    int ops = 0;
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (ug_op_def_get(op)) {
            check_op(&p, op);
            ops++;
        }
    CHECK(ops > 0, "no operator implemented");
    check_known(&p);
    check_eval();
    ug_plan_free(&p);
    return check_done();
}
