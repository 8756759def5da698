/* test_op_gated_delta_rule.c — checks of gated_delta_rule beyond the generic plan test:
 * the oracle against an independent double evaluation of the matrix form, the delta
 * rule's defining invariant (with g = 0, beta = 1 the final state maps k_T to v_T), the
 * qk-head mutant visible only with grouped heads, the special-value rule (a non-finite input
 * makes NaN exactly what depends on it), and bad params rejected by name. */
#include <stdio.h>
#include <string.h>

#include "delta_naive.h"

#define NORMAL_DISTS                                                                                                   \
    "\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"     \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":4},\"g\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":0},"                \
    "\"beta\":{\"kind\":\"uniform\",\"lo\":0.01,\"hi\":1},\"h0\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"
#define WRITE_DISTS                                                                                                    \
    "\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"     \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":4},\"g\":{\"kind\":\"const\",\"value\":0},"                         \
    "\"beta\":{\"kind\":\"const\",\"value\":1},\"h0\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"

static void spec(char *buf, size_t n, const char *dtype, const char *params, const char *dists)
{
    snprintf(buf, n, "{\"op\":\"gated_delta_rule\",\"dtype\":\"%s\",\"params\":{%s},%s,\"seed\":%d,\"v\":1}", dtype,
             params, dists, 4242);
}

/* Runs the bf16 case of params and dists on the sim kernel, its case kept in d, and CHECKs
 * that it ran ("run: message" otherwise). */
static void run_bf16_sim(const char *params, const char *dists, ug_result *r, ug_exec_detail *d)
{
    char s[2048];
    spec(s, sizeof s, "bf16", params, dists);
    CHECK(delta_run(s, "sim", r, d) == 0, "run: %s", r->message);
}

static void test_differential(void)
{
    ug_result r;
    ug_exec_detail d;
    run_bf16_sim("\"tokens\":5,\"hv\":4,\"hqk\":2,\"dk\":8,\"dv\":6", NORMAL_DISTS, &r, &d);
    CHECK(r.outcome == UG_OUT_PASS, "sim kernel: %s %s", ug_outcome_name(r.outcome), r.message);
    if (d.have_oracle) delta_check_oracle(&d, (float)(1.0 / sqrt(8.0)), 1e-9);
    ug_exec_detail_free(&d);
}

/* g = 0, beta = 1: S_T = S_{T-1}(I - k k^T) + v k^T, so S_T k = v ||k||^2 + S_{T-1}k (1 - ||k||^2). */
static void test_write_invariant(void)
{
    ug_result r;
    ug_exec_detail d;
    run_bf16_sim("\"tokens\":3,\"hv\":2,\"hqk\":1,\"dk\":16,\"dv\":4", WRITE_DISTS, &r, &d);
    if (!d.have_oracle) return;
    const ug_case *c = &d.c;
    const double *k = ug_case_input(c, "k")->values + 2 * 16, *v = ug_case_input(c, "v")->values + 2 * 2 * 4;
    double kk = 0.0;
    for (int j = 0; j < 16; j++) kk += k[j] * k[j];
    CHECK(fabs(kk - 1.0) < 0.02, "k is not l2-normalised: |k|^2 = %g", kk);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) {
            double exact = 0.0, kern = 0.0;
            for (int j = 0; j < 16; j++) {
                size_t idx = (size_t)((h * 4 + i) * 16 + j); /* sample 0 = all: position == index */
                exact += d.oracle.gstar[1][idx] * k[j];
                kern += d.a[1][idx] * k[j];
            }
            /* with |k|^2 = 1 + d the read-back is v + d (v - S_{T-1} k): d is a few bf16 ulps */
            double want = v[h * 4 + i];
            CHECK(fabs(exact - want) < 0.05 * (1 + fabs(want)), "oracle: S_T k = %g, v = %g", exact, want);
            CHECK(fabs(kern - exact) < 1e-4 * (1 + fabs(want)), "kernel: S_T k = %g, oracle %g", kern, exact);
        }
    ug_exec_detail_free(&d);
}

static void test_qk_head_mutant(void)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    spec(s, sizeof s, "bf16", "\"tokens\":2,\"hv\":4,\"hqk\":1,\"dk\":16,\"dv\":16", NORMAL_DISTS);
    CHECK(delta_run(s, "mut_qk_head", &r, &d) == 0 && r.outcome == UG_OUT_PASS,
          "one qk head: every mapping is right, the mutant must pass (%s)", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
    spec(s, sizeof s, "bf16", "\"tokens\":2,\"hv\":4,\"hqk\":2,\"dk\":16,\"dv\":16", NORMAL_DISTS);
    CHECK(delta_run(s, "mut_qk_head", &r, &d) == 0 && r.outcome == UG_OUT_FAIL,
          "4:2 heads: the interleaved mapping must fail (%s)", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

/* The special-value rule: an inf in v[t=1, h=1, i=2] makes NaN o[>=1, 1, 2] and ht[1, 2, :]
 * and nothing else, in the oracle and the kernel alike (the verdict passes). */
static void test_special_values(void)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    snprintf(s, sizeof s,
             "{\"op\":\"gated_delta_rule\",\"dtype\":\"bf16\",\"params\":{\"tokens\":3,\"hv\":2,\"hqk\":1,\"dk\":8,"
             "\"dv\":4},%s,\"inject\":[{\"input\":\"v\",\"i\":14,\"v\":\"inf\"}],\"seed\":4242,\"v\":1}",
             NORMAL_DISTS);
    CHECK(delta_run(s, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "inf in v: %s %s", ug_outcome_name(r.outcome),
          r.message);
    if (!d.have_oracle) return;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) { /* o[t, h, i] at index (t*2 + h)*4 + i */
        size_t idx = d.oracle.sel.idx[0][k], t = idx / 8, h = idx / 4 % 2, i = idx % 4;
        CHECK(!!isnan(d.oracle.gstar[0][k]) == (t >= 1 && h == 1 && i == 2), "o[%zu,%zu,%zu] = %g", t, h, i,
              d.oracle.gstar[0][k]);
    }
    for (size_t k = 0; k < d.oracle.sel.n[1]; k++) { /* ht[h, i, j] at index (h*4 + i)*8 + j */
        size_t row = d.oracle.sel.idx[1][k] / 8;
        CHECK(!!isnan(d.oracle.gstar[1][k]) == (row == 6), "ht row %zu: %g", row, d.oracle.gstar[1][k]);
    }
    ug_exec_detail_free(&d);
}

static void expect_rejected(const char *dtype, const char *params, const char *word)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    spec(s, sizeof s, dtype, params, NORMAL_DISTS);
    int rc = delta_run(s, "sim", &r, &d);
    CHECK(rc < 0 || r.outcome == UG_OUT_ERROR, "%s accepted", params);
    CHECK(strstr(r.message, word) != NULL, "message \"%s\" does not name %s", r.message, word);
    ug_exec_detail_free(&d);
}

int main(void)
{
    test_differential();
    test_write_invariant();
    test_qk_head_mutant();
    test_special_values();
    expect_rejected("bf16", "\"tokens\":2,\"hv\":3,\"hqk\":2,\"dk\":8,\"dv\":8", "\"hv\"");
    expect_rejected("bf16", "\"tokens\":0,\"hv\":2,\"hqk\":2,\"dk\":8,\"dv\":8", "\"tokens\"");
    expect_rejected("bf16", "\"tokens\":1,\"hv\":2,\"hqk\":2,\"dk\":0,\"dv\":8", "\"dk\"");
    expect_rejected("fp32", "\"tokens\":1,\"hv\":2,\"hqk\":2,\"dk\":8,\"dv\":8", "dtype");
    return check_done();
}
