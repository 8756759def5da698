/* report_text.c — see report_text.h. */
#include "cli/report_text.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "run/result_json.h"

void ug_fmt_value(double v, char *buf, size_t len) { snprintf(buf, len, "%.9g (%a)", v, v); }

void ug_print_result(const ug_result *r, FILE *f)
{
    fprintf(f, "case %s  %s  %s  verdict %s (primary: %s)\n", r->case_id, ug_op_name(r->op), ug_dtype_name(r->dtype),
            ug_outcome_name(r->outcome), ug_standard_name(r->primary));
    if (r->message[0]) fprintf(f, "  %s\n", r->message);
    if (!r->n_out) return;
    fprintf(f, "  standards:");
    for (int s = 0; s < UG_STD_COUNT; s++)
        if (r->verdict[s] != UG_V_NA) fprintf(f, " %s=%s", ug_standard_name(s), ug_vstate_name(r->verdict[s]));
    fprintf(f, "\n  timing: kernel %.2f ms, oracle %.2f ms (%lu elements settled by MPFR, %lu at raised precision",
            r->kernel_ms, r->oracle_ms, r->n_fallback, r->n_raised);
    if (r->n_unsettled) fprintf(f, ", %lu NOT settled at %d bits", r->n_unsettled, UG_ORACLE_PREC_MAX);
    fprintf(f, ")\n");
    for (int k = 0; k < r->n_out; k++) {
        const ug_output_result *o = &r->out[k];
        const ug_metrics *m = &o->m;
        if (o->not_provided) {
            fprintf(f,
                    "  output %s (%s): not provided (optional output the kernel left unwritten): NA under every "
                    "standard\n",
                    o->name, ug_dtype_name(o->dtype));
            continue;
        }
        fprintf(f, "  output %s (%s): %zu of %zu elements checked\n", o->name, ug_dtype_name(o->dtype), m->n,
                m->n_total);
        fprintf(f, "    max abs %.4g @%zu  max rel %.4g @%zu  max ulp %.4g @%zu  mean ulp %.4g\n", m->max_abs,
                m->max_abs_idx, m->max_rel, m->max_rel_idx, m->max_ulp, m->max_ulp_idx, m->mean_ulp);
        fprintf(f, "    MERE %.4g  MARE %.4g  RMSE %.4g  EB %.4g  small-value err %.4g  cosine %.9f\n", m->mere,
                m->mare, m->rmse, m->eb, m->small_err_ratio, m->cosine);
        fprintf(f, "    naive benchmark: max abs %.4g  MERE %.4g  MARE %.4g  RMSE %.4g\n", m->b_max_abs, m->b_mere,
                m->b_mare, m->b_rmse);
        if (m->n_nonfinite_mismatch) fprintf(f, "    NaN/Inf mismatches: %zu\n", m->n_nonfinite_mismatch);
        for (int s = 0; s < UG_STD_COUNT; s++)
            if (o->verdict[s] != UG_V_NA)
                fprintf(f, "    %-16s %-4s %s\n", ug_standard_name(s), ug_vstate_name(o->verdict[s]), o->thresholds[s]);
    }
}

void ug_print_result_json(const ug_result *r, FILE *f)
{
    cJSON *j = ug_result_json(r);
    char *s = j ? cJSON_Print(j) : NULL;
    fprintf(f, "%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}
