/* apply_adamw.h — the kernel variants of apply_adamw (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_APPLY_ADAMW_H
#define UG_SIM_APPLY_ADAMW_H
#include "core/registry.h"
extern const ug_kernel_variant ug_apply_adamw_variants[];
#endif
