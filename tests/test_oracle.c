/* test_oracle.c — the oracle engine and the standards (issue #3's "done when"):
 * the certified fast path agrees with exact MPFR on every element; the exact and naive
 * arithmetics differ where theory says; every standard gives the known verdict on
 * hand-built outputs at its threshold and one step beyond; boundary-aware and top-k
 * compares accept a legal flip/tie and reject an illegal one; CERT intervals contain the
 * exact value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/canon.h"
#include "core/philox.h"
#include "oracles/oracle.h"
#include "gen/case.h"
#include "oracles/verdict.h"
#include "run/exec.h"

#define N_MAX 4096

/* Judges a (kernel) against g* == g (exact values on the dtype grid) and bench; the
 * thresholds into thr[UG_THR_LEN]. */
static ug_vstate judge_thr(int std, ug_dtype dt, const ug_output_rule *rule, size_t n, const double *a, const double *g,
                           const double *bench, char *thr)
{
    static size_t idx[N_MAX];
    for (size_t i = 0; i < n; i++) idx[i] = i;
    ug_metrics m;
    ug_metrics_compute(dt, n, idx, n, a, g, bench, &m);
    ug_judged j = {"y", dt, rule, 0, n, idx, a, g, g, bench, &m};
    return ug_standard_judge(std, &j, thr, UG_THR_LEN);
}

/* The same, the thresholds dropped. */
static ug_vstate judge(int std, ug_dtype dt, const ug_output_rule *rule, size_t n, const double *a, const double *g,
                       const double *bench)
{
    char thr[UG_THR_LEN];
    return judge_thr(std, dt, rule, n, a, g, bench, thr);
}

static double a_[N_MAX], g_[N_MAX], b_[N_MAX];

/* pypto (atol 1e-4, rtol 5e-3, no budget) on one bf16 element whose exact value (in double)
 * is the tie 0x1.07p-1 between 0x1.08p-1 (RNE's even neighbour) and 0x1.06p-1: 1 ulp is 1.5x
 * what pypto allows there. With a positive device bound either neighbour is a legal device's
 * rounding; with bound 0 (the value computed exactly before its one rounding) only RNE's.
 * g is the correct rounding of the exact value, which may lie a hair off the double tie
 * (the real case: exact weights 1 - 1e-40, a device's 1 exactly, g 0x1.06p-1). */
static ug_vstate tie_verdict_g(double a, double gstar, double g, double bound)
{
    static const size_t idx[1] = {0};
    double bench = g;
    ug_output_rule rule = {"y", UG_CMP_NUMERIC, 1e-4, 5e-3, 0};
    ug_metrics m;
    ug_metrics_compute(UG_DT_BF16, 1, idx, 1, &a, &gstar, &bench, &m);
    ug_judged j = {"y", UG_DT_BF16, &rule, 0, 1, idx, &a, &gstar, &g, &bench, &m, &bound};
    char thr[UG_THR_LEN];
    return ug_standard_judge(UG_STD_PYPTO, &j, thr, sizeof thr);
}

static ug_vstate tie_verdict(double a, double gstar, double bound)
{
    return tie_verdict_g(a, gstar, ug_dtype_round(UG_DT_BF16, gstar), bound);
}

static void exact_ties_either_neighbour(void)
{
    CHECK(ug_dtype_round(UG_DT_BF16, 0x1.07p-1) == 0x1.08p-1, "the tie rounds to the even neighbour");
    CHECK(tie_verdict(0x1.08p-1, 0x1.07p-1, 1e-6) == UG_V_PASS, "tie: RNE's neighbour passes");
    CHECK(tie_verdict(0x1.06p-1, 0x1.07p-1, 1e-6) == UG_V_PASS, "tie, bound > 0: the other neighbour passes");
    CHECK(tie_verdict(0x1.06p-1, 0x1.07p-1, 0) == UG_V_FAIL, "tie, bound 0: only the even neighbour");
    CHECK(tie_verdict(0x1.04p-1, 0x1.07p-1, 1e-6) == UG_V_FAIL, "tie: a value beyond the other neighbour fails");
    CHECK(tie_verdict_g(0x1.08p-1, 0x1.07p-1, 0x1.06p-1, 1e-6) == UG_V_PASS &&
              tie_verdict_g(0x1.08p-1, 0x1.07p-1, 0x1.06p-1, 0) == UG_V_FAIL,
          "exact value a hair below the double tie (g the odd neighbour): the even one passes only with a bound");
    CHECK(tie_verdict(0x1.06p-1, 0x1.0702p-1, 1e-6) == UG_V_FAIL &&
              tie_verdict(0x1.08p-1, 0x1.06fep-1, 1e-6) == UG_V_FAIL,
          "near a tie but not on it: only g");
    CHECK(ug_tie_golden(UG_DT_BF16, 0x1.06p-1, 0x1.08p-1, 0x1.07p-1, 1e-6) == 0x1.06p-1 &&
              ug_tie_golden(UG_DT_FP32, 1.0, 1.0, 1.0, 1e-6) == 1.0,
          "ug_tie_golden");
}

static void fill(size_t n, double g)
{
    for (size_t i = 0; i < n; i++) a_[i] = g_[i] = b_[i] = g;
}

static void standards_at_threshold(void)
{
    /* allclose bf16 (rtol 1.6e-2, atol 1e-5): at g = 100 the limit is 1.60001; bf16 ulp 0.5 */
    fill(1, 100);
    a_[0] = 101.5;
    CHECK(judge(UG_STD_ALLCLOSE, UG_DT_BF16, NULL, 1, a_, g_, b_) == UG_V_PASS, "allclose within threshold");
    a_[0] = 102.0;
    CHECK(judge(UG_STD_ALLCLOSE, UG_DT_BF16, NULL, 1, a_, g_, b_) == UG_V_FAIL, "allclose one ulp over");
    /* pypto, rule 0.01/0.01 budget 0.005: N = 1000 allows round(5) failures */
    ug_output_rule rule = {"y", UG_CMP_NUMERIC, 0.01, 0.01, 0.005};
    fill(1000, 1.0);
    for (int i = 0; i < 5; i++) a_[i] = 1.03125;
    CHECK(judge(UG_STD_PYPTO, UG_DT_BF16, &rule, 1000, a_, g_, b_) == UG_V_PASS, "pypto 5 of 1000 failures allowed");
    a_[5] = 1.03125;
    CHECK(judge(UG_STD_PYPTO, UG_DT_BF16, &rule, 1000, a_, g_, b_) == UG_V_FAIL, "pypto 6 of 1000 fail");
    fill(1, 1.0);
    a_[0] = 1.0 + 0x1p-7; /* 0.0078125 <= 0.02 */
    CHECK(judge(UG_STD_PYPTO, UG_DT_BF16, &rule, 1, a_, g_, b_) == UG_V_PASS, "pypto element within atol+rtol");
    /* dual_thousandth bf16 t = 4e-3: share of rel err > t must be < t */
    fill(1000, 1.0);
    for (int i = 0; i < 3; i++) a_[i] = 1.0 + 0x1p-7;
    a_[3] = 1.0 + 0x1p-9; /* rel err 0.00195 < t: not counted */
    CHECK(judge(UG_STD_DUAL_THOUSANDTH, UG_DT_BF16, NULL, 1000, a_, g_, b_) == UG_V_PASS, "dual: 3/1000 pass");
    a_[3] = 1.0 + 0x1p-7;
    CHECK(judge(UG_STD_DUAL_THOUSANDTH, UG_DT_BF16, NULL, 1000, a_, g_, b_) == UG_V_FAIL, "dual: 4/1000 fail");
    /* mixed_tolerance bf16: matched ratio >= 0.99, and every |a-g| <= max(1.0, 32 ulp) */
    fill(100, 1.0);
    a_[0] = 1.0625; /* outside 2^-6 + 2^-6 */
    CHECK(judge(UG_STD_MIXED_TOLERANCE, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_PASS, "mixed: 99%% matched");
    a_[1] = 1.0625;
    CHECK(judge(UG_STD_MIXED_TOLERANCE, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_FAIL, "mixed: 98%% fails");
    fill(100, 1.0);
    a_[0] = 2.0; /* |a-g| = 1.0 = floor: allowed */
    CHECK(judge(UG_STD_MIXED_TOLERANCE, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_PASS, "mixed: at the floor");
    a_[0] = 2.015625; /* one bf16 ulp past the floor */
    CHECK(judge(UG_STD_MIXED_TOLERANCE, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_FAIL, "mixed: past the floor");
    /* mere_mare bf16 T = 2^-7: MARE < 10 T = 0.078125 */
    fill(1000, 1.0);
    a_[0] = 1.0703125; /* 0.0703 < 0.078 */
    CHECK(judge(UG_STD_MERE_MARE, UG_DT_BF16, NULL, 1000, a_, g_, b_) == UG_V_PASS, "mere_mare under 10T");
    a_[0] = 1.0859375; /* one bf16 ulp further: 0.0859 */
    CHECK(judge(UG_STD_MERE_MARE, UG_DT_BF16, NULL, 1000, a_, g_, b_) == UG_V_FAIL, "mere_mare past 10T fails");
    /* ulp bf16: elements above 1 ulp must be < 0.1 % */
    fill(2000, 1.0);
    a_[0] = 1.0 + 2 * 0x1p-7;
    CHECK(judge(UG_STD_ULP, UG_DT_BF16, NULL, 2000, a_, g_, b_) == UG_V_PASS, "ulp: 1/2000 above 1 ulp");
    a_[1] = 1.0 + 2 * 0x1p-7;
    CHECK(judge(UG_STD_ULP, UG_DT_BF16, NULL, 2000, a_, g_, b_) == UG_V_FAIL, "ulp: 2/2000 above 1 ulp");
    fill(2000, 1.0);
    for (int i = 0; i < 2000; i++) a_[i] = 1.0 + 0x1p-7; /* exactly 1 ulp: not above */
    CHECK(judge(UG_STD_ULP, UG_DT_BF16, NULL, 2000, a_, g_, b_) == UG_V_PASS, "ulp: 1 ulp is allowed");
    /* benchmark L0, bf16 (min_err 2^-8): the benchmark errs by 2^-6 everywhere. A kernel
     * twice as wrong meets MERE/RMSE ratio 2 and max abs 2x + half ulp; three times fails. */
    fill(100, 1.0);
    for (int i = 0; i < 100; i++) {
        b_[i] = 1.0 + 0x1p-6;
        a_[i] = 1.0 + 0x1p-5;
    }
    CHECK(judge(UG_STD_BENCHMARK, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_PASS, "benchmark ratio 2");
    for (int i = 0; i < 100; i++) a_[i] = 1.0 + 3 * 0x1p-6;
    CHECK(judge(UG_STD_BENCHMARK, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_FAIL, "benchmark ratio 3");
    /* the FlashAttention rule alone: one element at 2x the benchmark's max abs + half ulp */
    for (int i = 0; i < 100; i++) a_[i] = 1.0 + 0x1p-6;
    a_[0] = 1.0 + 0x1p-5 + 0x1p-8;
    CHECK(judge(UG_STD_BENCHMARK, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_PASS, "benchmark max abs at the limit");
    a_[0] = 1.0 + 0x1p-5 + 0x1p-7;
    CHECK(judge(UG_STD_BENCHMARK, UG_DT_BF16, NULL, 100, a_, g_, b_) == UG_V_FAIL, "benchmark max abs past it");
    /* a NaN where the oracle has none fails every standard */
    fill(10, 1.0);
    a_[3] = NAN;
    CHECK(judge(UG_STD_PYPTO, UG_DT_BF16, &rule, 10, a_, g_, b_) == UG_V_FAIL, "NaN fails pypto");
    CHECK(judge(UG_STD_MERE_MARE, UG_DT_BF16, NULL, 10, a_, g_, b_) == UG_V_FAIL, "NaN fails mere_mare");
    g_[3] = NAN;
    CHECK(judge(UG_STD_ALLCLOSE, UG_DT_BF16, NULL, 10, a_, g_, b_) == UG_V_PASS, "NaN where the oracle has NaN");
}

static void discrete_compares(void)
{
    /* int8 codes: exact x/scale = 2.5 + 1e-9 rounds to 3; a kernel that says 2 made a legal
     * flip (within a budget of 1e-6 of the tie 2.5); at 2.6 it is illegal; 1 is two quanta off */
    CHECK(ug_boundary_ok(2, 3, 2.5 + 1e-9, 1, 1e-6), "legal flip near the tie");
    CHECK(!ug_boundary_ok(2, 3, 2.6, 1, 1e-6), "flip far from the tie is illegal");
    CHECK(!ug_boundary_ok(1, 3, 2.5 + 1e-9, 1, 1e-6), "two quanta is never legal");
    ug_output_rule rule = {"q", UG_CMP_BOUNDARY, 1e-3, 0, 0};
    size_t idx[2] = {0, 1};
    double a[2] = {2, 5}, g[2] = {3, 5}, gs[2] = {2.5 + 1e-6, 5.1};
    ug_metrics m;
    ug_metrics_compute(UG_DT_INT8, 2, idx, 2, a, gs, NULL, &m);
    ug_judged j = {"q", UG_DT_INT8, &rule, 0, 2, idx, a, gs, g, NULL, &m};
    char thr[UG_THR_LEN];
    CHECK(ug_standard_judge(UG_STD_BOUNDARY_AWARE, &j, thr, sizeof thr) == UG_V_PASS, "boundary_aware legal: %s", thr);
    CHECK(ug_standard_judge(UG_STD_PYPTO, &j, thr, sizeof thr) == UG_V_NA, "numeric standards skip discrete outputs");
    CHECK(ug_standard_judge(UG_STD_CERTIFIED, &j, thr, sizeof thr) == UG_V_PASS,
          "certified takes the discrete verdict");
    gs[0] = 2.7;
    CHECK(ug_standard_judge(UG_STD_BOUNDARY_AWARE, &j, thr, sizeof thr) == UG_V_FAIL, "boundary_aware illegal");
    CHECK(ug_standard_judge(UG_STD_CERTIFIED, &j, thr, sizeof thr) == UG_V_FAIL, "certified fails an illegal code");
    /* a budget wider than a quantum (a view's 1/16 + 2^-6 |g*|: 1.6625 quanta at g* = 102.54)
     * reaches a code two off where a value within it rounds there (101.5 > 102.54 - 1.66), not
     * a code three off; the same codes with the budget below a quantum fail */
    ug_output_rule view = {"q@oracle_scale", UG_CMP_BOUNDARY, 1.0 / 16, 0x1p-6, 0};
    double va[2] = {101, 100}, vg[2] = {103, 103}, vgs[2] = {102.54, 102.54};
    ug_metrics_compute(UG_DT_INT8, 2, idx, 2, va, vgs, NULL, &m);
    ug_judged v2 = {"q@oracle_scale", UG_DT_INT8, &view, 0, 1, idx, va, vgs, vg, NULL, &m};
    CHECK(ug_standard_judge(UG_STD_BOUNDARY_AWARE, &v2, thr, sizeof thr) == UG_V_PASS,
          "two codes within a wide budget: %s", thr);
    ug_judged v3 = {"q@oracle_scale", UG_DT_INT8, &view, 0, 2, idx, va, vgs, vg, NULL, &m};
    CHECK(ug_standard_judge(UG_STD_BOUNDARY_AWARE, &v3, thr, sizeof thr) == UG_V_FAIL, "three codes off: %s", thr);
    view.pypto_rtol = 0;
    CHECK(ug_standard_judge(UG_STD_BOUNDARY_AWARE, &v2, thr, sizeof thr) == UG_V_FAIL,
          "two codes off with a budget below a quantum: %s", thr);
    /* topk_set on ids the oracle emitted: equal passes, one differing id fails, and the
     * other discrete standards do not judge a topk_set output */
    ug_output_rule topk_rule = {"ids", UG_CMP_TOPK, 0, 0, 0};
    size_t idx3[3] = {0, 1, 2};
    double ka[3] = {4, 2, -1}, kg[3] = {4, 2, -1};
    ug_metrics_compute(UG_DT_INT32, 3, idx3, 3, ka, kg, NULL, &m);
    ug_judged t = {"ids", UG_DT_INT32, &topk_rule, 0, 3, idx3, ka, kg, kg, NULL, &m};
    CHECK(ug_standard_judge(UG_STD_TOPK_SET, &t, thr, sizeof thr) == UG_V_PASS, "topk_set: emitted ids match: %s", thr);
    CHECK(ug_standard_judge(UG_STD_EXACT, &t, thr, sizeof thr) == UG_V_NA, "exact does not judge a topk_set output");
    ka[2] = 5;
    CHECK(ug_standard_judge(UG_STD_TOPK_SET, &t, thr, sizeof thr) == UG_V_FAIL, "topk_set: an id off the set fails");
    CHECK(strstr(thr, "\"differ\":1") != NULL, "topk_set counts the differing ids: %s", thr);
    CHECK(ug_standard_judge(UG_STD_CERTIFIED, &t, thr, sizeof thr) == UG_V_FAIL, "certified takes topk_set's verdict");
    /* top-k: scores of 6 candidates; k = 2; candidates 1 and 4 tie (within 1e-6) for 2nd */
    double scores[6] = {0.1, 0.5, 0.9, 0.2, 0.5 + 1e-9, 0.3};
    int oracle_idx[2] = {2, 1}, legal[2] = {4, 2}, illegal[2] = {2, 5}, dup[2] = {2, 2};
    CHECK(ug_topk_set_ok(legal, oracle_idx, 2, scores, 6, 1e-6), "top-k: a tie may swap");
    CHECK(!ug_topk_set_ok(illegal, oracle_idx, 2, scores, 6, 1e-6), "top-k: a non-tie may not");
    CHECK(!ug_topk_set_ok(dup, oracle_idx, 2, scores, 6, 1e-6), "top-k: duplicates never");
}

/* Runs a case's oracle in CERT (with fallback) and in EXACT on every element; the fast
 * path must settle all but at most max_mpfr elements itself (-1: any number). */
static void cert_matches_exact(const char *spec, long max_mpfr)
{
    ug_spec s;
    ug_case c;
    char err[256];
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0 && ug_case_build(&c, &s, err, sizeof err) == 0, "%s", err);
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.naive = 0;
    ug_oracle_result fast, exact;
    CHECK(ug_oracle_run(&c, &o, &fast, err, sizeof err) == 0, "cert: %s", err);
    o.mode = UG_AR_EXACT;
    CHECK(ug_oracle_run(&c, &o, &exact, err, sizeof err) == 0, "exact: %s", err);
    size_t differ = 0, n = 0;
    for (int k = 0; k < c.n_out; k++)
        for (size_t i = 0; i < fast.sel.n[k]; i++, n++)
            differ += !(fast.g[k][i] == exact.g[k][i] || (isnan(fast.g[k][i]) && isnan(exact.g[k][i])));
    CHECK(differ == 0 && n > 0, "certified fast path differs from MPFR on %zu of %zu elements", differ, n);
    CHECK(max_mpfr < 0 || fast.n_fallback <= (unsigned long)max_mpfr,
          "%lu of %zu elements settled by MPFR, at most %ld "
          "expected: %s",
          fast.n_fallback, n, max_mpfr, spec);
    ug_oracle_result_free(&fast);
    ug_oracle_result_free(&exact);
    ug_case_free(&c);
}

/* Every element of a case's exact oracle, in EXACT arithmetic (caller frees). */
static ug_oracle_result exact_values(const char *spec, ug_case *c)
{
    ug_spec s;
    char err[256];
    ug_oracle_result r = {0};
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0 && ug_case_build(c, &s, err, sizeof err) == 0, "%s", err);
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.naive = 0;
    o.mode = UG_AR_EXACT;
    CHECK(ug_oracle_run(c, &o, &r, err, sizeof err) == 0, "exact: %s", err);
    return r;
}

/* An oracle that leaves an element out (here: the last of output 0) or emits one twice makes
 * the run fail with a message, in every arithmetic: the engine does not zero the arrays it
 * fills, so an element left out would otherwise be read as whatever the array held. */
static int (*real_oracle)(const ug_case *, ug_ar *, const ug_selection *);
static int drop_last(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_selection less = *sel;
    less.n[0]--;
    return real_oracle(c, ar, &less);
}
static int emit_twice(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    int rc = real_oracle(c, ar, sel);
    ug_ar_emit(ar, 0, 0, ug_c(ar, 1.0));
    return rc;
}

static void miscounted_emits_fail(void)
{
    ug_spec s;
    ug_case c;
    char err[256];
    const char *spec =
        "{\"op\":\"inplace_add_rmsnorm\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"h\":70},"
        "\"dist\":{\"x1\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"x2\":{\"kind\":\"normal\",\"mean\":0,"
        "\"std\":1},\"gamma\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.1}},\"seed\":5}";
    CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0 && ug_case_build(&c, &s, err, sizeof err) == 0, "%s", err);
    ug_op_def def = *c.def;
    const ug_op_def *own = c.def;
    real_oracle = def.oracle;
    c.def = &def;
    int (*bad[2])(const ug_case *, ug_ar *, const ug_selection *) = {drop_last, emit_twice};
    ug_ar_mode modes[3] = {UG_AR_CERT, UG_AR_EXACT, UG_AR_F64};
    for (int b = 0; b < 2; b++)
        for (int m = 0; m < 3; m++) {
            def.oracle = bad[b];
            ug_oracle_opts o;
            ug_oracle_opts_default(&o);
            o.mode = modes[m];
            ug_oracle_result r;
            err[0] = 0;
            int rc = ug_oracle_run(&c, &o, &r, err, sizeof err);
            CHECK(rc != 0 && strstr(err, "emitted"), "oracle %d in mode %d: run %d, message \"%s\"", b, m, rc, err);
            if (rc == 0) ug_oracle_result_free(&r);
        }
    def.oracle = real_oracle; /* the op's own oracle passes the same check */
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    ug_oracle_result r;
    CHECK(ug_oracle_run(&c, &o, &r, err, sizeof err) == 0, "the op's own oracle: %s", err);
    ug_oracle_result_free(&r);
    c.def = own;
    ug_case_free(&c);
}

/* fp32 attributes go through one rounding path: scale = s and scale = fp32(s) (and the
 * same for cap) give bit-identical oracle values. With the (double)(float) round trip
 * dropped by a compiler (core/probes/fp_round_trip.c), the first would use 0.1 itself. */
static void fp32_attributes_rounded_once(void)
{
    const char *fmt = "{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":3,\"cols\":40,"
                      "\"scale\":%s,\"cap\":%s},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":3}},"
                      "\"seed\":9}";
    char given[512], rounded[512], f1[32], f2[32];
    snprintf(given, sizeof given, fmt, "0.1", "7.3");
    ug_format_double((double)ug_dtype_round(UG_DT_FP32, 0.1), f1);
    ug_format_double((double)ug_dtype_round(UG_DT_FP32, 7.3), f2);
    snprintf(rounded, sizeof rounded, fmt, f1, f2);
    ug_case a, b;
    ug_oracle_result ra = exact_values(given, &a), rb = exact_values(rounded, &b);
    size_t differ = 0;
    for (size_t i = 0; i < ra.sel.n[0] && i < rb.sel.n[0]; i++) differ += ra.g[0][i] != rb.g[0][i];
    CHECK(ra.sel.n[0] == 120 && rb.sel.n[0] == 120 && differ == 0,
          "scale 0.1 / cap 7.3 and their fp32 values give %zu different oracle values of %zu", differ, ra.sel.n[0]);
    CHECK(ug_p_num(&a.params, "scale") == (double)0.1f && ug_p_num(&a.params, "cap") == (double)7.3f,
          "fp32 attributes hold their fp32 values");
    ug_oracle_result_free(&ra);
    ug_oracle_result_free(&rb);
    ug_case_free(&a);
    ug_case_free(&b);
}

/* Metrics of the sim kernel and of the naive same-dtype benchmark on one case. */
static void kernel_vs_naive(const char *spec, int out, double *kernel_mere, double *naive_mere)
{
    ug_backend b;
    char err[256];
    ug_backend_open(&b, "sim", err, sizeof err);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    ug_result r;
    CHECK(ug_exec_case(spec, &b, &o, &r, NULL) == 0 && r.outcome == UG_OUT_PASS, "%s: %s", spec, r.message);
    *kernel_mere = r.out[out].m.mere;
    *naive_mere = r.out[out].m.b_mere;
}

static void exact_vs_naive(void)
{
    double k, nv;
    /* softmax over 8192 bf16 logits: the naive bf16 row sum stalls, the kernel sums in fp32 */
    kernel_vs_naive("{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"cols\":8192},"
                    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":5}",
                    0, &k, &nv);
    CHECK(nv > 8 * k, "long bf16 softmax: naive MERE %.3g should dwarf the kernel's %.3g", nv, k);
    /* on a 4-element row there is little to accumulate: both stay near the output rounding */
    kernel_vs_naive("{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{\"rows\":64,\"cols\":4},"
                    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":5}",
                    0, &k, &nv);
    CHECK(nv < 4 * k + 0x1p-8, "short bf16 softmax: naive MERE %.3g close to the kernel's %.3g", nv, k);
    /* RMSNorm over 7168 bf16 elements: rstd from a bf16 running sum of squares is off */
    kernel_vs_naive("{\"op\":\"inplace_add_rmsnorm\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"h\":7168},"
                    "\"dist\":{\"x1\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"x2\":{\"kind\":\"normal\","
                    "\"mean\":0,\"std\":1},\"gamma\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.1}},\"seed\":5}",
                    2, &k, &nv);
    CHECK(nv > 100 * k, "rmsnorm rstd: naive MERE %.3g vs kernel %.3g", nv, k);
}

static void cert_intervals_contain_exact(void)
{
    ug_ar *ce = ug_ar_new(UG_AR_CERT, 128, UG_DT_FP32), *ex = ug_ar_new(UG_AR_EXACT, 256, UG_DT_FP32);
    mpfr_t t;
    mpfr_init2(t, 256);
    int bad = 0;
    for (int i = 1; i < 200; i++) {
        double x = (i - 100) * 0.173, y = 1.0 + i * 1e-3;
        ug_num c = ug_div(ce, ug_exp(ce, ug_tanh(ce, ug_c(ce, x))), ug_rsqrt(ce, ug_mul(ce, ug_c(ce, y), ug_c(ce, y))));
        c = ug_add(ce, ug_silu(ce, c), ug_sigmoid(ce, ug_c(ce, x)));
        ug_num e = ug_div(ex, ug_exp(ex, ug_tanh(ex, ug_c(ex, x))), ug_rsqrt(ex, ug_mul(ex, ug_c(ex, y), ug_c(ex, y))));
        e = ug_add(ex, ug_silu(ex, e), ug_sigmoid(ex, ug_c(ex, x)));
        mpfr_sub_d(t, e.m, c.v, MPFR_RNDN);
        if (mpfr_cmpabs_ui(t, 0) > 0 && !(fabs(mpfr_get_d(t, MPFR_RNDU)) <= c.e)) bad++;
        if (!(c.e < 1e-12)) bad++; /* and the bound is tight enough to be useful */
        ug_ar_release(ce, 0);
        ug_ar_release(ex, 0);
    }
    CHECK(bad == 0, "%d certified intervals miss the exact value or are loose", bad);
    ug_num r = ug_round(ce, ug_add(ce, ug_c(ce, 2.0), ug_c(ce, 0.5)), UG_DT_INT8); /* exact tie: 2.5 -> 2 */
    CHECK(ug_v(r) == 2.0 && r.e == 0.0, "ug_round on an exact tie is exact");
    mpfr_clear(t);
    ug_ar_free(ce);
    ug_ar_free(ex);
}

/* The device bound (UG_AR_DEVICE) against real fp32 evaluations: a softmax-weighted dot
 * product computed in float, in two summation orders, with expf, stays within the bound of
 * the exact value on random rows (the bound contains every correct device), and the
 * certified judge passes those values and the correctly rounded one, and fails a value
 * truncated instead of rounded when the bound is far below half an ulp. */
static ug_num x_one(ug_ar *ar) { return ug_c(ar, 1.0); }

static double softmax_dot_f32(const double *s, const double *v, int n, int reverse)
{
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (int j = 0; j < n; j++) m = fmaxf(m, (float)s[j]);
    for (int k = 0; k < n; k++) {
        int j = reverse ? n - 1 - k : k;
        float p = expf((float)s[j] - m); /* rounds: fp32 sub and exp */
        l += p;                          /* rounds: fp32 */
        acc += p * (float)v[j];          /* rounds: fp32 mul and add */
    }
    return (double)(acc / l); /* rounds: fp32 */
}

static ug_num softmax_dot(ug_ar *ar, const double *s, const double *v, int n)
{
    ug_num e[64], m = ug_c(ar, s[0]);
    for (int j = 1; j < n; j++) m = ug_max(ar, m, ug_c(ar, s[j]));
    for (int j = 0; j < n; j++) e[j] = ug_exp(ar, ug_sub(ar, ug_c(ar, s[j]), m));
    return ug_div(ar, ug_dot_nd(ar, e, v, 1, (size_t)n), ug_sum(ar, e, (size_t)n));
}

static void device_bound_contains_fp32(void)
{
    ug_ar *dv = ug_ar_new(UG_AR_DEVICE, 128, UG_DT_FP32), *ex = ug_ar_new(UG_AR_EXACT, 256, UG_DT_FP32);
    int outside = 0, judged_bad = 0, trunc_caught = 0, beyond = 0, trials = 300;
    for (int t = 0; t < trials; t++) {
        double s[64], v[64];
        int n = 2 + t % 62;
        for (int j = 0; j < n; j++) {
            uint32_t w[4];
            ug_rng_words(99, (uint32_t)t, (uint32_t)j, 0, w);
            s[j] = (double)(float)((ug_rng_unit(w[0], w[1]) - 0.5) * 16.0); /* fp32 inputs */
            v[j] = (double)(float)(ug_rng_unit(w[2], w[3]) - 0.3);
        }
        ug_num b = softmax_dot(dv, s, v, n), x = softmax_dot(ex, s, v, n);
        double exact = mpfr_get_d(x.m, MPFR_RNDN), g = (double)(float)exact;
        for (int rev = 0; rev < 2; rev++) {
            double dev = softmax_dot_f32(s, v, n, rev);
            outside += !(fabs(dev - exact) <= b.e); /* the first-order bound itself, without c */
            size_t idx = 0;
            ug_metrics m;
            ug_metrics_compute(UG_DT_FP32, 1, &idx, 1, &dev, &exact, NULL, &m);
            ug_judged j = {"y", UG_DT_FP32, NULL, 0, 1, &idx, &dev, &exact, &g, NULL, &m, &b.e};
            char thr[UG_THR_LEN];
            judged_bad += ug_standard_judge(UG_STD_CERTIFIED, &j, thr, sizeof thr) != UG_V_PASS;
        }
        /* the same value stored to bf16 by truncation: caught where it differs from RNE by
         * more than the bound allows */
        double bf = ug_dtype_round(UG_DT_BF16, exact), ulp = ug_dtype_ulp(UG_DT_BF16, bf);
        double cut = trunc(exact / ulp) * ulp, gs = exact;
        size_t idx = 0;
        ug_metrics m;
        ug_metrics_compute(UG_DT_BF16, 1, &idx, 1, &cut, &gs, NULL, &m);
        ug_judged j = {"y", UG_DT_BF16, NULL, 0, 1, &idx, &cut, &gs, &bf, NULL, &m, &b.e};
        char thr[UG_THR_LEN];
        if (fabs(cut - exact) > 0.5 * ulp + 2 * b.e) {
            beyond++;
            trunc_caught += ug_standard_judge(UG_STD_CERTIFIED, &j, thr, sizeof thr) == UG_V_FAIL;
        } else {
            trunc_caught++;
        }
        ug_metrics_compute(UG_DT_BF16, 1, &idx, 1, &bf, &gs, NULL, &m);
        j.a = &bf;
        judged_bad += ug_standard_judge(UG_STD_CERTIFIED, &j, thr, sizeof thr) != UG_V_PASS; /* ideal passes */
        ug_ar_release(dv, 0);
        ug_ar_release(ex, 0);
    }
    CHECK(outside == 0, "%d fp32 evaluations fall outside the device bound", outside);
    CHECK(judged_bad == 0, "certified fails %d correct fp32 or correctly rounded values", judged_bad);
    CHECK(trunc_caught == trials, "certified misses %d truncations beyond its bound", trials - trunc_caught);
    CHECK(beyond > trials / 4, "only %d of %d truncations leave the bound: the check says little", beyond, trials);
    ug_num d = ug_dot_d(dv, (double[]){1, 2, 3}, 1, (double[]){4, -5, 6}, 1, 3);
    CHECK(d.v == 12.0 && d.e == 3 * UG_DEV_U / (1 - 3 * UG_DEV_U) * 32.0 + 6 * UG_DEV_ETA,
          "dot bound is gamma_3 * sum|a*b| + 2n * 2^-150");
    CHECK(ug_dev_round(ex, x_one(ex), UG_DT_BF16).e == 0.0 && ug_dev_round(dv, ug_c(dv, 1.0), UG_DT_BF16).e == 0x1p-8,
          "ug_dev_round: half a bf16 ulp in DEVICE only");
    ug_ar_free(dv);
    ug_ar_free(ex);
}

/* sigmoid and silu as a device forms them in fp32, x/(1 + expf(-x)): below -88.72 expf
 * overflows and the device gives 0 where the exact values are up to 3e-39 and 2.6e-37 (a
 * fuzz finding on glm_moe_fusion's a). The device bound must contain that 0, and every
 * fp32 evaluation above the threshold, on both sides of it. */
static void device_bound_exp_overflow(void)
{
    ug_ar *dv = ug_ar_new(UG_AR_DEVICE, 128, UG_DT_FP32), *ex = ug_ar_new(UG_AR_EXACT, 256, UG_DT_FP32);
    int outside = 0, tried = 0;
    for (double x = -103.0; x <= -80.0; x += 0.0625, tried++) {
        float xf = (float)x;
        double dev_silu = (double)(xf / (1.0f + expf(-xf))), dev_sig = (double)(1.0f / (1.0f + expf(-xf)));
        ug_num bs = ug_silu(dv, ug_c(dv, x)), bg = ug_sigmoid(dv, ug_c(dv, x));
        double es = mpfr_get_d(ug_silu(ex, ug_c(ex, x)).m, MPFR_RNDN),
               eg = mpfr_get_d(ug_sigmoid(ex, ug_c(ex, x)).m, MPFR_RNDN);
        outside += !(fabs(dev_silu - es) <= bs.e) + !(fabs(dev_sig - eg) <= bg.e);
        ug_ar_release(dv, 0);
        ug_ar_release(ex, 0);
    }
    CHECK(outside == 0, "%d of %d fp32 sigmoid/silu evaluations near exp's overflow fall outside the device bound",
          outside, 2 * tried);
    ug_ar_free(dv);
    ug_ar_free(ex);
}

/* moe_grouped_gemm weight dists of the plan cases below: normal(0, std), uniform ±0.15. */
#define MOE_W(std) "{\"kind\":\"normal\",\"mean\":0,\"std\":" #std "}"
#define MOE_U "{\"hi\":0.15,\"kind\":\"uniform\",\"lo\":-0.15}"

/* The "used" figure of thresholds text thr (NAN when absent; null reads as +inf). */
static double used_of(const char *thr)
{
    const char *u = strstr(thr, "\"used\":");
    if (!u) return NAN;
    return strncmp(u + 7, "null", 4) == 0 ? INFINITY : strtod(u + 7, NULL);
}

/* Judges as judge() does and returns the thresholds' "used" figure. */
static double judge_used(int std, ug_dtype dt, const ug_output_rule *rule, size_t n, ug_vstate *v)
{
    char thr[UG_THR_LEN];
    *v = judge_thr(std, dt, rule, n, a_, g_, b_, thr);
    return used_of(thr);
}

/* Headroom: a budgeted rule's "used" is the (allowed+1)-th largest error / tolerance, so it is
 * at most 1 exactly when the rule holds; the ulp metrics leave out elements whose exact value
 * is below the dtype's smallest normal (an exact 0 would read 1e36 bf16 ulps). */
static void headroom_figures(void)
{
    ug_output_rule rule = {"y", UG_CMP_NUMERIC, 0.01, 0.01, 0.005}; /* tolerance at g = 1: 0.02 */
    ug_vstate v;
    fill(1000, 1.0);
    a_[0] = 1.08, a_[1] = 1.06, a_[2] = 1.04, a_[3] = 1.03, a_[4] = 1.025, a_[5] = 1.01, a_[6] = 1.005;
    double u = judge_used(UG_STD_PYPTO, UG_DT_FP32, &rule, 1000, &v); /* 5 allowed: the 6th largest, 0.01 / 0.02 */
    CHECK(v == UG_V_PASS && fabs(u - 0.5) < 1e-3, "pypto used 0.5 with 5 of 1000 beyond: %g", u);
    a_[5] = 1.05; /* ratios 4 3 2.5 2 1.5 1.25: the 6th is 1.25x out, and used says so */
    u = judge_used(UG_STD_PYPTO, UG_DT_FP32, &rule, 1000, &v);
    CHECK(v == UG_V_FAIL && fabs(u - 1.25) < 1e-3, "pypto used 1.25 when the 6th element is 1.25x out: %g", u);
    fill(10, 1.0);
    a_[3] = 1.0 + 0.5 * (1e-5 + 1.3e-6); /* allclose fp32: budget 0, the worst element's ratio */
    u = judge_used(UG_STD_ALLCLOSE, UG_DT_FP32, NULL, 10, &v);
    CHECK(v == UG_V_PASS && fabs(u - 0.5) < 1e-3, "allclose used = the worst ratio: %g", u);
    fill(4, 0.0);
    a_[0] = 0.5;                       /* an exact 0 in bf16: measured by its absolute error, not in ulps of 2^-133 */
    g_[1] = 2.0, a_[1] = 2.0 + 0x1p-6; /* one bf16 ulp at 2 */
    static size_t idx[4] = {0, 1, 2, 3};
    ug_metrics m;
    ug_metrics_compute(UG_DT_BF16, 4, idx, 4, a_, g_, NULL, &m);
    CHECK(m.max_ulp == 1.0 && m.max_ulp_idx == 1, "max ulp skips the exact 0: %g at %zu", m.max_ulp, m.max_ulp_idx);
    CHECK(m.max_abs == 0.5 && m.max_abs_idx == 0, "the exact 0 counts in max abs: %g", m.max_abs);
    CHECK(m.mean_ulp == 1.0, "mean ulp over the ulp-measured elements only: %g", m.mean_ulp);
}

int main(void)
{
    device_bound_exp_overflow();
    headroom_figures();
    miscounted_emits_fail();
    standards_at_threshold();
    exact_ties_either_neighbour();
    device_bound_contains_fp32();
    discrete_compares();
    cert_intervals_contain_exact();
    cert_matches_exact(
        "{\"op\":\"attn_softmax\",\"dtype\":\"bf16\",\"params\":{\"rows\":5,\"cols\":300,\"cap\":30,"
        "\"mask\":\"padding\"},\"dist\":{\"x\":{\"kind\":\"wide\",\"lo_exp\":-10,\"hi_exp\":6}},\"seed\":3}",
        -1);
    cert_matches_exact("{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":3,\"cols\":257,"
                       "\"mask\":\"causal\"},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":40}},\"seed\":4}",
                       -1);
    cert_matches_exact(
        "{\"op\":\"inplace_add_rmsnorm\",\"dtype\":\"fp16\",\"params\":{\"rows\":3,\"h\":129},"
        "\"dist\":{\"x1\":{\"kind\":\"outliers\",\"std\":1,\"p\":0.05,\"scale\":100},\"x2\":{\"kind\":"
        "\"normal\",\"mean\":0,\"std\":1},\"gamma\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.1}},\"seed\":6}",
        -1);
    /* a 32768-term softmax denominator: bounded by gamma_n * sum it left 5 fp32 outputs
     * within its (n ulps) error of a rounding boundary, each costing MPFR a whole row of
     * exps; bounded by its own TwoSum errors (cert_sum) none */
    cert_matches_exact("{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"cols\":32768,\"rows\":2,"
                       "\"scale\":0.08838834764831845},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},"
                       "\"seed\":6068937273124071}",
                       0);
    /* moe_grouped_gemm's activation a: outlier tokens make x·W1 cancel far below the bound
     * of a 1000-term sum, so its bf16 rounding was ambiguous and 3000 elements (3 whole
     * rows) went to MPFR; the tracked retry settles them exactly (gmoe_swiglu_bf16) */
    cert_matches_exact(
        "{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"params\":{\"experts\":3,\"groups\":"
        "\"uniform\",\"h\":1000,\"inter\":96,\"tokens\":6},\"dist\":{\"w1\":" MOE_W(0.05) ",\"w2\":" MOE_W(
            0.05) ",\"w3\":" MOE_W(0.05) ",\"x\":{\"kind\":\"outliers\",\"p\":0.01,\"scale\":50,"
                                         "\"std\":1}},\"seed\":7002257713398038}",
        0);
    /* and its down projection: a bf16 a times bf16 W2 over inter = 1 sums exactly onto bf16
     * ties (15 elements went to MPFR); the exactness-tracking dot product settles them */
    cert_matches_exact("{\"op\":\"moe_grouped_gemm\",\"dtype\":\"bf16\",\"params\":{\"experts\":2,\"groups\":"
                       "\"uniform\",\"h\":385,\"inter\":1,\"tokens\":3},\"dist\":{\"w1\":" MOE_U ",\"w2\":" MOE_U
                       ",\"w3\":" MOE_U ",\"x\":{\"hi\":1,\"kind\":\"uniform\",\"lo\":-1}},\"seed\":7989093447264917}",
                       0);
    exact_vs_naive();
    fp32_attributes_rounded_once();
    return check_done();
}
