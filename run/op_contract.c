/* op_contract.c — an op's contract as JSON (see op_contract.h). */
#include "run/op_contract.h"

#include "core/ops.h"
#include "gen/fuzzspace.h"
#include "oracles/verdict.h"
#include "ulpgym/kernel_abi.h"

const char *ug_cmp_name(int c) { return (unsigned)c < UG_CMP_COUNT ? ug_cmp_names[c] : "?"; }

#define UG_FORMULA_DOC                                                                                                                     \
    "defaults, derived sizes, shapes and 'when' are formulas over the params: numbers, names, + - * /, "                                   \
    "unary -, ( ), == != < <= > >= (1 or 0), cdiv(a,b)=ceil(a/b), fdiv(a,b)=floor(a/b), min, max, sqrt, is(E,choice) for an enum E; over " \
    "an int_list L: len(L), sum(L), maxof(L), minof(L), sumcdiv(L,k)=sum of ceil(l/k); a pair_list P ('q:k,...', a lone "                  \
    "n = n:n) is read as P.q and P.k. An fp32 param is rounded once to fp32 (RNE) before use."

static void add_abi(cJSON *o, const char *params_json)
{
    cJSON *abi = cJSON_AddObjectToObject(o, "abi");
    cJSON_AddNumberToObject(abi, "version", ULPGYM_ABI_VERSION);
    cJSON_AddStringToObject(abi, "header", "ulpgym/kernel_abi.h");
    cJSON_AddStringToObject(abi, "entry", "int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen)");
    cJSON_AddStringToObject(abi, "returns", "0 ok, 1 unsupported (SKIP), <0 error (ERROR, err stored)");
    cJSON_AddStringToObject(abi, "params_json", params_json);
    cJSON_AddStringToObject(abi, "layout", "dense C order (row-major), strides NULL; little-endian elements");
}

static void add_rules_and_variants(cJSON *o, const ug_op_def *d)
{
    cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
    for (int i = 0; i < d->n_outputs; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", d->outputs[i].name);
        cJSON_AddStringToObject(r, "compare", ug_cmp_name(d->outputs[i].cmp));
        cJSON_AddNumberToObject(r, "pypto_atol", d->outputs[i].pypto_atol);
        cJSON_AddNumberToObject(r, "pypto_rtol", d->outputs[i].pypto_rtol);
        cJSON_AddNumberToObject(r, "pypto_budget", d->outputs[i].pypto_budget);
        if (d->outputs[i].source) cJSON_AddStringToObject(r, "source", d->outputs[i].source);
        if (d->outputs[i].reference_unjudged)
            cJSON_AddStringToObject(r, "reference_unjudged", d->outputs[i].reference_unjudged);
        if (d->outputs[i].has_reference) {
            cJSON_AddNumberToObject(r, "reference_atol", d->outputs[i].reference_atol);
            cJSON_AddNumberToObject(r, "reference_rtol", d->outputs[i].reference_rtol);
            cJSON_AddNumberToObject(r, "reference_budget", d->outputs[i].reference_budget);
            cJSON_AddStringToObject(r, "reference_source", d->outputs[i].reference_source);
            if (d->outputs[i].reference_golden)
                cJSON_AddStringToObject(r, "reference_golden", d->outputs[i].reference_golden);
            if (d->outputs[i].reference_group > 0)
                cJSON_AddNumberToObject(r, "reference_group", (double)d->outputs[i].reference_group);
        }
        cJSON_AddItemToArray(outs, r);
    }
    cJSON *vars = cJSON_AddArrayToObject(o, "kernel_variants");
    const ug_kernel_variant *kv = ug_op_variants(d->op);
    for (int i = 0; kv && kv[i].name; i++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "name", kv[i].name);
        cJSON_AddStringToObject(v, "description", kv[i].desc);
        cJSON_AddBoolToObject(v, "legal", i == 0 || ug_variant_legal(kv[i].name));
        cJSON_AddItemToArray(vars, v);
    }
}

/* The declared contract: params, derived sizes, tensors, semantics. */
static cJSON *decl_json(const ug_op_def *d, cJSON *o)
{
    cJSON *decl = ug_decl_json(&d->decl, d->dtypes);
    if (d->semantics) cJSON_AddStringToObject(o, "semantics", d->semantics);
    cJSON_AddItemToObject(o, "params", cJSON_DetachItemFromObject(decl, "params"));
    cJSON_AddItemToObject(o, "derived", cJSON_DetachItemFromObject(decl, "derived"));
    cJSON_AddItemToObject(o, "tensors", cJSON_DetachItemFromObject(decl, "tensors"));
    cJSON_Delete(decl);
    cJSON *domain = ug_fuzz_domain_json(d->op);
    if (domain) cJSON_AddItemToObject(o, "outside_device_model", domain);
    cJSON_AddStringToObject(o, "formulas", UG_FORMULA_DOC);
    add_abi(o, "the case's params as canonical JSON text with every declared default written in");
    add_rules_and_variants(o, d);
    return o;
}

cJSON *ug_op_contract_json(int op, int detail)
{
    const ug_op_def *d = ug_op_def_get(op);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", ug_op_name(op));
    cJSON_AddStringToObject(o, "group", ug_group_name(ug_op_group(op)));
    cJSON_AddStringToObject(o, "status", d ? "implemented" : "planned");
    if (!d) return o;
    cJSON_AddStringToObject(o, "summary", d->summary);
    cJSON_AddStringToObject(o, "dtypes", d->dtypes);
    cJSON_AddStringToObject(o, "primary_standard", ug_standard_name(d->primary));
    char digest[17];
    if (ug_op_contract_digest(op, digest) == 0) cJSON_AddStringToObject(o, "contract", digest);
    if (!detail) return o;
    return decl_json(d, o);
}
