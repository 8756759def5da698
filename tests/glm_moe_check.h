/* glm_moe_check.h — the naive routed-expert evaluation shared by the tests of the two fused
 * GLM MoE ops (test_op_glm_moe_fusion in form routed, test_op_glm_moe_fusion_mix), which
 * both judge out, router_logits, topk_weights, topk_ids and act as their first outputs.
 * Every value is computed in long double from the decoded inputs and the kernel's exported
 * ids, weights and act (the staged rule), independently of the oracle. Include after
 * op_check.h. */
#ifndef UG_GLM_MOE_CHECK_H
#define UG_GLM_MOE_CHECK_H
#include <math.h>

#include "core/dtype.h"

enum { GMC_OUT, GMC_LG, GMC_W, GMC_IDS, GMC_ACT };

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

#endif
