/* sparse_flash_attention.h — the kernel variants of sparse_flash_attention (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_SPARSE_FLASH_ATTENTION_H
#define UG_SIM_SPARSE_FLASH_ATTENTION_H
#include "core/registry.h"

#define UG_SFA_DK 576 /* q·k length: kv_lora 512 + rope 64 */
#define UG_SFA_DV 512 /* value row: the first 512 dims of a kv row */

extern const ug_kernel_variant ug_sparse_flash_attention_variants[];
#endif
