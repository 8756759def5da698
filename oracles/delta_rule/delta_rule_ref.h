/* delta_rule_ref.h — the gated delta rule's shared oracle parts: the declaration pieces
 * (params, tensors, special-value semantics), the cross-param check, the q/k builder, the
 * recurrent reference (the oracle of both gated_delta_rule and chunked_gated_delta_rule)
 * and the output geometry.
 *
 * Both operators take the same tensors (q, k [T,Hqk,Dk]; v [T,Hv,Dv]; g, beta [T,Hv];
 * h0 [Hv,Dv,Dk]) and give the same outputs (o [T,Hv,Dv]; ht [Hv,Dv,Dk]); they differ in
 * dtypes, in the kernel's algorithm (recurrent vs chunked WY) and in tolerances. One
 * definition of the mathematics serves both, so a bug in it cannot hide in one copy. */
#ifndef UG_DELTA_RULE_REF_H
#define UG_DELTA_RULE_REF_H
#include <stddef.h>

#include "core/opdecl.h"
#include "oracles/oracle.h"

/* The params both ops declare, in this order (an op may append its own). */
#define UG_DELTA_PARAM_DECLS                                                                                           \
    {"tokens", UG_PARAM_INT, "1", 1, 65536, NULL, "T tokens of one sequence, processed in order (1 = decode)"},      \
        {"hv", UG_PARAM_INT, "1", 1, 256, NULL, "Hv value heads, a multiple of hqk"},                                  \
        {"hqk", UG_PARAM_INT, "1", 1, 256, NULL, "Hqk query/key heads; value head h reads qk head h / (Hv/Hqk)"},     \
        {"dk", UG_PARAM_INT, "128", 1, 1024, NULL, "Dk key head dim (elements)"},                                      \
        {"dv", UG_PARAM_INT, "128", 1, 1024, NULL, "Dv value head dim (elements)"},                                    \
        {"scale", UG_PARAM_F32, "1/sqrt(dk)", -UG_DECL_INF, UG_DECL_INF, NULL,                                        \
         "output scale (fp32 attribute; the default Dk^-1/2 is formed in double, then rounded to fp32)"}

/* The tensors of both ops, in the builder's order (Philox stream i = input i). qkv is the
 * dtype rule of q, k, v and o ("bf16:bf16": only bf16 cases). */
#define UG_DELTA_TENSOR_DECLS(qkv)                                                                                     \
    {"q", UG_TENSOR_INPUT, qkv, "tokens, hqk, dk",                                                                    \
     "queries; drawn, then each Dk row l2-normalised by the builder (in double, rounded once to the dtype)"},          \
        {"k", UG_TENSOR_INPUT, qkv, "tokens, hqk, dk", "keys; drawn, then l2-normalised like q"},                      \
        {"v", UG_TENSOR_INPUT, qkv, "tokens, hv, dv", "values"},                                                       \
        {"g", UG_TENSOR_INPUT, "fp32", "tokens, hv", "per-token log decay (<= 0): the state is scaled by e^g"},        \
        {"beta", UG_TENSOR_INPUT, "fp32", "tokens, hv", "write strength in (0, 1)"},                                   \
        {"h0", UG_TENSOR_INPUT, "fp32", "hv, dv, dk", "initial state; row i = value index (S maps keys to values)"},   \
        {"o", UG_TENSOR_OUTPUT, qkv, "tokens, hv, dv", "o_t = S_t q_t * scale, rounded once to its dtype"},            \
        {"ht", UG_TENSOR_OUTPUT, "fp32", "hv, dv, dk", "final state S_{T-1}, rounded once to fp32"},                   \
    {                                                                                                                  \
        NULL                                                                                                           \
    }

/* What both ops' contracts say about special values and rounding. */
#define UG_DELTA_SEMANTICS                                                                                             \
    "Per value head h (qk head h/(Hv/Hqk)) and value row i, in exact arithmetic on the given input values: "          \
    "s_t = e^{g_t} s_{t-1} + beta_t (v_t[i] - e^{g_t} s_{t-1}.k_t) k_t from s_{-1} = h0[h,i,:] "                       \
    "(= e^g S (I - beta k k^T) + beta v k^T), o_t[h,i] = scale * s_t.q_t, ht[h,i,:] = s_{T-1}; "                       \
    "only o and ht are rounded, once, to their dtypes; scale is the fp32 attribute. q and k are used as given "        \
    "(the builder l2-normalises the drawn rows; nothing normalises them again). Special values: a NaN or +-inf "       \
    "input makes NaN every output element that depends on it, and only those: o[t,h,i] and ht[h,i,:] depend on "     \
    "h0[h,i,:], v[<=t,h,i], k[<=t,hk,:], g[<=t,h], beta[<=t,h], and o[t,h,i] also on q[t,hk,:] (an infinity has "   \
    "no consistent sign once the rank-one erase mixes it; the kernels treat a non-finite load as NaN). Subnormals "  \
    "are ordinary values. Finite inputs give the exact value, which may round to +-inf in o's dtype; huge finite "    \
    "inputs (+-max, g far outside [-1,0]) can overflow a kernel's fp32 intermediates (e^g, S*k, S*q), and the "       \
    "oracle still expects the exact value there."

/* The params the oracle and builder use, read from the case's parsed params. */
typedef struct {
    long tokens, hv, hqk, dk, dv;
    double scale; /* fp32 value */
} ug_delta_params;

void ug_delta_read_params(const ug_params *P, ug_delta_params *p);

/* The check hook of both ops: hv a multiple of hqk, and no tensor over 2^26 elements. */
int ug_delta_check(const ug_params *P, char *err, size_t errlen);

/* The builder of both ops: l2-normalises each Dk row of the drawn q and k in double and
 * rounds it to their dtype (the operator expects normalised q/k and uses them as given).
 * Nothing else is built. */
int ug_delta_build(ug_case *c, char *err, size_t errlen);

/* The recurrent definition (UG_DELTA_SEMANTICS). Emits the selected elements of o
 * (output 0) and ht (output 1). Rounds nowhere (the spec rounds only at the outputs). */
int ug_delta_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);

/* o as (T*Hv) x Dv with row tile tok_tile*Hv; ht as (Hv*Dv) x Dk. */
void ug_delta_geometry(const ug_case *c, int out, ug_geom *g, size_t tok_tile, size_t col_tile);

#endif
