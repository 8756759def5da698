/* moe_grouped_gemm.h — the kernel variants of moe_grouped_gemm (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_MOE_GROUPED_GEMM_H
#define UG_SIM_MOE_GROUPED_GEMM_H
#include "core/registry.h"
extern const ug_kernel_variant ug_moe_grouped_gemm_variants[];
#endif
