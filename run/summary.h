/* summary.h — a sweep's counts and its progress line (summary.c; its closing summary,
 * ug_sweep_print_summary, is declared with the summary's type in sweep_types.h). */
#ifndef UG_SWEEP_SUMMARY_H
#define UG_SWEEP_SUMMARY_H
#include "run/sweep_engine.h"

/* Counts one stored result of op into s. */
void ug_sweep_summary_count(ug_sweep_summary *s, int op, const ug_result *r);
/* The progress line on stderr (unless quiet): throttled to one per 0.2 s on a terminal,
 * 5 s otherwise, unless final. */
void ug_sweep_progress(ug_sweep_engine *e, int final);

#endif
