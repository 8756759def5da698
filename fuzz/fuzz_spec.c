/* fuzz_spec.c — libFuzzer target for the spec and plan parsers: any text either fails with
 * a message or parses; a parsed spec's canonical form is a fixed point (canonical of the
 * re-parsed canonical text is the same text, same case ID); a parsed plan expands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "core/spec.h"
#include "gen/plan.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size > 1 << 16) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char err[512];
    ug_spec s, t;
    if (ug_spec_parse(text, &s, err, sizeof err) == 0) {
        if (ug_spec_parse(s.canonical, &t, err, sizeof err) != 0 || strcmp(s.canonical, t.canonical) != 0 ||
            strcmp(s.id, t.id) != 0)
            abort(); /* canonical form must be a fixed point */
        ug_spec_free(&t);
        ug_spec_free(&s);
    } else if (!err[0]) {
        abort(); /* every failure says why */
    }
    /* Plans: the structure and explicit "cases" are parsed; "ops" entries look for their
     * spaces in a folder that does not exist, so no input spends seconds expanding real
     * grids (the spaces themselves are covered by the plan tests). */
    ug_plan p;
    const char *dir = "/nonexistent/ulpgym/plans";
    err[0] = 0;
    if (ug_plan_parse(text, dir, -1, &p, err, sizeof err) == 0)
        ug_plan_free(&p);
    else if (!err[0])
        abort();
    free(text);
    return 0;
}
