/* delta_rule_ref.h — the gated delta rule's shared parts: params, tensors, the recurrent
 * reference (the oracle of both gated_delta_rule and chunked_gated_delta_rule) and the
 * output geometry.
 *
 * Both operators take the same tensors (q, k [T,Hqk,Dk]; v [T,Hv,Dv]; g, beta [T,Hv];
 * h0 [Hv,Dv,Dk]) and give the same outputs (o [T,Hv,Dv]; ht [Hv,Dv,Dk]); they differ in
 * dtypes, in the kernel's algorithm (recurrent vs chunked WY) and in tolerances. One
 * definition of the mathematics serves both, so a bug in it cannot hide in one copy. */
#ifndef UG_DELTA_RULE_REF_H
#define UG_DELTA_RULE_REF_H
#include <stddef.h>

#include "core/registry.h"
#include "oracles/oracle.h"

typedef struct {
    long tokens, hv, hqk, dk, dv;
    double scale; /* fp32 value */
} ug_delta_params;

/* Reads tokens, hv, hqk, dk, dv, scale (default Dk^-1/2, rounded to fp32); -2 with a
 * message naming the param when one is out of range. op names the operator. */
int ug_delta_read_params(const ug_spec *s, const char *op, ug_delta_params *p, char *err, size_t errlen);

/* Adds the inputs (q, k, v in qkv_dt; g, beta, h0 fp32) and the outputs (o in o_dt, ht
 * fp32). q and k rows are l2-normalised along Dk here, then rounded to qkv_dt: the
 * operator expects normalised q/k and uses them as given. */
int ug_delta_build(ug_case *c, const ug_delta_params *p, ug_dtype qkv_dt, ug_dtype o_dt, char *err, size_t errlen);

/* The recurrent definition, per value head h (qk head h / (Hv/Hqk)):
 *   S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale,
 * S_{-1} = h0[h], ht = S_{T-1}. Emits the selected elements of o (output 0) and ht
 * (output 1). Rounds nowhere (the spec rounds only at the outputs). */
int ug_delta_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel, const ug_delta_params *p);

/* o as (T*Hv) x Dv with row tile tok_tile*Hv; ht as (Hv*Dv) x Dk. */
void ug_delta_geometry(const ug_case *c, int out, ug_geom *g, size_t tok_tile, size_t col_tile);

#endif
