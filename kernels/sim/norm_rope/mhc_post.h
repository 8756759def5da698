/* mhc_post.h — the kernel variants of mhc_post (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_MHC_POST_H
#define UG_SIM_MHC_POST_H
#include "core/registry.h"
extern const ug_kernel_variant ug_mhc_post_variants[];
#endif
