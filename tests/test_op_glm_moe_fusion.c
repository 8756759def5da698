/* test_op_glm_moe_fusion.c — glm_moe_fusion beyond the generic plan test:
 *  - known values (form routed): a two-expert token whose bias decides the id, weight 1,
 *    act = bf16(silu(2)*1) and out = act; the SwiGLU swap and the unbiased choice fail;
 *  - differential (form routed): every oracle value (logits, weights, ids, act, out)
 *    against a naive long-double evaluation from the kernel's exported stage values;
 *  - ties (form shared, every expert tied): the sim's lowest-index ids pass, another tied
 *    set with its own weights passes, an id outside the chosen groups fails;
 *  - zero rows (form shared): scale 0, codes 0, out 0, no division;
 *  - bad params refused with a message naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "op_check.h"
#include "glm_moe_check.h"

#define OP "glm_moe_fusion"
enum { O_OUT, O_LG, O_W, O_IDS, O_ACT }; /* form routed; form shared: x_i8 x_scale a a_i8 a_scale from 4 */
enum { O_X8 = 4, O_XS };

#define EXPERT_DISTS                                                                                                   \
    "\"expert_w1\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},\"expert_w3\":{\"kind\":\"normal\",\"mean\":0,"       \
    "\"std\":0.05},\"expert_w2\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}"

static void set_out(ug_case *c, int o, size_t i, double v) { ug_dtype_store(c->out[o].dtype, c->out[o].data, i, v); }

/* x = [1, 1], W_gate 0 (s = 1/2 for both experts), bias [0, 1/2]: b = 1/2, 1, id 1, weight
 * 1 (renormalised). W1 = 1, W3 = 1/2, W2 = 1: g = 2, u = 1, act = bf16(2/(1+e^-2)), and
 * out[n] = 1 * act * 1 = act. The swap gives silu(1)*2; the unbiased choice takes the
 * lower index of the tied s, expert 0, whose b is 1/2 lower: outside the tie rule. */
static void test_known_values(void)
{
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,"
        "\"params\":{\"form\":\"routed\",\"tokens\":1,\"hidden\":2,\"experts\":2,\"top_k\":1,"
        "\"intermediate\":1},"
        "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":1},\"gate_w\":{\"kind\":\"const\",\"value\":0},"
        "\"e_score_correction_bias\":{\"kind\":\"const\",\"value\":0},"
        "\"expert_w1\":{\"kind\":\"const\",\"value\":1},\"expert_w3\":{\"kind\":\"const\",\"value\":0.5},"
        "\"expert_w2\":{\"kind\":\"const\",\"value\":1}},"
        "\"inject\":[{\"input\":\"e_score_correction_bias\",\"i\":1,\"v\":0.5}]}";
    ug_exec_detail d;
    opc_sim_passes(spec, "known values", NULL, &d);
    CHECK(opc_out(&d, O_IDS, 0) == 1 && opc_out(&d, O_W, 0) == 1.0 && opc_out(&d, O_LG, 0) == 0.0,
          "router: id %g weight %g logit %g", opc_out(&d, O_IDS, 0), opc_out(&d, O_W, 0), opc_out(&d, O_LG, 0));
    gmc_expect_known_act(&d);
    ug_exec_detail_free(&d);
    opc_expect_mutants_fail(spec, (const char *const[]){"mut_swiglu_swap", "mut_unbiased_choice", NULL});
}

/* Every oracle value of a 5-token routed case against a naive evaluation. */
static void test_differential(void)
{
    enum { T = 5, H = 40, E = 8, K = 3, I = 6 };
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":42,"
                       "\"params\":{\"form\":\"routed\",\"tokens\":5,\"hidden\":40,\"experts\":8,\"top_k\":3,"
                       "\"intermediate\":6,\"routed_scaling_factor\":2.5},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"
                       "\"gate_w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.3},"
                       "\"e_score_correction_bias\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}," EXPERT_DISTS "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    double worst = 0;
    size_t bad = 0;
    for (size_t t = 0; t < T; t++) {
        long double s[E], b[E], sum = 0;
        for (size_t e = 0; e < E; e++) {
            long double lg = 0;
            for (size_t n = 0; n < H; n++)
                lg += (long double)opc_in(&d, "x", t * H + n) * opc_in(&d, "gate_w", e * H + n);
            worst = fmax(worst, fabs(d.oracle.gstar[O_LG][t * E + e] - (double)lg) / fmax(1e-30, fabs((double)lg)));
            s[e] = gmc_sigm(opc_out(&d, O_LG, t * E + e)); /* staged: the kernel's logits */
            b[e] = s[e] + opc_in(&d, "e_score_correction_bias", e);
        }
        for (size_t j = 0; j < K; j++) sum += s[(size_t)opc_out(&d, O_IDS, t * K + j)];
        for (size_t j = 0; j < K; j++) {
            size_t id = (size_t)opc_out(&d, O_IDS, t * K + j), above = 0;
            for (size_t e = 0; e < E; e++) above += b[e] > b[id];
            bad += above >= K || d.oracle.gstar[O_IDS][t * K + j] != (double)id; /* the kernel's id is a top-3 */
            gmc_check_slot(&d, t, j, s[id] / sum * 2.5L, H, K, I, &worst, &bad);
        }
        for (size_t n = 0; n < H; n++)
            worst = fmax(worst, gmc_out_distance(&d, t, n, H, gmc_naive_routed(&d, t, n, H, K, I)));
    }
    gmc_expect_naive_agrees(&d, T * H, T * K * I, bad, "ids or act values", worst, "logits, weights or out");
}

/* Form shared, W_gate and bias constant: every expert and group tied. The sim takes the
 * lowest ids of the kept groups; the highest ids of a group the kernel could legally keep
 * (weights 1/k as before) pass; an id from a second group (topk_group 1) fails. */
static void test_ties(void)
{
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":3,"
        "\"params\":{\"tokens\":2,\"hidden\":16,\"experts\":16,\"top_k\":2,\"num_expert_group\":4,"
        "\"topk_group\":1,\"intermediate\":8},"
        "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"gate_w\":{\"kind\":\"const\","
        "\"value\":0.25},\"e_score_correction_bias\":{\"kind\":\"const\",\"value\":0.5}," GMC_SHARED_DISTS "}}";
    ug_exec_detail d;
    opc_sim_passes(spec, "ties", NULL, &d);
    if (!d.have_case) return;
    CHECK(opc_out(&d, O_IDS, 0) == 0 && opc_out(&d, O_IDS, 1) == 1, "sim ids %g %g", opc_out(&d, O_IDS, 0),
          opc_out(&d, O_IDS, 1));
    set_out(&d.c, O_IDS, 0, 15), set_out(&d.c, O_IDS, 1, 14); /* group 3, tied with group 0 */
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "another tied group's experts failed");
    set_out(&d.c, O_IDS, 1, 1); /* groups 3 and 0: two groups with topk_group 1 */
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "ids from two groups passed with topk_group 1");
    ug_exec_detail_free(&d);
}

/* Form shared, x = 0: every x_scale 0, every code 0, out 0 (no division by the zero amax). */
static void test_zero_rows(void)
{
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":4,"
        "\"params\":{\"tokens\":3,\"hidden\":32,\"experts\":16,\"top_k\":4,\"intermediate\":8},"
        "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":0},\"gate_w\":{\"kind\":\"normal\",\"mean\":0,"
        "\"std\":0.03},\"e_score_correction_bias\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}," GMC_SHARED_DISTS
        "}}";
    ug_exec_detail d;
    opc_sim_passes(spec, "zero rows", NULL, &d);
    int bad = 0;
    for (size_t t = 0; t < 3 && d.have_case; t++) {
        bad += opc_out(&d, O_XS, t) != 0.0;
        for (size_t n = 0; n < 32; n++)
            bad += opc_out(&d, O_X8, t * 32 + n) != 0.0 || opc_out(&d, O_OUT, t * 32 + n) != 0.0;
    }
    CHECK(bad == 0, "%d scales, codes or outputs of zero rows are not 0", bad);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        GMC_BAD_ROUTER_PARAMS,
        {"{\"form\":\"dense\"}", "form"},
        {"{\"intermediate\":0}", "intermediate"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,\"params\":%s,"
                            "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"
                            "\"gate_w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.03},"
                            "\"e_score_correction_bias\":{\"kind\":\"const\",\"value\":0}," GMC_SHARED_DISTS "}}",
                            bad);
}

int main(void)
{
    test_known_values();
    test_differential();
    test_ties();
    test_zero_rows();
    test_bad_params();
    return check_done();
}
