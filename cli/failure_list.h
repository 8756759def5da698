/* failure_list.h — a run's failing cases (reports/failures.h) printed as `ulpgym failures`
 * prints them and `sweep` and `check` end their summaries with them: case ID, op, dtype,
 * verdict, the deciding figure and a paste-ready triage line.
 *
 * What the database holds is data from wherever it was made: every string is printed
 * escaped (text: control and direction-override characters as \xNN / \uNNNN; JSON through
 * cJSON, after invalid UTF-8 is made valid), and a case ID that is not 16 hex digits gets
 * no triage line (the row says so). */
#ifndef UG_CLI_FAILURE_LIST_H
#define UG_CLI_FAILURE_LIST_H
#include <stdio.h>

#include <cjson/cJSON.h>

#include "reports/failures.h"

/* s for a terminal: valid UTF-8, every control character (C0, DEL, C1) and direction
 * override or isolate escaped as \xNN / \uNNNN. malloc'd; NULL without memory. */
char *ug_failure_escape(const char *s);

/* Rows [0, top) of l as text to f: rank, ID, op, dtype, verdict, figure, then the
 * triage line (db_path: the database as given, run, the run's backend). */
void ug_failures_print_text(const ug_failure_list *l, size_t top, const char *db_path, long run, const char *backend,
                            FILE *f);
/* Rows [0, top) of l as one JSON array to f (the same fields, severity, standards and thresholds). */
void ug_failures_print_json(const ug_failure_list *l, size_t top, const char *db_path, long run, const char *backend,
                            FILE *f);

/* The end of a sweep's or check's summary: run's top failing cases in db_path (read after
 * the run is stored), at most top of them (0: none), then "(N more: ulpgym failures ...)".
 * Prints nothing when the run has no failure. 0, or -1 after a warning on stderr. */
int ug_failures_summary(const char *db_path, long run, long top, FILE *f);

#define UG_FAILURES_TOP_HELP                                                                                           \
    "  --top N          end the summary with the N most severe failing cases (default 5; 0: none):\n"                  \
    "                   ID, op, dtype, the figure that decided, a paste-ready triage line\n"

#endif
