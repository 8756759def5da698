/* fail_on.h — one exit-code policy for the commands that judge cases (sweep, check, case,
 * triage, diff), chosen with --fail-on (docs/SWEEP.md, "Exit codes"):
 *   never  0 whatever the verdicts;
 *   fail   1 when a case's outcome is neither PASS nor SKIP;
 *   new    1 only for such a case that did not fail in the previous comparable result
 *          (sweep: the last earlier finished run of the same plan hash, backend, selection,
 *          sample and --primary; check, triage: the case's latest earlier result from a run
 *          of the same backend kind decided by the same standard; `case` has no database,
 *          so new is fail there).
 * Beside it, every command: 2 bad input, 3 engine failure, 130 interrupted; triage 4 when
 * the stored metrics are not reproduced. */
#ifndef UG_CLI_FAIL_ON_H
#define UG_CLI_FAIL_ON_H
#include <stddef.h>

#include "db/store.h"

#define UG_EXIT_NOT_REPRODUCED 4 /* triage: the rerun does not give the stored verdict and metrics */
#define UG_EXIT_INTERRUPTED 130  /* SIGINT / SIGTERM */

typedef enum { UG_FAIL_ON_NEVER, UG_FAIL_ON_FAIL, UG_FAIL_ON_NEW } ug_fail_on;

/* Parses --fail-on's value into *policy (value NULL: *policy keeps its default). 0, or
 * UG_EXIT_USAGE after a one-line message naming cmd. */
int ug_fail_on_parse(const char *cmd, const char *value, ug_fail_on *policy);
const char *ug_fail_on_name(ug_fail_on p);
/* 1 when a stored verdict (outcome name) is a failure: neither PASS nor SKIP. */
int ug_verdict_text_fails(const char *verdict);

/* How many of run's failing cases count under policy p (never: 0; new: those that did not
 * fail in ug_db_comparable_run's run, all of them when there is none; *compared gets that
 * run, may be NULL). >= 0, or -1 with a message. */
long ug_fail_on_run(ug_db *db, ug_fail_on p, long run, long *compared, char *err, size_t errlen);

/* The exit status of a stored run under p: 0, 1 (with a line on stderr saying how many
 * cases and why), or UG_EXIT_ENGINE when the database cannot be read (said on stderr). */
int ug_fail_on_run_exit(const char *cmd, const char *db_path, long run, ug_fail_on p);

/* Whether one case's result r counts under p: 1 or 0, -1 with a message. For new, r's
 * failure is new unless the case's latest result in a run before before_run (<= 0: any)
 * of backend's kind, decided by r's primary standard, failed too; db NULL: new is fail. */
int ug_fail_on_case(ug_db *db, ug_fail_on p, const ug_result *r, long before_run, const char *backend, char *err,
                    size_t errlen);

#define UG_FAIL_ON_HELP(dflt)                                                                                          \
    "  --fail-on P      when to exit 1 (default " dflt "): fail, a case's outcome is neither PASS\n"                   \
    "                   nor SKIP; new, only a failing case that did not fail in the previous\n"                        \
    "                   comparable result; never, not for verdicts\n"

#endif
