/* inplace_add_rmsnorm.h — the kernel variants of inplace_add_rmsnorm (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_INPLACE_ADD_RMSNORM_H
#define UG_SIM_INPLACE_ADD_RMSNORM_H
#include "core/registry.h"
extern const ug_kernel_variant ug_inplace_add_rmsnorm_variants[];
#endif
