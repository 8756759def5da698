/* delta_rule_io.h — the tensors and dims both gated-delta-rule kernels read from a call.
 *
 * gated_delta_rule and chunked_gated_delta_rule share one tensor contract (see
 * oracles/delta_rule/delta_rule_ref.h); this checks it once for both kernels. */
#ifndef UG_SIM_DELTA_RULE_IO_H
#define UG_SIM_DELTA_RULE_IO_H
#include <stddef.h>

#include "ulpgym/kernel_abi.h"

typedef struct {
    const ulpgym_tensor *q, *k, *v, *g, *beta, *h0, *o, *ht;
    size_t tokens, hv, hqk, dk, dv;
    float scale; /* params.scale, default Dk^-1/2 (fp32) */
} ug_delta_io;

/* Finds the tensors, checks their shapes agree and reads scale; -2 with a message. */
int ug_delta_io_open(ug_delta_io *io, const ulpgym_call *call, char *err, size_t errlen);
/* The qk head a value head reads: h / (Hv/Hqk). */
size_t ug_delta_io_qk_head(const ug_delta_io *io, size_t h);

#endif
