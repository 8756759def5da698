/* result_json.c — a judged case as JSON (see result_json.h). */
#include "run/result_json.h"

void ug_result_metrics_json(cJSON *j, const ug_output_result *o)
{
    for (int i = 0; i < ug_metric_nfields; i++) {
        const ug_metric_field *f = &ug_metric_fields[i];
        if (f->kind == UG_MF_INDEX && o->not_provided)
            cJSON_AddNullToObject(j, f->name);
        else
            cJSON_AddNumberToObject(j, f->name, ug_metric_value(&o->m, f));
    }
}

/* The standards that judged output o, each with its verdict and the thresholds it applied. */
static void add_output_standards(cJSON *o, const ug_output_result *out)
{
    cJSON *st = cJSON_AddObjectToObject(o, "standards");
    for (int s = 0; st && s < UG_STD_COUNT; s++) {
        if (out->verdict[s] == UG_V_NA) continue;
        cJSON *v = cJSON_AddObjectToObject(st, ug_standard_name(s));
        cJSON_AddStringToObject(v, "verdict", ug_vstate_name(out->verdict[s]));
        cJSON *thr = cJSON_Parse(out->thresholds[s]);
        cJSON_AddItemToObject(v, "thresholds", thr ? thr : cJSON_CreateString(out->thresholds[s]));
    }
}

cJSON *ug_result_json(const ug_result *r)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "case_id", r->case_id);
    cJSON_AddStringToObject(j, "op", ug_op_name(r->op));
    cJSON_AddStringToObject(j, "dtype", ug_dtype_name(r->dtype));
    cJSON_AddStringToObject(j, "verdict", ug_outcome_name(r->outcome));
    cJSON_AddStringToObject(j, "primary_standard", ug_standard_name(r->primary));
    cJSON_AddStringToObject(j, "message", r->message);
    cJSON *orc = cJSON_AddObjectToObject(j, "oracle"); /* elements settled by MPFR; of them, raised / not settled */
    cJSON_AddNumberToObject(orc, "by_mpfr", (double)r->n_fallback);
    cJSON_AddNumberToObject(orc, "raised_precision", (double)r->n_raised);
    cJSON_AddNumberToObject(orc, "unsettled", (double)r->n_unsettled);
    cJSON_AddNumberToObject(j, "kernel_ms", r->kernel_ms);
    cJSON_AddNumberToObject(j, "oracle_ms", r->oracle_ms);
    cJSON *st = cJSON_AddObjectToObject(j, "standards");
    for (int s = 0; s < UG_STD_COUNT; s++) /* no output judged (SKIP, ERROR, CRASH, ...): no standard judged */
        cJSON_AddStringToObject(st, ug_standard_name(s), r->n_out ? ug_vstate_name(r->verdict[s]) : "NA");
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int k = 0; k < r->n_out; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", r->out[k].name);
        cJSON_AddStringToObject(o, "dtype", ug_dtype_name(r->out[k].dtype));
        cJSON_AddBoolToObject(o, "provided", !r->out[k].not_provided);
        ug_result_metrics_json(o, &r->out[k]);
        add_output_standards(o, &r->out[k]);
        cJSON_AddItemToArray(outs, o);
    }
    return j;
}
