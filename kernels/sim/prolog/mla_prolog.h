/* mla_prolog.h — the kernel variants of mla_prolog (sim first, then mutants, NULL-ended). */
#ifndef UG_SIM_MLA_PROLOG_H
#define UG_SIM_MLA_PROLOG_H
#include "core/registry.h"
extern const ug_kernel_variant ug_mla_prolog_variants[];
#endif
