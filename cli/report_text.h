/* report_text.h — printing one case's result for people (and as JSON for tools);
 * shared by `ulpgym case` and `ulpgym triage`. */
#ifndef UG_REPORT_TEXT_H
#define UG_REPORT_TEXT_H
#include <stdio.h>

#include "run/exec.h"

/* Verdict line, verdict per standard, metrics per output. */
void ug_print_result(const ug_result *r, FILE *f);
void ug_print_result_json(const ug_result *r, FILE *f);
/* A value as decimal with its hex float beside it: "0.1234567 (0x1.f9adbbp-4)". */
void ug_fmt_value(double v, char *buf, size_t len);

#endif
