/* inject.h — special values placed into a case's random inputs, named in the spec:
 *   "inject": [{"input": "x", "i": 17, "v": "nan"}, ...]
 * v is a number or one of zero, -zero, max, -max, subnormal, -subnormal, inf, -inf, nan
 * (in the input's dtype: max is its largest finite value, subnormal its smallest
 * positive one; inf/nan become max/0 in formats that have none). i is taken modulo the
 * input's size; "i": "all" sets every element. Only inputs drawn from a distribution (those in "dist") take injections:
 * structural inputs (masks, indices, block tables) keep the op's invariants. The fuzzer
 * writes these; a spec with them is an ordinary, replayable case. */
#ifndef UG_INJECT_H
#define UG_INJECT_H
#include <stddef.h>

#include "core/registry.h"

/* The special value names, in the order the fuzzer's byte layout indexes them
 * (gen/fuzzspace.h), and the index of name among them (-1 if none). */
#define UG_SPECIAL_COUNT 9
extern const char *const ug_special_names[UG_SPECIAL_COUNT];
int ug_special_index(const char *name);

/* Applies c->spec's "inject" list (if any) to c's inputs; -2 with a message on bad input. */
int ug_inject_apply(ug_case *c, char *err, size_t errlen);

#endif
