/* attn_softmax.h — the kernel variants of attn_softmax (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_ATTN_SOFTMAX_H
#define UG_SIM_ATTN_SOFTMAX_H
#include "core/registry.h"
extern const ug_kernel_variant ug_attn_softmax_variants[];
#endif
