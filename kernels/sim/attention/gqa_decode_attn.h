/* gqa_decode_attn.h — the kernel variants of gqa_decode_attn (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_GQA_DECODE_ATTN_H
#define UG_SIM_GQA_DECODE_ATTN_H
#include "core/registry.h"
extern const ug_kernel_variant ug_gqa_decode_attn_variants[];
#endif
