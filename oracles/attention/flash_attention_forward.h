/* flash_attention_forward.h — the exact forward o and lse of every (token, head) row of a
 * flash-attention case, correctly rounded: what flash_attention_mha_grad's builder hands
 * its kernel as the o and lse inputs (a forward kernel's outputs, made ideal).
 *
 * Two paths give the same bits. The engine path runs flash_attention_mha's own oracle
 * (certified double, MPFR fallback) on every element: per element a strided dot over all
 * keys, about 11 minutes of CPU at 1x4096x8x128. The fast path computes whole rows in
 * double (blocked matrix products q.K^T and P.V) with a rigorous error bound per element,
 * keeps each element whose interval rounds to one value of its dtype, and sends the rest
 * (and every row whose inputs hold a non-finite value) to the engine path. */
#ifndef UG_ORACLE_FLASH_ATTENTION_FORWARD_H
#define UG_ORACLE_FLASH_ATTENTION_FORWARD_H
#include <stddef.h>

#include "core/registry.h"

typedef enum { UG_FA_FORWARD_FAST, UG_FA_FORWARD_ENGINE } ug_fa_forward_path;

/* Stores into o [Tq,H,D] (the case dtype) and lse [Tq,H] (fp32) the correctly rounded exact
 * forward of c's q, k, v, cu_seqlens and params (flash_attention_mha's definition: o = 0 and
 * lse = -inf on a row that sees no key). *n_engine (may be NULL) gets how many elements the
 * engine evaluated. 0, or -1 with a message in err. */
int ug_fa_forward_exact(ug_case *c, ug_tensor *o, ug_tensor *lse, ug_fa_forward_path path, size_t *n_engine, char *err,
                        size_t errlen);

/* Bytes of the fast path's scratch beyond the engine path's (case memory estimates). */
double ug_fa_forward_scratch(const ug_params *P);

#endif
