/* flash_attention_mha_grad.h — the kernel variants of flash_attention_mha_grad (sim first, then mutants, NULL-ended).
 */
#ifndef UG_SIM_FLASH_ATTENTION_MHA_GRAD_H
#define UG_SIM_FLASH_ATTENTION_MHA_GRAD_H
#include "core/registry.h"
extern const ug_kernel_variant ug_flash_attention_mha_grad_variants[];
#endif
