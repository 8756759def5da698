/* test_op_apply_adamw.c — apply_adamw beyond the generic plan test: a hand-computed step
 * (w 1, g 0.5, m v 0, b1 0.5, b2 0.75, wd 0.25, lr 0.5: m' 0.25, v' 0.0625, w' 0.375),
 * lr = 0 leaves w unchanged bit for bit while the moments still move, an independent
 * naive double evaluation of every element against the oracle and the kernel (normal
 * and tiny second moments), special values as the semantics text states them (kernel and
 * oracle agree), and specs with bad params. */
#include <math.h>

#include "check.h"
#include "op_check.h"

#define SPEC(dt, params, dist)                                                                                         \
    "{\"op\":\"apply_adamw\",\"dtype\":\"" dt "\",\"params\":{" params "},\"dist\":" dist ",\"seed\":4}"
#define DIST_TRAIN                                                                                                     \
    "{\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.5},\"g\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1},"          \
    "\"m\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},\"v\":{\"kind\":\"uniform\",\"lo\":0,\"hi\":0.02}}"
#define DIST_TINY                                                                                                      \
    "{\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.02},\"g\":{\"kind\":\"normal\",\"mean\":0,\"std\":1e-8},"        \
    "\"m\":{\"kind\":\"normal\",\"mean\":0,\"std\":1e-8},\"v\":{\"kind\":\"wide\",\"lo_exp\":-110,\"hi_exp\":-50}}"

static void test_hand_step(const char *dt)
{
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"op\":\"apply_adamw\",\"dtype\":\"%s\",\"params\":{\"rows\":2,\"cols\":3,\"lr\":0.5,\"beta1\":0.5,"
             "\"beta2\":0.75,\"eps\":1e-30,\"weight_decay\":0.25,\"step\":1},\"dist\":{\"w\":{\"kind\":\"const\","
             "\"value\":1},\"g\":{\"kind\":\"const\",\"value\":0.5},\"m\":{\"kind\":\"const\",\"value\":0},"
             "\"v\":{\"kind\":\"const\",\"value\":0}},\"seed\":1}",
             dt);
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "hand step %s: %s", dt, r.message);
    const double want[3] = {0.375, 0.25, 0.0625};
    for (int o = 0; o < 3; o++)
        for (size_t e = 0; e < 6; e++) {
            CHECK(opc_out(&d, o, e) == want[o], "%s %s[%zu] = %a", dt, d.c.out[o].name, e, opc_out(&d, o, e));
            CHECK(d.oracle.g[o][e] == want[o], "%s oracle %s[%zu] = %a", dt, d.c.out[o].name, e, d.oracle.g[o][e]);
        }
    ug_exec_detail_free(&d);
}

static void test_lr_zero(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("bf16", "\"rows\":5,\"cols\":33,\"lr\":0,\"step\":3", DIST_TRAIN), "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "lr 0: %s", r.message);
    size_t moved = 0;
    for (size_t e = 0; e < d.c.out[0].numel; e++) {
        CHECK(opc_out(&d, 0, e) == opc_in(&d, "w", e), "lr 0 changed w[%zu]", e);
        CHECK(d.oracle.g[0][e] == opc_in(&d, "w", e), "lr 0: oracle changed w[%zu]", e);
        moved += opc_out(&d, 1, e) != opc_in(&d, "m", e);
    }
    CHECK(moved > d.c.out[0].numel / 2, "lr 0: m' should still move (%zu moved)", moved);
    ug_exec_detail_free(&d);
}

/* Naive double AdamW from the formula vs g* and the kernel. */
static void test_naive(const char *spec, double lr, double b1, double b2, double eps, double wd, long t)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "%s: %s", spec, r.message);
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (size_t e = 0; e < d.c.out[0].numel; e++) {
        double w = opc_in(&d, "w", e), g = opc_in(&d, "g", e), m = opc_in(&d, "m", e), v = opc_in(&d, "v", e);
        double m1 = b1 * m + (1 - b1) * g, v1 = b2 * v + (1 - b2) * g * g;
        double w1 = w - lr * ((m1 / bc1) / (sqrt(v1 / bc2) + eps) + wd * w);
        const double want[3] = {w1, m1, v1};
        for (int o = 0; o < 3; o++) {
            double gs = d.oracle.gstar[o][e], a = opc_out(&d, o, e);
            CHECK(fabs(gs - want[o]) <= 1e-12 * fabs(want[o]) + 1e-14 * fabs(w), "%s g*[%zu] %a vs %a", d.c.out[o].name,
                  e, gs, want[o]);
            CHECK(fabs(a - want[o]) <= ug_dtype_ulp(d.c.out[o].dtype, want[o]) + 1e-6 * (fabs(w) + lr),
                  "%s kernel [%zu] %a vs %a", d.c.out[o].name, e, a, want[o]);
        }
    }
    ug_exec_detail_free(&d);
}

/* Injected NaN/inf: the kernel matches the oracle, and w = +inf stays +inf (1 - lr*wd > 0). */
static void test_special(void)
{
    static const char *inj[] = {"{\"input\":\"w\",\"i\":3,\"v\":\"inf\"}", "{\"input\":\"w\",\"i\":3,\"v\":\"-inf\"}",
                                "{\"input\":\"g\",\"i\":3,\"v\":\"inf\"}", "{\"input\":\"m\",\"i\":3,\"v\":\"nan\"}",
                                "{\"input\":\"v\",\"i\":3,\"v\":\"inf\"}"};
    for (size_t k = 0; k < sizeof inj / sizeof inj[0]; k++) {
        char spec[1024];
        snprintf(spec, sizeof spec,
                 "{\"op\":\"apply_adamw\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"cols\":8,\"step\":3},"
                 "\"dist\":" DIST_TRAIN ",\"seed\":5,\"inject\":[%s]}",
                 inj[k]);
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
        CHECK(r.outcome == UG_OUT_PASS, "%s: %s", inj[k], r.message);
        if (k == 0)
            CHECK(d.oracle.g[0][3] == INFINITY && opc_out(&d, 0, 3) == INFINITY, "w = inf: w' = %a", opc_out(&d, 0, 3));
        ug_exec_detail_free(&d);
    }
}

/* Params the op must refuse in a bf16 case, each with what the message names. */
static const char *const BAD_PARAMS[][2] = {
    {"\"beta1\":1", "\"beta1\""}, {"\"eps\":0", "\"eps\""},     {"\"step\":0", "\"step\""},
    {"\"lr\":-1", "\"lr\""},      {"\"step\":1.5", "\"step\""},
};

int main(void)
{
    test_hand_step("bf16");
    test_hand_step("fp32");
    test_lr_zero();
    test_special();
    /* fp32 attributes: the test's double formula uses the same fp32 values */
    test_naive(SPEC("fp32", "\"rows\":4,\"cols\":50,\"lr\":0.01,\"step\":7", DIST_TRAIN), (float)0.01, (float)0.9,
               (float)0.999, (float)1e-8, (float)0.01, 7);
    test_naive(
        SPEC("bf16", "\"rows\":3,\"cols\":40,\"lr\":0.1,\"beta2\":0.95,\"weight_decay\":0.1,\"step\":2", DIST_TINY),
        (float)0.1, (float)0.9, (float)0.95, (float)1e-8, (float)0.1, 2);
    OPC_EXPECT_REFUSED_EACH(SPEC("bf16", "%s", DIST_TRAIN), BAD_PARAMS);
    opc_expect_refused(SPEC("fp16", "\"rows\":2", DIST_TRAIN), "dtype");
    return check_done();
}
