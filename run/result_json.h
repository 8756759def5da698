/* result_json.h — a judged case (ug_result) as JSON: what `case --json` and `check --json`
 * print and the library's ulpgym_case_judge returns (one builder for all three). */
#ifndef UG_RESULT_JSON_H
#define UG_RESULT_JSON_H
#include <cjson/cJSON.h>

#include "oracles/verdict.h"

/* {"case_id","op","dtype","verdict","primary_standard","message","oracle":{...},
 *  "kernel_ms","oracle_ms","standards":{name: PASS|FAIL|NA},
 *  "outputs":[{"name","dtype","provided", the metric fields (oracles/verdict.h ug_metric_fields:
 *              "n_checked","n_total","nonfinite_mismatch","max_abs",...),
 *              "standards":{name:{"verdict","thresholds":{...}}}}]}
 * where an output's standards are those that judged it (NA ones left out). The caller
 * deletes it; NULL without memory. */
cJSON *ug_result_json(const ug_result *r);
/* Adds output o's metric fields to object j under their stored names (a NaN figure is null,
 * and a worst element's index where no element was checked): for every JSON that shows them. */
void ug_result_metrics_json(cJSON *j, const ug_output_result *o);

#endif
