/* gated_delta_rule.h — the kernel variants of gated_delta_rule (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_GATED_DELTA_RULE_H
#define UG_SIM_GATED_DELTA_RULE_H
#include "core/registry.h"
extern const ug_kernel_variant ug_gated_delta_rule_variants[];
#endif
