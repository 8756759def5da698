/* internal.h — what the files of api/ (libulpgym, ulpgym/ulpgym.h) share: the case handle
 * and the error convention. Nothing outside api/ includes it. */
#ifndef UG_API_INTERNAL_H
#define UG_API_INTERNAL_H
#include <stddef.h>

#include <cjson/cJSON.h>

#include "oracles/verdict.h"
#include "ulpgym/ulpgym.h"

/* A case built for a caller: its tensors, which outputs the caller set, and its latest
 * judgement (what a recorder stores). */
struct ulpgym_case {
    ug_case c;
    unsigned char set[UG_MAX_TENSORS]; /* output k was set by ulpgym_case_set_output */
    int status;                        /* ulpgym_case_set_status: 1 unsupported, -1 error, 0 none */
    char reason[480];
    int judged;       /* r holds a judgement of the present outputs */
    long sample;      /* the judgement's sample (0 = all) */
    char primary[32]; /* its --primary standard; "" = the op's own */
    ug_result r;
};

/* Sets *err (when err is not NULL) to a malloc'd message; returns -2 for `return api_fail(...)`. */
int api_fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* j printed unformatted and deleted; NULL (with *err) without memory. */
char *api_print(cJSON *j, char **err);
/* query_json parsed into an object (NULL text: an empty one); NULL with *err when it is not
 * a JSON object or holds a key not in allowed (NULL-terminated). */
cJSON *api_parse_object(const char *what, const char *query_json, const char *const *allowed, char **err);

#endif
