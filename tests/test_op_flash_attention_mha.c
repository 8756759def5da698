/* test_op_flash_attention_mha.c — checks of flash_attention_mha beyond the generic plan
 * test: the oracle against an independent naive double evaluation on a ragged causal
 * batch (including rows that see no key and an element with no keys), a known value
 * (q = 0: every score ties, so o is the mean of v and lse = ln Lk), the kernel's
 * o = 0 / lse = -inf on masked rows, and bad params rejected with a message naming them. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "fa_mha_check.h"
#include "run/exec.h"

/* Naive double forward of one row: o[0..D) and lse; returns the visible key count. */
static long naive_row(const ug_case *c, const long *cq, const long *ck, long nb, int causal, double scale, long t,
                      long h, double *o, double *lse)
{
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k"), *v = ug_case_input(c, "v");
    long H = q->shape[1], D = q->shape[2], b = 0;
    while (b + 1 < nb && cq[b + 1] <= t) b++;
    long lq = cq[b + 1] - cq[b], lk = ck[b + 1] - ck[b], i = t - cq[b];
    long n = causal ? i + 1 + lk - lq : lk;
    n = n < 0 ? 0 : n > lk ? lk : n;
    double s[512], m = -INFINITY, l = 0;
    for (long j = 0; j < n; j++) {
        double dot = 0;
        for (long d = 0; d < D; d++) dot += q->values[(t * H + h) * D + d] * k->values[((ck[b] + j) * H + h) * D + d];
        s[j] = dot * scale;
        m = fmax(m, s[j]);
    }
    for (long d = 0; d < D; d++) o[d] = 0;
    for (long j = 0; j < n; j++) {
        double p = exp(s[j] - m);
        l += p;
        for (long d = 0; d < D; d++) o[d] += p * v->values[((ck[b] + j) * H + h) * D + d];
    }
    for (long d = 0; d < D; d++) o[d] = n ? o[d] / l : 0.0;
    *lse = n ? m + log(l) : -INFINITY;
    return n;
}

static void check_against_naive(void)
{
    /* 5:9 causal has 4 unseen keys; 7:3 causal has 4 rows that see nothing; 2:0 has no keys */
    const char *spec = SPEC(NORMAL, "{\"seqlens\":\"5:9,7:3,2:0,33:70\",\"heads\":2,\"head_dim\":16,\"causal\":1}");
    long cq[5] = {0, 5, 12, 14, 47}, ck[5] = {0, 9, 12, 12, 82};
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "ragged causal case", NULL, &d)) return;
    double scale = (float)(1.0 / 4.0), o[16], lse, worst = 0;
    long empty_rows = 0;
    for (long t = 0; t < 47; t++)
        for (long h = 0; h < 2; h++) {
            long n = naive_row(&d.c, cq, ck, 4, 1, scale, t, h, o, &lse);
            long row = t * 2 + h;
            double gl = d.oracle.gstar[1][row], kl = d.a[1][row];
            if (n == 0) {
                empty_rows++;
                CHECK(gl == -INFINITY && kl == -INFINITY, "row %ld sees no key: lse oracle %g kernel %g", row, gl, kl);
            } else {
                worst = fmax(worst, fabs(gl - lse) / fabs(lse));
            }
            for (long dd = 0; dd < 16; dd++) {
                double g = d.oracle.gstar[0][row * 16 + dd];
                if (n == 0)
                    CHECK(g == 0.0 && d.a[0][row * 16 + dd] == 0.0, "row %ld sees no key: o must be 0", row);
                else
                    worst = fmax(worst, fabs(g - o[dd]) / (fabs(o[dd]) + 1e-3));
            }
        }
    CHECK(empty_rows == 2 * (4 + 2), "expected 12 (row, head) pairs that see no key, got %ld", empty_rows);
    CHECK(worst < 1e-12, "oracle differs from the naive double forward by %g", worst);
    ug_exec_detail_free(&d);
}

static void check_uniform_scores(void)
{
    /* q = 0: all 40 scores are 0, so lse = ln 40 and o = mean of v over the 40 keys */
    ug_exec_detail d;
    if (!opc_sim_passes(FA_UNIFORM_SCORES, "uniform-score case", NULL, &d)) return;
    const ug_tensor *v = ug_case_input(&d.c, "v");
    for (long dd = 0; dd < 8; dd++) {
        double mean = 0;
        for (long j = 0; j < 40; j++) mean += v->values[j * 8 + dd];
        mean /= 40;
        CHECK(fabs(d.oracle.gstar[0][dd] - mean) < 1e-15, "o[0,0,%ld] = %.17g, mean of v %.17g", dd,
              d.oracle.gstar[0][dd], mean);
    }
    CHECK(fabs(d.oracle.gstar[1][2] - log(40.0)) < 1e-15, "lse = %.17g, expected ln 40", d.oracle.gstar[1][2]);
    ug_exec_detail_free(&d);
}

static void check_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"seqlens\":\"4:x\",\"heads\":1,\"head_dim\":8}", "seqlens"},
        {"{\"seqlens\":\"0:4\",\"heads\":1,\"head_dim\":8}", "seqlens"},
        {"{\"seqlens\":\"4\",\"heads\":0,\"head_dim\":8}", "heads"},
        {"{\"seqlens\":\"4\",\"heads\":1,\"head_dim\":8,\"causal\":2}", "causal"},
        {"{\"seqlens\":\"4\",\"heads\":1,\"head_dim\":8,\"scale\":-1}", "scale"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC(NORMAL, "%s"), bad);
}

int main(void)
{
    check_against_naive();
    check_uniform_scores();
    check_bad_params();
    return check_done();
}
