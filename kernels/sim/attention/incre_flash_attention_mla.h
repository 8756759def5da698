/* incre_flash_attention_mla.h — the kernel variants of incre_flash_attention_mla (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_INCRE_FLASH_ATTENTION_MLA_H
#define UG_SIM_INCRE_FLASH_ATTENTION_MLA_H
#include "core/registry.h"

#define UG_MLA_KV_LORA 512 /* latent (nope) dim: c_kv row and output row */
#define UG_MLA_ROPE 64     /* rope dim of q_rope and k_rope */

extern const ug_kernel_variant ug_incre_flash_attention_mla_variants[];
#endif
