/* glm_moe_check.h — the naive routed-expert evaluation shared by the tests of the two fused
 * GLM MoE ops (test_op_glm_moe_fusion in form routed, test_op_glm_moe_fusion_mix), which
 * both judge out, router_logits, topk_weights, topk_ids and act as their first outputs.
 * Every value is computed in long double from the decoded inputs and the kernel's exported
 * ids, weights and act (the staged rule), independently of the oracle. Also the int8
 * shared-expert weight dists (w13, w2 and their scales) that those two tests and
 * test_op_glm_ffn_shared_expert_quant draw from, the router params both refuse, and the
 * closing checks of a differential case. Include after op_check.h. */
#ifndef UG_GLM_MOE_CHECK_H
#define UG_GLM_MOE_CHECK_H
#include <math.h>

#include "core/dtype.h"

enum { GMC_OUT, GMC_LG, GMC_W, GMC_IDS, GMC_ACT };

#define GMC_SHARED_DISTS                                                                                               \
    "\"w13\":{\"kind\":\"randint\",\"lo\":-127,\"hi\":127},\"w13_scale\":{\"kind\":\"uniform\",\"lo\":0.0005,"         \
    "\"hi\":0.0009},\"w2\":{\"kind\":\"randint\",\"lo\":-127,\"hi\":127},\"w2_scale\":{\"kind\":\"uniform\","          \
    "\"lo\":0.0005,\"hi\":0.0009}"

/* The router params both fused ops refuse, as rows {params, the param named} of a table of
 * bad params (OPC_EXPECT_REFUSED_EACH). */
#define GMC_BAD_ROUTER_PARAMS                                                                                          \
    {"{\"experts\":16,\"num_expert_group\":3}", "num_expert_group"},                                                   \
        {"{\"experts\":16,\"num_expert_group\":4,\"topk_group\":5}", "topk_group"},                                    \
        {"{\"experts\":4,\"top_k\":8}", "top_k"},                                                                      \
    {                                                                                                                  \
        "{\"experts\":16,\"num_expert_group\":8,\"topk_group\":1,\"top_k\":4}", "top_k"                                \
    }

static inline double gmc_bf16(double v) { return ug_dtype_round(UG_DT_BF16, v); }

static inline long double gmc_sigm(long double v) { return 1.0L / (1.0L + expl(-v)); }

/* The naive act of token t, slot j, unit i from the kernel's id (long double dots of bf16
 * products: exact to 2^-64 relative of the sum of magnitudes), rounded to bf16. */
static inline double gmc_naive_act(const ug_exec_detail *d, size_t t, size_t j, size_t i, size_t h, size_t k, size_t I)
{
    size_t e = (size_t)opc_out(d, GMC_IDS, t * k + j);
    long double g = 0, u = 0;
    for (size_t n = 0; n < h; n++) {
        g += (long double)opc_in(d, "x", t * h + n) * opc_in(d, "expert_w1", (e * h + n) * I + i);
        u += (long double)opc_in(d, "x", t * h + n) * opc_in(d, "expert_w3", (e * h + n) * I + i);
    }
    return ug_dtype_round(UG_DT_BF16, (double)(g * gmc_sigm(g) * u));
}

/* The routed sum of out[t,n], unrounded: sum_j w_j * (act_j . W2_{id_j}[:, n]) from the
 * kernel's weights, ids and act. */
static inline long double gmc_naive_routed(const ug_exec_detail *d, size_t t, size_t n, size_t h, size_t k, size_t I)
{
    long double o = 0;
    for (size_t j = 0; j < k; j++) {
        size_t id = (size_t)opc_out(d, GMC_IDS, t * k + j);
        long double y = 0;
        for (size_t i = 0; i < I; i++)
            y += (long double)opc_out(d, GMC_ACT, (t * k + j) * I + i) * opc_in(d, "expert_w2", (id * I + i) * h + n);
        o += (long double)opc_out(d, GMC_W, t * k + j) * y;
    }
    return o;
}

/* The known-value token of both fused ops (x = 1, W1 = 1, W3 = 1/2, W2 = 1, bias picking
 * expert 1, weight 1): act = bf16(silu(2)*1), and out[0] = out[1] = act. */
static inline void gmc_expect_known_act(const ug_exec_detail *d)
{
    double act = gmc_bf16(2.0 / (1.0 + exp(-2.0)));
    CHECK(opc_out(d, GMC_ACT, 0) == act && opc_out(d, GMC_OUT, 0) == act && opc_out(d, GMC_OUT, 1) == act,
          "act %.9g out %.9g %.9g, want %.9g", opc_out(d, GMC_ACT, 0), opc_out(d, GMC_OUT, 0), opc_out(d, GMC_OUT, 1),
          act);
}

/* Slot j of token t: the oracle's weight against w (its distance folded into *worst) and its
 * act values against gmc_naive_act (each one that differs counted in *bad). */
static inline void gmc_check_slot(const ug_exec_detail *d, size_t t, size_t j, long double w, size_t h, size_t k,
                                  size_t I, double *worst, size_t *bad)
{
    *worst = fmax(*worst, fabs(d->oracle.gstar[GMC_W][t * k + j] - (double)w));
    for (size_t i = 0; i < I; i++)
        *bad += d->oracle.gstar[GMC_ACT][(t * k + j) * I + i] != gmc_naive_act(d, t, j, i, h, k, I);
}

/* The relative distance of the oracle's out[t, n] (h values a token) from the naive o. */
static inline double gmc_out_distance(const ug_exec_detail *d, size_t t, size_t n, size_t h, long double o)
{
    return fabs(d->oracle.gstar[GMC_OUT][t * h + n] - (double)o) / fmax(1e-30, fabsl(o));
}

/* The closing checks of a differential case, then d freed: all n_out out and n_act act
 * elements checked, none of the `counted` differing (bad) and the `measured` within 1e-12. */
static inline void gmc_expect_naive_agrees(ug_exec_detail *d, size_t n_out, size_t n_act, size_t bad,
                                           const char *counted, double worst, const char *measured)
{
    CHECK(d->oracle.sel.n[GMC_OUT] == n_out && d->oracle.sel.n[GMC_ACT] == n_act, "every element checked");
    CHECK(bad == 0, "%zu %s differ from the naive evaluation", bad, counted);
    CHECK(worst < 1e-12, "%s differ from the naive evaluation by %g (relative)", measured, worst);
    ug_exec_detail_free(d);
}

#endif
