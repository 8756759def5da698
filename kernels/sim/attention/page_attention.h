/* page_attention.h — the kernel variants of page_attention (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_PAGE_ATTENTION_H
#define UG_SIM_PAGE_ATTENTION_H
#include "core/registry.h"
extern const ug_kernel_variant ug_page_attention_variants[];
#endif
