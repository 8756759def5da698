/* glm_moe_oracle_parts.h — the exact side of the GLM-4.5 MoE parts, shared by the ops that are
 * made of them: the router's staged id/weight rule (glm_select_experts, glm_moe_fusion,
 * glm_moe_fusion_mix), the int8 shared expert's staged stages (glm_ffn_shared_expert_quant,
 * glm_moe_fusion, glm_moe_fusion_mix) and the routed SwiGLU activation
 * (moe_grouped_gemm, glm_moe_fusion, glm_moe_fusion_mix), and the two fused ops' front
 * (gate and router) and memory estimate. Each part is written once here;
 * the ops' oracle files only wire outputs to it. The rules themselves are documented in
 * glm_select_experts.c and glm_ffn_shared_expert_quant.c (their file headers).
 * Names start gmoe_ (GLM MoE): gmp_ is GNU GMP's namespace, linked into the same binary. */
#ifndef UG_GLM_MOE_PARTS_H
#define UG_GLM_MOE_PARTS_H
#include <stddef.h>
#include <stdint.h>

#include "oracles/oracle.h"

#define GMOE_MAX_E 1024
#define GMOE_MAX_G 64
#define GMOE_MAX_K 64

/* ---- gate ---- */

/* Output o = x [T,h] * w[E,h]^T: each selected logit one exact dot product (glm_gate's). */
void gmoe_gate_emit(ug_ar *ar, const ug_selection *sel, int o, const double *x, const double *w, size_t h, size_t E);

/* ---- router: sigmoid + bias, group-limited top-k, staged on the kernel's ids ---- */

typedef struct {
    long T, E, k, ng, tg, per;
    int top2, renorm;
    double rsf; /* fp32 value */
} gmoe_router;

void gmoe_router_read(const ug_params *P, gmoe_router *p);
/* The router's param checks (divisibility, topk_group, top_k); -2 naming op and param. */
int gmoe_router_check(const ug_params *P, const char *op, char *err, size_t errlen);
/* Emits the selected topk_weights (output o_w) and topk_ids (o_ids) of every token from
 * the logits tensor (an input, or the kernel's exported logits: staged), the
 * e_score_correction_bias input and the kernel's ids (c->out[o_ids]). */
void gmoe_router_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel, const gmoe_router *p,
                      const ug_tensor *logits, int o_w, int o_ids);

/* ---- int8 shared expert (DynQuant, int8 GEMMs, bf16 SwiGLU), staged ---- */

typedef struct {
    int codes, scales, view; /* judged outputs of one DynQuant; -1: none */
} gmoe_quant_outs;

typedef struct {
    size_t T, h, I;
    const ug_tensor *x, *w13, *s13, *w2, *s2;
    gmoe_quant_outs xq, aq;
    int o_a;                    /* the bf16 activation a */
    int8_t *w13t, *w2t, *codes; /* [2I][h], [h][I] (column blocks filled on first use), one row of the kernel's codes */
    unsigned char *ready;       /* the transposes' column blocks done: w13's, then w2's */
    int32_t *acc;               /* a whole-row pass's int32 partial sums [max(2I, h)] */
    int64_t *dots;              /* its int dots, one per weight column */
    double *row;
} gmoe_shared;

/* Reads params tokens/hidden/intermediate, inputs x w13 w13_scale w2 w2_scale and outputs
 * x_i8 x_scale a a_i8 a_scale (+ the @oracle_scale views); allocates. -1: no memory. */
int gmoe_shared_open(gmoe_shared *k, const ug_case *c);
void gmoe_shared_close(gmoe_shared *k);
/* Stages 1-3 of token t: DynQuant of x[t], a from the kernel's x_i8/x_scale, DynQuant of
 * the kernel's a. */
void gmoe_shared_front(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t);
/* Stage 4 of token t: loads the kernel's a_i8 row into k->codes and returns its a_scale. */
ug_num gmoe_shared_down_row(const gmoe_shared *k, const ug_case *c, ug_ar *ar, size_t t);
/* (a_i8 . W2[:, j]) * w2_scale[j] * sa, exact, unrounded (after gmoe_shared_down_row). */
ug_num gmoe_shared_down(const gmoe_shared *k, ug_ar *ar, ug_num sa, size_t j);
/* The selected elements of output o in row t (h wide): the exact stage-4 value. */
void gmoe_shared_out_emit(const gmoe_shared *k, const ug_case *c, ug_ar *ar, const ug_selection *sel, int o, size_t t);

/* ---- routed SwiGLU expert ---- */

/* bf16(silu(x.w1) * (x.w3)) over h: x contiguous, w1/w3 columns of stride `stride`; the
 * dots exact, the bf16 rounding the specification's (the activation written back as
 * bf16 between the two GEMMs). */
ug_num gmoe_swiglu_bf16(ug_ar *ar, const double *x, const double *w1, const double *w3, size_t stride, size_t h);
/* a[i] = gmoe_swiglu_bf16's value for every column i < I of W1, W3 [h, I] with the row x: g
 * and u in one row-major pass over each (ug_dot_d_rows of one row: ug_dot_d's numbers per
 * column, the plain arithmetics' loops vectorised), then its rounding; an a the bound left
 * ambiguous (certified arithmetic) goes through gmoe_swiglu_bf16 itself, whose first attempt
 * is this one and whose retry tracks the sums. g, u: scratch of I numbers each. */
void gmoe_act_row(ug_ar *ar, const double *x, const double *w1, const double *w3, size_t h, size_t I, ug_num *g,
                  ug_num *u, ug_num *a);

/* ---- routed experts, staged on the kernel's ids, weights and act ---- */

typedef struct {
    size_t T, h, E, k, I;
    const double *x, *w1, *w3, *w2; /* x [T,h], expert_w1/w3 [E,h,I], expert_w2 [E,I,h] */
    int o_act, o_w, o_ids;
    long ids[GMOE_MAX_K]; /* token t's kernel ids, weights and act (gmoe_routed_token) */
    double wt[GMOE_MAX_K], *act;
    ug_num *dots; /* the plain arithmetics' row forms: g, u and a (3I), then act_j . W2 (k*h) */
    ug_num *row;  /* gmoe_routed_out_row's h values */
} gmoe_routed;

/* Reads params tokens/hidden/experts/top_k/intermediate, inputs x expert_w1 expert_w3
 * expert_w2, outputs act topk_weights topk_ids. -1: no memory. */
int gmoe_routed_open(gmoe_routed *r, const ug_case *c);
void gmoe_routed_close(gmoe_routed *r);
/* The selected act elements of token t: bf16(silu(x.W1_e)*(x.W3_e)), e the kernel's id
 * of the slot (NaN for an id outside [0, experts): the ids compare fails it). */
void gmoe_routed_act_emit(const gmoe_routed *r, const ug_case *c, ug_ar *ar, const ug_selection *sel, size_t t);
/* Loads token t's kernel ids, weights and act rows. */
void gmoe_routed_token(gmoe_routed *r, const ug_case *c, size_t t);
/* sum_j w_j * (act_j . W2_{e_j}[:, n]) for the loaded token, exact, unrounded. */
ug_num gmoe_routed_out(const gmoe_routed *r, ug_ar *ar, size_t n);
/* The same for every n < h into r->row[n], in one pass over each W2_{e_j}'s rows
 * (ug_dot_d_cols: ug_dot_d's numbers per column). 1, or 0 (nothing written) in the MPFR
 * arithmetics, whose numbers a row of would crowd the arena: call gmoe_routed_out per n. */
int gmoe_routed_out_row(gmoe_routed *r, ug_ar *ar);

/* ---- the fused ops' front and scratch (glm_moe_fusion, glm_moe_fusion_mix) ---- */

/* Their first two stages: the selected router_logits, each an exact dot of x and gate_w,
 * then topk_weights and topk_ids staged on the kernel's logits. */
void gmoe_fused_route_emit(const ug_case *c, ug_ar *ar, const ug_selection *sel);

/* Scratch bytes for the case memory estimate of a fused op: the gate (kernel: the fp32
 * gate weight and rows) and the fp32 accumulator (T*h), with `routed` the routed part (one
 * expert's fp32 weights transposed plus staging, 16hI; the per-slot fp32 down-projection
 * rows, T*k*h; act; the oracle's act of one token) and with `shared` the shared part
 * (its int8 transposes and fp32 staging, 14hI, and rows; the oracle's int8 transposes,
 * 3hI, and rows). */
double gmoe_fused_scratch(const ug_params *P, int routed, int shared);

#endif
