/* test_op_matmul_allreduce_add_rmsnorm.c — checks of matmul_allreduce_add_rmsnorm beyond
 * the generic plan test: a hand-computed known value through kernel and oracle, the
 * oracle against an independent double evaluation of the same spec (bf16 partials, sum,
 * norm), the world-size tolerance rule, the bf16-partial model (with one rank the
 * reverse-order mutant is bit-identical to the kernel), reduce bf16 with the staged
 * partials, special values as the semantics text states them, and bad params. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gen/case.h"
#include "op_check.h"
#include "run/exec.h"

#define OP "matmul_allreduce_add_rmsnorm"

static const char *NORMAL = "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"
                            "\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},"
                            "\"residual\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"
                            "\"gamma\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.1}}";

/* x = 1, w = 0.5, residual = 0.25, gamma = 2, K = 4 over 2 ranks: p_r = 1, h = 2.25,
 * out = 2 * 2.25 / sqrt(2.25^2 + eps) -> 2 in bf16. */
static void known_value(void)
{
    const char *spec = "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,"
                       "\"params\":{\"tokens\":2,\"k\":4,\"n\":3,\"world\":2},"
                       "\"dist\":{\"x\":{\"kind\":\"const\",\"value\":1},\"w\":{\"kind\":\"const\",\"value\":0.5},"
                       "\"residual\":{\"kind\":\"const\",\"value\":0.25},\"gamma\":{\"kind\":\"const\",\"value\":2}}}";
    ug_exec_detail d;
    opc_sim_passes(spec, "known value", NULL, &d);
    if (d.have_oracle) {
        for (size_t i = 0; i < 6; i++) {
            CHECK(d.oracle.g[0][i] == 2.0 && d.a[0][i] == 2.0, "out[%zu]: oracle %g kernel %g, want 2", i,
                  d.oracle.g[0][i], d.a[0][i]);
            CHECK(d.oracle.g[1][i] == 2.25 && d.a[1][i] == 2.25, "h[%zu]: oracle %g kernel %g, want 2.25", i,
                  d.oracle.g[1][i], d.a[1][i]);
        }
    }
    ug_exec_detail_free(&d);
}

/* The oracle against a plain double evaluation: dot products of bf16 values are exact in
 * double for these lengths up to one rounding, so only elements near a bf16 boundary of
 * a partial could differ; allow one bf16 ulp. */
static void differential(void)
{
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":7,"
             "\"params\":{\"tokens\":3,\"k\":96,\"n\":40,\"world\":4},%s}",
             NORMAL);
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    const ug_case *c = &d.c;
    const double *x = ug_case_input(c, "x")->values, *w = ug_case_input(c, "w")->values;
    const double *res = ug_case_input(c, "residual")->values, *gm = ug_case_input(c, "gamma")->values;
    size_t T = 3, kk = 24, n = 40, W = 4, off = 0;
    for (size_t t = 0; t < T; t++) {
        double h[40], ss = 0;
        for (size_t j = 0; j < n; j++) {
            double y = 0;
            for (size_t rk = 0; rk < W; rk++) {
                double dot = 0;
                for (size_t k = 0; k < kk; k++) dot += x[(rk * T + t) * kk + k] * w[(rk * kk + k) * n + j];
                y += ug_dtype_round(UG_DT_BF16, dot);
            }
            h[j] = y + res[t * n + j];
            ss += h[j] * h[j];
        }
        double rstd = 1.0 / sqrt(ss / (double)n + (double)(float)1e-6);
        for (size_t j = 0; j < n; j++, off++) {
            double o = ug_dtype_round(UG_DT_BF16, h[j] * rstd * gm[j]), hh = ug_dtype_round(UG_DT_BF16, h[j]);
            CHECK(fabs(d.oracle.g[0][off] - o) <= ug_dtype_ulp(UG_DT_BF16, o), "out[%zu,%zu] oracle %a double %a", t, j,
                  d.oracle.g[0][off], o);
            CHECK(fabs(d.oracle.g[1][off] - hh) <= ug_dtype_ulp(UG_DT_BF16, hh), "h[%zu,%zu] oracle %a double %a", t, j,
                  d.oracle.g[1][off], hh);
        }
    }
    ug_exec_detail_free(&d);
}

/* mean |g| of output out over every element, from the certified oracle (the rule
 * evaluates it in plain double: a differential check of the two). */
static double mean_abs_certified(const ug_case *c, int out)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    ug_oracle_result r;
    char err[256];
    if (ug_oracle_run(c, &o, &r, err, sizeof err)) return -1.0;
    double sum = 0.0;
    for (size_t i = 0; i < r.sel.n[out]; i++) sum += fabs(r.g[out][i]);
    double mean = sum / (double)r.sel.n[out];
    ug_oracle_result_free(&r);
    return mean;
}

/* docs/STANDARDS.md: rtol = min((1 + 0.25 log2 W) 1.5, 3) 2^-7 sqrt(W), atol = rtol mean|g|
 * with the mean over every element of the output, whatever the checked sample holds. */
static void tolerance_rule(void)
{
    const ug_op_def *def = ug_op_def_get(ug_op_find(OP));
    CHECK(def && def->adjust_rule, "the op adjusts its rule per case");
    if (!def || !def->adjust_rule) return;
    static const long worlds[4] = {1, 2, 4, 8};
    static const double want[4] = {1.5 * 0x1p-7, 1.875 * 0x1p-7 * 1.4142135623730951, 2.25 * 0x1p-7 * 2.0,
                                   2.625 * 0x1p-7 * 2.8284271247461903};
    for (int i = 0; i < 4; i++) {
        char spec[1024];
        snprintf(spec, sizeof spec,
                 "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":3,"
                 "\"params\":{\"tokens\":1,\"k\":8,\"n\":4,\"world\":%ld},%s}",
                 worlds[i], NORMAL);
        ug_spec s;
        ug_case c;
        char err[256];
        CHECK(ug_spec_parse(spec, &s, err, sizeof err) == 0, "%s", err);
        CHECK(ug_case_build(&c, &s, err, sizeof err) == 0, "%s", err);
        double sample_a[1] = {1.0}, sample_b[4] = {1.0, -3.0, 0.5, -0.5};
        for (int out = 0; out < 2; out++) {
            ug_output_rule rule = def->outputs[out], again = def->outputs[out];
            def->adjust_rule(&c, out, sample_a, 1, &rule);
            def->adjust_rule(&c, out, sample_b, 4, &again); /* another sample: the same rule */
            double mean = mean_abs_certified(&c, out);
            CHECK(fabs(rule.pypto_rtol - want[i]) < 1e-15, "W=%ld rtol %.17g want %.17g", worlds[i], rule.pypto_rtol,
                  want[i]);
            CHECK(mean > 0 && fabs(rule.pypto_atol - want[i] * mean) <= 1e-15 * mean,
                  "W=%ld out %d atol %.17g want rtol*%.17g", worlds[i], out, rule.pypto_atol, mean);
            CHECK(rule.pypto_atol == again.pypto_atol, "W=%ld out %d atol moved with the sample", worlds[i], out);
        }
        ug_case_free(&c);
    }
}

/* With one rank the reverse-order bf16 reduce sees just the bf16 partial: identical bits. */
static void one_rank_reduce(void)
{
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":11,"
             "\"params\":{\"tokens\":2,\"k\":200,\"n\":33,\"world\":1},%s}",
             NORMAL);
    ug_result r1, r2;
    ug_exec_detail d1, d2;
    CHECK(opc_run(spec, "sim", &r1, &d1) == 0 && opc_run(spec, "mut_reverse_bf16_reduce", &r2, &d2) == 0,
          "one-rank runs");
    if (d1.have_oracle && d2.have_oracle)
        for (int o = 0; o < 2; o++)
            CHECK(memcmp(d1.c.out[o].data, d2.c.out[o].data, d1.c.out[o].numel * 2) == 0,
                  "output %d differs between sim and the reverse reduce at W=1", o);
    ug_exec_detail_free(&d1);
    ug_exec_detail_free(&d2);
}

/* h of token t, column j from bf16 partials p (laid out [W, T, n]) as reduce bf16 declares
 * it: a bf16 running sum in rank order, the residual added exactly, h rounded once. */
static double h_naive(const double *p, const double *res, size_t T, size_t n, size_t W, size_t t, size_t j)
{
    double y = p[t * n + j];
    for (size_t r = 1; r < W; r++) y = ug_dtype_round(UG_DT_BF16, y + p[(r * T + t) * n + j]);
    return ug_dtype_round(UG_DT_BF16, y + res[t * n + j]);
}

/* Elements where the oracle's h (g_h, every element) is not h_naive of partials p. */
static size_t h_differs(const double *g_h, const double *p, const double *res, size_t T, size_t n, size_t W)
{
    size_t differ = 0;
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < n; j++) differ += h_naive(p, res, T, n, W, t, j) != g_h[t * n + j];
    return differ;
}

/* reduce bf16 and the staged partials: the oracle's h is the bf16 running sum of the
 * kernel's own partials, bit for bit. Then the last rank's partial is moved by one bf16 ulp
 * where that moves h (the residual is 0, so h is the reduced sum itself): it still passes,
 * and the expected h follows it (staged: judged once, no cascade); moved by two it fails. */
static void bf16_reduce_staged(void)
{
    const char *spec = "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"tokens\":2,\"k\":64,"
                       "\"n\":16,\"world\":4,\"reduce\":\"bf16\"},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,"
                       "\"std\":1},\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},\"residual\":{\"kind\":"
                       "\"const\",\"value\":0},\"gamma\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.1}}}";
    ug_result r;
    ug_exec_detail d;
    if (opc_run(spec, "sim", &r, &d) != 0 || !d.have_oracle) {
        CHECK(0, "reduce bf16 case runs: %s", r.message);
        return;
    }
    const size_t T = 2, n = 16, W = 4;
    const double *res = ug_case_input(&d.c, "residual")->values;
    CHECK(r.outcome == UG_OUT_PASS && r.out[2].verdict[UG_STD_PYPTO] == UG_V_PASS, "sim passes, partials given");
    CHECK(h_differs(d.oracle.g[1], d.a[2], res, T, n, W) == 0, "h is the bf16 running sum of the kernel's partials");
    double p[2 * 16 * 4];
    memcpy(p, d.a[2], sizeof p);
    size_t at = 0, t = 0, j = 0; /* the last rank's first partial whose one-ulp move moves h */
    for (; t < T && !at; t++)
        for (j = 0; j < n && !at; j++) {
            size_t e = ((W - 1) * T + t) * n + j;
            double h0 = h_naive(p, res, T, n, W, t, j);
            p[e] += ug_dtype_ulp(UG_DT_BF16, p[e]);
            if (h_naive(p, res, T, n, W, t, j) != h0) at = e;
            p[e] = d.a[2][e];
        }
    CHECK(at > 0, "some partial's one-ulp move moves h");
    for (int step = 1; step <= 2 && at; step++) {
        double moved = d.a[2][at] + step * ug_dtype_ulp(UG_DT_BF16, d.a[2][at]); /* exact: bf16, same binade */
        ug_dtype_store(UG_DT_BF16, d.c.out[2].data, at, moved);
        ug_exec_opts o;
        ug_exec_opts_default(&o);
        o.oracle.sample = 0;
        ug_result again;
        ug_exec_detail d2;
        memset(&d2, 0, sizeof d2);
        CHECK(ug_exec_judge(&d.c, &o, &again, &d2) == 0 && d2.have_oracle, "judged again");
        if (!d2.have_oracle) break;
        CHECK((again.out[2].verdict[UG_STD_PYPTO] == UG_V_PASS) == (step == 1), "a partial %d bf16 ulp(s) off: %s",
              step, again.out[2].thresholds[UG_STD_PYPTO]);
        CHECK(d2.a[2][at] == moved && h_differs(d2.oracle.g[1], d2.a[2], res, T, n, W) == 0,
              "the expected h follows the partial moved by %d ulp", step);
        ug_oracle_result_free(&d2.oracle);
        for (int k = 0; k < UG_MAX_TENSORS; k++) free(d2.a[k]);
    }
    ug_exec_detail_free(&d);
}

static void bad_params(void)
{
    static const char *const bad[][2] = {{"\"tokens\":1,\"k\":8,\"n\":4,\"world\":3", "world"},
                                         {"\"tokens\":1,\"k\":6,\"n\":4,\"world\":4", "\"k\""},
                                         {"\"tokens\":1,\"k\":8,\"n\":4,\"world\":2,\"pattern\":\"zig\"", "pattern"},
                                         {"\"tokens\":1,\"k\":8,\"n\":4,\"world\":2,\"eps\":-1", "eps"},
                                         {"\"tokens\":1,\"k\":8,\"n\":4,\"world\":2,\"reduce\":\"fp16\"", "reduce"}};
    char fmt[1024]; /* the spec, params left as %s */
    snprintf(fmt, sizeof fmt, "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":3,\"params\":{%%s},%s}", NORMAL);
    OPC_EXPECT_REFUSED_EACH(fmt, bad);
}

/* residual[0][2] = +inf: h there is +inf, rstd of row 0 is 0, so out is NaN at column 2
 * and 0 elsewhere in row 0; kernel and oracle agree. */
static void special_values(void)
{
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":3,\"params\":{\"tokens\":2,\"k\":8,\"n\":4,"
             "\"world\":2},%s,\"inject\":[{\"input\":\"residual\",\"i\":2,\"v\":\"inf\"}]}",
             NORMAL);
    ug_exec_detail d;
    memset(&d, 0, sizeof d);
    opc_sim_passes(spec, "residual inf", NULL, &d);
    if (d.have_oracle)
        CHECK(isnan(d.oracle.g[0][2]) && d.oracle.g[0][1] == 0 && d.oracle.g[1][2] == INFINITY &&
                  isfinite(d.oracle.g[0][4]),
              "residual inf: out %g %g, h %g", d.oracle.g[0][2], d.oracle.g[0][1], d.oracle.g[1][2]);
    ug_exec_detail_free(&d);
}

int main(void)
{
    known_value();
    differential();
    tolerance_rule();
    one_rank_reduce();
    bf16_reduce_staged();
    special_values();
    bad_params();
    return check_done();
}
