/* test_op_lightning_indexer_prolog_quant.c — checks of the int8 indexer prolog beyond the
 * generic plan test: a hand-computed case (constant q_norm.w_qb rows at position 0 rotate to
 * nothing and Hadamard-transform to sqrt(D) c e_0: codes 127, 0, ..., scale fp16(sqrt(D) c
 * /127); a constant x.W_k row LayerNorms to beta, likewise; weights 8*0.25/sqrt(2*128)), the
 * q scales and codes against an independent double evaluation (dequantisation, RoPE and the
 * explicit +-1 Hadamard matrix), zero rows (scale 0, codes 0), fp16 scale overflow (+inf)
 * and underflow (0, codes still 127), the RNE ties of the sim quantiser, the views (a scale
 * 0.8 % off and truncated codes pass the consistency check and fail the views), the slot
 * mutants, and bad params refused naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "kernels/sim/prolog/indexer_prolog_sim.h"
#include "run/exec.h"

#define OP "lightning_indexer_prolog_quant"
#define NORMAL "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"
#define RANDINT "{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}"
enum { O_Q, O_QS, O_KC, O_KS, O_W };

/* A spec with the q source dists given (q_norm, q_norm_scale, w_qb, w_qb_scale) and x, beta. */
static void make_spec(char *buf, size_t len, const char *params, const char *qn, const char *qns, const char *wqs,
                      const char *x, const char *beta)
{
    snprintf(buf, len,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{%s},\"dist\":{\"q_norm\":%s,"
             "\"q_norm_scale\":%s,\"w_qb\":" RANDINT ",\"w_qb_scale\":%s,\"x\":%s,"
             "\"w_k\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1},\"ln_gamma\":{\"kind\":\"const\",\"value\":1},"
             "\"ln_beta\":%s,\"w_proj\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05}}}",
             params, qn, qns, wqs, x, beta);
}

static void make_normal(char *buf, size_t len, const char *params)
{
    make_spec(buf, len, params, RANDINT, "{\"kind\":\"uniform\",\"lo\":0.005,\"hi\":0.05}",
              "{\"kind\":\"uniform\",\"lo\":0.0002,\"hi\":0.002}", NORMAL,
              "{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}");
}

static void known_value(void)
{
    static const char *one = "{\"kind\":\"const\",\"value\":1}";
    char spec[2048];
    snprintf(spec, sizeof spec,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":9,\"params\":{\"tokens\":1,\"hidden\":8,"
             "\"q_lora\":4,\"heads\":2,\"d\":128,\"blocks\":1,\"block_size\":2},\"dist\":{\"q_norm\":%s,"
             "\"q_norm_scale\":{\"kind\":\"const\",\"value\":0.5},\"w_qb\":%s,\"w_qb_scale\":{\"kind\":\"const\","
             "\"value\":0.25},\"x\":%s,\"w_k\":{\"kind\":\"const\",\"value\":0.1},\"ln_gamma\":%s,"
             "\"ln_beta\":{\"kind\":\"const\",\"value\":0.5},\"w_proj\":{\"kind\":\"const\",\"value\":0.25}}}",
             one, one, one, one);
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "known value", NULL, &d)) return;
    double qs = ug_dtype_round(UG_DT_FP16, sqrt(128.0) * 0.5 / 127.0); /* q = 4*0.5*0.25 = 0.5 */
    for (size_t h = 0; h < 2; h++) {
        for (size_t i = 0; i < 128; i++) {
            double want = i == 0 ? 127.0 : 0.0;
            CHECK(d.oracle.g[O_Q][h * 128 + i] == want && d.a[O_Q][h * 128 + i] == want,
                  "q_i8[%zu,%zu] oracle %g kernel %g", h, i, d.oracle.g[O_Q][h * 128 + i], d.a[O_Q][h * 128 + i]);
        }
        CHECK(d.oracle.gstar[O_QS][h] == qs && d.a[O_QS][h] == qs, "q_scale[%zu] oracle %.17g kernel %.9g want %.9g", h,
              d.oracle.gstar[O_QS][h], d.a[O_QS][h], qs);
        CHECK(d.oracle.g[O_W][h] == 0.125 && d.a[O_W][h] == 0.125, "weights[%zu] %g %g", h, d.oracle.g[O_W][h],
              d.a[O_W][h]);
    }
    long slot = (long)ug_tload(ug_case_input(&d.c, "slot_mapping"), 0);
    CHECK(slot == 0 || slot == 1, "token 0 slot %ld", slot);
    if (slot == 0 || slot == 1) {
        for (size_t i = 0; i < 128; i++) {
            double want = i == 0 ? 127.0 : 0.0, g = d.oracle.g[O_KC][slot * 128 + i], a = d.a[O_KC][slot * 128 + i];
            CHECK(g == want && a == want, "k_cache[%ld,%zu] oracle %g kernel %g", slot, i, g, a);
        }
        double ks = ug_dtype_round(UG_DT_FP16, 0.5 * sqrt(128.0) / 127.0);
        CHECK(d.oracle.gstar[O_KS][slot] == ks && d.a[O_KS][slot] == ks, "k_scale oracle %.17g kernel %.9g want %.9g",
              d.oracle.gstar[O_KS][slot], d.a[O_KS][slot], ks);
        CHECK(d.a[O_KS][1 - slot] == 0 && d.a[O_KC][(1 - slot) * 128] == 0, "the unwritten slot is not empty");
    }
    ug_exec_detail_free(&d);
}

/* The exact q row (t, h) in double: dequantised, RoPE'd, explicit +-1 Hadamard / sqrt(D). */
static void naive_q_row(const ug_exec_detail *d, size_t t, size_t h, size_t H, size_t D, size_t L, size_t R, double *u)
{
    double v[64];
    for (size_t i = 0; i < D; i++) {
        double dot = 0;
        for (size_t k = 0; k < L; k++) dot += opc_in(d, "q_norm", t * L + k) * opc_in(d, "w_qb", k * H * D + h * D + i);
        v[i] = dot * opc_in(d, "q_norm_scale", t) * opc_in(d, "w_qb_scale", h * D + i);
    }
    for (size_t i = 0; i < R / 2; i++) {
        double c = opc_in(d, "cos", t * R / 2 + i), s = opc_in(d, "sin", t * R / 2 + i), a = v[i], b = v[i + R / 2];
        v[i] = a * c - b * s;
        v[i + R / 2] = b * c + a * s;
    }
    for (size_t i = 0; i < D; i++) {
        u[i] = 0;
        for (size_t j = 0; j < D; j++) u[i] += __builtin_popcount((unsigned)(i & j)) % 2 ? -v[j] : v[j];
        u[i] /= sqrt((double)D);
    }
}

static void differential(void)
{
    char spec[2048];
    make_normal(spec, sizeof spec,
                "\"tokens\":3,\"hidden\":4,\"q_lora\":24,\"heads\":2,\"d\":64,\"rope\":32,\"pos\":7,\"blocks\":1,"
                "\"block_size\":4");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    for (size_t row = 0; row < 6; row++) {
        double u[64], amax = 0;
        naive_q_row(&d, row / 2, row % 2, 2, 64, 24, 32, u);
        for (size_t i = 0; i < 64; i++) amax = fmax(amax, fabs(u[i]));
        double s = ug_dtype_round(UG_DT_FP16, amax / 127.0), g = d.oracle.gstar[O_QS][row];
        CHECK(fabs(g - s) <= 0x1p-11 * s, "q_scale[%zu] oracle %.17g naive %.17g", row, g, s);
        CHECK(fabs(d.a[O_QS][row] - s) <= 0x1p-10 * s, "q_scale[%zu] kernel %.9g naive %.9g", row, d.a[O_QS][row], s);
        for (size_t i = 0; i < 64; i++) {
            double want = nearbyint(u[i] * 127.0 / amax), a = d.a[O_Q][row * 64 + i];
            CHECK(fabs(a - want) <= 1.0, "q_i8[%zu,%zu] kernel %g naive %g", row, i, a, want);
            CHECK(d.oracle.g[O_Q][row * 64 + i] == a || fabs(d.oracle.g[O_Q][row * 64 + i] - want) <= 1.0,
                  "q_i8[%zu,%zu] oracle %g naive %g", row, i, d.oracle.g[O_Q][row * 64 + i], want);
        }
    }
    ug_exec_detail_free(&d);
}

/* Zero rows, fp16 scale overflow and underflow: the case passes and the scales are 0 / inf / 0. */
static void special_scales(void)
{
    static const struct {
        const char *qn, *qns, *x, *what;
        double scale; /* every q scale */
    } cases[] = {
        {"{\"kind\":\"const\",\"value\":0}", "{\"kind\":\"const\",\"value\":0.01}", "{\"kind\":\"const\",\"value\":0}",
         "zero rows", 0.0},
        {RANDINT, "{\"kind\":\"const\",\"value\":1e30}", NORMAL, "fp16 overflow", INFINITY},
        {RANDINT, "{\"kind\":\"const\",\"value\":1e-12}", NORMAL, "fp16 underflow", 0.0},
    };
    for (int c = 0; c < 3; c++) {
        char spec[2048];
        make_spec(spec, sizeof spec,
                  "\"tokens\":3,\"hidden\":16,\"q_lora\":16,\"heads\":2,\"d\":32,\"blocks\":1,\"block_size\":4",
                  cases[c].qn, cases[c].qns, "{\"kind\":\"const\",\"value\":0.001}", cases[c].x,
                  "{\"kind\":\"const\",\"value\":0}");
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "%s: %s %s", cases[c].what,
              ug_outcome_name(r.outcome), r.message);
        for (size_t row = 0; d.have_oracle && row < 6; row++) {
            CHECK(d.a[O_QS][row] == cases[c].scale && d.oracle.g[O_QS][row] == cases[c].scale,
                  "%s: q_scale[%zu] kernel %g oracle %g", cases[c].what, row, d.a[O_QS][row], d.oracle.g[O_QS][row]);
            double amax = 0;
            for (size_t i = 0; i < 32; i++) amax = fmax(amax, fabs(d.a[O_Q][row * 32 + i]));
            CHECK(amax == (c ? 127.0 : 0.0), "%s: row %zu code amax %g", cases[c].what, row, amax);
        }
        if (c == 0)
            for (size_t s = 0; d.have_oracle && s < 4; s++)
                CHECK(d.a[O_KS][s] == 0, "zero rows: k_scale[%zu] %g", s, d.a[O_KS][s]);
        ug_exec_detail_free(&d);
    }
}

/* The sim quantiser on exact ties: r = 127/127 = 1, so v*r is exact and RNE picks the even code. */
static void ties(void)
{
    float v[32] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.5f, -3.5f}, codes[32], scale;
    static const float rne[8] = {127, 0, 2, 2, 0, -2, 126, -4}, trunc[8] = {127, 0, 1, 2, 0, -2, 126, -3};
    lip_sim_quantise(v, 32, LIP8_INT8, UG_VAR_SIM, codes, &scale);
    for (int i = 0; i < 8; i++) CHECK(codes[i] == rne[i], "tie %g: code %g, want %g", v[i], codes[i], rne[i]);
    CHECK(scale == 1.0f, "scale %g", scale);
    lip_sim_quantise(v, 32, LIP8_INT8, UG_VAR_MUT_TRUNC, codes, &scale);
    for (int i = 0; i < 8; i++) CHECK(codes[i] == trunc[i], "trunc %g: code %g, want %g", v[i], codes[i], trunc[i]);
    float z[32] = {0}, n[32] = {1.0f, NAN};
    lip_sim_quantise(z, 32, LIP8_INT8, UG_VAR_SIM, codes, &scale);
    CHECK(scale == 0.0f && codes[0] == 0.0f, "zero row: scale %g", scale);
    lip_sim_quantise(n, 32, LIP8_INT8, UG_VAR_SIM, codes, &scale);
    CHECK(isnan(scale) && codes[0] == 0.0f, "NaN row: scale %g code %g", scale, codes[0]);
}

/* Scales 0.8 % small and truncated codes are consistent with their own scales; the views fail them. */
static void scale_views(void)
{
    static const char *const outs[] = {"q_i8", "k_cache"};
    char spec[2048];
    make_normal(spec, sizeof spec,
                "\"tokens\":4,\"hidden\":16,\"q_lora\":32,\"heads\":4,\"d\":64,\"blocks\":2,\"block_size\":4");
    for (int v = 0; v < 3; v++) {
        static const char *const variants[] = {"sim", "mut_scale_128", "mut_trunc"};
        ug_result r;
        CHECK(opc_run(spec, variants[v], &r, NULL) == 0, "%s ran", variants[v]);
        for (int i = 0; i < 2; i++) {
            char view[64];
            snprintf(view, sizeof view, "%s@oracle_scale", outs[i]);
            CHECK(opc_out_verdict(&r, outs[i], UG_STD_BOUNDARY_AWARE) == UG_V_PASS, "%s: %s consistent", variants[v],
                  outs[i]);
            CHECK(opc_out_verdict(&r, view, UG_STD_BOUNDARY_AWARE) == (v ? UG_V_FAIL : UG_V_PASS), "%s: %s %s",
                  variants[v], view, v ? "must fail" : "must pass");
        }
        CHECK(r.outcome == (v ? UG_OUT_FAIL : UG_OUT_PASS), "%s: outcome %s", variants[v], ug_outcome_name(r.outcome));
    }
}

/* Slot mutants fail a case with padding; heads 1 hides the missing n^-1/2, heads 4 does not. */
static void part_of_space_mutants(void)
{
    char spec[2048];
    make_normal(spec, sizeof spec,
                "\"tokens\":6,\"hidden\":16,\"q_lora\":8,\"heads\":1,\"d\":32,\"blocks\":2,\"block_size\":5,\"pad\":2");
    static const char *const slot_bugs[] = {"mut_slot_off_by_one", "mut_pad_slot_wraps"};
    for (int i = 0; i < 2; i++) {
        ug_result m;
        CHECK(opc_run(spec, slot_bugs[i], &m, NULL) == 0 && m.outcome == UG_OUT_FAIL, "%s passes (%s)", slot_bugs[i],
              ug_outcome_name(m.outcome));
    }
    ug_result w;
    CHECK(opc_run(spec, "mut_weights_no_heads", &w, NULL) == 0 && w.outcome == UG_OUT_PASS,
          "one head: mut_weights_no_heads is the correct kernel there (%s)", ug_outcome_name(w.outcome));
    make_normal(spec, sizeof spec, "\"tokens\":2,\"hidden\":16,\"q_lora\":8,\"heads\":4,\"d\":32,\"blocks\":1");
    CHECK(opc_run(spec, "mut_weights_no_heads", &w, NULL) == 0 && w.outcome == UG_OUT_FAIL,
          "four heads: mut_weights_no_heads passes (%s)", ug_outcome_name(w.outcome));
    CHECK(opc_run(spec, "mut_ln_no_beta", &w, NULL) == 0 && w.outcome == UG_OUT_FAIL, "mut_ln_no_beta passes (%s)",
          ug_outcome_name(w.outcome));
}

static void bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":4,\"heads\":1,\"d\":48", "\"d\""},
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":4,\"heads\":1,\"d\":32,\"rope\":6", "rope"},
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":4,\"heads\":1,\"d\":32,\"pad\":3", "pad"},
        {"\"tokens\":20,\"hidden\":4,\"q_lora\":4,\"heads\":1,\"d\":32,\"blocks\":1,\"block_size\":4", "slots"},
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":4,\"heads\":0,\"d\":32", "heads"},
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":0,\"heads\":1,\"d\":32", "q_lora"},
        {"\"tokens\":2,\"hidden\":4,\"q_lora\":4,\"heads\":1,\"d\":32,\"rope\":64", "rope"},
    };
    char fmt[2048];
    make_normal(fmt, sizeof fmt, "%s"); /* the spec, params left as %s */
    OPC_EXPECT_REFUSED_EACH(fmt, bad);
}

int main(void)
{
    known_value();
    differential();
    special_scales();
    ties();
    scale_views();
    part_of_space_mutants();
    bad_params();
    return check_done();
}
