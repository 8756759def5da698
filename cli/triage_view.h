/* triage_view.h — what triage prints about a fully checked case: the worst elements with
 * the inputs that feed them, an ulp-error histogram, and where the error clusters (which
 * axis position / which tile of the last axis carries most of it). Text and JSON. */
#ifndef UG_TRIAGE_VIEW_H
#define UG_TRIAGE_VIEW_H
#include <cjson/cJSON.h>
#include <stdio.h>

#include "run/exec.h"

void ug_triage_print_worst(const ug_exec_detail *d, int out, int nworst, FILE *f);
void ug_triage_print_histogram(const ug_exec_detail *d, int out, FILE *f);
void ug_triage_print_clusters(const ug_exec_detail *d, int out, FILE *f);
/* The same three, as a JSON object for output out. */
cJSON *ug_triage_json(const ug_exec_detail *d, int out, int nworst);

#endif
