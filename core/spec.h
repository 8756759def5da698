/* spec.h — a case spec: everything needed to rebuild one case bit for bit, and its ID.
 *
 * A spec is a JSON object {"v":1,"op":..,"dtype":..,"params":{..},"dist":{input:{..}},
 * "seed":N,"plan":".."}. Its ID is the hex of ug_hash64 over the canonical text
 * (core/canon.h), so two machines that agree on the spec agree on the ID, and any change
 * to shape, dtype, distribution, seed or plan version gives a new ID. The parsed struct
 * keeps the cJSON tree (owned) and borrowed views into it. */
#ifndef UG_SPEC_H
#define UG_SPEC_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"

#define UG_SPEC_VERSION 1
#define UG_ID_LEN 16

typedef struct {
    cJSON *json;     /* owned */
    char *canonical; /* owned canonical text */
    char id[UG_ID_LEN + 1];
    int op; /* ug_op */
    ug_dtype dtype;
    const cJSON *params; /* borrowed from json */
    const cJSON *dist;   /* borrowed: input name -> distribution object */
    uint64_t seed;
} ug_spec;

/* Parses and validates text (op known and implemented, dtype known, params and dist
 * objects, integer seed; no field but v, op, dtype, params, dist, seed, plan and inject,
 * no key twice, every key and string valid UTF-8 without control characters). On error
 * returns -2 and writes a sentence naming the field. */
int ug_spec_parse(const char *text, ug_spec *out, char *err, size_t errlen);
/* Takes ownership of json (freed on error too). */
int ug_spec_from_json(cJSON *json, ug_spec *out, char *err, size_t errlen);
void ug_spec_free(ug_spec *s);
/* Whether JSON text holds the escape \u0000, which cJSON reads as the end of its string,
 * so that "x\u0000y" and "x" would share an ID: specs and plans refuse it. Escapes are read
 * in order, so the escaped backslash of "\\u0000" (the six characters \u0000) is not one. */
int ug_json_has_nul_escape(const char *text);
/* A key that appears twice in object j (deep: in any object inside j too), or NULL:
 * cJSON keeps both and a lookup sees the first, so a second "cases" or "params" would be
 * silently ignored. Specs and plans refuse such text. */
const char *ug_json_duplicate_key(const cJSON *j, int deep);
/* The ID of canonical text. */
void ug_spec_id_of(const char *canonical, char id[UG_ID_LEN + 1]);
/* Checks a user-typed ID or prefix: 6..16 hex digits. */
int ug_case_id_prefix_ok(const char *s);

/* Param getters: a missing key gives def; a present key of the wrong type is an error
 * (-2, message names the key). */
int ug_param_int(const cJSON *params, const char *key, long def, long *out, char *err, size_t errlen);
int ug_param_num(const cJSON *params, const char *key, double def, double *out, char *err, size_t errlen);
int ug_param_str(const cJSON *params, const char *key, const char *def, const char **out, char *err, size_t errlen);

#endif
