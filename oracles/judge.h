/* judge.h — a case's judgement: a kernel's outputs against the oracle's values.
 *
 * The verdict module is oracles/: oracle.c computes the exact values (and the device bound,
 * the naive benchmark), verdict.c defines the metrics and the standards, figure.c words a
 * verdict, and this file turns one case's oracle result and kernel outputs into its
 * ug_result: per output the metrics, every standard's verdict with its thresholds, then the
 * case's verdicts, outcome, headroom and failure message. run/exec.c only runs (build the
 * case, run the kernel, run the oracle, call this). */
#ifndef UG_JUDGE_H
#define UG_JUDGE_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"

/* Judges every judged output of c (tensors and views, core/registry.h) against orc under
 * every standard and decides the case under standard `primary` (a numeric ug_standard):
 * fills r's oracle counts, n_out, out[], verdict[], primary, outcome, used, and the message
 * of a case that does not pass. kernel_values, when not NULL, gets per output the checked
 * kernel values (malloc'ed, the caller frees; NULL for an optional output not provided),
 * in orc's selection order. 0, or -1 with err set (no memory for the reference golden);
 * r->outcome is then unchanged. */
int ug_judge_case(const ug_case *c, const ug_oracle_result *orc, int primary, ug_result *r,
                  double *kernel_values[UG_MAX_TENSORS], char *err, size_t errlen);

#endif
