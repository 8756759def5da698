/* bench_report.h — the kernel-timing table of a bench (db/query_bench.h) as markdown and
 * as HTML: per op its scenes, the ratios B / A by kernel-only and by end-to-end time, and a
 * mean row; a last row over all ops. Both formats print the same lines, made once
 * (bench_report.c), so they cannot disagree. */
#ifndef UG_BENCH_REPORT_H
#define UG_BENCH_REPORT_H
#include <stdio.h>

#include "db/query_bench.h"

/* The geometric mean of the finite, positive values among x[0..n); NaN when there is none. */
double ug_bench_geomean(const double *x, int n);

/* The table as markdown: a heading, what was compared on which clocks, how to read it, the table. */
void ug_bench_write_md(const ug_bench_table *t, FILE *f);
/* The same as an HTML <section id="kernel-timing"> (the report's; no page around it). */
void ug_bench_write_html_section(const ug_bench_table *t, FILE *f);
/* A self-contained HTML page holding only the section (`bench kernels --html FILE`). */
void ug_bench_write_html_page(const ug_bench_table *t, FILE *f);

#endif
