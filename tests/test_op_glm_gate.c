/* test_op_glm_gate.c — glm_gate beyond the generic plan test: a hand-computed logit that
 * pins the fp32 weight (and shows the bf16-weight mutant moves it by less than the
 * tolerance sees), a differential check of every oracle value against an independent
 * naive evaluation, special values as the semantics text states them (including an fp32
 * overflow the oracle does not share), and bad params. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gen/case_memory.h"
#include "op_check.h"

#define DIST_NORMAL                                                                                                    \
    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"

/* x = 1, w = fp32(0.1) = 13421773 * 2^-27, hidden 3: the exact logit 3*w = 40265319 * 2^-27
 * rounds to fp32 0x1.333334p-2. With w rounded to bf16 (0x1.9ap-4) it is 0x1.338p-2: a
 * relative change of 1e-3, below the 5e-3 rule, so that mutant passes here. */
static void test_known_value(void)
{
    const char *spec = "{\"op\":\"glm_gate\",\"dtype\":\"bf16\",\"seed\":1,"
                       "\"params\":{\"tokens\":1,\"hidden\":3,\"experts\":2},"
                       "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":1},\"w\":{\"kind\":\"const\",\"value\":0.1}}}";
    const char *variants[] = {"sim", "mut_w_bf16"};
    const double want[] = {0x1.333334p-2, 0x1.338p-2};
    for (int v = 0; v < 2; v++) {
        ug_result r;
        ug_exec_detail d;
        memset(&d, 0, sizeof d);
        CHECK(opc_run(spec, variants[v], &r, &d) == 0, "known value (%s): %s", variants[v], r.message);
        CHECK(r.outcome == UG_OUT_PASS, "known value (%s): %s %s", variants[v], ug_outcome_name(r.outcome), r.message);
        if (d.have_oracle) {
            CHECK(d.oracle.gstar[0][1] == 3.0 * (double)0.1f, "g* = %a, want 3 * fp32(0.1)", d.oracle.gstar[0][1]);
            CHECK(opc_out(&d, 0, 1) == want[v], "%s logit = %a, want %a", variants[v], opc_out(&d, 0, 1), want[v]);
        }
        ug_exec_detail_free(&d);
    }
}

/* Every oracle value against a naive long-double dot (rows by their own index
 * arithmetic); 70 experts put 6 in the tail tile, hidden 300 a 44-deep K tail. */
static void test_differential(void)
{
    const char *spec = "{\"op\":\"glm_gate\",\"dtype\":\"bf16\",\"seed\":42,"
                       "\"params\":{\"tokens\":13,\"hidden\":300,\"experts\":70}," DIST_NORMAL "}";
    ug_exec_detail d;
    memset(&d, 0, sizeof d);
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    size_t n = d.oracle.sel.n[0], bad = 0, H = 300, E = 70;
    CHECK(n == 13 * E, "sample all: %zu elements checked", n);
    double worst = 0.0;
    for (size_t k = 0; k < n; k++) {
        size_t idx = d.oracle.sel.idx[0][k], t = idx / E, e = idx % E;
        long double want = 0.0L;
        for (size_t j = 0; j < H; j++) want += (long double)opc_in(&d, "x", t * H + j) * opc_in(&d, "w", e * H + j);
        double rel = fabs(d.oracle.gstar[0][k] - (double)want) / (fabs((double)want) + 1e-6);
        if (rel > worst) worst = rel;
        bad += rel > 1e-12;
    }
    CHECK(bad == 0, "%zu of %zu oracle values differ from the naive evaluation (worst rel %.3g)", bad, n, worst);
    ug_exec_detail_free(&d);
}

/* x[0][5] = inf: row 0 is +-inf by the sign of w[e][5], row 1 finite; w[3][2] = NaN: column 3
 * is NaN in every row. The sim kernel meets both (PASS). */
static void test_special(void)
{
    const char *spec =
        "{\"op\":\"glm_gate\",\"dtype\":\"bf16\",\"seed\":5,"
        "\"params\":{\"tokens\":4,\"hidden\":16,\"experts\":8}," DIST_NORMAL
        ",\"inject\":[{\"input\":\"x\",\"i\":5,\"v\":\"inf\"},{\"input\":\"w\",\"i\":50,\"v\":\"nan\"}]}";
    ug_exec_detail d;
    memset(&d, 0, sizeof d);
    opc_sim_passes(spec, "special values", NULL, &d);
    if (d.have_oracle) {
        for (size_t e = 0; e < 8; e++) {
            double g = d.oracle.g[0][e], w5 = opc_in(&d, "w", e * 16 + 5);
            if (e == 3)
                CHECK(isnan(g), "logit[0][3] = %g, want NaN", g);
            else
                CHECK(g == copysign(INFINITY, w5), "logit[0][%zu] = %g, want %g", e, g, copysign(INFINITY, w5));
        }
        CHECK(isfinite(d.oracle.g[0][8]) && isnan(d.oracle.g[0][8 + 3]), "row 1: %g %g", d.oracle.g[0][8],
              d.oracle.g[0][11]);
    }
    ug_exec_detail_free(&d);
}

/* x = [bf16 max, bf16 max], w = [2, -2]: each fp32 product overflows (+inf, -inf), the exact
 * logit is 0. The oracle expects 0 (semantics: no product rounds), so the fp32 kernel's
 * NaN is a NaN/Inf mismatch: the contract, not a tolerance, decides this case. */
static void test_overflow(void)
{
    const char *spec = "{\"op\":\"glm_gate\",\"dtype\":\"bf16\",\"seed\":1,"
                       "\"params\":{\"tokens\":1,\"hidden\":2,\"experts\":1},"
                       "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":0},\"w\":{\"kind\":\"const\",\"value\":2}},"
                       "\"inject\":[{\"input\":\"x\",\"i\":\"all\",\"v\":\"max\"},{\"input\":\"w\",\"i\":1,\"v\":-2}]}";
    ug_result r;
    ug_exec_detail d;
    memset(&d, 0, sizeof d);
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "overflow case: %s", r.message);
    CHECK(r.outcome == UG_OUT_NONFINITE, "overflow case: %s, want NONFINITE", ug_outcome_name(r.outcome));
    if (d.have_oracle)
        CHECK(d.oracle.gstar[0][0] == 0.0 && isnan(opc_out(&d, 0, 0)), "g* %g, kernel %g", d.oracle.gstar[0][0],
              opc_out(&d, 0, 0));
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0", "tokens"},
        {"\"hidden\":0", "hidden"},
        {"\"experts\":2000", "experts"},
        /* 1.4 GiB of inputs with their fp64 copies: over a 256 MiB budget, refused unallocated */
        {"\"tokens\":8192,\"hidden\":16384,\"experts\":1024", "bytes of memory"},
        {"\"topk\":8", "topk"},
    };
    ug_case_memory_set_budget((uint64_t)256 << 20);
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"glm_gate\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s}," DIST_NORMAL "}", bad);
    ug_case_memory_set_budget(0);
    opc_expect_refused("{\"op\":\"glm_gate\",\"dtype\":\"fp16\",\"seed\":1,\"params\":{\"tokens\":1}," DIST_NORMAL "}",
                       "dtype");
}

int main(void)
{
    test_known_value();
    test_differential();
    test_special();
    test_overflow();
    test_bad_params();
    return check_done();
}
