/* found.h — keeping what the fuzzer finds: a finding's spec is written to
 * corpus/found/<op>/<case_id>.json under the data dir (so it is committed and replayed by
 * tests/test_found.c) and inserted into the database as a case of origin "fuzz", which
 * every later sweep runs as a regression case. */
#ifndef UG_FOUND_H
#define UG_FOUND_H
#include <stddef.h>

#include "db/store.h"
#include "gen/plan.h"

/* The folder corpus/found under $ULPGYM_DATA or the source tree. */
const char *ug_found_dir(void);
/* Appends the regression cases of corpus/found/<op>/ for the ops that pass the filter
 * (ops NULL = all, groups 0 = all), origin "fuzz", skipping cases the plan already has.
 * Returns how many were added. */
size_t ug_found_append(ug_plan *plan, const unsigned char *ops, unsigned groups);
/* Validates spec (it must build), writes it and, when db is given, inserts it. id gets
 * its case ID. -2 with a message on a bad spec. */
int ug_found_store(const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err, size_t errlen);

#endif
