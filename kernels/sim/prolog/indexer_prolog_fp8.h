/* indexer_prolog_fp8.h — the sim kernel shared by lightning_indexer_prolog_quant_fp8 and
 * _mxfp8 (one device pipeline, two quantisation formats), and their variant tables. */
#ifndef UG_SIM_INDEXER_PROLOG_FP8_H
#define UG_SIM_INDEXER_PROLOG_FP8_H
#include <stddef.h>

#include "core/registry.h"

typedef enum { UG_LIP8_FP8, UG_LIP8_MX } ug_lip8_format;

typedef enum {
    UG_LIP8_BUG_NONE,
    UG_LIP8_BUG_HADAMARD_UNNORMALISED, /* Hadamard without 1/sqrt(D) */
    UG_LIP8_BUG_MX_EXP_OFF_BY_ONE,     /* MX shared exponent floor(log2 amax) - 7 */
    UG_LIP8_BUG_NO_SATURATION,         /* e4m3 conversion overflows to NaN instead of saturating */
    UG_LIP8_BUG_PAD_SLOT_WRAPS         /* slot -1 (padding) written to the cache's last slot */
} ug_lip8_bug;

/* Runs the prolog on a call in format fmt with planted bug (UG_LIP8_BUG_NONE: correct). */
int ug_lip8_kernel(const ulpgym_call *call, char *err, size_t errlen, ug_lip8_format fmt, ug_lip8_bug bug);

extern const ug_kernel_variant ug_lightning_indexer_prolog_quant_fp8_variants[];
extern const ug_kernel_variant ug_lightning_indexer_prolog_quant_mxfp8_variants[];
#endif
