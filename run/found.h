/* found.h — what the fuzzer finds: failure signatures (deduplication), sorting a finding
 * into a kernel finding or a contract/oracle finding, the findings folder outside the
 * source tree, and keeping a kernel finding as a regression case.
 *
 * `ulpgym fuzz` writes findings to ug_found_out_dir() (never into the source tree); only
 * `ulpgym corpus import` puts a kernel finding into corpus/found/<op>/<case_id>.json under
 * the data dir (committed, replayed by tests/test_found.c and run by every sweep) and into
 * the database as a case of origin "fuzz". */
#ifndef UG_FOUND_H
#define UG_FOUND_H
#include <stddef.h>

#include "db/store.h"
#include "gen/plan.h"
#include "oracles/verdict.h"

/* The folder corpus/found under $ULPGYM_DATA or the source tree. */
const char *ug_found_dir(void);
/* Where `ulpgym fuzz` writes findings by default: $ULPGYM_FINDINGS, else ./ulpgym-found. */
const char *ug_found_out_dir(void);
/* Appends the regression cases of corpus/found/<op>/ for the plan's own ops (those it
 * has a case of: a plan of one op, or with no case, never brings other ops' regression
 * cases) that pass the filter (ops NULL = all, groups 0 = all), origin "fuzz", skipping
 * cases the plan already has. Each file must be a regular file holding a spec that passes
 * ug_plan_check_spec (gen/plan.h); strict: the first that does not stops it, -2 with err
 * naming the file (a sweep refuses to start); else such files are left out. Returns how
 * many were added, or -1 without memory. */
long ug_found_append_checked(ug_plan *plan, const unsigned char *ops, unsigned groups, int strict, char *err,
                             size_t errlen);
/* The lenient form (strict 0): how many were added. */
size_t ug_found_append(ug_plan *plan, const unsigned char *ops, unsigned groups);
/* Validates spec (it must build), writes it to corpus/found/<op>/<id>.json and, when db is
 * given, inserts it. id gets its case ID. -2 with a message on a bad spec. */
int ug_found_store(const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err, size_t errlen);
/* The same into DIR/<op>/<id>.json (dir NULL: ug_found_dir()). */
int ug_found_store_in(const char *dir, const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err,
                      size_t errlen);

/* The failure signature of a failing result r of case spec_text run on backend: one line
 *   op=OP backend=B outcome=O kind=K std=S outputs=A,B dtype=D shape=C
 * kind: nonfinite (a NaN/Inf mismatch), numeric (a numeric standard fails), discrete (a
 * discrete compare fails), or the outcome in lower case (error, crash, timeout, shape);
 * std: the standard that decided the failure (the primary, else the failing discrete
 * compare; "-" when no standard judged); outputs: the outputs that fail it (or hold the
 * NaN/Inf mismatch); shape: the INT params equal to 0 or 1 (degenerate axes, e.g.
 * "rows=1"), "general" when none. Two findings with the same signature are one bug. */
void ug_found_signature(const ug_result *r, const char *spec_text, const char *backend, char *sig, size_t len);
/* A 16-hex-digit key of a signature (FNV-1a 64). */
void ug_found_signature_key(const char *sig, char key[17]);

typedef enum {
    UG_FOUND_KERNEL,         /* the correct kernel and the ideal backend pass: the kernel's bug */
    UG_FOUND_CONTRACT_SIM,   /* the correct sim kernel fails it too */
    UG_FOUND_CONTRACT_IDEAL, /* the oracle's own correctly rounded outputs fail it */
} ug_found_sort;

const char *ug_found_sort_name(ug_found_sort s); /* "kernel", "contract-sim", "contract-ideal" */
/* Sorts a finding: reruns spec with the correct kernel (backend name correct, normally
 * "sim") and with the ideal backend (ideal, normally "ideal"). Returns the sort, or -2
 * with a message when the spec or a backend is bad; why says what failed. */
int ug_found_sort_case(const char *spec_text, const char *correct, const char *ideal, char *why, size_t whylen);

#endif
