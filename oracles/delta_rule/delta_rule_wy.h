/* delta_rule_wy.h — the chunked WY form of the gated delta rule, evaluated with the arith
 * primitives: chunked_gated_delta_rule's device bound (UG_AR_DEVICE). delta_rule_wy.c
 * lists the stages and where they round. */
#ifndef UG_DELTA_RULE_WY_H
#define UG_DELTA_RULE_WY_H

#include "oracles/delta_rule/delta_rule_ref.h"

/* Evaluates the selected elements of o (output 0) and ht (output 1) by the chunked WY form
 * in chunks of params.chunk tokens, in ar's arithmetic. The op's oracle calls it in
 * UG_AR_DEVICE only (the bound B of a device running this form); every other arithmetic
 * keeps the recurrence (ug_delta_oracle). In plain double (UG_AR_F64) its values are the
 * recurrence's to rounding noise: the test of this file's algebra. Returns -1 when out of
 * memory. */
int ug_delta_wy_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);

#endif
