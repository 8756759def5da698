/* reference_golden.h — the reference tests' own goldens of flash_attention_mha,
 * flash_attention_mha_grad and glm_attention_fusion, and the attention row the sparse
 * attentions' goldens share (core/ops.h, ug_op_def.reference_golden).
 *
 * The reference suite's tests of these ops do not compare against the exact value: their
 * golden is a torch evaluation in fp32 that makes the kernel's own casts (the forward: P/l
 * cast to bf16 before P.V; the backward: P and dS cast to bf16 before the dV, dK and dQ
 * products), and their tolerance (1e-4 + 2^-7|g|, every element for the backward) has no
 * room for those casts' errors. The `reference` standard judges against that golden as the
 * test does (an element within the rule of it or of the exact value passes). These are our
 * own fp32 evaluations of what the tests compute: fp32 dot products (in any order: the
 * tests' torch matmuls fix none), expf, the casts to the case dtype where the tests cast to
 * bf16, and the golden rounded to the output dtype. A golden that comes out NaN or inf (a
 * special-value case, a row that sees no key) says "no golden here": the exact value alone
 * then judges. */
#ifndef UG_ORACLE_REFERENCE_GOLDEN_H
#define UG_ORACLE_REFERENCE_GOLDEN_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/attention/attn_rows.h"
#include "oracles/oracle.h"

/* o of test_flash_attention_mha.py's attention_forward_golden: scores = fp32(q.k) * scale,
 * m = max, p = exp(s - m), l = sum p, o = (bf16(p / l)) . v in fp32, rounded to the dtype;
 * out[0] (o) only. */
int ug_fa_reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen);

/* dq, dk, dv of test_flash_attention_mha_grad.py's attention_backward_golden: P = softmax
 * of the fp32 scores, Delta = fp32 sum of o * do over d, dP = fp32 do.v, dS = bf16(P * (dP -
 * Delta)), dV = bf16(P)^T do, dK = (dS^T q) * scale, dQ = (dS k) * scale, fp32 sums, each
 * rounded to the dtype. */
int ug_fa_grad_reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen);

/* One attention row as the tests' goldens form it, for the ops that gather their own keys
 * (the sparse attentions): fp32 scores q.k_j over dk values (any order) times the fp32
 * scale, the softmax in fp32 (max, exp, sum, p/l), the weights cast to p_dt, then the fp32
 * P.V: o[d] for d < dv. Key j at k + j*ldk, value j at v + j*ldv, exact doubles; w is
 * scratch of n floats. 0, or -1 when n is 0 or a score or the sum is not finite. */
int ug_golden_attn_row(const double *q, const double *k, size_t ldk, size_t dk, const double *v, size_t ldv, size_t dv,
                       size_t n, float scale, ug_dtype p_dt, float *w, float *o);

/* o of glm_attention_fusion's test (glm_v4_5/utils/attn_golden.py, ifa_flash_torch, the
 * attention over the caches its scatter wrote) for the selected elements of output out of
 * paged attention p, into gold (one per selected element, rounded to odt; NaN where a row
 * has no golden): fp32 scores q.k (any order) times the fp32 scale; per key tile of `tile`
 * tokens (the test's s2_tile = 4 blocks) m_new = max(m, tile max), p = exp(s - m_new) in
 * fp32, l = l*exp(m - m_new) + sum p (the unrounded p), acc = acc*exp(m - m_new) + bf16(p).v
 * in fp32; o = acc / l. A partial last tile holds the row's remaining keys only (the test's
 * golden would take the max over the whole tile's slots, garbage included; its kernel takes
 * the valid ones). 0, or -1 out of memory with err set. */
int ug_gl_paged_reference_golden(const ug_gl_paged *p, size_t tile, const ug_selection *sel, int out, ug_dtype odt,
                                 double *gold, char *err, size_t errlen);
/* Bytes that golden allocates for rows of at most maxlen keys of dim values. */
double ug_gl_paged_reference_golden_scratch(long maxlen, long dim);

/* Bytes the two flash goldens allocate for a case with params P, for the case memory estimate. */
double ug_fa_reference_golden_scratch(const ug_params *P);

#endif
