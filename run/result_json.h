/* result_json.h — a judged case (ug_result) as JSON: what `case --json` and `check --json`
 * print and the library's ulpgym_case_judge returns (one builder for all three). */
#ifndef UG_RESULT_JSON_H
#define UG_RESULT_JSON_H
#include <cjson/cJSON.h>

#include "oracles/verdict.h"

/* {"case_id","op","dtype","verdict","primary_standard","message","oracle":{...},
 *  "kernel_ms","oracle_ms","standards":{name: PASS|FAIL|NA},
 *  "outputs":[{"name","dtype","provided","n_checked","n_total", metrics..., "nonfinite_mismatch",
 *              "standards":{name:{"verdict","thresholds":{...}}}}]}
 * where an output's standards are those that judged it (NA ones left out). The caller
 * deletes it; NULL without memory. */
cJSON *ug_result_json(const ug_result *r);

#endif
