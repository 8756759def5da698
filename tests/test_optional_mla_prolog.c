/* test_optional_mla_prolog.c — mla_prolog's optional q_norm (the reference test's qNorm of
 * the non-quantised path, docs/PLUGINS.md "Optional outputs"):
 *  - known value: x = 1, W_dq = 2, gamma_q = 0.5 give c_q = bf16(0.5·8/sqrt(64 + eps)) = 0.5 in
 *    oracle and kernel;
 *  - a case over two 16-token tiles at the reference test's input scale: the oracle's q_norm
 *    against a naive long-double RMSNorm(x·W_dq; gamma_q, eps), the sim kernel's equal to its
 *    bf16 rounding and PASS under pypto, certified and reference; the reference golden
 *    (x·W_dq rounded to bf16, no eps) written as the output passes the reference rule too;
 *  - q_norm left unwritten: PASS with it NA under every standard, the other outputs judged as
 *    before; one wrong element: FAIL on q_norm only;
 *  - the mutants mut_qnorm_no_gamma and mut_qnorm_prenorm fail on q_norm only; the ideal
 *    backend passes it under every standard;
 *  - at that scale the sim kernel passes the test's other rules too (qNope, qRope, kv, kr: the
 *    reference rules of the four required outputs), and the RoPE, slot and kv-norm mutants fail
 *    them on the output they break. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

#define OUT_QNORM 4 /* after q_nope_abs, q_rope, kv_cache, kr_cache */
#define T 20
#define H 256
#define LQ 64
#define U(lo, hi) "{\"kind\":\"uniform\",\"lo\":" #lo ",\"hi\":" #hi "}"
/* the reference test's scales: x, gamma U(-1,1), weights U(-0.1,0.1) */
#define REF_CASE                                                                                                                            \
    "{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":3,\"params\":{\"tokens\":20,\"h\":256,\"q_lora\":64,"                               \
    "\"heads\":2,\"kv_lora\":32,\"d_nope\":16,\"d_rope\":8,\"eps\":1e-5,\"slots\":\"padded\","                                              \
    "\"rope_layout\":\"interleaved_to_half\"},\"dist\":{\"x\":" U(-1, 1) ",\"w_dq\":" U(-0.1, 0.1) ",\"gamma_q\":" U(-1, 1) ",\"w_uq\":" U( \
        -0.1,                                                                                                                               \
        0.1) ",\"w_uk\":" U(-0.1,                                                                                                           \
                            0.1) ",\"w_dkv\":" U(-0.1,                                                                                      \
                                                 0.1) ",\"gamma_kv\":" U(-1,                                                                \
                                                                         1) ",\"kv_cache_in\":" U(-1,                                       \
                                                                                                  1) ",\"kr_cache_in\":" U(-1,              \
                                                                                                                           1) "}}"

static void check_known_value(void)
{
    const char *spec =
        "{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"tokens\":3,\"h\":4,"
        "\"q_lora\":8,\"heads\":1,\"kv_lora\":4,\"d_nope\":2,\"d_rope\":2},\"dist\":{"
        "\"x\":{\"kind\":\"const\",\"value\":1},\"w_dq\":{\"kind\":\"const\",\"value\":2},"
        "\"gamma_q\":{\"kind\":\"const\",\"value\":0.5},\"w_uq\":" U(-1, 1) ",\"w_uk\":" U(-1, 1) ",\"w_dkv\":" U(
            -1, 1) ",\"gamma_kv\":" U(-1, 1) ",\"kv_cache_in\":" U(-1, 1) ",\"kr_cache_in\":" U(-1, 1) "}}";
    ug_result r;
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "known value", &r, &d)) return;
    opc_expect_judged_pass(&r, "q_norm", "known value");
    if (r.out[OUT_QNORM].not_provided) return ug_exec_detail_free(&d);
    for (size_t i = 0; i < 3 * 8; i++)
        CHECK(d.oracle.g[OUT_QNORM][i] == 0.5 && d.a[OUT_QNORM][i] == 0.5,
              "q_norm[%zu]: oracle %g kernel %g, expected 0.5", i, d.oracle.g[OUT_QNORM][i], d.a[OUT_QNORM][i]);
    ug_exec_detail_free(&d);
}

/* Naive long-double x[t]·W_dq of the kept case into v[LQ], rounded to bf16 (the spec's
 * q_a_proj rounding: the sum of bf16 products is exact in long double at these sizes). */
static void naive_xw(const ug_exec_detail *d, long t, long double *v)
{
    for (long j = 0; j < LQ; j++) {
        v[j] = 0;
        for (long k = 0; k < H; k++)
            v[j] += (long double)opc_in(d, "x", (size_t)(t * H + k)) * opc_in(d, "w_dq", (size_t)(k * LQ + j));
        v[j] = ug_dtype_round(UG_DT_BF16, (double)v[j]);
    }
}

/* Naive RMSNorm(v; gamma_q, eps) of row v[LQ] into out (long double). */
static void naive_norm(const ug_exec_detail *d, const long double *v, long double eps, long double *out)
{
    long double ss = 0;
    for (long j = 0; j < LQ; j++) ss += v[j] * v[j];
    long double rstd = 1.0L / sqrtl(ss / LQ + eps);
    for (long j = 0; j < LQ; j++) out[j] = v[j] * rstd * opc_in(d, "gamma_q", (size_t)j);
}

/* The oracle against the naive op math; the kernel's q_norm the bf16 rounding of it (a flip
 * where the exact value lies within the kernel's fp32 error of a tie is allowed, rarely). */
static void check_naive(const ug_exec_detail *d)
{
    long double v[LQ], c[LQ];
    double worst = 0;
    int flips = 0;
    for (long t = 0; t < T; t++) {
        naive_xw(d, t, v);
        naive_norm(d, v, (long double)(float)1e-5, c);
        for (long j = 0; j < LQ; j++) {
            size_t i = (size_t)(t * LQ + j);
            worst = fmax(worst, fabs(d->oracle.gstar[OUT_QNORM][i] - (double)c[j]) / fabs((double)c[j]));
            flips += d->a[OUT_QNORM][i] != ug_dtype_round(UG_DT_BF16, (double)c[j]);
        }
    }
    CHECK(worst < 1e-12, "oracle q_norm differs from the naive RMSNorm by %g (relative)", worst);
    CHECK(flips <= 2, "kernel q_norm differs from bf16(naive) on %d of %d elements", flips, T * LQ);
}

/* Writes the reference golden: rms_norm(bf16(x·W_dq), gamma_q) without eps, in bf16. */
static void write_reference_golden(ug_exec_detail *d)
{
    long double v[LQ], c[LQ];
    for (long t = 0; t < T; t++) {
        naive_xw(d, t, v);
        for (long j = 0; j < LQ; j++) v[j] = ug_dtype_round(UG_DT_BF16, (double)(float)v[j]);
        naive_norm(d, v, 0, c);
        for (long j = 0; j < LQ; j++)
            ug_dtype_store(UG_DT_BF16, d->c.out[OUT_QNORM].data, (size_t)(t * LQ + j), (double)c[j]);
    }
}

static void check_reference_case(void)
{
    ug_result r;
    ug_exec_detail d;
    if (!opc_sim_passes(REF_CASE, "reference-scale case", &r, &d)) return;
    /* every output has the non-quantised test's rule (qNope, qRope, kv, kr, qNorm) and the correct kernel meets it */
    static const char *const outs[] = {"q_nope_abs", "q_rope", "kv_cache", "kr_cache", "q_norm"};
    for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) opc_expect_judged_pass(&r, outs[k], "sim");
    if (!r.out[OUT_QNORM].not_provided) check_naive(&d);

    /* the golden's own roundings (bf16 x·W_dq, no eps) stay inside the rule it is judged by */
    write_reference_golden(&d);
    ug_result gold;
    opc_rejudge_result(&d, &gold);
    CHECK(gold.out[OUT_QNORM].verdict[UG_STD_REFERENCE] == UG_V_PASS &&
              gold.out[OUT_QNORM].verdict[UG_STD_PYPTO] == UG_V_PASS,
          "the reference golden as q_norm: reference %s pypto %s (%s)",
          ug_vstate_name(gold.out[OUT_QNORM].verdict[UG_STD_REFERENCE]),
          ug_vstate_name(gold.out[OUT_QNORM].verdict[UG_STD_PYPTO]), gold.out[OUT_QNORM].thresholds[UG_STD_REFERENCE]);

    /* not provided: NA under every standard, the other outputs' verdicts unchanged */
    ug_vstate before[4][UG_STD_COUNT];
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < UG_STD_COUNT; s++) before[k][s] = r.out[k].verdict[s];
    ug_tensor_fill_sentinel(&d.c.out[OUT_QNORM]);
    ug_result np;
    opc_rejudge_result(&d, &np);
    CHECK(np.outcome == UG_OUT_PASS, "q_norm not provided: %s (%s), expected PASS", ug_outcome_name(np.outcome),
          np.message);
    opc_expect_not_provided(&np, OUT_QNORM, "q_norm");
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < UG_STD_COUNT; s++)
            CHECK(np.out[k].verdict[s] == before[k][s], "%s's %s verdict changed", np.out[k].name, ug_standard_name(s));

    /* provided, seven elements off by 2 % + 0.01 (beyond 1e-4 + 2^-7|g|); the budget 0.005 of
     * 1280 elements allows six */
    for (size_t i = 0; i < T * LQ; i++)
        ug_dtype_store(UG_DT_BF16, d.c.out[OUT_QNORM].data, i, d.oracle.g[OUT_QNORM][i]);
    for (size_t i = 37; i < 37 + 7 * 64; i += 64)
        ug_dtype_store(UG_DT_BF16, d.c.out[OUT_QNORM].data, i, d.oracle.g[OUT_QNORM][i] * 1.02 + 0.01);
    ug_result wrong;
    opc_rejudge_result(&d, &wrong);
    CHECK(wrong.outcome == UG_OUT_FAIL && wrong.out[OUT_QNORM].verdict[UG_STD_REFERENCE] == UG_V_FAIL &&
              wrong.out[OUT_QNORM].verdict[UG_STD_PYPTO] == UG_V_FAIL &&
              wrong.out[0].verdict[UG_STD_PYPTO] == UG_V_PASS && wrong.out[3].verdict[UG_STD_PYPTO] == UG_V_PASS,
          "seven wrong q_norm elements: outcome %s, expected FAIL on q_norm only", ug_outcome_name(wrong.outcome));
    ug_exec_detail_free(&d);
}

/* At the reference test's scale its rules catch the op's planted cache and RoPE mutants: each fails `reference` on
 * the output it breaks (kr_cache and q_rope for the flipped sin, kv_cache for the scatter and the bf16 norm). */
static void check_reference_mutants(void)
{
    static const char *const cases[][2] = {{"mut_rope_sin_sign", "q_rope"},
                                           {"mut_rope_sin_sign", "kr_cache"},
                                           {"mut_slot_off_by_one", "kv_cache"},
                                           {"mut_slot_off_by_one", "kr_cache"},
                                           {"mut_kv_norm_bf16", "kv_cache"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ug_result r;
        CHECK(opc_run(REF_CASE, cases[i][0], &r, NULL) == 0 && r.outcome == UG_OUT_FAIL, "%s: outcome %s", cases[i][0],
              ug_outcome_name(r.outcome));
        CHECK(opc_out_verdict(&r, cases[i][1], UG_STD_REFERENCE) == UG_V_FAIL, "%s: %s must fail reference (%s)",
              cases[i][0], cases[i][1], ug_vstate_name(opc_out_verdict(&r, cases[i][1], UG_STD_REFERENCE)));
    }
}

static const char *const OPTIONAL_OUTPUTS[] = {"q_norm", NULL};
/* The mutants of the optional outputs, each {variant, the one output it fails}. */
static const char *const OUTPUT_MUTANTS[][2] = {{"mut_qnorm_no_gamma", "q_norm"}, {"mut_qnorm_prenorm", "q_norm"}};

int main(void)
{
    check_known_value();
    check_reference_case();
    check_reference_mutants();
    OPC_EXPECT_OUTPUT_MUTANTS_AND_IDEAL(REF_CASE, OUTPUT_MUTANTS, OPTIONAL_OUTPUTS);
    return check_done();
}
