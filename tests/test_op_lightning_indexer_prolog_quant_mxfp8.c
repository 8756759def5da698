/* test_op_lightning_indexer_prolog_quant_mxfp8.c — checks of the MXFP8 indexer prolog
 * beyond the generic plan test: a hand-computed case (all-ones q at position 0 becomes
 * sqrt(128) e_0: block 0 scale 2^(3-8), code e4m3(sqrt(128)*32) = 352, the other blocks
 * zero with scale 2^-127), the E8M0 scales and codes against an independent double
 * evaluation with the explicit +-1 Hadamard matrix and frexp, saturation (codes within
 * +-448, some at 448, and the non-saturating mutant caught as NaN) and bad params. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

#define OP "lightning_indexer_prolog_quant_mxfp8"

static void make_spec(char *buf, size_t len, const char *params, const char *q, const char *wk)
{
    snprintf(buf, len,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":4,\"params\":{%s},\"dist\":{\"q\":%s,"
             "\"x\":{\"kind\":\"const\",\"value\":1},\"w_k\":%s,"
             "\"ln_gamma\":{\"kind\":\"const\",\"value\":1},\"ln_beta\":{\"kind\":\"const\",\"value\":0.5},"
             "\"w_proj\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}}}",
             params, q, wk);
}

static const char *NORMAL = "{\"kind\":\"normal\",\"mean\":0,\"std\":1}";

/* opc_sim_passes on the case of params, q's and w_k's dists (make_spec), r not kept. */
static int sim_passes(const char *params, const char *q, const char *wk, const char *what, ug_exec_detail *d)
{
    char spec[1024];
    make_spec(spec, sizeof spec, params, q, wk);
    return opc_sim_passes(spec, what, NULL, d);
}

static void known_value(void)
{
    ug_exec_detail d;
    if (!sim_passes("\"tokens\":1,\"hidden\":8,\"heads\":1,\"d\":128,\"blocks\":1,\"block_size\":1",
                    "{\"kind\":\"const\",\"value\":1}", "{\"kind\":\"const\",\"value\":0.1}", "known value", &d))
        return;
    for (int o = 0; o < 4; o += 2) /* q row, then the k row (beta 0.5: half of it, one binade down) */
        for (size_t i = 0; i < 128; i++) {
            double want = i == 0 ? 352.0 : 0.0;
            CHECK(d.oracle.g[o][i] == want && d.a[o][i] == want, "output %d code %zu oracle %g kernel %g", o, i,
                  d.oracle.g[o][i], d.a[o][i]);
        }
    for (size_t b = 0; b < 4; b++) {
        double wq = b ? 0x1p-127 : 0x1p-5, wk = b ? 0x1p-127 : 0x1p-6;
        CHECK(d.oracle.g[1][b] == wq && d.a[1][b] == wq, "q_scale[%zu] oracle %a kernel %a", b, d.oracle.g[1][b],
              d.a[1][b]);
        CHECK(d.oracle.g[3][b] == wk && d.a[3][b] == wk, "k_scale[%zu] oracle %a kernel %a", b, d.oracle.g[3][b],
              d.a[3][b]);
    }
    ug_exec_detail_free(&d);
}

/* Scales 2^(floor(log2 amax)-8) via frexp and codes e4m3(v/scale) from a double
 * evaluation with the explicit Hadamard matrix; also the saturation checks. */
static void differential_and_saturation(void)
{
    char spec[1024];
    make_spec(spec, sizeof spec,
              "\"tokens\":4,\"hidden\":4,\"heads\":4,\"d\":128,\"pos\":3,\"blocks\":1,\"block_size\":4", NORMAL,
              "{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    const ug_tensor *q = ug_case_input(&d.c, "q"), *cs = ug_case_input(&d.c, "cos"), *sn = ug_case_input(&d.c, "sin");
    size_t code_diffs = 0, saturated = 0;
    for (size_t row = 0; row < 16; row++) {
        size_t t = row / 4;
        double v[128], hv[128];
        for (size_t i = 0; i < 128; i++) v[i] = ug_tload(q, row * 128 + i);
        for (size_t i = 0; i < 32; i++) {
            double c = ug_tload(cs, t * 32 + i), s = ug_tload(sn, t * 32 + i), a = v[i], b = v[i + 32];
            v[i] = a * c - b * s;
            v[i + 32] = b * c + a * s;
        }
        for (size_t i = 0; i < 128; i++) {
            double acc = 0;
            for (size_t j = 0; j < 128; j++) acc += __builtin_popcount((unsigned)(i & j)) % 2 ? -v[j] : v[j];
            hv[i] = acc / sqrt(128.0);
        }
        for (size_t b = 0; b < 4; b++) {
            double amax = 0;
            for (size_t i = 0; i < 32; i++) amax = fmax(amax, fabs(hv[b * 32 + i]));
            int e;
            frexp(amax, &e);
            double scale = ldexp(1.0, e - 1 - 8);
            CHECK(d.oracle.g[1][row * 4 + b] == scale, "q_scale[%zu,%zu] oracle %a frexp %a", row, b,
                  d.oracle.g[1][row * 4 + b], scale);
            for (size_t i = 0; i < 32; i++) {
                size_t k = row * 128 + b * 32 + i;
                double want = ug_dtype_round(UG_DT_E4M3, hv[b * 32 + i] / scale), a = d.a[0][k];
                code_diffs += d.oracle.g[0][k] != want;
                CHECK(isfinite(a) && fabs(a) <= 448.0, "code %zu of the kernel is %g", k, a);
                saturated += fabs(a) == 448.0;
            }
        }
    }
    CHECK(code_diffs <= 1, "%zu oracle codes differ from the double evaluation", code_diffs);
    CHECK(saturated > 0, "no code saturated at 448 in 16 rows: the saturation path is untested");
    ug_exec_detail_free(&d);
    ug_result m;
    CHECK(opc_run(spec, "mut_no_saturation", &m, NULL) == 0 && m.outcome == UG_OUT_NONFINITE,
          "the non-saturating mutant gives %s, want NONFINITE", ug_outcome_name(m.outcome));
}

static void bad_params(void)
{
    static const char *const bad[][2] = {{"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":16", "\"d\""},
                                         {"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":32,\"rope\":64", "rope"},
                                         {"\"tokens\":2,\"hidden\":4,\"heads\":1,\"d\":32,\"eps\":-1", "eps"}};
    char fmt[1024];
    make_spec(fmt, sizeof fmt, "%s", NORMAL, NORMAL); /* the spec, params left as %s */
    OPC_EXPECT_REFUSED_EACH(fmt, bad);
}

int main(void)
{
    known_value();
    differential_and_saturation();
    bad_params();
    return check_done();
}
