/* delta_rule_io.h — the params and tensors both gated-delta-rule kernels read from a call.
 *
 * gated_delta_rule and chunked_gated_delta_rule share one tensor contract (see
 * oracles/delta_rule/delta_rule_ref.h); this checks it once for both kernels. */
#ifndef UG_SIM_DELTA_RULE_IO_H
#define UG_SIM_DELTA_RULE_IO_H
#include <stddef.h>

#include "core/opdecl.h"
#include "ulpgym/kernel_abi.h"

typedef struct {
    const ulpgym_tensor *q, *k, *v, *g, *beta, *h0, *o, *ht;
    size_t tokens, hv, hqk, dk, dv;
    float scale;         /* params.scale (fp32; default Dk^-1/2) */
    int qk_l2;           /* params.qk_norm == l2: the kernel normalises q and k rows itself */
    float qk_eps;        /* params.qk_eps (fp32), inside the sqrt of that norm */
    size_t seqs;         /* sequences packed along the tokens: params.seqlens where the op has it, else 1 */
    const long *seqlens; /* their lengths (borrowed from params); NULL: one sequence of all tokens */
    ug_params params;    /* the call's parsed params (an op's own ones: chunk) */
    int fn_ulps;         /* ulps the qk_norm rsqrt is moved by (ug_sim_fn_ulps): 0 (open's), or a legal_fn_ulps' */
} ug_delta_io;

/* Parses the params, finds the tensors and checks their shapes against the params; -2
 * with a message. On success release with ug_delta_io_close(). */
int ug_delta_io_open(ug_delta_io *io, const ulpgym_call *call, char *err, size_t errlen);
void ug_delta_io_close(ug_delta_io *io);
/* Tokens of sequence b. */
size_t ug_delta_io_seq_len(const ug_delta_io *io, size_t b);
/* The qk head a value head reads: h / (Hv/Hqk). */
size_t ug_delta_io_qk_head(const ug_delta_io *io, size_t h);
/* qk_norm l2: x[0..n) <- x * 1/sqrt(sum x^2 + qk_eps), fp32 sum of squares in index
 * order and an fp32 rsqrt (moved by io->fn_ulps ulps where a legal variant sets it);
 * nothing with qk_norm given. */
void ug_delta_io_qk_norm(const ug_delta_io *io, float *x, size_t n);
/* Loads n elements from offset off of t into fp32 (exact widening); a NaN or +-inf loads
 * as NaN, so it poisons exactly what depends on it (the contract's special-value rule). */
void ug_delta_io_load(const ulpgym_tensor *t, size_t off, size_t n, float *dst);

#endif
