/* test_op_glm_moe_fusion_mix.c — glm_moe_fusion_mix beyond the generic plan test:
 *  - known values: a two-expert token whose bias decides the id (weight 1, act =
 *    bf16(silu(2)*1)) and a zero shared activation (w13 = 0: a, a_scale 0, the shared
 *    output 0), so out = act; the SwiGLU swap fails;
 *  - differential: every oracle out value against a naive long-double evaluation from the
 *    kernel's exported act, weights, ids, a_i8 and a_scale (shared + routed, unrounded),
 *    and every act value from the kernel's ids;
 *  - the routed scaling factor must not scale the shared expert: mut_shared_scaled fails
 *    with 2.5 and passes with 1;
 *  - bad params refused with a message naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "op_check.h"
#include "glm_moe_check.h"

#define OP "glm_moe_fusion_mix"
enum { O_OUT, O_LG, O_W, O_IDS, O_ACT, O_X8, O_XS, O_A, O_A8, O_AS };

#define ROUTED_DISTS                                                                                                   \
    "\"expert_w1\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},\"expert_w3\":{\"kind\":\"normal\",\"mean\":0,"       \
    "\"std\":0.05},\"expert_w2\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}"
#define ROUTER_DISTS                                                                                                   \
    "\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"gate_w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.3},"        \
    "\"e_score_correction_bias\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}"

static void test_known_values(void)
{
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,"
        "\"params\":{\"tokens\":1,\"hidden\":2,\"experts\":2,\"top_k\":1,\"intermediate\":1},"
        "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":1},\"gate_w\":{\"kind\":\"const\",\"value\":0},"
        "\"e_score_correction_bias\":{\"kind\":\"const\",\"value\":0},"
        "\"expert_w1\":{\"kind\":\"const\",\"value\":1},\"expert_w3\":{\"kind\":\"const\",\"value\":0.5},"
        "\"expert_w2\":{\"kind\":\"const\",\"value\":1},\"w13\":{\"kind\":\"const\",\"value\":0},"
        "\"w13_scale\":{\"kind\":\"const\",\"value\":0.001},\"w2\":{\"kind\":\"const\",\"value\":1},"
        "\"w2_scale\":{\"kind\":\"const\",\"value\":0.001}},"
        "\"inject\":[{\"input\":\"e_score_correction_bias\",\"i\":1,\"v\":0.5}]}";
    ug_result r;
    ug_exec_detail d;
    opc_sim_passes(spec, "known values", &r, &d);
    CHECK(opc_out(&d, O_IDS, 0) == 1 && opc_out(&d, O_W, 0) == 1.0, "router: id %g weight %g", opc_out(&d, O_IDS, 0),
          opc_out(&d, O_W, 0));
    CHECK(opc_out(&d, O_XS, 0) == (double)(float)(1.0 / 127) && opc_out(&d, O_X8, 0) == 127 &&
              opc_out(&d, O_A, 0) == 0 && opc_out(&d, O_AS, 0) == 0,
          "shared stages: x_scale %g code %g a %g a_scale %g", opc_out(&d, O_XS, 0), opc_out(&d, O_X8, 0),
          opc_out(&d, O_A, 0), opc_out(&d, O_AS, 0));
    gmc_expect_known_act(&d);
    ug_exec_detail_free(&d);
    CHECK(opc_run(spec, "mut_swiglu_swap", &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "swap: %s",
          ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

enum { T = 4, H = 48, E = 8, K = 3, I = 6 };

/* Naive unrounded out[t,n]: the shared stage 4 plus the routed sum. */
static long double naive_out(const ug_exec_detail *d, size_t t, size_t n)
{
    long long acc = 0;
    for (size_t i = 0; i < I; i++)
        acc += (long long)opc_out(d, O_A8, t * I + i) * (long long)opc_in(d, "w2", i * H + n);
    long double o = (long double)acc * opc_in(d, "w2_scale", n) * opc_out(d, O_AS, t);
    return o + gmc_naive_routed(d, t, n, H, K, I);
}

static void test_differential(void)
{
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":42,"
                       "\"params\":{\"tokens\":4,\"hidden\":48,\"experts\":8,\"top_k\":3,\"intermediate\":6,"
                       "\"routed_scaling_factor\":2.5},"
                       "\"dist\":{" ROUTER_DISTS "," ROUTED_DISTS "," GMC_SHARED_DISTS "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    double worst = 0;
    size_t bad = 0;
    for (size_t t = 0; t < T; t++) {
        long double s[K], sum = 0;
        for (size_t j = 0; j < K; j++)
            sum += s[j] = gmc_sigm(opc_out(&d, O_LG, t * E + (size_t)opc_out(&d, O_IDS, t * K + j)));
        for (size_t j = 0; j < K; j++) gmc_check_slot(&d, t, j, s[j] / sum * 2.5L, H, K, I, &worst, &bad);
        for (size_t n = 0; n < H; n++) worst = fmax(worst, gmc_out_distance(&d, t, n, H, naive_out(&d, t, n)));
    }
    gmc_expect_naive_agrees(&d, T * H, T * K * I, bad, "act values", worst, "weights or out");
}

/* The shared expert is never scaled by routed_scaling_factor. */
static void test_shared_unscaled(void)
{
    const char *fmt = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":7,"
                      "\"params\":{\"tokens\":2,\"hidden\":32,\"experts\":8,\"top_k\":2,\"intermediate\":8,"
                      "\"routed_scaling_factor\":%s},"
                      "\"dist\":{" ROUTER_DISTS "," ROUTED_DISTS "," GMC_SHARED_DISTS "}}";
    const char *rsf[2] = {"2.5", "1"};
    ug_outcome want[2] = {UG_OUT_FAIL, UG_OUT_PASS};
    for (int i = 0; i < 2; i++) {
        char spec[2048];
        snprintf(spec, sizeof spec, fmt, rsf[i]);
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(spec, "mut_shared_scaled", &r, &d) == 0 && r.outcome == want[i], "scaled shared, rsf %s: %s",
              rsf[i], ug_outcome_name(r.outcome));
        ug_exec_detail_free(&d);
    }
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        GMC_BAD_ROUTER_PARAMS,
        {"{\"form\":\"routed\"}", "form"},
        {"{\"hidden\":200000}", "hidden"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,\"params\":%s,\"dist\":{" ROUTER_DISTS
                            "," ROUTED_DISTS "," GMC_SHARED_DISTS "}}",
                            bad);
}

int main(void)
{
    test_known_values();
    test_differential();
    test_shared_unscaled();
    test_bad_params();
    return check_done();
}
