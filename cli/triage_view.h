/* triage_view.h — what triage prints about a fully checked case, per output: the worst
 * elements with the inputs that feed them, a histogram and where the error clusters, each
 * led by the element's error relative to what the case's deciding standard allows of it
 * (its yardstick):
 *   pypto, reference, allclose   |a - g| / (atol + rtol*|g|), with the atol and rtol the
 *                                standard applied to this output (its stored thresholds)
 *   certified                    |a - g*| / (c*B + ulp(g)/2), B the device error bound,
 *                                when the oracle gave one; else pypto's
 *   any other standard           pypto's (those judge an output as a whole, not per element)
 * so 1 is at the limit and above 1 is beyond it. Ulps are a secondary figure, and an
 * element whose exact value is below the dtype's smallest normal (an exact 0 above all) is
 * never measured in ulps: one ulp there is the subnormal spacing (2^-133 in bf16), so a
 * harmless 1e-4 would read 1e36 ulps; its absolute error stands instead. Text and JSON. */
#ifndef UG_TRIAGE_VIEW_H
#define UG_TRIAGE_VIEW_H
#include <cjson/cJSON.h>
#include <stdio.h>

#include "run/exec.h"

/* The worst nworst elements, the histogram and the clusters of output out of d (judged as r). */
void ug_triage_print_output(const ug_result *r, const ug_exec_detail *d, int out, int nworst, FILE *f);
/* The same, as a JSON object for output out. */
cJSON *ug_triage_json(const ug_result *r, const ug_exec_detail *d, int out, int nworst);

#endif
