/* test_op_flash_attention_mha_grad.c — checks of flash_attention_mha_grad beyond the
 * generic plan test: the oracle's dq, dk, dv against an independent naive double backward
 * (softmax, then the chain rule written out) on a ragged causal batch with rows that see
 * no key; the o and lse inputs equal the naive double forward rounded to their dtypes;
 * and bad params rejected with a message naming them. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "op_check.h"
#include "run/exec.h"

#define SPEC(params)                                                                                                   \
    "{\"v\":1,\"op\":\"flash_attention_mha_grad\",\"dtype\":\"fp16\",\"seed\":11,\"params\":" params                   \
    ",\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"    \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"do\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"

enum { H = 2, D = 8, NB = 3, TQ = 17, TK = 14 };
static const long cq[NB + 1] = {0, 5, 12, 17}, ck[NB + 1] = {0, 9, 12, 14}; /* "5:9,7:3,5:2" */

static void check_against_naive(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"seqlens\":\"5:9,7:3,5:2\",\"heads\":2,\"head_dim\":8,\"causal\":1}"), "sim", &r, &d) == 0 &&
              r.outcome == UG_OUT_PASS,
          "ragged causal case: %s %s", ug_outcome_name(r.outcome), r.message);
    if (!d.have_oracle) return;
    const double *q = ug_case_input(&d.c, "q")->values, *k = ug_case_input(&d.c, "k")->values;
    const double *v = ug_case_input(&d.c, "v")->values, *dout = ug_case_input(&d.c, "do")->values;
    const ug_tensor *o_in = ug_case_input(&d.c, "o"), *lse_in = ug_case_input(&d.c, "lse");
    double dq[TQ * H * D] = {0}, dk[TK * H * D] = {0}, dv[TK * H * D] = {0}, scale = (float)(1.0 / sqrt(8.0));
    long empty = 0;
    double worst_in = 0;
    for (long b = 0; b < NB; b++)
        for (long h = 0; h < H; h++)
            for (long i = 0; i < cq[b + 1] - cq[b]; i++) {
                long t = cq[b] + i, lk = ck[b + 1] - ck[b], n = i + 1 + lk - (cq[b + 1] - cq[b]);
                n = n < 0 ? 0 : n > lk ? lk : n;
                double p[16], dp[16], m = -INFINITY, l = 0, o[D] = {0}, delta = 0;
                for (long j = 0; j < n; j++) {
                    double s = 0;
                    dp[j] = 0;
                    for (long e = 0; e < D; e++) {
                        s += q[(t * H + h) * D + e] * k[((ck[b] + j) * H + h) * D + e];
                        dp[j] += dout[(t * H + h) * D + e] * v[((ck[b] + j) * H + h) * D + e];
                    }
                    p[j] = s * scale;
                    m = fmax(m, p[j]);
                }
                for (long j = 0; j < n; j++) l += (p[j] = exp(p[j] - m));
                for (long j = 0; j < n; j++) {
                    p[j] /= l;
                    delta += p[j] * dp[j];
                    for (long e = 0; e < D; e++) o[e] += p[j] * v[((ck[b] + j) * H + h) * D + e];
                }
                empty += n == 0;
                double lse_in_v = ug_tload(lse_in, (size_t)(t * H + h));
                CHECK(n ? lse_in_v == (float)(m + log(l)) : lse_in_v == -INFINITY, "lse input row %ld", t * H + h);
                for (long e = 0; e < D; e++)
                    worst_in = fmax(worst_in, fabs(ug_tload(o_in, (size_t)((t * H + h) * D + e)) -
                                                   ug_dtype_round(UG_DT_FP16, o[e])));
                for (long j = 0; j < n; j++) {
                    double ds = p[j] * (dp[j] - delta);
                    for (long e = 0; e < D; e++) {
                        size_t kq = (size_t)((t * H + h) * D + e), kk = (size_t)(((ck[b] + j) * H + h) * D + e);
                        dq[kq] += scale * ds * k[kk];
                        dk[kk] += scale * ds * q[kq];
                        dv[kk] += p[j] * dout[kq];
                    }
                }
            }
    CHECK(empty == H * (4 + 3), "expected 14 (row, head) pairs that see no key, got %ld", empty);
    CHECK(worst_in == 0.0, "o input differs from the rounded naive forward by %g", worst_in);
    const double *ref[3] = {dq, dk, dv};
    size_t n[3] = {TQ * H * D, TK * H * D, TK * H * D};
    for (int o = 0; o < 3; o++) {
        double worst = 0;
        for (size_t i = 0; i < n[o]; i++)
            worst = fmax(worst, fabs(d.oracle.gstar[o][i] - ref[o][i]) / (fabs(ref[o][i]) + 1e-6));
        CHECK(worst < 1e-9, "output %d differs from the naive double backward by %g", o, worst);
    }
    ug_exec_detail_free(&d);
}

static void check_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"seqlens\":\"\",\"heads\":1,\"head_dim\":8}", "seqlens"},
        {"{\"seqlens\":\"3\",\"heads\":1,\"head_dim\":0}", "head_dim"},
        {"{\"seqlens\":\"3\",\"heads\":1,\"head_dim\":8,\"causal\":\"yes\"}", "causal"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("%s"), bad);
}

int main(void)
{
    check_against_naive();
    check_bad_params();
    return check_done();
}
