/* test_op_chunked_gated_delta_rule.c — checks of chunked_gated_delta_rule beyond the
 * generic plan test: the oracle against an independent double evaluation of the matrix
 * form; the chunked kernel equals the recurrent rule on every element; the result does
 * not depend on the chunk length (kernel within fp32 noise, oracle bit for bit); the
 * border and tail mutants show exactly where they should; bad params rejected by name;
 * the certified bound's WY evaluation (delta_rule_wy.c), run in plain double, gives the
 * recurrence's values (its algebra is right), and at the reference suite's draws the
 * correct kernel passes certified with c = 2 (it failed with the recurrence's bound and
 * c = 8, issue #13).
 * Varlen (seqlens): the oracle and the kernel against the naive rule run sequence by
 * sequence; sequence 0 of a packed case is, bit for bit, the single-sequence case of its
 * prefix (its inputs are a prefix of the packed inputs); the WY bound's stages equal the
 * recurrence per sequence; the carried-state and straddling-chunk mutants show exactly
 * where they should; bad seqlens refused by name. */
#include <stdio.h>
#include <string.h>

#include "delta_naive.h"
#include "oracles/delta_rule/delta_rule_wy.h"
#include "oracles/mp/arith.h"

#define DISTS(g_lo, b_lo)                                                                                              \
    "\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"     \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"g\":{\"kind\":\"uniform\",\"lo\":" g_lo ",\"hi\":0},"          \
    "\"beta\":{\"kind\":\"uniform\",\"lo\":" b_lo ",\"hi\":1},\"h0\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"

static void spec(char *buf, size_t n, const char *dtype, long tokens, long chunk, const char *rest)
{
    snprintf(buf, n,
             "{\"op\":\"chunked_gated_delta_rule\",\"dtype\":\"%s\",\"params\":{\"tokens\":%ld,\"chunk\":%ld,%s},%s,"
             "\"seed\":777,\"v\":1}",
             dtype, tokens, chunk, rest, DISTS("-0.2", "0.5"));
}

/* Largest |a - x| / (1 + |x|) over every element of both outputs, x the naive double. */
static double kernel_vs_naive(const ug_exec_detail *d, double scale)
{
    const ug_case *c = &d->c;
    double *o = calloc(c->out[0].numel, sizeof *o), *ht = calloc(c->out[1].numel, sizeof *ht), worst = 0.0;
    delta_naive(c, scale, o, ht);
    double *ref[2] = {o, ht};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < c->out[k].numel; i++) {
            double e = fabs(d->a[k][i] - ref[k][i]) / (1.0 + fabs(ref[k][i]));
            if (e > worst) worst = e;
        }
    free(o);
    free(ht);
    return worst;
}

static void test_chunked_equals_recurrent(void)
{
    const char *dims = "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4";
    double *first[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    long chunks[3] = {32, 64, 128};
    for (int ci = 0; ci < 3; ci++) {
        char s[2048];
        spec(s, sizeof s, "fp32", 150, chunks[ci], dims);
        ug_result r;
        ug_exec_detail d;
        CHECK(delta_run(s, "sim", &r, &d) == 0, "run: %s", r.message);
        if (!d.have_oracle) continue;
        CHECK(r.outcome == UG_OUT_PASS, "chunk %ld: %s %s", chunks[ci], ug_outcome_name(r.outcome), r.message);
        if (ci == 0) delta_check_oracle(&d, (float)(1.0 / sqrt(8.0)), 1e-9);
        double e = kernel_vs_naive(&d, (float)(1.0 / sqrt(8.0)));
        printf("chunk %ld: kernel vs recurrent %.3g\n", chunks[ci], e);
        CHECK(e < 2e-5, "chunk %ld: chunked kernel differs from the recurrent rule by %g", chunks[ci], e);
        for (int k = 0; k < 2; k++) {
            if (ci == 0) {
                n[k] = d.oracle.sel.n[k];
                first[k] = malloc(n[k] * sizeof(double));
                memcpy(first[k], d.oracle.gstar[k], n[k] * sizeof(double));
            } else {
                CHECK(n[k] == d.oracle.sel.n[k] && memcmp(first[k], d.oracle.gstar[k], n[k] * sizeof(double)) == 0,
                      "chunk %ld: the oracle (recurrent) must not depend on the chunk length", chunks[ci]);
            }
        }
        ug_exec_detail_free(&d);
    }
    free(first[0]);
    free(first[1]);
}

static void expect_variant(const char *variant, long tokens, long chunk, ug_outcome want)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    spec(s, sizeof s, "fp32", tokens, chunk, "\"hv\":1,\"hqk\":1,\"dk\":16,\"dv\":8");
    CHECK(delta_run(s, variant, &r, &d) == 0 && r.outcome == want, "%s at T=%ld, L=%ld: %s, expected %s", variant,
          tokens, chunk, ug_outcome_name(r.outcome), ug_outcome_name(want));
    ug_exec_detail_free(&d);
}

/* The WY evaluation of the device bound, run in plain double on every element, against the
 * exact recurrence the case's oracle kept: agreement to ~1e-9 means the chunked stages
 * compute the op (a wrong stage would bound some other algorithm). */
static void expect_wy_equals_recurrence(long tokens, long chunk, const char *dims)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    spec(s, sizeof s, "fp32", tokens, chunk, dims);
    CHECK(delta_run(s, "sim", &r, &d) == 0 && d.have_oracle, "run: %s", r.message);
    if (!d.have_oracle) return;
    const ug_selection *sel = &d.oracle.sel;
    ug_ar *ar = ug_ar_new(UG_AR_F64, 64, UG_DT_FP32);
    ug_ar_sink sinks[2];
    for (int k = 0; k < 2; k++)
        sinks[k] =
            (ug_ar_sink){UG_DT_FP32, calloc(sel->n[k], sizeof(double)), calloc(sel->n[k], sizeof(double)), NULL, NULL};
    ug_ar_set_sink(ar, sinks, 2);
    CHECK(ug_delta_wy_oracle(&d.c, ar, sel) == 0, "WY evaluation failed");
    for (int k = 0; k < 2; k++) {
        double worst = 0.0;
        for (size_t i = 0; i < sel->n[k]; i++) {
            double x = d.oracle.gstar[k][i], e = fabs(sinks[k].gstar[i] - x) / (1.0 + fabs(x));
            worst = e > worst ? e : worst;
        }
        printf("T=%ld L=%ld %s: WY in double vs recurrence, output %d: %.3g\n", tokens, chunk, dims, k, worst);
        CHECK(worst < 1e-9, "T=%ld L=%ld %s output %d: the WY stages differ from the recurrence by %g", tokens, chunk,
              dims, k, worst);
        free(sinks[k].gstar);
        free(sinks[k].g);
    }
    ug_ar_free(ar);
    ug_exec_detail_free(&d);
}

/* The reference suite's draws (test_chunked_gated_delta_rule.py gen_inputs: same-sign
 * uniform q/k/v, gates down to -37.4, beta in (-0.80, 0), zero state, qk_norm l2): the
 * correct kernel passes certified on every element with the default c = 2. With the
 * recurrence's bound these seeds failed ht even at c = 8 (worst 2.09 at seed 2). */
static void expect_certified_at_reference_draws(long tokens, long chunk, const char *dims, int seed)
{
    char s[2048];
    snprintf(s, sizeof s,
             "{\"op\":\"chunked_gated_delta_rule\",\"dtype\":\"fp32\",\"params\":{\"tokens\":%ld,\"chunk\":%ld,%s,"
             "\"qk_norm\":\"l2\"},\"dist\":{\"q\":{\"kind\":\"uniform\",\"lo\":-1.644,\"hi\":0},"
             "\"k\":{\"kind\":\"uniform\",\"lo\":-1.7449,\"hi\":0},\"v\":{\"kind\":\"uniform\",\"lo\":-1.9273,"
             "\"hi\":0},\"g\":{\"kind\":\"uniform\",\"lo\":-37.41,\"hi\":-0.1343},\"beta\":{\"kind\":\"uniform\","
             "\"lo\":-0.8038,\"hi\":0},\"h0\":{\"kind\":\"const\",\"value\":0}},\"seed\":%d,\"v\":1}",
             tokens, chunk, dims, seed);
    ug_result r;
    ug_exec_detail d;
    CHECK(delta_run(s, "sim", &r, &d) == 0, "run: %s", r.message);
    for (int k = 0; k < r.n_out; k++) {
        const char *thr = r.out[k].thresholds[UG_STD_CERTIFIED];
        printf("reference draws T=%ld L=%ld seed %d, %s: certified %s\n", tokens, chunk, seed, r.out[k].name, thr);
        CHECK(r.out[k].verdict[UG_STD_CERTIFIED] == UG_V_PASS, "%s: certified %s", r.out[k].name, thr);
        CHECK(strstr(thr, "\"c\":2,") != NULL, "%s: certified must use c = 2: %s", r.out[k].name, thr);
    }
    ug_exec_detail_free(&d);
}

/* Packed sequences against the naive rule run sequence by sequence (every element, both
 * outputs): the oracle to 1e-9, the chunked kernel within fp32 noise, and the kernel passes. */
static void test_varlen_equals_per_sequence(long tokens, long chunk, const char *seqlens)
{
    char s[2048], dims[256];
    snprintf(dims, sizeof dims, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4,\"seqlens\":\"%s\"", seqlens);
    spec(s, sizeof s, "fp32", tokens, chunk, dims);
    ug_result r;
    ug_exec_detail d;
    CHECK(delta_run(s, "sim", &r, &d) == 0 && d.have_oracle, "varlen %s: %s", seqlens, r.message);
    if (!d.have_oracle) return;
    CHECK(r.outcome == UG_OUT_PASS, "varlen %s: %s %s", seqlens, ug_outcome_name(r.outcome), r.message);
    CHECK(d.c.out[1].shape[0] == 2 * (int64_t)ug_p_int(&d.c.params, "seqs"), "varlen %s: ht has %lld state blocks",
          seqlens, (long long)d.c.out[1].shape[0]);
    delta_check_oracle(&d, (float)(1.0 / sqrt(8.0)), 1e-9);
    double e = kernel_vs_naive(&d, (float)(1.0 / sqrt(8.0)));
    printf("varlen %s L=%ld: kernel vs per-sequence recurrence %.3g\n", seqlens, chunk, e);
    CHECK(e < 2e-5, "varlen %s: the kernel differs from the per-sequence rule by %g", seqlens, e);
    ug_exec_detail_free(&d);
}

/* Sequence 0 of a packed case reads the first L_0 tokens and the first Hv state blocks,
 * which are the inputs of the single-sequence case of L_0 tokens (inputs are drawn element
 * by element): its o rows and ht blocks must equal that case's, in the oracle and in the
 * kernel, bit for bit; the later sequences must not change them. */
static void test_first_sequence_is_its_prefix(void)
{
    char packed[2048], alone[2048];
    spec(packed, sizeof packed, "fp32", 77, 32, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4,\"seqlens\":\"45,32\"");
    spec(alone, sizeof alone, "fp32", 45, 32, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4");
    ug_result rp, ra;
    ug_exec_detail dp, da;
    CHECK(delta_run(packed, "sim", &rp, &dp) == 0 && delta_run(alone, "sim", &ra, &da) == 0, "run: %s %s", rp.message,
          ra.message);
    for (int k = 0; k < 2; k++) {
        size_t n = da.c.out[k].numel, diff_kernel = 0, diff_oracle = 0; /* o rows 0..44, ht blocks 0..1: prefixes */
        for (size_t i = 0; i < n; i++) {
            diff_kernel += memcmp(&dp.a[k][i], &da.a[k][i], sizeof(double)) != 0;
            diff_oracle += memcmp(&dp.oracle.gstar[k][i], &da.oracle.gstar[k][i], sizeof(double)) != 0;
        }
        CHECK(n < dp.c.out[k].numel && dp.oracle.sel.n[k] == dp.c.out[k].numel && da.oracle.sel.n[k] == n,
              "output %d: selections not the whole outputs", k);
        CHECK(diff_kernel == 0 && diff_oracle == 0,
              "output %d: sequence 0 differs from its own case in %zu kernel, "
              "%zu oracle elements of %zu",
              k, diff_kernel, diff_oracle, n);
    }
    ug_exec_detail_free(&dp);
    ug_exec_detail_free(&da);
}

static void expect_varlen_variant(const char *variant, long tokens, const char *seqlens, ug_outcome want)
{
    char s[2048], dims[256];
    ug_result r;
    ug_exec_detail d;
    snprintf(dims, sizeof dims, "\"hv\":1,\"hqk\":1,\"dk\":16,\"dv\":8,\"seqlens\":\"%s\"", seqlens);
    spec(s, sizeof s, "fp32", tokens, 32, dims);
    CHECK(delta_run(s, variant, &r, &d) == 0 && r.outcome == want, "%s at seqlens %s, L=32: %s, expected %s", variant,
          seqlens, ug_outcome_name(r.outcome), ug_outcome_name(want));
    ug_exec_detail_free(&d);
}

static void expect_rejected(const char *dtype, long chunk, const char *dims, const char *word)
{
    char s[2048];
    ug_result r;
    ug_exec_detail d;
    spec(s, sizeof s, dtype, 4, chunk, dims);
    int rc = delta_run(s, "sim", &r, &d);
    CHECK(rc < 0 || r.outcome == UG_OUT_ERROR, "%s / chunk %ld / %s accepted", dtype, chunk, dims);
    CHECK(strstr(r.message, word) != NULL, "message \"%s\" does not name %s", r.message, word);
    ug_exec_detail_free(&d);
}

int main(void)
{
    test_chunked_equals_recurrent();
    expect_wy_equals_recurrence(150, 32, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4");  /* four chunks, tail of 22 */
    expect_wy_equals_recurrence(150, 128, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4"); /* one chunk and a tail */
    expect_wy_equals_recurrence(70, 64, "\"hv\":4,\"hqk\":2,\"dk\":8,\"dv\":4,\"qk_norm\":\"l2\"");
    expect_certified_at_reference_draws(128, 128, "\"hv\":1,\"hqk\":1,\"dk\":32,\"dv\":8", 2);
    expect_certified_at_reference_draws(128, 128, "\"hv\":1,\"hqk\":1,\"dk\":64,\"dv\":16", 2);
    expect_variant("mut_double_decay", 32, 32, UG_OUT_PASS); /* one chunk: no border */
    expect_variant("mut_double_decay", 70, 32, UG_OUT_FAIL);
    expect_variant("mut_drop_tail", 64, 32, UG_OUT_PASS); /* no partial chunk */
    expect_variant("mut_drop_tail", 65, 32, UG_OUT_FAIL);
    expect_variant("mut_diag_in_a", 5, 32, UG_OUT_FAIL);
    expect_rejected("fp32", 48, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8", "\"chunk\"");
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":0,\"dk\":8,\"dv\":8", "\"hqk\"");
    expect_rejected("bf16", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8", "dtype");
    test_varlen_equals_per_sequence(104, 32, "70,1,33"); /* two chunks and a tail, a 1-token sequence, one over L */
    test_varlen_equals_per_sequence(40, 64, "20,20");    /* both shorter than a chunk */
    test_first_sequence_is_its_prefix();
    expect_wy_equals_recurrence(104, 32, "\"hv\":2,\"hqk\":1,\"dk\":8,\"dv\":4,\"seqlens\":\"70,1,33\"");
    expect_varlen_variant("sim", 64, "32,32", UG_OUT_PASS);
    expect_varlen_variant("mut_state_across_seqs", 64, "64", UG_OUT_PASS); /* one sequence: nothing to carry */
    expect_varlen_variant("mut_state_across_seqs", 64, "32,32", UG_OUT_FAIL);
    expect_varlen_variant("mut_chunk_past_seq_end", 64, "32,32", UG_OUT_PASS); /* borders on chunk multiples */
    expect_varlen_variant("mut_chunk_past_seq_end", 64, "40,24", UG_OUT_FAIL);
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8,\"seqlens\":\"2,3\"", "seqlens"); /* sum 5 != 4 */
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8,\"seqlens\":\"4,0\"", "seqlens"); /* empty */
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8,\"seqlens\":\"-1,5\"", "seqlens");
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8,\"seqlens\":\"4,x\"", "seqlens");
    return check_done();
}
