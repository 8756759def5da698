/* test_op_glm_ffn_shared_expert_quant.c — glm_ffn_shared_expert_quant beyond the generic
 * plan test: a hand-computed token (scale exactly 1, codes, bf16 gu, the SwiGLU halves), a
 * differential check of every oracle value against an independent naive evaluation from
 * the kernel's exported stage values, the view and the scale rule catching a scale 1.8 %
 * off that its own codes agree with, zero and NaN rows as the semantics state them, and
 * bad params refused naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "op_check.h"
#include "glm_moe_check.h"

#define OP "glm_ffn_shared_expert_quant"
enum { O_OUT, O_X8, O_XS, O_A, O_A8, O_AS, O_X8V, O_A8V };

/* x = [127, 64]: amax 127, scale exactly 1, codes [127, 64]. w13 = [[1, -1], [1, 1]] with
 * scales 2^-7: g = 191/128, u = -63/128 (both exact in bf16). a = bf16(silu(g)*u) < 0,
 * one code -127 with scale |a|/127; w2 = 1, w2_scale = 1: out = -127*fp32(|a|/127) ~ a.
 * silu on the up half (mut_silu_up) gives another a and fails. */
static void test_known_value(void)
{
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,"
                       "\"params\":{\"tokens\":1,\"hidden\":2,\"intermediate\":1},"
                       "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":127},\"w13\":{\"kind\":\"const\",\"value\":1},"
                       "\"w13_scale\":{\"kind\":\"const\",\"value\":0.0078125},\"w2\":{\"kind\":\"const\",\"value\":1},"
                       "\"w2_scale\":{\"kind\":\"const\",\"value\":1}},"
                       "\"inject\":[{\"input\":\"x\",\"i\":1,\"v\":64},{\"input\":\"w13\",\"i\":1,\"v\":-1}]}";
    double g = 191.0 / 128.0, u = -63.0 / 128.0, a = gmc_bf16(g / (1.0 + exp(-g)) * u);
    ug_result r;
    ug_exec_detail d;
    opc_sim_passes(spec, "known value", &r, &d);
    CHECK(opc_out(&d, O_XS, 0) == 1.0 && opc_out(&d, O_X8, 0) == 127 && opc_out(&d, O_X8, 1) == 64,
          "x stage: scale %g codes %g %g", opc_out(&d, O_XS, 0), opc_out(&d, O_X8, 0), opc_out(&d, O_X8, 1));
    CHECK(opc_out(&d, O_A, 0) == a && opc_out(&d, O_A8, 0) == -127, "a = %.9g (want %.9g), code %g",
          opc_out(&d, O_A, 0), a, opc_out(&d, O_A8, 0));
    CHECK(opc_out(&d, O_AS, 0) == (double)(float)(-a / 127.0), "a_scale %.9g", opc_out(&d, O_AS, 0));
    double out = gmc_bf16(-127.0 * (double)(float)(-a / 127.0));
    CHECK(opc_out(&d, O_OUT, 0) == out && opc_out(&d, O_OUT, 1) == out, "out %.9g %.9g, want %.9g",
          opc_out(&d, O_OUT, 0), opc_out(&d, O_OUT, 1), out);
    if (d.have_oracle)
        CHECK(d.oracle.gstar[O_A][0] == a && d.oracle.gstar[O_XS][0] == 1.0, "oracle a %.9g scale %g",
              d.oracle.gstar[O_A][0], d.oracle.gstar[O_XS][0]);
    ug_exec_detail_free(&d);
    CHECK(opc_run(spec, "mut_silu_up", &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "silu on the up half: %s",
          ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

/* Naive values of token t from the kernel's exported stage values, in double / long double. */
static double naive_a(const ug_exec_detail *d, size_t t, size_t i, size_t h, size_t I)
{
    double gu[2];
    for (int half = 0; half < 2; half++) {
        size_t col = i + (size_t)half * I;
        long long acc = 0;
        for (size_t k = 0; k < h; k++)
            acc += (long long)opc_out(d, O_X8, t * h + k) * (long long)opc_in(d, "w13", k * 2 * I + col);
        long double v = (long double)acc * opc_in(d, "w13_scale", col) * opc_out(d, O_XS, t); /* exact: 63 bits */
        gu[half] = gmc_bf16((double)v);
    }
    return gmc_bf16(gu[0] / (1.0 + exp(-gu[0])) * gu[1]);
}

static double naive_out(const ug_exec_detail *d, size_t t, size_t j, size_t h, size_t I)
{
    long long acc = 0;
    for (size_t i = 0; i < I; i++)
        acc += (long long)opc_out(d, O_A8, t * I + i) * (long long)opc_in(d, "w2", i * h + j);
    return (double)((long double)acc * opc_in(d, "w2_scale", j) * opc_out(d, O_AS, t));
}

/* Every oracle value of a 9-token case against the naive evaluation: scales (amax/127 in
 * double is the nearest double to the exact), codes (x/scale_kernel), a (the double silu
 * may differ by one bf16 ulp where the exact product lies within 1e-16 of a boundary:
 * none expected here) and out (exact in long double: 31 + 8 + 24 bits). */
static void test_differential(void)
{
    const size_t T = 9, h = 200, I = 40;
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":42,"
                       "\"params\":{\"tokens\":9,\"hidden\":200,\"intermediate\":40},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}," GMC_SHARED_DISTS "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    size_t bad = 0;
    for (size_t t = 0; t < T; t++) {
        double amax = 0.0;
        for (size_t k = 0; k < h; k++) amax = fmax(amax, fabs(opc_in(&d, "x", t * h + k)));
        bad += d.oracle.gstar[O_XS][t] != amax / 127.0;
        for (size_t k = 0; k < h; k++) {
            bad += d.oracle.gstar[O_X8][t * h + k] != opc_in(&d, "x", t * h + k) / opc_out(&d, O_XS, t);
            bad += d.oracle.gstar[O_X8V][t * h + k] != opc_in(&d, "x", t * h + k) / (double)(float)(amax / 127.0);
        }
        for (size_t i = 0; i < I; i++) bad += d.oracle.gstar[O_A][t * I + i] != naive_a(&d, t, i, h, I);
        for (size_t j = 0; j < h; j++) bad += d.oracle.gstar[O_OUT][t * h + j] != naive_out(&d, t, j, h, I);
    }
    CHECK(d.oracle.sel.n[O_OUT] == T * h && d.oracle.sel.n[O_A] == T * I, "every element checked");
    CHECK(bad == 0, "%zu oracle values differ from the naive evaluation", bad);
    ug_exec_detail_free(&d);
}

/* mut_clip_982: scales 1.8 % small, codes consistent with them. The consistency outputs
 * pass; the scale rule and the @oracle_scale views fail (sim: everything passes). */
static void test_scale_off(void)
{
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":3,"
                       "\"params\":{\"tokens\":4,\"hidden\":128,\"intermediate\":64},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}," GMC_SHARED_DISTS "}}";
    for (int v = 0; v < 2; v++) {
        ug_result r;
        ug_exec_detail d;
        const char *variant = v ? "mut_clip_982" : "sim";
        ug_vstate want = v ? UG_V_FAIL : UG_V_PASS;
        CHECK(opc_run(spec, variant, &r, &d) == 0, "%s ran", variant);
        CHECK(r.outcome == (v ? UG_OUT_FAIL : UG_OUT_PASS), "%s: %s", variant, ug_outcome_name(r.outcome));
        CHECK(opc_out_verdict(&r, "x_i8", UG_STD_BOUNDARY_AWARE) == UG_V_PASS, "%s: x_i8 consistent", variant);
        CHECK(opc_out_verdict(&r, "a_i8", UG_STD_BOUNDARY_AWARE) == UG_V_PASS, "%s: a_i8 consistent", variant);
        CHECK(opc_out_verdict(&r, "x_scale", UG_STD_PYPTO) == want, "%s: x_scale", variant);
        CHECK(opc_out_verdict(&r, "a_scale", UG_STD_PYPTO) == want, "%s: a_scale", variant);
        CHECK(opc_out_verdict(&r, "x_i8@oracle_scale", UG_STD_BOUNDARY_AWARE) == want, "%s: x view", variant);
        CHECK(opc_out_verdict(&r, "a_i8@oracle_scale", UG_STD_BOUNDARY_AWARE) == want, "%s: a view", variant);
        ug_exec_detail_free(&d);
    }
}

/* Token 1 of x all zero: scale 0, codes 0, a 0, out 0 (no division). Token 2 holds a NaN:
 * NaN scale, codes 0, NaN a, a_scale and out. Token 0 is ordinary. */
static void test_zero_and_nan_rows(void)
{
    const size_t h = 4, I = 3;
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":7,"
                       "\"params\":{\"tokens\":3,\"hidden\":4,\"intermediate\":3},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}," GMC_SHARED_DISTS "},"
                       "\"inject\":[{\"input\":\"x\",\"i\":4,\"v\":0},{\"input\":\"x\",\"i\":5,\"v\":0},"
                       "{\"input\":\"x\",\"i\":6,\"v\":0},{\"input\":\"x\",\"i\":7,\"v\":0},"
                       "{\"input\":\"x\",\"i\":9,\"v\":\"nan\"}]}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "zero/NaN rows", NULL, &d)) return;
    CHECK(d.oracle.gstar[O_XS][1] == 0.0 && opc_out(&d, O_XS, 1) == 0.0, "zero row scale");
    CHECK(d.oracle.gstar[O_AS][1] == 0.0 && opc_out(&d, O_AS, 1) == 0.0, "zero row a_scale");
    for (size_t k = 0; k < h; k++) {
        CHECK(opc_out(&d, O_X8, h + k) == 0 && d.oracle.gstar[O_X8][h + k] == 0.0, "zero row code %zu", k);
        CHECK(opc_out(&d, O_OUT, h + k) == 0 && d.oracle.gstar[O_OUT][h + k] == 0.0, "zero row out %zu", k);
        CHECK(opc_out(&d, O_X8, 2 * h + k) == 0 && isnan(opc_out(&d, O_OUT, 2 * h + k)), "NaN row code/out %zu", k);
        CHECK(isnan(d.oracle.gstar[O_OUT][2 * h + k]), "NaN row oracle out %zu", k);
    }
    for (size_t i = 0; i < I; i++)
        CHECK(opc_out(&d, O_A, I + i) == 0 && isnan(opc_out(&d, O_A, 2 * I + i)), "a rows %zu", i);
    CHECK(isnan(d.oracle.gstar[O_XS][2]) && isnan(opc_out(&d, O_AS, 2)), "NaN row scales");
    CHECK(isfinite(opc_out(&d, O_OUT, 0)) && opc_out(&d, O_XS, 0) > 0, "token 0 ordinary");
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0", "tokens"},
        {"\"hidden\":200000", "hidden"},
        {"\"intermediate\":0", "intermediate"},
        {"\"experts\":8", "experts"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s},"
                            "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}," GMC_SHARED_DISTS "}}",
                            bad);
    opc_expect_refused("{\"op\":\"" OP "\",\"dtype\":\"fp16\",\"seed\":1,\"params\":{\"hidden\":8},"
                       "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}," GMC_SHARED_DISTS "}}",
                       "dtype");
}

int main(void)
{
    test_known_value();
    test_differential();
    test_scale_off();
    test_zero_and_nan_rows();
    test_bad_params();
    return check_done();
}
