/* rope_table.h — the cos/sin tables that RoPE operators take as inputs, built the same
 * bits on every machine, and the param checks those operators share.
 *
 * RoPE operators (interleave_rope, rms_norm_rope) receive cos/sin as input tensors, so
 * their builders must write them deterministically: angle theta[p,i] = pos_p *
 * base^(-2i/D), evaluated with IEEE +,-,*,/ only (no libm, whose last bit may differ
 * between machines) and rounded once to the table's dtype. The values are then inputs
 * like any other: the oracle reads them back exactly. */
#ifndef UG_ROPE_TABLE_H
#define UG_ROPE_TABLE_H
#include <stddef.h>

#include "core/opdecl.h"
#include "core/registry.h"

/* Fills cos_t and sin_t, each [rows, half] (half = D/2) of their own dtype, with
 * cos/sin(pos[r] * base^(-2i/D)) for row r and pair i, D = 2*half. */
void ug_rope_fill_table(ug_tensor *cos_t, ug_tensor *sin_t, const long *pos, size_t rows, size_t half, double base);

/* The checks a RoPE op's declared ranges cannot say: param "d" even and "base" strictly
 * inside (1, 1e12). 0, or -2 with a message naming op and the param. */
int ug_rope_check(const ug_params *p, const char *op, char *err, size_t errlen);

/* exp(x) from basic arithmetic only (about 1e-15 relative), for |x| < 700. */
double ug_rope_det_exp(double x);

#endif
