/* moe_distributed_dispatch_combine.h — the kernel variants of moe_distributed_dispatch_combine (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_MOE_DISTRIBUTED_DISPATCH_COMBINE_H
#define UG_SIM_MOE_DISTRIBUTED_DISPATCH_COMBINE_H
#include "core/registry.h"
extern const ug_kernel_variant ug_moe_distributed_dispatch_combine_variants[];
#endif
