/* cert_block.h — the CERT emit over a block of elements (cert_block.c says why). */
#ifndef UG_CERT_BLOCK_H
#define UG_CERT_BLOCK_H
#include <stddef.h>

#include "oracles/mp/arith.h"

/* ug_cv_put (cert_inline.h) of elements k0 .. k0+n-1 of CERT sink s, element i with value
 * v[i] and bound e[i]: the same values, flags and decisions; returns how many are unsure. */
unsigned long ug_cv_put_block(const ug_ar_sink *s, size_t k0, const double *v, const double *e, size_t n);

#endif
