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

/* What both ops' contracts say about special values and rounding. */
#define UG_DELTA_SEMANTICS                                                                                             \
    "Per value head h (qk head h/(Hv/Hqk)) and value row i, in exact arithmetic on the given input values: "           \
    "s_t = e^{g_t} s_{t-1} + beta_t (v_t[i] - e^{g_t} s_{t-1}.k_t) k_t from s_{-1} = h0[h,i,:] "                       \
    "(= e^g S (I - beta k k^T) + beta v k^T), o_t[h,i] = scale * s_t.q_t, ht[h,i,:] = s_{T-1}; "                       \
    "only o and ht are rounded, once, to their dtypes; scale is the fp32 attribute. With qk_norm = given q and k "     \
    "are used as given (the builder l2-normalises the drawn rows; nothing normalises them again); with qk_norm = "     \
    "l2 the op first replaces each Dk row x of q and k by x/sqrt(||x||^2 + qk_eps), exact. g and beta may be any "     \
    "finite values; beta < 0 or g > 0 lets the state grow geometrically. Special values: a NaN or +-inf "              \
    "input makes NaN every output element that depends on it, and only those: o[t,h,i] and ht[h,i,:] depend on "       \
    "h0[h,i,:], v[<=t,h,i], k[<=t,hk,:], g[<=t,h], beta[<=t,h], and o[t,h,i] also on q[t,hk,:] (an infinity has "      \
    "no consistent sign once the rank-one erase mixes it; the kernels treat a non-finite load as NaN). Subnormals "    \
    "are ordinary values. Finite inputs give the exact value, which may round to +-inf in o's dtype; huge finite "     \
    "inputs (+-max, g far outside [-1,0]) can overflow a kernel's fp32 intermediates (e^g, S*k, S*q), and the "        \
    "oracle still expects the exact value there."

/* The params the oracle and builder use, read from the case's parsed params. */
typedef struct {
    long tokens, hv, hqk, dk, dv;
    double scale;        /* fp32 value */
    int qk_l2;           /* params.qk_norm == l2: the op normalises q and k itself */
    double qk_eps;       /* fp32 value of params.qk_eps (inside the sqrt of that norm) */
    size_t seqs;         /* sequences packed along the tokens (params.seqlens; 1 without it) */
    const long *seqlens; /* their lengths, borrowed from the params; NULL: one sequence of all tokens */
} ug_delta_params;

void ug_delta_read_params(const ug_params *P, ug_delta_params *p);

/* Tokens of sequence b (0 <= b < p->seqs). */
long ug_delta_seq_len(const ug_delta_params *p, size_t b);

/* The check hook of both ops: hv a multiple of hqk, qk_eps > 0, and where the op declares
 * seqlens, given lengths of at least 1 that sum to tokens (size is the case memory
 * budget's). */
int ug_delta_check(const ug_params *P, char *err, size_t errlen);

/* The builder of both ops: with qk_norm = given, l2-normalises each Dk row of the drawn q
 * and k in double and rounds it to their dtype (the operator expects normalised q/k and
 * uses them as given); with qk_norm = l2 the drawn rows stay as drawn, since the operator
 * normalises them itself. Nothing else is built. */
int ug_delta_build(ug_case *c, char *err, size_t errlen);

/* The recurrent definition (UG_DELTA_SEMANTICS); with qk_norm = l2 on
 * q/sqrt(||q||^2 + qk_eps) and k/sqrt(||k||^2 + qk_eps), exact. Emits the selected elements of o
 * (output 0) and ht (output 1). Rounds nowhere (the spec rounds only at the outputs). */
int ug_delta_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel);

/* need[r] = the last token state row r = (b*Hv + h)*Dv + i (sequence b, head h, row i) must
 * be evolved to for the selection (every o[t, h, i] selected for a token t of sequence b,
 * and b's last token for a selected ht[b*Hv + h, i, :]); -1 if none. need holds
 * seqs*Hv*Dv entries. */
void ug_delta_rows_needed(const ug_selection *sel, const ug_delta_params *p, long *need);

/* 1/sqrt(||x||^2 + eps) of an exact input row of n values (qk_norm l2). */
ug_num ug_delta_l2_recip(ug_ar *ar, const double *x, size_t n, double eps);

/* o as (T*Hv) x Dv with row tile tok_tile*Hv; ht as (Hv*Dv) x Dk. */
void ug_delta_geometry(const ug_case *c, int out, ug_geom *g, size_t tok_tile, size_t col_tile);

#endif
