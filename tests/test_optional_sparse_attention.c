/* test_optional_sparse_attention.c — sparse_flash_attention's optional softmax_max and
 * softmax_sum (the reference test's, docs/PLUGINS.md "Optional outputs"):
 *  - q = 0: every score is 0, so M = 0 and L = the token's valid keys, in oracle and kernel;
 *  - a padded case over several 64-key tiles (the kernel's rescaled running sum): the oracle's
 *    M and L against a naive long-double forward, and the sim kernel PASS on both under pypto,
 *    certified and reference;
 *  - special rows: a NaN score (NaN, NaN), +inf scores (NaN, NaN), only -inf scores (no live
 *    key: -inf, 0), kernel and oracle alike;
 *  - M and L left unwritten: PASS with both NA under every standard, o judged as before; one
 *    wrong M element: FAIL on softmax_max only;
 *  - the mutants mut_max_unscaled and mut_sum_recip fail on their output only; the ideal
 *    backend passes both under every standard. */
#include "gl_attn_check.h"

#define SPEC(params, dist, extra)                                                                                      \
    "{\"v\":1,\"op\":\"sparse_flash_attention\",\"dtype\":\"bf16\",\"seed\":11,\"params\":" params                     \
    ",\"dist\":" dist extra "}"
#define U11 "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}"
#define PADDED                                                                                                         \
    SPEC("{\"tokens\":4,\"heads\":3,\"kv_len\":400,\"topk\":300,\"pad\":\"scattered\"}",                               \
         "{\"q\":" U11 ",\"kv\":" U11 "}", "")
static const char *const ML_OUTPUTS[] = {"softmax_max", "softmax_sum", NULL}; /* the optional M and L */
#define OUT_MAX 1
#define OUT_SUM 2

/* The valid (non -1) indices of token t. */
static long valid_keys(const ug_case *c, long t, long topk)
{
    const ug_tensor *it = ug_case_input(c, "indices");
    long n = 0;
    for (long i = 0; i < topk; i++) n += ug_tload(it, (size_t)(t * topk + i)) >= 0;
    return n;
}

static void check_known_values(void)
{
    ug_exec_detail d;
    const char *spec = SPEC("{\"tokens\":3,\"heads\":2,\"kv_len\":200,\"topk\":150,\"pad\":\"tail\"}",
                            "{\"q\":{\"kind\":\"const\",\"value\":0},\"kv\":" U11 "}", "");
    if (!opc_sim_passes(spec, "q = 0", NULL, &d)) return;
    for (long row = 0; row < 6; row++) {
        double keys = (double)valid_keys(&d.c, row / 2, 150);
        CHECK(d.oracle.gstar[OUT_MAX][row] == 0.0 && d.a[OUT_MAX][row] == 0.0,
              "M[%ld]: oracle %g kernel %g, expected 0", row, d.oracle.gstar[OUT_MAX][row], d.a[OUT_MAX][row]);
        CHECK(d.oracle.gstar[OUT_SUM][row] == keys && d.a[OUT_SUM][row] == keys,
              "L[%ld]: oracle %g kernel %g, expected %g (the valid keys)", row, d.oracle.gstar[OUT_SUM][row],
              d.a[OUT_SUM][row], keys);
    }
    ug_exec_detail_free(&d);
}

/* Naive long-double M and L of row (t, h) of the PADDED case. */
static void naive_max_sum(const ug_case *c, long t, long h, double *m, double *l)
{
    const ug_tensor *q = ug_case_input(c, "q"), *kv = ug_case_input(c, "kv"), *it = ug_case_input(c, "indices");
    static long double s[300];
    long n = 0;
    long double scale = (float)(1 / sqrt(576.0)), mx = -INFINITY, sum = 0;
    for (long i = 0; i < 300; i++) {
        long j = (long)ug_tload(it, (size_t)(t * 300 + i));
        if (j < 0) continue;
        long double dot = 0;
        for (long e = 0; e < 576; e++) dot += (long double)q->values[(t * 3 + h) * 576 + e] * kv->values[j * 576 + e];
        s[n] = dot * scale;
        mx = s[n] > mx ? s[n] : mx;
        n++;
    }
    for (long i = 0; i < n; i++) sum += expl(s[i] - mx);
    *m = (double)mx, *l = (double)sum;
}

/* The worst relative distance of the oracle's M and L of the 12 padded-case rows from the
 * naive long-double ones. */
static double ml_worst_distance(const ug_exec_detail *d)
{
    double worst = 0;
    for (long row = 0; row < 12; row++) {
        double m, l;
        naive_max_sum(&d->c, row / 3, row % 3, &m, &l);
        worst = fmax(worst, fmax(fabs(d->oracle.gstar[OUT_MAX][row] - m) / fabs(m),
                                 fabs(d->oracle.gstar[OUT_SUM][row] - l) / l));
    }
    return worst;
}

static void check_padded_not_provided_and_wrong(void)
{
    ug_result r;
    ug_exec_detail d;
    if (!opc_sim_passes_judged(PADDED, "padded case", ML_OUTPUTS, &r, &d)) return;
    double worst = ml_worst_distance(&d);
    CHECK(worst < 1e-12, "oracle M/L differ from the naive long-double forward by %g (relative)", worst);

    /* not provided: NA under every standard, the case PASS on o */
    ug_result np;
    opc_withhold_outputs(&d, &r, OUT_MAX, OUT_SUM, "o", &np);
    CHECK(np.outcome == UG_OUT_PASS, "M and L not provided: %s (%s), expected PASS", ug_outcome_name(np.outcome),
          np.message);
    for (int k = OUT_MAX; k <= OUT_SUM; k++) opc_expect_not_provided(&np, k, np.out[k].name);

    /* provided, one M element off by 2 % (beyond 1e-3 + 1e-2|g|; budget 0.005 of 12 allows none) */
    for (size_t i = 0; i < 12; i++) {
        ug_dtype_store(UG_DT_FP32, d.c.out[OUT_MAX].data, i, d.oracle.g[OUT_MAX][i]);
        ug_dtype_store(UG_DT_FP32, d.c.out[OUT_SUM].data, i, d.oracle.g[OUT_SUM][i]);
    }
    ug_dtype_store(UG_DT_FP32, d.c.out[OUT_MAX].data, 5, d.oracle.g[OUT_MAX][5] * 1.02 + 0.002);
    ug_result wrong;
    opc_rejudge_result(&d, &wrong);
    CHECK(wrong.outcome == UG_OUT_FAIL && wrong.out[OUT_MAX].verdict[UG_STD_REFERENCE] == UG_V_FAIL &&
              wrong.out[OUT_MAX].verdict[UG_STD_PYPTO] == UG_V_FAIL &&
              wrong.out[OUT_SUM].verdict[UG_STD_REFERENCE] == UG_V_PASS &&
              wrong.out[0].verdict[UG_STD_PYPTO] == UG_V_PASS,
          "one wrong M element: outcome %s, expected FAIL on softmax_max only", ug_outcome_name(wrong.outcome));
    ug_exec_detail_free(&d);
}

/* Rows 0..2 of token 0: a NaN in q (NaN score), +inf in q against positive keys (+inf
 * scores), -inf in q (only -inf scores: no live key); kernel and oracle agree on each. */
static void check_special_rows(void)
{
    ug_exec_detail d;
    const char *spec =
        SPEC("{\"tokens\":2,\"heads\":4,\"kv_len\":100,\"topk\":80}",
             "{\"q\":" U11 ",\"kv\":{\"kind\":\"uniform\",\"lo\":0.5,\"hi\":1}}",
             ",\"inject\":[{\"input\":\"q\",\"i\":3,\"v\":\"nan\"},{\"input\":\"q\",\"i\":577,\"v\":\"inf\"},"
             "{\"input\":\"q\",\"i\":1153,\"v\":\"-inf\"}]");
    if (!opc_sim_passes(spec, "special rows", NULL, &d)) return;
    static const double want_max[3] = {NAN, NAN, -INFINITY}, want_sum[3] = {NAN, NAN, 0.0};
    for (int row = 0; row < 3; row++) {
        double gm = d.oracle.gstar[OUT_MAX][row], gl = d.oracle.gstar[OUT_SUM][row];
        double am = d.a[OUT_MAX][row], al = d.a[OUT_SUM][row];
        int ok = isnan(want_max[row]) ? isnan(gm) && isnan(am) && isnan(gl) && isnan(al)
                                      : gm == -INFINITY && am == -INFINITY && gl == 0.0 && al == 0.0;
        CHECK(ok, "row %d: M oracle %g kernel %g, L oracle %g kernel %g; expected %g, %g", row, gm, am, gl, al,
              want_max[row], want_sum[row]);
    }
    CHECK(isfinite(d.oracle.gstar[OUT_MAX][3]) && d.oracle.gstar[OUT_SUM][3] >= 1.0, "row 3 stays finite");
    ug_exec_detail_free(&d);
}

/* The mutants of the optional outputs, each {variant, the one output it fails}. */
static const char *const OUTPUT_MUTANTS[][2] = {{"mut_max_unscaled", "softmax_max"}, {"mut_sum_recip", "softmax_sum"}};

int main(void)
{
    check_known_values();
    check_padded_not_provided_and_wrong();
    check_special_rows();
    OPC_EXPECT_OUTPUT_MUTANTS_AND_IDEAL(PADDED, OUTPUT_MUTANTS, ML_OUTPUTS);
    return check_done();
}
