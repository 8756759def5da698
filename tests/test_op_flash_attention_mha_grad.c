/* test_op_flash_attention_mha_grad.c — checks of flash_attention_mha_grad beyond the
 * generic plan test: the oracle's dq, dk, dv against an independent naive double backward
 * (softmax, then the chain rule written out) on a ragged causal batch with rows that see
 * no key; the o and lse inputs equal the naive double forward rounded to their dtypes;
 * the builder's fast certified forward stores the same bits as flash_attention_mha's
 * oracle run on every element (the engine path), on every element of cases chosen to reach
 * its edges; and bad params rejected with a message naming them. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "core/spec.h"
#include "gen/case.h"
#include "op_check.h"
#include "oracles/attention/flash_attention_forward.h"
#include "run/exec.h"

#define SPEC(params)                                                                                                   \
    "{\"v\":1,\"op\":\"flash_attention_mha_grad\",\"dtype\":\"fp16\",\"seed\":11,\"params\":" params                   \
    ",\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"    \
    "\"v\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"do\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"

enum { H = 2, D = 8, NB = 3, TQ = 17, TK = 14 };
static const long cq[NB + 1] = {0, 5, 12, 17}, ck[NB + 1] = {0, 9, 12, 14}; /* "5:9,7:3,5:2" */

static void check_against_naive(void)
{
    ug_exec_detail d;
    opc_sim_passes(SPEC("{\"seqlens\":\"5:9,7:3,5:2\",\"heads\":2,\"head_dim\":8,\"causal\":1}"), "ragged causal case",
                   NULL, &d);
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

/* Builds spec (whose builder takes the fast path), then rebuilds o and lse on the engine
 * path over the same inputs and compares every element bit for bit. max_engine: the most
 * elements the fast path may have left to the engine (it must do the work, not defer it). */
static void check_fast_forward(const char *spec_text, size_t max_engine)
{
    char err[512] = "";
    ug_case c;
    if (opc_build_case(spec_text, &c)) return;
    ug_tensor *o = ug_case_input_mut(&c, "o"), *lse = ug_case_input_mut(&c, "lse");
    size_t ob = o->numel * ug_dtype_size(o->dtype), lb = lse->numel * ug_dtype_size(lse->dtype);
    unsigned char *fast = malloc(ob + lb);
    size_t n_fast = 0, n_engine = 0, differ = 0, first = 0;
    CHECK(fast != NULL, "out of memory");
    if (fast) {
        memcpy(fast, o->data, ob), memcpy(fast + ob, lse->data, lb);
        CHECK(ug_fa_forward_exact(&c, o, lse, UG_FA_FORWARD_FAST, &n_fast, err, sizeof err) == 0, "fast: %s", err);
        CHECK(memcmp(fast, o->data, ob) == 0 && memcmp(fast + ob, lse->data, lb) == 0,
              "the fast path is not repeatable");
        CHECK(ug_fa_forward_exact(&c, o, lse, UG_FA_FORWARD_ENGINE, &n_engine, err, sizeof err) == 0, "engine: %s",
              err);
        for (int t = 0; t < 2; t++) {
            const ug_tensor *x = t ? lse : o;
            size_t es = ug_dtype_size(x->dtype);
            for (size_t i = 0; i < x->numel; i++)
                if (memcmp(fast + (t ? ob : 0) + i * es, (const unsigned char *)x->data + i * es, es) != 0 && !differ++)
                    first = t ? o->numel + i : i;
        }
    }
    CHECK(differ == 0, "%s: %zu elements differ between the fast and engine paths (first: %s %zu)", spec_text, differ,
          first < o->numel ? "o" : "lse", first < o->numel ? first : first - o->numel);
    CHECK(n_engine == o->numel + lse->numel, "the engine path evaluated %zu of %zu elements", n_engine,
          o->numel + lse->numel);
    printf("fast path: %zu of %zu elements left to the engine, %zu differ\n", n_fast, o->numel + lse->numel, differ);
    CHECK(n_fast <= max_engine, "%s: the fast path left %zu elements to the engine (at most %zu expected)", spec_text,
          n_fast, max_engine);
    free(fast);
    ug_case_free(&c);
}

#define FWD_SPEC(dtype, params, q, k, v)                                                                               \
    "{\"v\":1,\"op\":\"flash_attention_mha_grad\",\"dtype\":\"" dtype "\",\"seed\":5,\"params\":" params               \
    ",\"dist\":{\"q\":" q ",\"k\":" k ",\"v\":" v ",\"do\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
#define N1 "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"

static void check_fast_forward_cases(void)
{
    /* ragged causal batch with rows that see no key or one key; fp16 */
    check_fast_forward(SPEC("{\"seqlens\":\"5:9,7:3,5:2\",\"heads\":2,\"head_dim\":8,\"causal\":1}"), 2);
    /* two row tiles and a tail, key counts and head_dim off the 8-column blocks; bf16 */
    check_fast_forward(FWD_SPEC("bf16", "{\"seqlens\":\"70,33:130\",\"heads\":3,\"head_dim\":12}", N1, N1, N1), 4);
    /* large logits (a peaked softmax, weights underflowing), causal cross lengths */
    check_fast_forward(FWD_SPEC("bf16", "{\"seqlens\":\"130:70,9:300\",\"heads\":2,\"head_dim\":64,\"causal\":1}",
                                "{\"kind\":\"normal\",\"mean\":0,\"std\":6}",
                                "{\"kind\":\"normal\",\"mean\":0,\"std\":6}",
                                "{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":20}"),
                       16);
    /* v all zero: every o is an exact zero, whose sign the engine decides */
    check_fast_forward(FWD_SPEC("fp16", "{\"seqlens\":\"6:11\",\"heads\":2,\"head_dim\":16}", N1, N1,
                                "{\"kind\":\"const\",\"value\":0}"),
                       6 * 2 * 16);
    /* keys overflowing to inf: those rows are the engine's */
    check_fast_forward(FWD_SPEC("bf16", "{\"seqlens\":\"4:6,3:5\",\"heads\":2,\"head_dim\":8}", N1,
                                "{\"kind\":\"wide\",\"lo_exp\":120,\"hi_exp\":135}", N1),
                       7 * 2 * 9);
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
    check_fast_forward_cases();
    check_bad_params();
    return check_done();
}
