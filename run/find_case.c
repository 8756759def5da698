/* find_case.c — one way every command (and the library) turns a case ID or prefix into a
 * case: the database first, then a plan; an ambiguous prefix is refused with its
 * candidates listed (never one of them picked silently), in the database and in the plan
 * alike (see find_case.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "run/find_case.h"

#include "gen/plan.h"

#define MAX_SHOWN 5

/* Appends a candidate ID to the list text (at most MAX_SHOWN named, then "..."). */
static void note_candidate(char *list, size_t len, int n, const char *id)
{
    size_t used = strlen(list);
    if (n < MAX_SHOWN)
        snprintf(list + used, len - used, "%s%s", n ? ", " : "", id);
    else if (n == MAX_SHOWN)
        snprintf(list + used, len - used, ", ...");
}

/* Matches in the plan at plan_path: the first into id/spec, all counted and listed. */
static int plan_matches(const char *plan_path, const char *prefix, char id[UG_ID_LEN + 1], char **spec, char *list,
                        size_t len, char *err, size_t errlen)
{
    ug_plan p;
    if (ug_plan_load(plan_path, -1, &p, err, errlen)) return -1;
    int found = 0;
    for (size_t i = 0; i < p.n; i++)
        if (strncasecmp(p.cases[i].id, prefix, strlen(prefix)) == 0) {
            if (!found) {
                snprintf(id, UG_ID_LEN + 1, "%s", p.cases[i].id);
                *spec = strdup(p.cases[i].spec);
            }
            note_candidate(list, len, found++, p.cases[i].id);
        }
    ug_plan_free(&p);
    return found;
}

int ug_find_case(ug_db *db, const char *plan_path, const char *prefix, char id[UG_ID_LEN + 1], char **spec,
                 int *from_plan, char *msg, size_t msglen)
{
    char err[1024] = "", list[160] = "";
    *spec = NULL;
    if (from_plan) *from_plan = 0;
    if (!ug_case_id_prefix_ok(prefix)) {
        snprintf(msg, msglen, "\"%s\" is not a case ID (6 to 16 hex digits)", prefix);
        return -2;
    }
    int found = db ? ug_db_find_cases(db, prefix, id, spec, list, sizeof list, err, sizeof err) : 0;
    if (found < 0) {
        snprintf(msg, msglen, "%s", err);
        return -2;
    }
    const char *where = "the database";
    if (found == 0) {
        where = "the plan";
        if (!plan_path) plan_path = ug_plan_default_path();
        found = plan_matches(plan_path, prefix, id, spec, list, sizeof list, err, sizeof err);
        if (found < 0) {
            snprintf(msg, msglen, "case %s is not in the database, and the plan cannot be read: %s", prefix, err);
            return -2;
        }
        if (from_plan) *from_plan = found == 1;
    }
    if (found == 1 && *spec) return 0;
    free(*spec);
    *spec = NULL;
    if (found > 1)
        snprintf(msg, msglen, "case ID prefix %s is ambiguous in %s: %d cases match (%s); give more digits", prefix,
                 where, found, list);
    else
        snprintf(msg, msglen, "unknown case ID %s (not in the database nor in the plan %s)", prefix, plan_path);
    return -2;
}
