/* case.h — building a case in memory from its spec: params checked against the op's
 * declaration, the declared tensors allocated with their declared shapes, the drawn
 * inputs filled from the spec's distributions, the built inputs filled by the op, and
 * the spec's special-value injections applied.
 *
 * This sits in gen/ (not core/) because drawing inputs is the generator's job; core/
 * only keeps the case's bookkeeping (core/registry.h). */
#ifndef UG_GEN_CASE_H
#define UG_GEN_CASE_H
#include <stddef.h>

#include "core/registry.h"

/* Builds c from spec, taking ownership of spec (also on error). 0, or -2 for a bad spec
 * (message names op and param) or a case over the memory budget (gen/case_memory.h: the
 * message gives the bytes needed and the budget), -1 for lack of memory. */
int ug_case_build(ug_case *c, ug_spec *spec, char *err, size_t errlen);

#endif
