/* test_op_gqa_decode_attn.c — known values and a differential check for gqa_decode_attn,
 * beyond the generic plan test:
 *  - window 1 attends one key, so o[b,h] must equal v[b, h/group, L_b-1] exactly, in the
 *    oracle and in the sim kernel, over ragged lengths; the kv-head mutant must not;
 *  - MTP visibility: with q_per_step 3 and window 1, query row i of sequence b attends
 *    only its own last key L_b - 3 + i, so o = v[b, h/group, L_b - 3 + i] exactly (row 0
 *    must not see the last key), in the oracle and the sim kernel, over explicit lengths;
 *    mut_mtp_no_offset (every row sees all L_b keys) must not;
 *  - a non-default scale reaches the oracle: scale 1.0 against the long-double reference;
 *  - constant values give o = that constant (oracle to 1e-12, kernel within tolerance);
 *  - the oracle's exact values agree with an independent long-double evaluation;
 *  - bad params are refused with a message naming them. */
#include "gl_attn_check.h"

#define DISTS(qk, v) "\"dist\":{\"q\":" qk ",\"k\":" qk ",\"v\":" v "}"
#define NORMAL "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"
#define PEAKED "{\"kind\":\"normal\",\"mean\":0,\"std\":2}"

static const char *SPEC_WINDOW1 =
    "{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":11,\"plan\":\"test\","
    "\"params\":{\"batch\":3,\"heads_kv\":2,\"group\":4,\"dim\":16,\"ctx\":40,\"lens\":\"ragged\",\"window\":1}," DISTS(
        NORMAL, NORMAL) "}";

/* v[b, h/group, L_b-1, d] for flat output index i. */
static double last_value(const ug_case *c, size_t i, long hkv, long group, long ctx, long dim)
{
    long hq = hkv * group;
    long row = (long)i / dim, d = (long)i % dim, b = row / hq, h = row % hq;
    long len = (long)ug_tload(ug_case_input(c, "seq_lens"), (size_t)b);
    return ug_tload(ug_case_input(c, "v"), (size_t)(((b * hkv + h / group) * ctx + len - 1) * dim + d));
}

static void test_window_one(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC_WINDOW1, "sim", &r, &d) == 0, "window-1 case did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS, "window-1 case: %s %s", ug_outcome_name(r.outcome), r.message);
    size_t bad_oracle = 0, bad_kernel = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        double want = last_value(&d.c, d.oracle.sel.idx[0][k], 2, 4, 40, 16);
        bad_oracle += d.oracle.g[0][k] != want;
        bad_kernel += d.a[0][k] != want;
    }
    CHECK(d.oracle.sel.n[0] == 3 * 8 * 16, "checked %zu elements, want all 384", d.oracle.sel.n[0]);
    CHECK(bad_oracle == 0, "%zu oracle values differ from the last key's value", bad_oracle);
    CHECK(bad_kernel == 0, "%zu kernel values differ from the last key's value", bad_kernel);
    ug_exec_detail_free(&d);

    CHECK(opc_run(SPEC_WINDOW1, "mut_kv_head_mod", &r, &d) == 0, "mutant run failed: %s", r.message);
    size_t moved = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++)
        moved += d.a[0][k] != last_value(&d.c, d.oracle.sel.idx[0][k], 2, 4, 40, 16);
    CHECK(moved > 0 && r.outcome == UG_OUT_FAIL, "h %% Hkv head mapping went unnoticed (%zu moved)", moved);
    ug_exec_detail_free(&d);
}

static const char *SPEC_MTP_WINDOW1 =
    "{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":12,\"plan\":\"test\","
    "\"params\":{\"batch\":3,\"heads_kv\":2,\"group\":2,\"dim\":8,\"ctx\":20,\"context_lens\":\"3,20,7\","
    "\"q_per_step\":3,\"window\":1}," DISTS(NORMAL, NORMAL) "}";

/* v[b, h/group, L_b - S_q + i, d] for flat output index k of the MTP case (S_q 3, Hkv 2, group 2, S 20, D 8). */
static double mtp_own_value(const ug_case *c, size_t k)
{
    long hkv = 2, group = 2, hq = 4, ctx = 20, dim = 8, sq = 3;
    long row = (long)k / dim, d = (long)k % dim, t = row / hq, h = row % hq, b = t / sq, i = t % sq;
    long len = (long)ug_tload(ug_case_input(c, "seq_lens"), (size_t)b);
    return ug_tload(ug_case_input(c, "v"), (size_t)(((b * hkv + h / group) * ctx + len - sq + i) * dim + d));
}

static void test_mtp_visibility(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC_MTP_WINDOW1, "sim", &r, &d) == 0, "MTP window-1 case did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS, "MTP window-1 case: %s %s", ug_outcome_name(r.outcome), r.message);
    const ug_tensor *lens = ug_case_input(&d.c, "seq_lens");
    CHECK(ug_tload(lens, 0) == 3 && ug_tload(lens, 1) == 20 && ug_tload(lens, 2) == 7,
          "the seq_lens input not taken from the context_lens param");
    size_t bad_oracle = 0, bad_kernel = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        double want = mtp_own_value(&d.c, d.oracle.sel.idx[0][k]);
        bad_oracle += d.oracle.g[0][k] != want;
        bad_kernel += d.a[0][k] != want;
    }
    CHECK(d.oracle.sel.n[0] == 3 * 3 * 4 * 8, "checked %zu elements, want all 288", d.oracle.sel.n[0]);
    CHECK(bad_oracle == 0, "%zu oracle values differ from the row's own last key's value", bad_oracle);
    CHECK(bad_kernel == 0, "%zu kernel values differ from the row's own last key's value", bad_kernel);
    ug_exec_detail_free(&d);

    CHECK(opc_run(SPEC_MTP_WINDOW1, "mut_mtp_no_offset", &r, &d) == 0, "mutant run failed: %s", r.message);
    size_t moved = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) moved += d.a[0][k] != mtp_own_value(&d.c, d.oracle.sel.idx[0][k]);
    CHECK(moved > 0 && r.outcome == UG_OUT_FAIL, "MTP rows seeing every key went unnoticed (%zu moved)", moved);
    ug_exec_detail_free(&d);
}

/* scale 1.0 (a reference model's): the oracle must use it, not 1/sqrt(D). */
static void test_scale_one(void)
{
    const char *spec = "{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":4,\"plan\":\"test\","
                       "\"params\":{\"batch\":2,\"heads_kv\":1,\"group\":2,\"dim\":16,\"ctx\":50,\"scale\":1.0}," DISTS(
                           NORMAL, NORMAL) "}";
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "scale-1 case did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS, "scale-1 case: %s %s", ug_outcome_name(r.outcome), r.message);
    const ug_tensor *q = ug_case_input(&d.c, "q"), *kt = ug_case_input(&d.c, "k"), *v = ug_case_input(&d.c, "v");
    long hq = 2, dim = 16, ctx = 50;
    long double s[50];
    double worst = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        long row = (long)d.oracle.sel.idx[0][k] / dim, col = (long)d.oracle.sel.idx[0][k] % dim, b = row / hq;
        size_t base = (size_t)(b * ctx * dim);
        for (long j = 0; j < ctx; j++) {
            long double acc = 0;
            for (long e = 0; e < dim; e++)
                acc += (long double)q->values[row * dim + e] * kt->values[base + j * dim + e];
            s[j] = acc;
        }
        long double ref = gl_ref_softmax_pv(s, (size_t)ctx, v->values + base, (size_t)dim, (size_t)col);
        worst = fmax(worst, (double)fabsl(ref - d.oracle.gstar[0][k]));
    }
    CHECK(worst < 1e-12, "scale 1.0: oracle and long-double reference differ by %g", worst);
    ug_exec_detail_free(&d);
}

static void test_constant_values(void)
{
    const char *spec = "{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":5,\"plan\":\"test\","
                       "\"params\":{\"batch\":2,\"heads_kv\":1,\"group\":2,\"dim\":8,\"ctx\":300}," DISTS(
                           PEAKED, "{\"kind\":\"const\",\"value\":0.75}") "}";
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "constant-v case did not run: %s", r.message);
    size_t off = 0;
    double worst = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        off += d.oracle.g[0][k] != 0.75 || fabs(d.oracle.gstar[0][k] - 0.75) > 1e-12;
        worst = fmax(worst, fabs(d.a[0][k] - 0.75));
    }
    CHECK(off == 0, "softmax weights do not sum to 1 in the oracle (%zu elements off 0.75)", off);
    CHECK(worst <= 0.005, "kernel strays %g from the constant 0.75", worst);
    ug_exec_detail_free(&d);
}

static void test_differential(void)
{
    const char *spec = "{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":3,\"plan\":\"test\","
                       "\"params\":{\"batch\":3,\"heads_kv\":2,\"group\":2,\"dim\":32,\"ctx\":150,"
                       "\"lens\":\"ragged\",\"window\":100}," DISTS(PEAKED, NORMAL) "}";
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "differential case did not run: %s", r.message);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "differential case: %s %s",
          ug_outcome_name(r.outcome), r.message);
    const ug_case *c = &d.c;
    const ug_tensor *q = ug_case_input(c, "q"), *kt = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    long hkv = 2, group = 2, hq = 4, dim = 32, ctx = 150;
    long double s[150];
    double worst = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        long row = (long)d.oracle.sel.idx[0][k] / dim, col = (long)d.oracle.sel.idx[0][k] % dim;
        long b = row / hq, h = row % hq, len = (long)ug_tload(ug_case_input(c, "seq_lens"), (size_t)b);
        long start = len > 100 ? len - 100 : 0;
        size_t base = (size_t)(((b * hkv + h / group) * ctx + start) * dim);
        for (long j = 0; j < len - start; j++) {
            long double acc = 0;
            for (long e = 0; e < dim; e++)
                acc += (long double)q->values[row * dim + e] * kt->values[base + j * dim + e];
            s[j] = acc / sqrtl((long double)dim);
        }
        long double ref = gl_ref_softmax_pv(s, (size_t)(len - start), v->values + base, (size_t)dim, (size_t)col);
        worst = fmax(worst, (double)fabsl(ref - d.oracle.gstar[0][k]));
    }
    CHECK(worst < 1e-12, "oracle and long-double reference differ by %g", worst);
    ug_exec_detail_free(&d);
}

/* The fp16 dtype, and each bad param, refused naming it. */
static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"group\":0,\"ctx\":8", "group"},
        {"\"ctx\":8,\"lens\":\"bogus\"", "lens"},
        {"\"batch\":2,\"ctx\":8,\"context_lens\":\"8\"", "context_lens"},      /* one per sequence */
        {"\"batch\":2,\"ctx\":8,\"context_lens\":\"8,9\"", "context_lens"},    /* over ctx */
        {"\"ctx\":8,\"q_per_step\":2,\"context_lens\":\"1\"", "context_lens"}, /* under q_per_step */
        {"\"ctx\":8,\"lens\":\"ragged\",\"context_lens\":\"8\"", "context_lens"},
        {"\"ctx\":2,\"q_per_step\":3", "q_per_step"},
        {"\"ctx\":2,\"scale\":1e-50", "scale"}, /* 0 in fp32 */
    };
    OPC_EXPECT_REFUSED_EACH("{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"seed\":1,\"plan\":\"test\","
                            "\"params\":{%s}," DISTS(NORMAL, NORMAL) "}",
                            bad);
    opc_expect_refused("{\"v\":1,\"op\":\"gqa_decode_attn\",\"dtype\":\"fp16\",\"seed\":1,\"plan\":\"test\","
                       "\"params\":{\"ctx\":8}," DISTS(NORMAL, NORMAL) "}",
                       "dtype");
}

int main(void)
{
    test_window_one();
    test_mtp_visibility();
    test_scale_one();
    test_constant_values();
    test_differential();
    test_bad_params();
    return check_done();
}
