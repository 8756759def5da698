/* find_case.h — a case ID or unique prefix (6+ hex digits, any case) turned into its case:
 * looked up in a database, then in a plan. Every command that takes a case ID and the
 * library's ulpgym_find_case use it. */
#ifndef UG_FIND_CASE_H
#define UG_FIND_CASE_H
#include <stddef.h>

#include "db/store.h"

/* The case prefix names: in db (NULL: none), then in the plan at plan_path (NULL: the
 * default plan). Fills id and a malloc'd spec; *from_plan (may be NULL) says it came from
 * the plan. 0, or -2 with the reason in msg (not a case ID, unknown, ambiguous: its
 * candidates listed, a database or plan that cannot be read). */
int ug_find_case(ug_db *db, const char *plan_path, const char *prefix, char id[UG_ID_LEN + 1], char **spec,
                 int *from_plan, char *msg, size_t msglen);

#endif
