/* interleave_rope.h — the kernel variants of interleave_rope (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_INTERLEAVE_ROPE_H
#define UG_SIM_INTERLEAVE_ROPE_H
#include "core/registry.h"
extern const ug_kernel_variant ug_interleave_rope_variants[];
#endif
