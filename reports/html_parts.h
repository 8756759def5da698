/* html_parts.h — the parts of the HTML report (reports/html*.c), put together by html.c.
 *
 * Anchors the parts share, so every link has its target in the page:
 *   #case-ID      a listed case's triage block (report.h ug_report_detail; only valid IDs)
 *   #fail-OP-DT   an op x dtype's failure list (the heatmap cell's link)
 *   #hist-OP      an op's headroom histogram
 *   #chg-KEY      a change list (new_failures, fixed, still_failing, drift)
 * A part links to an anchor only where the part that writes it will. */
#ifndef UG_HTML_PARTS_H
#define UG_HTML_PARTS_H
#include <stdio.h>

#include "reports/report.h"

/* html_util.c — small shared pieces */
/* The case ID as code, linked to its triage block when the page has one. */
void ug_html_case_link(FILE *f, const ug_report *r, const char *case_id);
/* Per op x dtype, how many failures its list shows (the cell's first `top` in severity order), and into cell
 * (NULL: not wanted; room for failures.n) each failure's op * UG_DT_COUNT + dtype, -1 for one the build does not
 * know. One pass over the failures. */
void ug_html_cell_counts(const ug_report *r, size_t listed[UG_OP_COUNT][UG_DT_COUNT], int *cell);
/* A headroom figure ("0.83", "57.7", "&ndash;" when NaN or negative). */
const char *ug_html_used(double used, char *buf, size_t len);
/* The vertical position (0 bottom, 1 top) of pass rate p on the zoomed axis every trend uses: the failure
 * rate on a log scale from 100 % down to 0.01 %, and all-pass apart at the top. */
double ug_html_trend_pos(double p);
/* "MM-DD HH:MM" of an ISO 8601 time, or "" */
void ug_html_short_date(const char *iso, char *buf, size_t len);
/* <svg ...> with width, height and a matching viewBox (so it scales down with the page). */
void ug_html_svg_open(FILE *f, int w, int h, const char *label);
/* red (0 %) -> amber -> green (100 %) */
void ug_html_heat_color(double p, char *buf, size_t len);

/* html_charts.c */
void ug_html_write_history(const ug_report *r, FILE *f);
void ug_html_write_sparkline(const ug_report *r, int op, FILE *f);
void ug_html_write_heatmap(const ug_report *r, FILE *f);

/* html_hist.c: headroom histograms first, max-ulp ones after them */
void ug_html_write_histograms(const ug_report *r, FILE *f);

/* html_changes.c: "Since run N (like for like)" */
void ug_html_write_changes(const ug_report *r, FILE *f);

/* html_failures.c: the top failures, then each op x dtype's */
void ug_html_write_failures(const ug_report *r, FILE *f);

/* html_triage.c: one block per listed case */
void ug_html_write_triage(const ug_report *r, FILE *f);

#endif
