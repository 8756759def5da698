/* test_op_lightning_indexer_prolog_quant_fp8.c — checks of the fp8 indexer prolog beyond
 * the generic plan test: a hand-computed case (all-ones q at position 0 rotates to
 * nothing and Hadamard-transforms to sqrt(D) e_0, so codes are 448, 0, ..., the scale
 * sqrt(D)/448; a constant x.W_k row LayerNorms to beta, likewise), the q scale against an independent
 * double evaluation with the explicit +-1 Hadamard matrix, the slot mapping (distinct
 * slots, -1 for padding, unwritten slots zero), more heads than head dims, bad params, and
 * the codes judged against the oracle's own scale (the views *@oracle_scale): a scale
 * 1.8 % off passes the consistency check of its codes and fails the view; and the
 * reference suite's inputs: a dense all-ones Hadamard maps a row of ones to D in every
 * column (codes 448, scale D/448), and a transposed dense Hadamard fails. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

#define OP "lightning_indexer_prolog_quant_fp8"

static void make_spec_wk(char *buf, size_t len, const char *params, const char *q, const char *wk)
{
    snprintf(buf, len,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":9,\"params\":{%s},\"dist\":{\"q\":%s,"
             "\"x\":{\"kind\":\"const\",\"value\":1},\"w_k\":%s,"
             "\"ln_gamma\":{\"kind\":\"const\",\"value\":1},\"ln_beta\":{\"kind\":\"const\",\"value\":0.5},"
             "\"w_proj\":{\"kind\":\"const\",\"value\":0.25}}}",
             params, q, wk);
}

static void make_spec(char *buf, size_t len, const char *params, const char *q)
{
    make_spec_wk(buf, len, params, q, "{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}");
}

static void known_value(void)
{
    char spec[1024];
    /* x and w_k constant: x.W_k is a constant row, LayerNorm gives beta = 0.5 everywhere */
    make_spec_wk(spec, sizeof spec, "\"tokens\":1,\"hidden\":8,\"heads\":2,\"d\":128,\"blocks\":1,\"block_size\":2",
                 "{\"kind\":\"const\",\"value\":1}", "{\"kind\":\"const\",\"value\":0.1}");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "known value", NULL, &d)) return;
    for (size_t h = 0; h < 2; h++) {
        for (size_t i = 0; i < 128; i++) {
            double want = i == 0 ? 448.0 : 0.0;
            CHECK(d.oracle.g[0][h * 128 + i] == want && d.a[0][h * 128 + i] == want,
                  "q_fp8[%zu,%zu] oracle %g kernel %g", h, i, d.oracle.g[0][h * 128 + i], d.a[0][h * 128 + i]);
        }
        double s = sqrt(128.0) / 448.0;
        CHECK(fabs(d.oracle.gstar[1][h] - s) < 1e-15 && fabs(d.a[1][h] - s) < 1e-7,
              "q_scale[%zu] oracle %.17g kernel %.9g", h, d.oracle.gstar[1][h], d.a[1][h]);
        /* weights = 8 * 0.25 / sqrt(2*128) = 0.125 */
        CHECK(d.oracle.g[4][h] == 0.125 && d.a[4][h] == 0.125, "weights[%zu] %g %g", h, d.oracle.g[4][h], d.a[4][h]);
    }
    long slot = (long)ug_tload(ug_case_input(&d.c, "slot_mapping"), 0);
    CHECK(slot == 0 || slot == 1, "token 0 slot %ld", slot);
    if (slot == 0 || slot == 1) {
        for (size_t i = 0; i < 128; i++) {
            double want = i == 0 ? 448.0 : 0.0, g = d.oracle.g[2][slot * 128 + i], a = d.a[2][slot * 128 + i];
            CHECK(g == want && a == want, "k_cache[%ld,%zu] oracle %g kernel %g", slot, i, g, a);
        }
        double s = 0.5 * sqrt(128.0) / 448.0;
        CHECK(fabs(d.oracle.gstar[3][slot] - s) < 1e-15, "k_scale oracle %.17g want %.17g", d.oracle.gstar[3][slot], s);
    }
    ug_exec_detail_free(&d);
}

/* q_scale = max_i |sum_j (-1)^popcount(i&j) v_j| / sqrt(D) / 448 with v the RoPE'd row. */
static void hadamard_matrix_differential(void)
{
    char spec[1024];
    make_spec(spec, sizeof spec,
              "\"tokens\":3,\"hidden\":4,\"heads\":2,\"d\":64,\"rope\":32,\"pos\":7,\"blocks\":1,\"block_size\":4",
              "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    const ug_tensor *q = ug_case_input(&d.c, "q"), *cs = ug_case_input(&d.c, "cos"), *sn = ug_case_input(&d.c, "sin");
    for (size_t row = 0; row < 6; row++) {
        size_t t = row / 2;
        double v[64], amax = 0;
        for (size_t i = 0; i < 64; i++) v[i] = ug_tload(q, row * 64 + i);
        for (size_t i = 0; i < 16; i++) {
            double c = ug_tload(cs, t * 16 + i), s = ug_tload(sn, t * 16 + i), a = v[i], b = v[i + 16];
            CHECK(fabs(c * c + s * s - 1.0) < 0.02, "cos^2+sin^2 of token %zu pair %zu is %g", t, i, c * c + s * s);
            v[i] = a * c - b * s;
            v[i + 16] = b * c + a * s;
        }
        for (size_t i = 0; i < 64; i++) {
            double acc = 0;
            for (size_t j = 0; j < 64; j++) acc += __builtin_popcount((unsigned)(i & j)) % 2 ? -v[j] : v[j];
            amax = fmax(amax, fabs(acc) / 8.0);
        }
        CHECK(fabs(d.oracle.gstar[1][row] - amax / 448.0) <= 1e-12 * amax, "q_scale[%zu] oracle %.17g matrix %.17g",
              row, d.oracle.gstar[1][row], amax / 448.0);
    }
    ug_exec_detail_free(&d);
}

static void slots_and_padding(void)
{
    char spec[1024];
    make_spec(spec, sizeof spec,
              "\"tokens\":6,\"hidden\":16,\"heads\":1,\"d\":32,\"blocks\":2,\"block_size\":5,\"pad\":2",
              "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "slots", NULL, &d)) return;
    int used[10] = {0};
    for (size_t t = 0; t < 6; t++) {
        long s = (long)opc_in(&d, "slot_mapping", t);
        if (t >= 4) {
            CHECK(s == -1, "pad token %zu has slot %ld", t, s);
            continue;
        }
        CHECK(s >= 0 && s < 10 && !used[s], "token %zu slot %ld not a fresh slot", t, s);
        if (s >= 0 && s < 10) used[s] = 1;
    }
    for (size_t s = 0; s < 10; s++) {
        if (used[s]) continue;
        for (size_t i = 0; i < 32; i++)
            CHECK(d.a[2][s * 32 + i] == 0 && d.oracle.g[2][s * 32 + i] == 0, "unwritten slot %zu code %zu not 0", s, i);
        CHECK(d.a[3][s] == 0 && d.oracle.g[3][s] == 0, "unwritten slot %zu scale not 0", s);
    }
    ug_exec_detail_free(&d);
    ug_result m;
    CHECK(opc_run(spec, "mut_pad_slot_wraps", &m, NULL) == 0 && m.outcome == UG_OUT_FAIL,
          "the padding-slot mutant passes a case with padding (%s)", ug_outcome_name(m.outcome));
}

/* More heads than head dims: the weights row (H values) must not spill into other buffers. */
static void many_heads(void)
{
    char spec[1024];
    make_spec(spec, sizeof spec, "\"tokens\":3,\"hidden\":16,\"heads\":100,\"d\":32,\"blocks\":1,\"block_size\":4",
              "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    ug_result r;
    CHECK(opc_run(spec, "sim", &r, NULL) == 0 && r.outcome == UG_OUT_PASS, "heads 100 > d 32: %s %s",
          ug_outcome_name(r.outcome), r.message);
}

static void bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":48", "\"d\""},
        {"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":32,\"rope\":6", "rope"},
        {"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":32,\"pad\":3", "pad"},
        {"\"tokens\":20,\"hidden\":4,\"heads\":1,\"d\":32,\"blocks\":1,\"block_size\":4", "slots"},
        {"\"tokens\":2,\"hidden\":4,\"heads\":0,\"d\":32", "heads"}};
    char fmt[1024];
    make_spec(fmt, sizeof fmt, "%s", "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"); /* the spec, params left as %s */
    OPC_EXPECT_REFUSED_EACH(fmt, bad);
}

static void scale_views(void)
{
    static const char *const outs[] = {"q_fp8", "k_cache"};
    char spec[1024];
    make_spec(spec, sizeof spec, "\"tokens\":4,\"hidden\":16,\"heads\":4,\"d\":64,\"blocks\":2,\"block_size\":4",
              "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    for (int v = 0; v < 2; v++) {
        ug_result r;
        ug_exec_detail d;
        const char *variant = v ? "mut_scale_440" : "sim";
        CHECK(opc_run(spec, variant, &r, &d) == 0, "%s ran", variant);
        for (int i = 0; i < 2; i++) {
            char view[64];
            snprintf(view, sizeof view, "%s@oracle_scale", outs[i]);
            CHECK(opc_out_verdict(&r, outs[i], UG_STD_BOUNDARY_AWARE) == UG_V_PASS,
                  "%s: %s consistent with its own scale", variant, outs[i]);
            CHECK(opc_out_verdict(&r, view, UG_STD_BOUNDARY_AWARE) == (v ? UG_V_FAIL : UG_V_PASS), "%s: %s %s", variant,
                  view, v ? "must fail (scale 1.8 %% off)" : "must pass");
        }
        ug_exec_detail_free(&d);
    }
}

static void dense_hadamard(void)
{
    static const char *ones = "{\"kind\":\"const\",\"value\":1}", *zero = "{\"kind\":\"const\",\"value\":0}";
    char spec[2048];
    snprintf(
        spec, sizeof spec,
        "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":4,\"params\":{\"tokens\":2,\"hidden\":8,\"heads\":2,"
        "\"d\":64,\"blocks\":1,\"block_size\":4,\"tables\":\"given\",\"hadamard\":\"given\",\"k_norm\":\"rmsnorm\"},\"dist\":{\"q\":%s,"
        "\"x\":%s,\"w_k\":%s,\"ln_gamma\":%s,\"ln_beta\":%s,\"w_proj\":%s,\"cos\":%s,\"sin\":%s,"
        "\"hadamard_q\":%s,\"hadamard_k\":%s}}",
        ones, ones, "{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}", ones, zero, ones, ones, zero, ones, ones);
    ug_result r;
    ug_exec_detail d;
    opc_sim_passes(spec, "dense ones", &r, &d);
    for (size_t i = 0; d.have_oracle && i < 2 * 2 * 64; i++)
        CHECK(d.oracle.g[0][i] == 448.0 && d.a[0][i] == 448.0, "q_fp8[%zu] oracle %g kernel %g", i, d.oracle.g[0][i],
              d.a[0][i]);
    for (size_t i = 0; d.have_oracle && i < 4; i++)
        CHECK(d.oracle.gstar[1][i] == 64.0 / 448.0, "q_scale[%zu] %.17g", i, d.oracle.gstar[1][i]);
    ug_exec_detail_free(&d);
    /* (k_norm rmsnorm: a LayerNorm row sums to exactly 0, so the all-ones transform would
     * leave a k row whose exact amax is 0 and whose fp32 value is rounding noise) */
    /* random matrices: H^T is another transform */
    snprintf(spec, sizeof spec,
             "{\"v\":1,\"op\":\"" OP
             "\",\"dtype\":\"bf16\",\"seed\":4,\"params\":{\"tokens\":2,\"hidden\":8,\"heads\":2,"
             "\"d\":64,\"blocks\":1,\"block_size\":4,\"hadamard\":\"given\"},\"dist\":{\"q\":%s,"
             "\"x\":%s,\"w_k\":%s,\"ln_gamma\":%s,\"ln_beta\":%s,\"w_proj\":%s,\"hadamard_q\":%s,\"hadamard_k\":%s}}",
             "{\"kind\":\"normal\",\"mean\":0,\"std\":1}", "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}",
             "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}", ones, zero, ones, "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}",
             "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}");
    opc_sim_passes(spec, "dense random", &r, &d);
    ug_exec_detail_free(&d);
    CHECK(opc_run(spec, "mut_hadamard_transposed", &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "transposed must fail: %s",
          ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

int main(void)
{
    known_value();
    hadamard_matrix_differential();
    slots_and_padding();
    many_heads();
    bad_params();
    scale_views();
    dense_hadamard();
    return check_done();
}
