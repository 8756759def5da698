/* test_op_chunked_gated_delta_rule.c — checks of chunked_gated_delta_rule beyond the
 * generic plan test: the oracle against an independent double evaluation of the matrix
 * form; the chunked kernel equals the recurrent rule on every element; the result does
 * not depend on the chunk length (kernel within fp32 noise, oracle bit for bit); the
 * border and tail mutants show exactly where they should; bad params rejected by name. */
#include <stdio.h>
#include <string.h>

#include "delta_naive.h"

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
    expect_variant("mut_double_decay", 32, 32, UG_OUT_PASS); /* one chunk: no border */
    expect_variant("mut_double_decay", 70, 32, UG_OUT_FAIL);
    expect_variant("mut_drop_tail", 64, 32, UG_OUT_PASS); /* no partial chunk */
    expect_variant("mut_drop_tail", 65, 32, UG_OUT_FAIL);
    expect_variant("mut_diag_in_a", 5, 32, UG_OUT_FAIL);
    expect_rejected("fp32", 48, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8", "\"chunk\"");
    expect_rejected("fp32", 32, "\"hv\":1,\"hqk\":0,\"dk\":8,\"dv\":8", "\"hqk\"");
    expect_rejected("bf16", 32, "\"hv\":1,\"hqk\":1,\"dk\":8,\"dv\":8", "dtype");
    return check_done();
}
