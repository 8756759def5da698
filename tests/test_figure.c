/* test_figure.c — the deciding figure (oracles/figure.h): known thresholds JSON in, known
 * phrase and fail flag out, for every standard's keys as oracles/verdict.c writes them; a
 * case's figure from its deciding standard and failing discrete compares; the severity
 * that ranks failures scale-free; stored thresholds split per output; malformed or hostile
 * JSON gives no figure and no crash. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "oracles/figure.h"

static char buf[2048];

/* The phrase of one output, and whether it fails. */
static int fig(int s, const char *json, size_t n) { return ug_figure_of_output(s, "y", json, n, buf, sizeof buf); }

#define EXPECT_PHRASE(s, json, n, want)                                                                                \
    do {                                                                                                               \
        int f_ = fig(s, json, n);                                                                                      \
        CHECK(f_ == 1 && strcmp(buf, want) == 0, "%s %s: got %d \"%s\", want \"%s\"", ug_standard_name(s), json, f_,   \
              buf, want);                                                                                              \
    } while (0)

#define EXPECT_PASS(s, json)                                                                                           \
    do {                                                                                                               \
        int f_ = fig(s, json, 100);                                                                                    \
        CHECK(f_ == 0 && buf[0] == 0, "%s %s: got %d \"%s\", want no figure", ug_standard_name(s), json, f_, buf);     \
    } while (0)

static void test_tolerance_standards(void)
{
    EXPECT_PHRASE(UG_STD_PYPTO, "{\"atol\":0.0001,\"rtol\":0.0078125,\"budget\":0.005,\"allowed\":5,\"failed\":566}",
                  4096, "y: 566 of 4096 checked elements beyond atol 0.0001 + rtol 0.0078 * |g| (5 allowed)");
    EXPECT_PASS(UG_STD_PYPTO, "{\"atol\":0.0001,\"rtol\":0.0078125,\"budget\":0.005,\"allowed\":5,\"failed\":5}");
    EXPECT_PHRASE(UG_STD_PYPTO, "{\"atol\":0.001,\"rtol\":0.001,\"budget\":0,\"allowed\":0,\"failed\":3}", 0,
                  "y: 3 elements beyond atol 0.001 + rtol 0.001 * |g| (0 allowed)");
    EXPECT_PHRASE(UG_STD_ALLCLOSE, "{\"atol\":1e-05,\"rtol\":0.016,\"failed\":1013}", 1020,
                  "y: 1013 of 1020 checked elements beyond atol 1e-05 + rtol 0.016 * |g| (none allowed)");
    EXPECT_PASS(UG_STD_ALLCLOSE, "{\"atol\":1e-05,\"rtol\":0.016,\"failed\":0}");
    EXPECT_PHRASE(UG_STD_REFERENCE,
                  "{\"atol\":0.005,\"rtol\":0.005,\"budget\":0.001,\"allowed\":4,\"failed\":72,\"golden\":\"exact or "
                  "test\",\"failed_exact\":80}",
                  4096,
                  "y: 72 of 4096 checked elements beyond the reference test's atol 0.005 + rtol 0.005 * |g| of both "
                  "the exact value and the test's golden (4 allowed)");
    EXPECT_PASS(UG_STD_REFERENCE, "{\"note\":\"no reference test for this output\"}");
}

static void test_certified(void)
{
    EXPECT_PHRASE(UG_STD_CERTIFIED, "{\"c\":2,\"fn_ulps\":4,\"violations\":12,\"worst\":3.4}", 512,
                  "y: 12 of 512 checked elements outside the certified bound (worst 3.4 x)");
    EXPECT_PASS(UG_STD_CERTIFIED, "{\"c\":2,\"fn_ulps\":4,\"violations\":0,\"worst\":0.61}");
    EXPECT_PASS(UG_STD_CERTIFIED, "{}");
    /* a worst that was not finite is stored as null: the figure still fails, most severe */
    CHECK(fig(UG_STD_CERTIFIED, "{\"c\":2,\"fn_ulps\":4,\"violations\":1,\"worst\":null}", 8) == 1, "null worst");
    CHECK(isinf(ug_figure_severity_of_output(UG_STD_CERTIFIED, "{\"violations\":1,\"worst\":null}")),
          "null worst: inf");
    /* certified holds a discrete output to its own compare, whose keys it stores */
    EXPECT_PHRASE(UG_STD_CERTIFIED, "{\"differ\":7}", 64, "y: 7 of 64 checked codes differ (bitwise compare)");
}

static void test_relative_standards(void)
{
    EXPECT_PHRASE(UG_STD_DUAL_THOUSANDTH,
                  "{\"t\":0.004,\"small_below\":0.00390625,\"small_atol\":1.52588e-05,\"share\":0.989216}", 1020,
                  "y: 98.9% of checked elements with relative error above 0.004 (limit 0.4%)");
    EXPECT_PASS(UG_STD_DUAL_THOUSANDTH, "{\"t\":0.004,\"small_below\":0.0039,\"small_atol\":1.5e-05,\"share\":0.001}");
    EXPECT_PHRASE(UG_STD_MIXED_TOLERANCE,
                  "{\"rtol\":0.015625,\"atol\":0.015625,\"floor\":1,\"matched\":0.9,\"over_max\":2}", 100,
                  "y: 90% of checked elements within atol 0.016 + rtol 0.016 * |g| (needs 99%), 2 elements beyond "
                  "max(1, 32 ulp)");
    EXPECT_PASS(UG_STD_MIXED_TOLERANCE,
                "{\"rtol\":0.015625,\"atol\":0.015625,\"floor\":1,\"matched\":1,\"over_max\":0}");
    EXPECT_PHRASE(
        UG_STD_MERE_MARE,
        "{\"T\":0.0078125,\"small_below\":0.0039,\"small_atol\":1.5e-05,\"mere\":0.0584094,\"mare\":0.0679821,"
        "\"small_beyond_atol\":688}",
        1020, "y: MERE 0.0584 (limit 0.00781), 688 small values beyond their atol");
    EXPECT_PHRASE(UG_STD_ULP, "{\"ulp_limit\":1,\"share_above\":1,\"mean_ulp\":10.6043}", 1020,
                  "y: 100% of checked elements above 1 ulp (limit 0.1%)");
    EXPECT_PASS(UG_STD_ULP, "{\"ulp_limit\":32,\"share_above\":0.5,\"mean_ulp\":10}"); /* fp32: the mean is within */
    EXPECT_PHRASE(UG_STD_ULP, "{\"ulp_limit\":32,\"share_above\":0.5,\"mean_ulp\":128}", 10,
                  "y: mean 128 ulp (limit 64) and 50% of checked elements above 32 ulp (limit 5%)");
    EXPECT_PHRASE(UG_STD_BENCHMARK,
                  "{\"level\":\"L0\",\"min_err\":0.0039,\"mare_ratio\":12.5,\"mare_max\":10,\"mere_ratio\":1.069,"
                  "\"mere_max\":2,\"rmse_ratio\":0.1,\"rmse_max\":2,\"small_errs\":2,\"small_max\":402,"
                  "\"max_abs\":0.0057,\"max_abs_limit\":0.0097}",
                  100, "y: MARE 12.5 x the naive evaluation's (limit 10)");
    EXPECT_PASS(UG_STD_BENCHMARK, "{\"level\":\"L0\",\"mare_ratio\":0.8,\"mare_max\":10,\"max_abs\":0.005,"
                                  "\"max_abs_limit\":0.0097}");
}

static void test_discrete_and_nonfinite(void)
{
    EXPECT_PHRASE(UG_STD_EXACT, "{\"differ\":3}", 64, "y: 3 of 64 checked codes differ (bitwise compare)");
    EXPECT_PASS(UG_STD_EXACT, "{\"differ\":0}");
    EXPECT_PHRASE(UG_STD_BOUNDARY_AWARE, "{\"budget_quanta\":1,\"budget_rel\":0,\"legal_flips\":4,\"illegal\":2}", 64,
                  "y: 2 codes differ beyond a flip at a rounding boundary (4 legal flips)");
    EXPECT_PASS(UG_STD_BOUNDARY_AWARE, "{\"budget_quanta\":1,\"budget_rel\":0,\"legal_flips\":4,\"illegal\":0}");
    EXPECT_PHRASE(UG_STD_TOPK_SET, "{\"rule\":\"set, ties within the op's bound (oracle)\",\"differ\":5}", 64,
                  "y: 5 indices outside the top-k set up to ties");
    for (int s = 0; s < UG_STD_COUNT; s++) /* a NaN/Inf mismatch fails every standard */
        EXPECT_PHRASE(s, "{\"nonfinite_mismatch\":2}", 64,
                      "y: 2 NaN/Inf mismatches (not finite where the exact value is, or the reverse)");
}

static void test_malformed(void)
{
    const char *bad[] = {"{",
                         "[]",
                         "null",
                         "",
                         "3",
                         "{\"atol\":\"x\",\"rtol\":1,\"allowed\":0,\"failed\":9}",
                         "{\"allowed\":0,\"failed\":9}",
                         "{\"y\":{\"failed\":9}}",
                         "{\"atol\":1e999,"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        for (int s = 0; s < UG_STD_COUNT; s++) EXPECT_PASS(s, bad[i]);
    CHECK(ug_figure_of_output(UG_STD_PYPTO, "y", NULL, 0, buf, sizeof buf) == 0 && !buf[0], "NULL thresholds");
    CHECK(ug_figure_severity_of_output(UG_STD_PYPTO, "{") == 0, "malformed: severity 0");
    /* a tiny buffer is cut, never overrun */
    char small[8];
    memset(small, 'x', sizeof small);
    int f = ug_figure_of_output(UG_STD_EXACT, "output_with_a_long_name", "{\"differ\":3}", 9, small, 6);
    CHECK(f == 1 && strlen(small) == 5 && small[6] == 'x', "cut to the buffer: \"%s\"", small);
    /* huge or negative counts from a hostile file are numbers, not sizes */
    CHECK(fig(UG_STD_EXACT, "{\"differ\":1e300}", 4) == 1, "huge count");
    EXPECT_PASS(UG_STD_EXACT, "{\"differ\":-5}");
}

/* A case with outputs y (numeric) and idx (discrete) as a judge leaves it. */
static ug_result *two_outputs(void)
{
    ug_result *r = calloc(1, sizeof *r);
    snprintf(r->case_id, sizeof r->case_id, "0123456789abcdef");
    r->primary = UG_STD_PYPTO;
    r->n_out = 2;
    snprintf(r->out[0].name, sizeof r->out[0].name, "y");
    snprintf(r->out[1].name, sizeof r->out[1].name, "idx");
    r->out[0].m.n = 4096;
    r->out[1].m.n = 64;
    for (int s = 0; s < UG_STD_COUNT; s++) {
        snprintf(r->out[0].thresholds[s], UG_THR_LEN, "{}");
        snprintf(r->out[1].thresholds[s], UG_THR_LEN, "{}");
        r->verdict[s] = UG_V_NA;
    }
    snprintf(r->out[0].thresholds[UG_STD_PYPTO], UG_THR_LEN,
             "{\"atol\":0.0001,\"rtol\":0.0078125,\"budget\":0.005,\"allowed\":20,\"failed\":566}");
    snprintf(r->out[0].thresholds[UG_STD_CERTIFIED], UG_THR_LEN,
             "{\"c\":2,\"fn_ulps\":4,\"violations\":9,\"worst\":3.4}");
    snprintf(r->out[1].thresholds[UG_STD_EXACT], UG_THR_LEN, "{\"differ\":3}");
    r->verdict[UG_STD_PYPTO] = r->verdict[UG_STD_CERTIFIED] = r->verdict[UG_STD_EXACT] = UG_V_FAIL;
    r->outcome = UG_OUT_FAIL;
    return r;
}

static void test_case_figure(void)
{
    ug_result *r = two_outputs();
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 566 of 4096 checked elements beyond atol 0.0001 + rtol 0.0078 * |g| (20 allowed); "
                      "idx: 3 of 64 checked codes differ (bitwise compare)") == 0,
          "primary and discrete joined: \"%s\"", buf);
    int list[UG_STD_COUNT];
    CHECK(ug_verdict_deciding(r, list) == 2 && list[0] == UG_STD_PYPTO && list[1] == UG_STD_EXACT,
          "deciding standards");
    CHECK(fabs(ug_verdict_severity(r, -1) - 566.0 / 21) < 1e-9, "severity: failed / (allowed + 1): %g",
          ug_verdict_severity(r, -1));
    CHECK(fabs(ug_verdict_severity(r, UG_STD_CERTIFIED) - 3.4) < 1e-12, "severity under certified: the worst ratio");
    ug_standard_figure(r, UG_STD_CERTIFIED, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 9 of 4096 checked elements outside the certified bound (worst 3.4 x)") == 0,
          "under certified");
    r->primary = UG_STD_CERTIFIED; /* `--primary certified` decided */
    r->verdict[UG_STD_EXACT] = UG_V_PASS;
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 9 of 4096 checked elements outside the certified bound (worst 3.4 x)") == 0, "--primary: %s",
          buf);
    snprintf(r->out[0].thresholds[UG_STD_CERTIFIED], UG_THR_LEN, "{\"c\":2,\"vio"); /* cut: no figure */
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "fails certified") == 0, "a FAIL whose figures say nothing: \"%s\"", buf);
    CHECK(ug_verdict_severity(r, -1) == 1.0, "... at the edge");
    r->outcome = UG_OUT_CRASH;
    snprintf(r->message, sizeof r->message, "worker killed by signal 11 (SIGSEGV) after 3 ms");
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, r->message) == 0, "CRASH: its message");
    CHECK(isinf(ug_verdict_severity(r, -1)), "CRASH ranks first");
    r->outcome = UG_OUT_NONFINITE;
    r->out[0].m.n_nonfinite_mismatch = 4;
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 4 NaN/Inf mismatches (not finite where the exact value is, or the reverse)") == 0,
          "NONFINITE");
    for (int s = 0; s < UG_STD_COUNT; s++) /* as judged: every standard stores the mismatch */
        snprintf(r->out[0].thresholds[s], UG_THR_LEN, "{\"nonfinite_mismatch\":4}");
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 4 NaN/Inf mismatches (not finite where the exact value is, or the reverse)") == 0,
          "NONFINITE said once: \"%s\"", buf);
    r->out[0].m.n_nonfinite_mismatch = 0; /* stored without its metrics row: read off the deciding standard */
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 4 NaN/Inf mismatches (not finite where the exact value is, or the reverse)") == 0,
          "NONFINITE from the thresholds: \"%s\"", buf);
    r->outcome = UG_OUT_PASS;
    CHECK(ug_verdict_severity(r, -1) == 0.0, "PASS: severity 0");
    free(r);
}

/* Ranking is scale-free: a bf16 case 4 x over the bound ranks above an fp32 case 2 x over,
 * whatever their ulps. */
static void test_severity_scale_free(void)
{
    double a = ug_figure_severity_of_output(UG_STD_CERTIFIED, "{\"violations\":3,\"worst\":4}");
    double b = ug_figure_severity_of_output(UG_STD_CERTIFIED, "{\"violations\":900,\"worst\":2}");
    CHECK(a > b, "worst ratio ranks: %g > %g", a, b);
    double p = ug_figure_severity_of_output(UG_STD_PYPTO, "{\"atol\":1,\"rtol\":1,\"allowed\":0,\"failed\":1}");
    CHECK(p == 1.0, "first failing count is 1: %g", p);
    CHECK(ug_figure_severity_of_output(UG_STD_PYPTO, "{\"atol\":1,\"rtol\":1,\"allowed\":5,\"failed\":5}") == 0,
          "within budget: 0");
}

static void test_stored_thresholds(void)
{
    ug_result *r = calloc(1, sizeof *r);
    r->n_out = 1;
    snprintf(r->out[0].name, sizeof r->out[0].name, "y");
    r->out[0].m.n = 1020;
    CHECK(ug_result_put_stored_thresholds(r, UG_STD_PYPTO,
                                          "{\"y\":{\"atol\":0.0001,\"rtol\":0.0078125,\"budget\":0.005,\"allowed\":5,"
                                          "\"failed\":566},\"lse\":{\"atol\":1,\"rtol\":0,\"budget\":0,\"allowed\":0,"
                                          "\"failed\":0}}") == 0,
          "split");
    CHECK(r->n_out == 2 && strcmp(r->out[1].name, "lse") == 0, "an output only the thresholds name is added");
    r->primary = UG_STD_PYPTO;
    r->verdict[UG_STD_PYPTO] = UG_V_FAIL;
    r->outcome = UG_OUT_FAIL;
    ug_verdict_figure(r, buf, sizeof buf);
    CHECK(strcmp(buf, "y: 566 of 1020 checked elements beyond atol 0.0001 + rtol 0.0078 * |g| (5 allowed)") == 0,
          "stored figure: \"%s\"", buf);
    CHECK(ug_result_put_stored_thresholds(r, UG_STD_PYPTO, "{\"y\":") == -1, "malformed: refused");
    CHECK(ug_result_put_stored_thresholds(r, UG_STD_PYPTO, "[1,2]") == -1, "not an object: refused");
    CHECK(ug_result_put_stored_thresholds(r, UG_STD_COUNT, "{}") == -1, "unknown standard: refused");
    char many[8192];
    size_t n = (size_t)snprintf(many, sizeof many, "{");
    for (int k = 0; k < 40; k++) n += (size_t)snprintf(many + n, sizeof many - n, "%s\"o%d\":{}", k ? "," : "", k);
    snprintf(many + n, sizeof many - n, "}");
    CHECK(ug_result_put_stored_thresholds(r, UG_STD_EXACT, many) == 0 && r->n_out == UG_MAX_TENSORS,
          "more outputs than a result holds: capped at %d (got %d)", UG_MAX_TENSORS, r->n_out);
    free(r);
}

int main(void)
{
    test_tolerance_standards();
    test_certified();
    test_relative_standards();
    test_discrete_and_nonfinite();
    test_malformed();
    test_case_figure();
    test_severity_scale_free();
    test_stored_thresholds();
    return check_done();
}
