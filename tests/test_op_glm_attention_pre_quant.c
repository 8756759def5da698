/* test_op_glm_attention_pre_quant.c — glm_attention_pre_quant beyond the generic plan test:
 * a hand-computed token (n = 1, codes on a .5 tie rounded to even, the GEMM with its bias
 * before the scale, the head norm and a RoPE pair), a differential check of every oracle
 * value against an independent long-double evaluation from the kernel's exported stages,
 * the code rule (a near-tie flip is legal, a flip at an exact tie is not; a one-ulp bf16
 * flip of n passes its rule, three do not), the ties case catching round-half-away, zero and
 * NaN rows as the semantics state them, and bad params refused naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "oracles/verdict.h"
#include "op_check.h"

#define OP "glm_attention_pre_quant"
enum { O_Q, O_K, O_V, O_RES, O_N, O_N8, O_QKMM, O_QKN };

#define NORM_DISTS                                                                                                     \
    "\"norm_weight\":{\"kind\":\"uniform\",\"lo\":0.5,\"hi\":1.5},\"norm_bias\":{\"kind\":\"normal\",\"mean\":0,"      \
    "\"std\":0.1},\"scale_reciprocal\":{\"kind\":\"uniform\",\"lo\":16,\"hi\":48},\"offset\":{\"kind\":\"uniform\","   \
    "\"lo\":-2,\"hi\":2},"
#define GEMM_DISTS                                                                                                     \
    "\"qkv_weight\":{\"kind\":\"randint\",\"lo\":-128,\"hi\":127},\"quant_bias\":{\"kind\":"                           \
    "\"randint\",\"lo\":-2000,\"hi\":2000},\"deq_scale\":{\"kind\":\"uniform\",\"lo\":0.00001,\"hi\":0.00003},"        \
    "\"q_norm_weight\":{\"kind\":\"uniform\",\"lo\":0.5,\"hi\":1.5},\"q_norm_bias\":{\"kind\":\"normal\",\"mean\":0,"  \
    "\"std\":0.1},\"k_norm_weight\":{\"kind\":\"uniform\",\"lo\":0.5,\"hi\":1.5},\"k_norm_bias\":{\"kind\":"           \
    "\"normal\",\"mean\":0,\"std\":0.1},\"cos\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1},\"sin\":{\"kind\":"          \
    "\"uniform\",\"lo\":-1,\"hi\":1}"
#define REST_DISTS NORM_DISTS GEMM_DISTS
#define XR_NORMAL                                                                                                      \
    "\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"residual\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"
#define C(name, v) "\"" name "\":{\"kind\":\"const\",\"value\":" #v "}"

static double bf16(double v) { return ug_dtype_round(UG_DT_BF16, v); }

/* One token, hidden 2, one q and one kv head of 2 dims, rotary 2. x = residual = 1: r = 2,
 * rms = sqrt(4 + eps): n = bf16(1 - eps/8) = 1. n*2.5 + 0 = 2.5, a tie: code 2 (half away:
 * 3). acc = 2*1 + 2*1 = 4, + bias 1 = 5, * 0.25 = 1.25 for every column (bias after the
 * scale: 2). Head [1.25, 1.25] normalises to bf16(1 - ...) = 1; RoPE with cos 0.5, sin
 * 0.25: [0.5 - 0.25, 0.5 + 0.25] = [0.25, 0.75]. */
static void test_known_value(void)
{
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,"
        "\"params\":{\"tokens\":1,\"hidden\":2,\"q_heads\":1,\"kv_heads\":1,\"head_dim\":2,"
        "\"rotary_dim\":2},\"dist\":{" C("x", 1) "," C("residual", 1) "," C("norm_weight", 1) "," C("norm_bias", 0) "," C(
            "scale_reciprocal",
            2.5) "," C("offset",
                       0) "," C("qkv_weight",
                                1) "," C("quant_bias",
                                         1) "," C("deq_scale",
                                                  0.25) "," C("q_norm_weight",
                                                              1) "," C("q_norm_bias",
                                                                       0) "," C("k_norm_weight",
                                                                                1) "," C("k_norm_bias",
                                                                                         0) "," C("cos",
                                                                                                  0.5) "," C("sin",
                                                                                                             0.25) "}}";
    ug_exec_detail d;
    opc_sim_passes(spec, "known value", NULL, &d);
    for (size_t i = 0; i < 2; i++) {
        CHECK(opc_out(&d, O_RES, i) == 2 && opc_out(&d, O_N, i) == 1 && opc_out(&d, O_N8, i) == 2, "stage 1 [%zu]", i);
        CHECK(opc_out(&d, O_QKMM, i) == 1.25 && opc_out(&d, O_V, i) == 1.25 && opc_out(&d, O_QKN, i) == 1,
              "gemm/norm [%zu]: %g %g %g", i, opc_out(&d, O_QKMM, i), opc_out(&d, O_V, i), opc_out(&d, O_QKN, i));
    }
    CHECK(opc_out(&d, O_Q, 0) == 0.25 && opc_out(&d, O_Q, 1) == 0.75 && opc_out(&d, O_K, 0) == 0.25 &&
              opc_out(&d, O_K, 1) == 0.75,
          "rope: q %g %g k %g %g", opc_out(&d, O_Q, 0), opc_out(&d, O_Q, 1), opc_out(&d, O_K, 0), opc_out(&d, O_K, 1));
    if (d.have_oracle) CHECK(d.oracle.gstar[O_N8][0] == 2.0, "the tie is decided to the even code");
    ug_exec_detail_free(&d);
    opc_expect_mutants_fail(spec, (const char *const[]){"mut_half_away", "mut_bias_after_deq", NULL});
}

/* sqrt(sum v^2/n + eps) in long double. */
static long double den_ld(const double *v, size_t n, double eps)
{
    long double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (long double)v[i] * v[i];
    return sqrtl(ss / n + eps);
}

typedef struct {
    size_t T, H, Nq, Nk, D, R;
    double eps;
} dims;

/* Mismatches of the oracle's rounded values g against the naive ones, stage by stage. */
static size_t diff_token(const ug_exec_detail *d, const dims *s, size_t t)
{
    size_t bad = 0, H = s->H, D = s->D, qk = (s->Nq + s->Nk) * D, cols = qk + s->Nk * D;
    double r[64], head[64];
    for (size_t i = 0; i < H; i++) r[i] = opc_in(d, "x", t * H + i) + opc_in(d, "residual", t * H + i);
    long double den = den_ld(r, H, s->eps);
    for (size_t i = 0; i < H; i++) {
        double n = bf16((double)(r[i] / den * opc_in(d, "norm_weight", i) + opc_in(d, "norm_bias", i)));
        bad += d->oracle.g[O_N][t * H + i] != n;
        double v = opc_out(d, O_N, t * H + i) * opc_in(d, "scale_reciprocal", i) + opc_in(d, "offset", i);
        bad += d->oracle.g[O_N8][t * H + i] != ug_dtype_round(UG_DT_INT8, v);
    }
    for (size_t c = 0; c < cols; c++) {
        long long acc = 0;
        for (size_t k = 0; k < H; k++)
            acc += (long long)opc_out(d, O_N8, t * H + k) * opc_in(d, "qkv_weight", k * cols + c);
        double mm =
            bf16((double)((long double)(acc + (long long)opc_in(d, "quant_bias", c)) * opc_in(d, "deq_scale", c)));
        bad += c < qk ? d->oracle.g[O_QKMM][t * qk + c] != mm : d->oracle.g[O_V][t * s->Nk * D + c - qk] != mm;
    }
    for (size_t h = 0; h < s->Nq + s->Nk; h++) {
        const char *w = h < s->Nq ? "q_norm_weight" : "k_norm_weight", *b = h < s->Nq ? "q_norm_bias" : "k_norm_bias";
        for (size_t i = 0; i < D; i++) head[i] = opc_out(d, O_QKMM, t * qk + h * D + i);
        long double hd = den_ld(head, D, s->eps);
        for (size_t i = 0; i < D; i++)
            bad += d->oracle.g[O_QKN][t * qk + h * D + i] !=
                   bf16((double)(head[i] / hd * opc_in(d, w, i) + opc_in(d, b, i)));
        for (size_t i = 0; i < D; i++) head[i] = opc_out(d, O_QKN, t * qk + h * D + i);
        for (size_t i = 0; i < D; i++) {
            size_t hr = s->R / 2, j = i < hr ? i : i - hr;
            long double c = opc_in(d, "cos", t * hr + j), sn = opc_in(d, "sin", t * hr + j);
            long double o = i >= s->R ? head[i]
                            : i < hr  ? head[i] * c - head[i + hr] * sn
                                      : head[i] * c + head[i - hr] * sn;
            size_t at = h < s->Nq ? t * s->Nq * D + h * D + i : t * s->Nk * D + (h - s->Nq) * D + i;
            bad += d->oracle.g[h < s->Nq ? O_Q : O_K][at] != bf16((double)o);
        }
    }
    return bad;
}

static void test_differential(void)
{
    const dims s = {5, 40, 2, 1, 16, 8, (double)1e-5f};
    const char *spec = "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":42,"
                       "\"params\":{\"tokens\":5,\"hidden\":40,\"q_heads\":2,\"kv_heads\":1,\"head_dim\":16,"
                       "\"rotary_dim\":8},\"dist\":{" XR_NORMAL REST_DISTS "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    size_t bad = 0;
    for (size_t t = 0; t < s.T; t++) bad += diff_token(&d, &s, t);
    CHECK(d.oracle.sel.n[O_N] == s.T * s.H && d.oracle.sel.n[O_Q] == s.T * s.Nq * s.D, "every element checked");
    CHECK(bad == 0, "%zu oracle values differ from the naive evaluation", bad);
    ug_exec_detail_free(&d);
}

/* The declared rules: a code one off is legal only within 2^-16 quanta (+ 2^-23 |g*|) of
 * the .5 boundary, never where the oracle decided an exact tie (g* is then the code); a
 * one-ulp bf16 flip of n passes its 1e-4 + 2^-7|g| rule and a three-ulp error does not. */
static void test_rules(void)
{
    const ug_op_def *def = ug_op_def_get(ug_op_find(OP));
    CHECK(def != NULL, "op linked");
    if (!def) return;
    const ug_output_rule *n8 = &def->outputs[O_N8], *n = &def->outputs[O_N];
    double gs = 5.5 - 0x1p-20, budget = n8->pypto_atol + n8->pypto_rtol * fabs(gs);
    CHECK(ug_boundary_ok(6, 5, gs, 1, budget), "a near-tie flip is legal");
    CHECK(!ug_boundary_ok(6, 5, 5.5 - 0x1p-12, 1, n8->pypto_atol + n8->pypto_rtol * 5.5), "a flip 2^-12 away is not");
    CHECK(!ug_boundary_ok(7, 6, 6.0, 1, n8->pypto_atol + n8->pypto_rtol * 6.0), "a decided tie admits no flip");
    const double g[] = {1.0, 1.9921875, 0.5, -3.0};
    for (int i = 0; i < 4; i++) {
        double u = ug_dtype_ulp(UG_DT_BF16, g[i]), tol = n->pypto_atol + n->pypto_rtol * fabs(g[i]);
        CHECK(u <= tol && 3 * u > tol, "n rule at %g: ulp %g tol %g", g[i], u, tol);
    }
}

/* The ties inputs (n = integer bias, scale 1, offset 0.5): sim passes, round half away
 * fails on the codes. */
static void test_ties(void)
{
    const char *buf =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":5,"
        "\"params\":{\"tokens\":2,\"hidden\":64,\"q_heads\":1,\"kv_heads\":1,\"head_dim\":32,"
        "\"rotary_dim\":16},\"dist\":{" XR_NORMAL C(
            "norm_weight",
            0) ",\"norm_bias\":{\"kind\":\"randint\",\"lo\":-300,\"hi\":300}," C("scale_reciprocal",
                                                                                 1) "," C("offset", 0.5) "," GEMM_DISTS
                                                                                                         "}}";
    for (int v = 0; v < 2; v++) {
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(buf, v ? "mut_half_away" : "sim", &r, &d) == 0, "ties ran");
        CHECK(r.outcome == (v ? UG_OUT_FAIL : UG_OUT_PASS), "ties %s: %s %s", v ? "half away" : "sim",
              ug_outcome_name(r.outcome), r.message);
        CHECK(opc_out_verdict(&r, "n_i8", UG_STD_BOUNDARY_AWARE) == (v ? UG_V_FAIL : UG_V_PASS), "n_i8 verdict");
        ug_exec_detail_free(&d);
    }
}

/* Token 1 all zero: r = 0, n = norm_bias. Token 2 holds a NaN in x: its n row NaN, codes 0. */
static void test_zero_and_nan_rows(void)
{
    const size_t H = 8;
    const char *spec =
        "{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":7,"
        "\"params\":{\"tokens\":3,\"hidden\":8,\"q_heads\":1,\"kv_heads\":1,\"head_dim\":4,"
        "\"rotary_dim\":2},\"dist\":{" XR_NORMAL REST_DISTS "},\"inject\":["
        "{\"input\":\"x\",\"i\":8,\"v\":0},{\"input\":\"x\",\"i\":9,\"v\":0},{\"input\":\"x\",\"i\":10,\"v\":0},"
        "{\"input\":\"x\",\"i\":11,\"v\":0},{\"input\":\"x\",\"i\":12,\"v\":0},{\"input\":\"x\",\"i\":13,\"v\":0},"
        "{\"input\":\"x\",\"i\":14,\"v\":0},{\"input\":\"x\",\"i\":15,\"v\":0},"
        "{\"input\":\"residual\",\"i\":8,\"v\":0},{\"input\":\"residual\",\"i\":9,\"v\":0},"
        "{\"input\":\"residual\",\"i\":10,\"v\":0},{\"input\":\"residual\",\"i\":11,\"v\":0},"
        "{\"input\":\"residual\",\"i\":12,\"v\":0},{\"input\":\"residual\",\"i\":13,\"v\":0},"
        "{\"input\":\"residual\",\"i\":14,\"v\":0},{\"input\":\"residual\",\"i\":15,\"v\":0},"
        "{\"input\":\"x\",\"i\":17,\"v\":\"nan\"}]}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "zero/NaN rows", NULL, &d)) return;
    for (size_t i = 0; i < H; i++) {
        CHECK(opc_out(&d, O_N, H + i) == opc_in(&d, "norm_bias", i) &&
                  d.oracle.gstar[O_N][H + i] == opc_in(&d, "norm_bias", i),
              "zero row: n = bias at %zu", i);
        CHECK(isnan(opc_out(&d, O_N, 2 * H + i)) && opc_out(&d, O_N8, 2 * H + i) == 0, "NaN row at %zu", i);
        CHECK(d.oracle.gstar[O_N8][2 * H + i] == 0.0, "NaN row: oracle code 0 at %zu", i);
    }
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0,\"hidden\":8", "tokens"},
        {"\"hidden\":70000", "hidden"},
        {"\"q_heads\":0,\"hidden\":8", "q_heads"},
        {"\"rotary_dim\":3,\"head_dim\":8,\"hidden\":8", "rotary_dim"},
        {"\"rotary_dim\":16,\"head_dim\":8,\"hidden\":8", "rotary_dim"},
        {"\"heads\":8,\"hidden\":8", "heads"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s},"
                            "\"dist\":{" XR_NORMAL REST_DISTS "}}",
                            bad);
}

int main(void)
{
    test_known_value();
    test_differential();
    test_rules();
    test_ties();
    test_zero_and_nan_rows();
    test_bad_params();
    return check_done();
}
