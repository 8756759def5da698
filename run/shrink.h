/* shrink.h — delta debugging over a case's shape: find a smaller case of the same op,
 * dtype, distributions and seed that still fails the same way.
 *
 * Every integer param >= 2 is treated as a shape axis. Candidates per axis: 1, half,
 * value-1, and the nearest multiples of 16/64/128/256 below (tile edges); a candidate is
 * kept when the case still builds, its inputs are smaller in total, and the outcome class
 * (FAIL, NONFINITE, ERROR, CRASH, ...) is unchanged. Repeats until no axis shrinks. */
#ifndef UG_SHRINK_H
#define UG_SHRINK_H
#include <stddef.h>

#include "run/exec.h"

typedef struct {
    char *spec; /* malloc'd canonical spec of the smallest failing case */
    char id[UG_ID_LEN + 1];
    size_t input_elems; /* total input elements of that case */
    size_t start_elems; /* ... and of the case we started from */
    int steps;          /* accepted shrink steps */
    int tried;          /* candidates evaluated */
} ug_shrink_result;

/* Returns 0 (out->spec may equal the start when nothing smaller fails), -2 if the start
 * case does not fail (nothing to shrink) or its spec is bad; message in err. primary: the
 * standard deciding the outcome (a run's `sweep --primary`), -1 for the op's own. contain_s:
 * each candidate's kernel runs contained with this time limit (ug_exec_opts.contain_s). */
int ug_shrink_case(const char *spec_text, const ug_backend *b, int primary, double contain_s, ug_shrink_result *out,
                   char *err, size_t errlen);

#endif
