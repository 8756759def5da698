/* rms_norm_rope.h — the kernel variants of rms_norm_rope (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_RMS_NORM_ROPE_H
#define UG_SIM_RMS_NORM_ROPE_H
#include "core/registry.h"
extern const ug_kernel_variant ug_rms_norm_rope_variants[];
#endif
