/* case_api.c — libulpgym's case handle: build a case from its spec, describe its tensors,
 * hand out its inputs, take a kernel's outputs and judge them as a sweep does
 * (ulpgym/ulpgym.h). The judging is run/exec.c's ug_exec_judge, the very function
 * `ulpgym check` calls on a device's replayed outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "core/npy.h"
#include "gen/case.h"
#include "gen/case_memory.h"
#include "oracles/figure.h"
#include "run/exec.h"
#include "run/result_json.h"

ulpgym_case *ulpgym_case_open(const char *spec_json, char **err)
{
    char msg[1024];
    if (!spec_json) return api_fail(err, "give a spec (JSON text)"), NULL;
    if (ug_case_memory_configure(NULL, msg, sizeof msg))
        return api_fail(err, "%s", msg), NULL; /* $ULPGYM_CASE_MEMORY */
    ug_spec spec;
    if (ug_spec_parse(spec_json, &spec, msg, sizeof msg)) return api_fail(err, "%s", msg), NULL;
    ulpgym_case *h = calloc(1, sizeof *h);
    if (!h) {
        ug_spec_free(&spec);
        return api_fail(err, "out of memory"), NULL;
    }
    if (ug_case_build(&h->c, &spec, msg, sizeof msg)) { /* takes the spec, also on error */
        api_fail(err, "case %s: %s", h->c.spec.id[0] ? h->c.spec.id : "?", msg);
        ulpgym_case_close(h);
        return NULL;
    }
    return h;
}

void ulpgym_case_close(ulpgym_case *h)
{
    if (!h) return;
    ug_case_free(&h->c);
    free(h);
}

static cJSON *tensor_json(const ug_tensor *t, int output)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    const char *npy = ug_npy_descr_of_dtype(t->dtype);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "dtype", ug_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
    cJSON_AddItemToObject(o, "shape", shape);
    cJSON_AddStringToObject(o, "npy_dtype", npy);
    cJSON_AddBoolToObject(o, "raw_bits", !strchr("fi", npy[1]));
    cJSON_AddNumberToObject(o, "nbytes", (double)(t->numel * (size_t)ug_dtype_size(t->dtype)));
    if (output) cJSON_AddBoolToObject(o, "optional", t->optional);
    return o;
}

char *ulpgym_case_describe(const ulpgym_case *h)
{
    const ug_case *c = &h->c;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", c->spec.id);
    cJSON_AddStringToObject(j, "op", ug_op_name(c->spec.op));
    cJSON_AddStringToObject(j, "group", ug_group_name(ug_op_group(c->spec.op)));
    cJSON_AddStringToObject(j, "dtype", ug_dtype_name(c->spec.dtype));
    cJSON_AddStringToObject(j, "spec", c->spec.canonical);
    cJSON *params = cJSON_Parse(c->params_json ? c->params_json : "{}");
    cJSON_AddItemToObject(j, "params", params ? params : cJSON_CreateObject());
    cJSON_AddStringToObject(j, "params_json", c->params_json ? c->params_json : "{}");
    cJSON_AddStringToObject(j, "primary", ug_standard_name(c->def->primary));
    cJSON *ins = cJSON_AddArrayToObject(j, "inputs"), *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int i = 0; i < c->n_in; i++) cJSON_AddItemToArray(ins, tensor_json(&c->in[i], 0));
    for (int i = 0; i < c->n_out; i++) cJSON_AddItemToArray(outs, tensor_json(&c->out[i], 1));
    return api_print(j, NULL);
}

const void *ulpgym_case_input(const ulpgym_case *h, int k, size_t *nbytes)
{
    if (!h || k < 0 || k >= h->c.n_in) return NULL;
    const ug_tensor *t = &h->c.in[k];
    if (nbytes) *nbytes = t->numel * (size_t)ug_dtype_size(t->dtype);
    return t->data;
}

/* Whether double x is exactly a value of dt (NaN counts for the float formats, which have one). */
static int of_dtype(ug_dtype dt, double x)
{
    double r = ug_dtype_round(dt, x); /* rounds: RNE to dt, only to compare */
    if (isnan(x)) return isnan(r);
    return r == x && signbit(r) == signbit(x);
}

/* Stores float64 values into t after checking each is of t's dtype; -2 naming the first that is not. */
static int store_f64(ug_tensor *t, const double *v, char **err)
{
    for (size_t i = 0; i < t->numel; i++)
        if (!of_dtype(t->dtype, v[i]))
            return api_fail(err,
                            "output %s: element %zu is %.17g, which is not a %s value (%.17g is the nearest): "
                            "round on the device, or pass the %s bits",
                            t->name, i, v[i], ug_dtype_name(t->dtype), ug_dtype_round(t->dtype, v[i]),
                            ug_dtype_name(t->dtype));
    for (size_t i = 0; i < t->numel; i++) ug_dtype_store(t->dtype, t->data, i, v[i]); /* exact: checked above */
    return 0;
}

int ulpgym_case_set_output(ulpgym_case *h, int k, const void *data, size_t nbytes, int encoding, char **err)
{
    if (!h || k < 0 || k >= h->c.n_out) return api_fail(err, "no output %d", k);
    ug_tensor *t = &h->c.out[k];
    size_t native = t->numel * (size_t)ug_dtype_size(t->dtype), f64 = t->numel * sizeof(double);
    size_t want = encoding == ULPGYM_ENC_F64 ? f64 : native;
    if (encoding != ULPGYM_ENC_NATIVE && encoding != ULPGYM_ENC_F64)
        return api_fail(err, "unknown encoding %d", encoding);
    if (nbytes != want || (!data && want))
        return api_fail(err, "output %s: %zu bytes given, %zu expected (%zu %s elements%s)", t->name, nbytes, want,
                        t->numel, encoding == ULPGYM_ENC_F64 ? "float64" : ug_npy_descr_of_dtype(t->dtype),
                        encoding == ULPGYM_ENC_F64 ? "" : ", its own encoding");
    h->judged = 0;
    if (encoding == ULPGYM_ENC_F64) {
        if (store_f64(t, data, err)) return -2;
    } else if (want) {
        memcpy(t->data, data, want);
    }
    h->set[k] = 1;
    return 0;
}

int ulpgym_case_set_status(ulpgym_case *h, int unsupported, const char *reason, char **err)
{
    if (!h) return api_fail(err, "no case");
    h->status = unsupported ? 1 : -1;
    snprintf(h->reason, sizeof h->reason, "%s", reason && *reason ? reason : unsupported ? "declined" : "failed");
    h->judged = 0;
    return 0;
}

/* opts_json's sample and primary into o; -2 on a bad value. */
static int judge_opts(ulpgym_case *h, const char *opts_json, ug_exec_opts *o, char **err)
{
    static const char *const keys[] = {"sample", "primary", NULL};
    cJSON *q = api_parse_object("judge options", opts_json, keys, err);
    if (!q) return -2;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(q, "sample"), *p = cJSON_GetObjectItemCaseSensitive(q, "primary");
    ug_exec_opts_default(o);
    int rc = 0;
    char msg[512];
    if (cJSON_IsString(s) && strcmp(s->valuestring, "all") == 0)
        o->oracle.sample = 0;
    else if (cJSON_IsNumber(s) && s->valuedouble >= 1 && s->valuedouble <= 1e12)
        o->oracle.sample = (size_t)s->valuedouble;
    else if (s && !cJSON_IsNull(s))
        rc = api_fail(err, "\"sample\" takes a count >= 1 or \"all\"");
    h->primary[0] = 0;
    if (!rc && cJSON_IsString(p)) {
        if (ug_exec_parse_primary(p->valuestring, &o->primary, msg, sizeof msg)) rc = api_fail(err, "%s", msg);
        o->primary_set = 1;
        snprintf(h->primary, sizeof h->primary, "%s", p->valuestring);
    } else if (!rc && p && !cJSON_IsNull(p)) {
        rc = api_fail(err, "\"primary\" takes a standard's name");
    }
    h->sample = (long)o->oracle.sample;
    cJSON_Delete(q);
    return rc;
}

/* The outputs a kernel left out that it must write: -2 naming the first. */
static int check_all_set(const ulpgym_case *h, char **err)
{
    for (int k = 0; k < h->c.n_out; k++)
        if (!h->set[k] && !h->c.out[k].optional)
            return api_fail(err, "output %s was not given (every output but the optional ones is required)",
                            h->c.out[k].name);
    return 0;
}

char *ulpgym_case_judge(ulpgym_case *h, const char *opts_json, char **err)
{
    ug_exec_opts o;
    if (!h) return api_fail(err, "no case"), NULL;
    if (judge_opts(h, opts_json, &o, err) || (!h->status && check_all_set(h, err))) return NULL;
    ug_result *r = &h->r;
    memset(r, 0, sizeof *r);
    snprintf(r->case_id, sizeof r->case_id, "%s", h->c.spec.id);
    r->op = h->c.spec.op;
    r->dtype = h->c.spec.dtype;
    r->primary = o.primary_set ? o.primary : h->c.def->primary;
    if (h->status) { /* as a replayed device's unsupported.txt / error.txt */
        r->outcome = h->status > 0 ? UG_OUT_SKIP : UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "%s: %.470s", h->status > 0 ? "unsupported" : "device error",
                 h->reason);
    } else if (ug_exec_judge(&h->c, &o, r, NULL)) {
        return api_fail(err, "case %s cannot be judged: %s", r->case_id, r->message), NULL;
    }
    h->judged = 1;
    cJSON *j = ug_result_json(r);
    char figure[1024];
    ug_verdict_figure(r, figure, sizeof figure);
    cJSON_AddStringToObject(j, "figure", figure);
    cJSON_AddNumberToObject(j, "sample", (double)h->sample);
    return api_print(j, err);
}
