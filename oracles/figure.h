/* figure.h — the deciding figure of a verdict: one line, in words, saying what made a case
 * fail, read off the thresholds JSON each standard stores with its verdict
 * (oracles/verdict.c writes it; docs/STANDARDS.md defines it), e.g.
 *   y: 566 of 4096 checked elements beyond atol 0.0001 + rtol 0.0078 * |g| (5 allowed)
 *   q_rope: 12 of 512 checked elements outside the certified bound (worst 3.4 x)
 * and a severity that ranks failures across ops and dtypes without raw ulps: how far the
 * figure is past its limit, as a ratio (failed / allowed elements, the worst element's
 * ratio to its bound, a share over its limit; 1 = on the edge, larger = worse).
 *
 * Both forms of a result are served: an in-memory ug_result as a judge fills it, and a
 * stored one (db/query_failures.c fills a ug_result from the database with
 * ug_result_put_stored_thresholds), so a sweep's summary, `ulpgym failures` and any
 * caller word a failure the same way. Thresholds text is data (a database may come from
 * another machine): malformed JSON gives no figure, never a crash. */
#ifndef UG_FIGURE_H
#define UG_FIGURE_H
#include <stddef.h>

#include "oracles/verdict.h"

/* The phrase of one output under one standard: 1 when its figures (thresholds_json, the
 * object verdict.c wrote for that output; n_checked the output's checked elements, 0 when
 * unknown) fail the standard, with the phrase written to buf ("OUTPUT: ..."); 0 when they
 * pass it, the standard did not judge the output ({} / a note) or the JSON is malformed
 * (buf then ""). A NaN/Inf mismatch ({"nonfinite_mismatch":N}) fails every standard. */
int ug_figure_of_output(int standard, const char *output, const char *thresholds_json, size_t n_checked, char *buf,
                        size_t len);

/* How far one output's figures are past the standard's limit (0 when they pass it or do
 * not parse; +inf for a NaN/Inf mismatch). */
double ug_figure_severity_of_output(int standard, const char *thresholds_json);

/* The phrases of r's outputs that fail standard s, joined by "; " ("" when none). */
void ug_standard_figure(const ug_result *r, int s, char *buf, size_t len);

/* The standards whose FAIL decided r into list: its primary standard when that fails, then
 * every failing discrete compare; returns how many (0 when none fails). */
int ug_verdict_deciding(const ug_result *r, int list[UG_STD_COUNT]);

/* What decided r, in words: for NONFINITE the outputs' NaN/Inf mismatches; for FAIL the
 * failing outputs of the deciding standard (r->primary) and of any failing discrete
 * compare, joined by "; "; for any other outcome (CRASH, ERROR, TIMEOUT, SKIP, ...) its
 * message. A FAIL whose figures say nothing (thresholds cut or missing) reads
 * "fails STANDARD". */
void ug_verdict_figure(const ug_result *r, char *buf, size_t len);

/* The severity of r for ranking failures: standard < 0, the largest over what decided it
 * (the primary standard, failing discrete compares); standard >= 0, under that standard.
 * +inf for NONFINITE, CRASH, TIMEOUT, ERROR and SHAPE (no figure can be worse); 0 for
 * PASS and SKIP or a figure that says nothing. */
double ug_verdict_severity(const ug_result *r, int standard);

/* r's headroom used (ug_result.used): the largest "used" figure of its primary standard over
 * its outputs (a discrete output's failing compare counts +inf); +inf for a NaN/Inf
 * mismatch; NaN when no output was judged or none carries the figure. */
double ug_verdict_used(const ug_result *r);

/* Puts one standard's stored thresholds text ({"OUTPUT": {...}, ...}, as the verdicts
 * table holds it) into r->out[k].thresholds[standard], matching outputs by name and adding
 * those r lacks (n_out grows, up to UG_MAX_TENSORS). 0, or -1 when json is not an object
 * (r unchanged). */
int ug_result_put_stored_thresholds(ug_result *r, int standard, const char *json);

#endif
