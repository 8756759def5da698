/* result_json.c — a judged case as JSON (see result_json.h). */
#include "run/result_json.h"

static void add_metrics(cJSON *o, const ug_metrics *m)
{
    cJSON_AddNumberToObject(o, "n_checked", (double)m->n);
    cJSON_AddNumberToObject(o, "n_total", (double)m->n_total);
    cJSON_AddNumberToObject(o, "max_abs", m->max_abs);
    cJSON_AddNumberToObject(o, "max_abs_index", (double)m->max_abs_idx);
    cJSON_AddNumberToObject(o, "max_rel", m->max_rel);
    cJSON_AddNumberToObject(o, "max_ulp", m->max_ulp);
    cJSON_AddNumberToObject(o, "max_ulp_index", (double)m->max_ulp_idx);
    cJSON_AddNumberToObject(o, "mean_ulp", m->mean_ulp);
    cJSON_AddNumberToObject(o, "mere", m->mere);
    cJSON_AddNumberToObject(o, "mare", m->mare);
    cJSON_AddNumberToObject(o, "rmse", m->rmse);
    cJSON_AddNumberToObject(o, "eb", m->eb);
    cJSON_AddNumberToObject(o, "cosine", m->cosine);
    cJSON_AddNumberToObject(o, "nonfinite_mismatch", (double)m->n_nonfinite_mismatch);
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
        add_metrics(o, &r->out[k].m);
        add_output_standards(o, &r->out[k]);
        cJSON_AddItemToArray(outs, o);
    }
    return j;
}
