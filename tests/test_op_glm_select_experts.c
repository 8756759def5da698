/* test_op_glm_select_experts.c — glm_select_experts beyond the generic plan test:
 *  - known values: hand-computable scores (sigmoid(0) = 1/2, sigmoid(inf) = 1) whose ids
 *    and renormalised, scaled weights are exact fractions; the bias-in-weights mutant
 *    gives other fractions and fails;
 *  - ties: with two experts whose exact biased scores tie but whose unbiased scores differ,
 *    a kernel that returns the other tied expert (with that expert's weights) passes, the
 *    same ids with the first expert's weights fail, and a swap to a non-tied expert fails;
 *    likewise for two tied groups; ids in another order pass (a set);
 *  - near ties: saturating logits whose fp32 sigmoids are all 1 while the exact ones
 *    differ by 1e-9: the sim kernel's lower-index choice differs from the exact top-k and
 *    passes (within the declared bound);
 *  - differential: oracle ids and weights against a naive double evaluation with groups;
 *  - bad params refused with a message naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"

#define SPEC(n, params, dist, inject)                                                                                  \
    "{\"v\":1,\"op\":\"glm_select_experts\",\"dtype\":\"fp32\",\"seed\":" n ",\"params\":" params                      \
    ",\"dist\":" dist inject "}"
#define ZERO                                                                                                           \
    "{\"router_logits\":{\"kind\":\"const\",\"value\":0},\"e_score_correction_bias\":{\"kind\":\"const\",\"value\":0}}"
#define NORMAL                                                                                                         \
    "{\"router_logits\":{\"kind\":\"normal\",\"mean\":0,\"std\":2},\"e_score_correction_bias\":{\"kind\":\"normal\","  \
    "\"mean\":0,\"std\":0.5}}"

static void set_id(ug_case *c, size_t i, int id) { ug_dtype_store(UG_DT_INT32, c->out[1].data, i, (double)id); }
static void set_w(ug_case *c, size_t i, double w) { ug_dtype_store(UG_DT_FP32, c->out[0].data, i, w); }
static int get_id(const ug_case *c, size_t i) { return (int)ug_dtype_load(UG_DT_INT32, c->out[1].data, i); }

/* 4 experts, top-2, logits 0 except x3 = inf (s = 1/2, 1/2, 1/2, 1); bias 0, 0, 1/2, 1/4:
 * b = 1/2, 1/2, 1, 5/4, so ids {3, 2}; renormalised weights 1/(1+1/2) = 2/3 and 1/3, times
 * 2.5: the exact fp32(5/3), fp32(5/6); the kernel rounds twice. The bias-in-weights mutant: 5/4 / (9/4) * 2.5 = 25/18. */
static void test_known_values(void)
{
    const char *spec = SPEC("1", "{\"tokens\":1,\"experts\":4,\"top_k\":2,\"routed_scaling_factor\":2.5}", ZERO,
                            ",\"inject\":[{\"input\":\"router_logits\",\"i\":3,\"v\":\"inf\"},"
                            "{\"input\":\"e_score_correction_bias\",\"i\":2,\"v\":0.5},"
                            "{\"input\":\"e_score_correction_bias\",\"i\":3,\"v\":0.25}]");
    ug_result r;
    ug_exec_detail d;
    opc_sim_passes(spec, "known values", &r, &d);
    if (d.have_oracle) {
        CHECK(get_id(&d.c, 0) == 3 && get_id(&d.c, 1) == 2, "ids %d %d, want 3 2", get_id(&d.c, 0), get_id(&d.c, 1));
        float w0 = (float)(2.0 / 3), w1 = (float)(1.0 / 3); /* the kernel rounds the quotient, then the product */
        CHECK(opc_out(&d, 0, 0) == (double)(w0 * 2.5f) && opc_out(&d, 0, 1) == (double)(w1 * 2.5f),
              "weights %a %a, want fp32(fp32(2/3)*2.5) fp32(fp32(1/3)*2.5)", opc_out(&d, 0, 0), opc_out(&d, 0, 1));
        CHECK(d.oracle.g[0][0] == (double)(float)(5.0 / 3) && d.oracle.g[1][1] == 2.0, "oracle %a id %g",
              d.oracle.g[0][0], d.oracle.g[1][1]);
    }
    ug_exec_detail_free(&d);
    CHECK(opc_run(spec, "mut_bias_in_weights", &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "bias mutant: %s",
          ug_outcome_name(r.outcome));
    if (d.have_oracle)
        CHECK(fabs(opc_out(&d, 0, 0) - 25.0 / 18) < 1e-6, "bias mutant weight %g, want 25/18", opc_out(&d, 0, 0));
    ug_exec_detail_free(&d);
}

/* 16 experts, top-2, logits 0 except x11 = inf; bias 0 except b3 = 1, b7 = 1/2: b3 = 3/2,
 * b7 = 1/2 + 1/2 = 1 = b11 = 1 + 0 (an exact tie with different s), the rest 1/2. The sim
 * kernel picks {3, 7} (lower index), weights 1/2, 1/2. {3, 11} is as correct, with weights
 * 1/3, 2/3. */
static void test_expert_tie(void)
{
    const char *spec = SPEC("2", "{\"tokens\":1,\"experts\":16,\"top_k\":2}", ZERO,
                            ",\"inject\":[{\"input\":\"router_logits\",\"i\":11,\"v\":\"inf\"},"
                            "{\"input\":\"e_score_correction_bias\",\"i\":3,\"v\":1},"
                            "{\"input\":\"e_score_correction_bias\",\"i\":7,\"v\":0.5}]");
    ug_exec_detail d;
    opc_sim_passes(spec, "tie case", NULL, &d);
    if (!d.have_case) return;
    CHECK(get_id(&d.c, 0) == 3 && get_id(&d.c, 1) == 7, "sim ids %d %d, want 3 7", get_id(&d.c, 0), get_id(&d.c, 1));
    set_id(&d.c, 1, 11); /* the other tied expert, weights still those of {3, 7} */
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "tied expert with the first choice's weights passed");
    set_w(&d.c, 0, 1.0 / 3), set_w(&d.c, 1, 2.0 / 3);
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "the other tied expert with its own weights failed");
    set_id(&d.c, 0, 11), set_id(&d.c, 1, 3), set_w(&d.c, 0, 2.0 / 3), set_w(&d.c, 1, 1.0 / 3);
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "the same set in another order failed");
    set_id(&d.c, 0, 5), set_w(&d.c, 0, 0.5), set_w(&d.c, 1, 0.5); /* b5 = 1/2: not tied with the 2nd score 1 */
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a non-tied expert passed");
    set_id(&d.c, 0, 3), set_id(&d.c, 1, 3);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a duplicate id passed");
    ug_exec_detail_free(&d);
}

/* 8 experts in 4 groups of 2, keep 1 group, top-2, max rule: b = s + bias with logits 0
 * (s = 1/2) and bias 0, 0, 1/4, 0, 0, 1/4, 0, 0: groups 1 and 2 tie at 3/4. The sim keeps
 * group 1 ({2, 3}); group 2 ({4, 5}) is as correct; group 0 is not. */
static void test_group_tie(void)
{
    const char *spec =
        SPEC("3", "{\"tokens\":1,\"experts\":8,\"top_k\":2,\"num_expert_group\":4,\"topk_group\":1}", ZERO,
             ",\"inject\":[{\"input\":\"e_score_correction_bias\",\"i\":2,\"v\":0.25},"
             "{\"input\":\"e_score_correction_bias\",\"i\":5,\"v\":0.25}]");
    ug_exec_detail d;
    opc_sim_passes(spec, "group tie", NULL, &d);
    if (!d.have_case) return;
    int a = get_id(&d.c, 0), b = get_id(&d.c, 1);
    CHECK((a == 2 && b == 3), "sim ids %d %d, want 2 3", a, b);
    set_id(&d.c, 0, 5), set_id(&d.c, 1, 4); /* the tied group, best first; weights 1/2 each either way */
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "the other tied group failed");
    set_id(&d.c, 0, 0), set_id(&d.c, 1, 1);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a group below the tie passed");
    set_id(&d.c, 0, 2), set_id(&d.c, 1, 5); /* one expert from each tied group: two groups kept */
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "ids from two groups passed with topk_group 1");
    ug_exec_detail_free(&d);
}

/* Logits 20 + i/8 for expert i (exact sigmoids 1 - e^-x, about 1 - 2e-9, all distinct) round
 * to fp32 1.0: the sim kernel sees a 16-way tie and takes ids 0..7, the exact top-8 is
 * 8..15. Within the bound 2^-20 (1 + max|b|), so the sim passes. */
static void test_near_tie(void)
{
    char spec[2048], inj[1600] = ",\"inject\":[";
    for (int i = 0; i < 16; i++)
        snprintf(inj + strlen(inj), sizeof inj - strlen(inj), "%s{\"input\":\"router_logits\",\"i\":%d,\"v\":%g}",
                 i ? "," : "", i, 20 + i / 8.0);
    strcat(inj, "]");
    snprintf(spec, sizeof spec, SPEC("4", "{\"tokens\":1,\"experts\":16}", ZERO, "%s"), inj);
    ug_exec_detail d;
    opc_sim_passes(spec, "near tie", NULL, &d);
    if (d.have_case) CHECK(get_id(&d.c, 0) == 0, "sim's first id %d, expected 0 (fp32 tie)", get_id(&d.c, 0));
    ug_exec_detail_free(&d);
}

/* A naive double evaluation (groups by top-2 sum, keep 3 of 8) against the oracle. */
static void test_differential(void)
{
    const char *spec = SPEC("5",
                            "{\"tokens\":12,\"num_expert_group\":8,\"topk_group\":3,\"group_score\":\"top2_sum\","
                            "\"routed_scaling_factor\":2.5}",
                            NORMAL, "");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    int bad_id = 0;
    double worst = 0;
    for (int t = 0; t < 12; t++) {
        double s[160], b[160], gs[8];
        for (int e = 0; e < 160; e++) {
            s[e] = 1 / (1 + exp(-opc_in(&d, "router_logits", (size_t)(t * 160 + e))));
            b[e] = s[e] + opc_in(&d, "e_score_correction_bias", (size_t)e);
        }
        for (int g = 0; g < 8; g++) { /* the two largest of the group */
            double m1 = -INFINITY, m2 = -INFINITY;
            for (int e = g * 20; e < g * 20 + 20; e++)
                if (b[e] > m1)
                    m2 = m1, m1 = b[e];
                else if (b[e] > m2)
                    m2 = b[e];
            gs[g] = m1 + m2;
        }
        int kept[8] = {0};
        for (int n = 0; n < 3; n++) {
            int best = -1;
            for (int g = 0; g < 8; g++)
                if (!kept[g] && (best < 0 || gs[g] > gs[best])) best = g;
            kept[best] = 1;
        }
        int chosen[160] = {0}, ids[8];
        double sum = 0;
        for (int n = 0; n < 8; n++) {
            int best = -1;
            for (int e = 0; e < 160; e++)
                if (kept[e / 20] && !chosen[e] && (best < 0 || b[e] > b[best])) best = e;
            chosen[best] = 1, ids[n] = best, sum += s[best];
        }
        for (int j = 0; j < 8; j++) {
            int id = (int)d.oracle.g[1][t * 8 + j], in = 0;
            for (int n = 0; n < 8; n++) in |= ids[n] == id;
            bad_id += !in;
            worst = fmax(worst, fabs(d.oracle.gstar[0][t * 8 + j] - s[id] / sum * 2.5));
        }
    }
    CHECK(bad_id == 0, "%d oracle ids outside the naive top-8", bad_id);
    CHECK(worst < 1e-14, "oracle weights differ from the naive ones by %g", worst);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"num_expert_group\":7}", "num_expert_group"},
        {"{\"num_expert_group\":4,\"topk_group\":5}", "topk_group"},
        {"{\"experts\":160,\"top_k\":200}", "top_k"},
        {"{\"experts\":4,\"top_k\":8}", "top_k"},
        {"{\"num_expert_group\":40,\"topk_group\":1}", "top_k"},
        {"{\"group_score\":\"mean\"}", "group_score"},
        {"{\"renormalize\":2}", "renormalize"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("1", "%s", NORMAL, ""), bad);
}

int main(void)
{
    test_known_values();
    test_expert_tie();
    test_group_tie();
    test_near_tie();
    test_differential();
    test_bad_params();
    return check_done();
}
