/* greenlight_kernels.h — the kernel variant tables of the GreenLight group's sim kernels
 * (correct kernel first, then the planted-bug mutants, then a NULL entry). */
#ifndef UG_GREENLIGHT_KERNELS_H
#define UG_GREENLIGHT_KERNELS_H
#include "core/registry.h"

extern const ug_kernel_variant ug_attn_softmax_variants[];
extern const ug_kernel_variant ug_inplace_add_rmsnorm_variants[];

#endif
