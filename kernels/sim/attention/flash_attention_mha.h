/* flash_attention_mha.h — the kernel variants of flash_attention_mha (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_FLASH_ATTENTION_MHA_H
#define UG_SIM_FLASH_ATTENTION_MHA_H
#include "core/registry.h"
extern const ug_kernel_variant ug_flash_attention_mha_variants[];
#endif
