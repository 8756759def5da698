/* find_case.c — the commands' case lookup: run/find_case.c's, its refusal printed. */
#include "cli/cli.h"
#include "run/find_case.h"

int ug_cli_find_case(ug_db *db, const char *plan_path, const char *prefix, char id[UG_ID_LEN + 1], char **spec,
                     int *from_plan)
{
    char msg[1400];
    return ug_find_case(db, plan_path, prefix, id, spec, from_plan, msg, sizeof msg) ? ug_cli_fail("%s", msg) : 0;
}
