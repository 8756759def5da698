/* test_op_moe_grouped_gemm.c — moe_grouped_gemm beyond the generic plan test: a
 * hand-computed value (which pins the bf16 rounding of the intermediate the spec
 * mandates), a differential check of every output element against an independent naive
 * double evaluation that routes tokens by its own prefix sum, the group_list invariants
 * of each split mode, special values as the semantics text states them, and bad params.
 *
 * The oracle and the naive evaluation share nothing but the case's decoded inputs, so a
 * wrong expert lookup, a swapped W1/W3 or a wrong weight layout in either shows here. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gen/case_memory.h"
#include "op_check.h"
#include "run/exec.h"

#define DIST_CONST                                                                                                     \
    "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":1},\"w1\":{\"kind\":\"const\",\"value\":1},"                        \
    "\"w3\":{\"kind\":\"const\",\"value\":2},\"w2\":{\"kind\":\"const\",\"value\":0.5}}"
#define DIST_NORMAL                                                                                                    \
    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"w1\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1},"  \
    "\"w3\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1},\"w2\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}}"

/* x = 1, W1 = 1, W3 = 2, W2 = 0.5, h = I = 1: g = 1, u = 2, a = 2*silu(1) = 1.46211715...
 * rounded to bf16 = 1.4609375 (0x1.76p+0), out = 0.73046875 exactly. An exact
 * intermediate would give 0.7310585786 -> bf16 0.73046875 too, so also check g* itself. */
static void test_known_value(void)
{
    const char *spec =
        "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"seed\":1,"
        "\"params\":{\"tokens\":1,\"experts\":1,\"h\":1,\"inter\":1,\"groups\":\"uniform\"}," DIST_CONST "}";
    ug_exec_detail d;
    if (opc_sim_passes(spec, "known-value case", NULL, &d)) {
        CHECK(d.oracle.gstar[0][0] == 0.73046875, "g* = %a, want 0x1.76p-1 (bf16 intermediate)", d.oracle.gstar[0][0]);
        CHECK(d.a[0][0] == 0.73046875, "kernel out = %a, want 0x1.76p-1", d.a[0][0]);
    }
    ug_exec_detail_free(&d);
}

/* Naive double reference for row r: expert by a running prefix sum of group_list. */
static double naive_out(const ug_case *c, size_t r, size_t j)
{
    const ug_tensor *x = ug_case_input(c, "x"), *w1 = ug_case_input(c, "w1"), *w3 = ug_case_input(c, "w3"),
                    *w2 = ug_case_input(c, "w2"), *gl = ug_case_input(c, "group_list");
    size_t h = (size_t)x->shape[1], I = (size_t)w1->shape[2], e = 0, end = (size_t)gl->values[0];
    while (r >= end) end += (size_t)gl->values[++e];
    double out = 0.0;
    for (size_t i = 0; i < I; i++) {
        double g = 0.0, u = 0.0;
        for (size_t k = 0; k < h; k++) {
            g += x->values[r * h + k] * w1->values[(e * h + k) * I + i];
            u += x->values[r * h + k] * w3->values[(e * h + k) * I + i];
        }
        double a = ug_dtype_round(UG_DT_BF16, g / (1.0 + exp(-g)) * u);
        out += a * w2->values[(e * I + i) * h + j];
    }
    return out;
}

static void test_differential(void)
{
    const char *spec =
        "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"seed\":42,"
        "\"params\":{\"tokens\":13,\"experts\":7,\"h\":40,\"inter\":24,\"groups\":\"zeros\"}," DIST_NORMAL "}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    size_t n = d.oracle.sel.n[0], h = 40, bad = 0;
    CHECK(n == 13 * 40, "sample all: %zu elements checked", n);
    double worst = 0.0;
    for (size_t k = 0; k < n; k++) {
        size_t idx = d.oracle.sel.idx[0][k];
        double want = naive_out(&d.c, idx / h, idx % h), got = d.oracle.gstar[0][k];
        double rel = fabs(got - want) / (fabs(want) + 1e-6);
        if (rel > worst) worst = rel;
        bad += rel > 1e-9;
    }
    CHECK(bad == 0, "%zu of %zu oracle values differ from the naive double evaluation (worst rel %.3g)", bad, n, worst);
    ug_exec_detail_free(&d);
}

/* group_list: counts >= 0 summing to T; zeros leaves every odd expert empty; single fills one. */
static void test_group_modes(void)
{
    const char *modes[] = {"uniform", "random", "zeros", "single"};
    for (int m = 0; m < 4; m++) {
        char spec[1024];
        snprintf(spec, sizeof spec,
                 "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"seed\":%d,"
                 "\"params\":{\"tokens\":29,\"experts\":6,\"h\":4,\"inter\":4,\"groups\":\"%s\"}," DIST_NORMAL "}",
                 m + 3, modes[m]);
        ug_result r;
        ug_exec_detail d;
        memset(&d, 0, sizeof d);
        CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "groups=%s: %s", modes[m], r.message);
        if (!d.have_case) continue;
        const ug_tensor *gl = ug_case_input(&d.c, "group_list");
        double sum = 0.0, nonzero = 0.0, odd = 0.0;
        for (size_t e = 0; e < 6; e++) {
            CHECK(gl->values[e] >= 0, "groups=%s: negative count", modes[m]);
            sum += gl->values[e];
            nonzero += gl->values[e] > 0;
            if (e % 2) odd += gl->values[e];
        }
        CHECK(sum == 29, "groups=%s: counts sum to %g, want 29", modes[m], sum);
        if (m == 0) CHECK(gl->values[0] == 5 && gl->values[5] == 4, "uniform: 5,5,5,5,5,4 expected");
        if (m == 2) CHECK(odd == 0, "zeros: odd experts hold %g tokens", odd);
        if (m == 3) CHECK(nonzero == 1, "single: %g experts have tokens", nonzero);
        ug_exec_detail_free(&d);
    }
}

/* Injected NaN/inf reach only the rows that read them, and the kernel matches the oracle
 * (silu(-inf) is NaN in both). */
static void test_special(void)
{
    const char *inj[] = {"{\"input\":\"x\",\"i\":5,\"v\":\"-inf\"}", "{\"input\":\"w1\",\"i\":3,\"v\":\"-inf\"}",
                         "{\"input\":\"w2\",\"i\":7,\"v\":\"nan\"}"};
    for (int i = 0; i < 3; i++) {
        char spec[1024];
        snprintf(spec, sizeof spec,
                 "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"tokens\":8,\"experts\":3,"
                 "\"h\":32,\"inter\":16,\"groups\":\"uniform\"}," DIST_NORMAL ",\"inject\":[%s]}",
                 inj[i]);
        ug_result r;
        ug_exec_detail d;
        memset(&d, 0, sizeof d);
        CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "%s: %s", inj[i], r.message);
        if (i == 0 && d.have_oracle) /* x[0][5] = -inf: row 0 is all NaN, row 1 finite */
            CHECK(isnan(d.oracle.g[0][0]) && isnan(d.a[0][0]) && isfinite(d.oracle.g[0][32]), "x = -inf: row 0 %g %g",
                  d.oracle.g[0][0], d.a[0][0]);
        ug_exec_detail_free(&d);
    }
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0,\"experts\":2,\"h\":4,\"inter\":4", "tokens"},
        {"\"tokens\":4,\"experts\":2,\"h\":4,\"inter\":4,\"groups\":\"sorted\"", "groups"},
        {"\"tokens\":4,\"experts\":2,\"h\":-3,\"inter\":4", "h"},
        /* 3 x 256 x 8192 x 4096 bf16 weights (48 GiB, 240 GiB with their fp64 copies): over the budget */
        {"\"tokens\":4,\"experts\":256,\"h\":8192,\"inter\":4096", "bytes of memory"},
    };
    ug_case_memory_set_budget((uint64_t)1 << 30); /* refused on any machine, allocated on none */
    OPC_EXPECT_REFUSED_EACH(
        "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s}," DIST_NORMAL "}", bad);
    ug_case_memory_set_budget(0);
    opc_expect_refused(
        "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"fp16\",\"seed\":1,\"params\":{\"tokens\":1}," DIST_NORMAL "}",
        "dtype");
}

int main(void)
{
    test_known_value();
    test_differential();
    test_group_modes();
    test_special();
    test_bad_params();
    return check_done();
}
