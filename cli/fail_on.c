/* fail_on.c — the --fail-on policy of sweep, check, case, triage and diff (see fail_on.h). */
#include "cli/fail_on.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "db/query_failures.h"

static const char *const names[] = {"never", "fail", "new"};

const char *ug_fail_on_name(ug_fail_on p) { return (unsigned)p <= UG_FAIL_ON_NEW ? names[p] : "?"; }

int ug_fail_on_parse(const char *cmd, const char *value, ug_fail_on *policy)
{
    if (!value) return 0;
    for (int i = 0; i <= UG_FAIL_ON_NEW; i++)
        if (strcmp(value, names[i]) == 0) {
            *policy = (ug_fail_on)i;
            return 0;
        }
    return ug_cli_fail("%s: --fail-on takes never, fail or new, not \"%s\"", cmd, value);
}

int ug_verdict_text_fails(const char *verdict) { return strcmp(verdict, "PASS") != 0 && strcmp(verdict, "SKIP") != 0; }

long ug_fail_on_run(ug_db *db, ug_fail_on p, long run, long *compared, char *err, size_t errlen)
{
    if (compared) *compared = 0;
    if (p == UG_FAIL_ON_NEVER) return 0;
    ug_db_failure_filter f = {.run = run, .standard = -1};
    if (p == UG_FAIL_ON_NEW && (f.compare_run = ug_db_comparable_run(db, run, err, errlen)) < 0) return -1;
    if (compared) *compared = f.compare_run;
    return ug_db_count_failures(db, &f, err, errlen);
}

int ug_fail_on_case(ug_db *db, ug_fail_on p, const ug_result *r, long before_run, const char *backend, char *err,
                    size_t errlen)
{
    if (p == UG_FAIL_ON_NEVER || !ug_verdict_text_fails(ug_outcome_name(r->outcome))) return 0;
    if (p == UG_FAIL_ON_FAIL || !db) return 1;
    char kind[64], verdict[32];
    snprintf(kind, sizeof kind, "%.*s", (int)strcspn(backend ? backend : "sim", ":"), backend ? backend : "sim");
    int found = ug_db_previous_verdict(db, r->case_id, before_run, kind, ug_standard_name(r->primary), verdict,
                                       sizeof verdict, err, errlen);
    if (found < 0) return -1;
    return !found || !ug_verdict_text_fails(verdict);
}

int ug_fail_on_run_exit(const char *cmd, const char *db_path, long run, ug_fail_on p)
{
    if (p == UG_FAIL_ON_NEVER) return UG_EXIT_OK;
    ug_db *db;
    char err[512];
    long compared = 0, n = -1;
    if (!ug_db_open(ug_db_default_path(db_path), UG_DB_READONLY, &db, err, sizeof err)) {
        n = ug_fail_on_run(db, p, run, &compared, err, sizeof err);
        ug_db_close(db);
    }
    if (n < 0) {
        fprintf(stderr, "ulpgym: %s: run %ld is stored, but its verdicts cannot be read for --fail-on: %s\n", cmd, run,
                err);
        return UG_EXIT_ENGINE;
    }
    if (!n) return UG_EXIT_OK;
    if (p == UG_FAIL_ON_NEW && compared)
        fprintf(stderr, "ulpgym: %ld failing case%s new since run %ld (--fail-on new): exit status 1\n", n,
                n == 1 ? "" : "s", compared);
    else
        fprintf(stderr, "ulpgym: %ld failing case%s (--fail-on %s%s): exit status 1\n", n, n == 1 ? "" : "s",
                ug_fail_on_name(p), p == UG_FAIL_ON_NEW ? "; no earlier comparable run, so every failure is new" : "");
    return UG_EXIT_FOUND;
}
