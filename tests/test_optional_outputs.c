/* test_optional_outputs.c — optional outputs (docs/PLUGINS.md, "Optional outputs"), on
 * flash_attention_mha's softmax_max and softmax_sum (the reference test's M and L):
 * the sentinel an optional output is allocated with and the provided test; the sim kernel's
 * M and L against hand-known values (q = 0: every score is 0, so M = 0 and L = Lk) and a
 * naive double forward on a ragged causal batch (rows that see no key: M = -inf, L = 0),
 * judged PASS under every standard that applies, certified and reference included; the same
 * case with M and L left unwritten is PASS with both NA under every standard and the others
 * judged as before; M written on one element only is NONFINITE (the rest still sentinel);
 * the mutants of M and L fail on their output only; the ideal backend passes both under
 * every standard; and the declaration loader refuses "optional" on an input or as a non-bool. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "fa_mha_check.h"
#include "oracles/verdict.h"
#include "run/exec.h"

#define RAGGED SPEC(NORMAL, "{\"seqlens\":\"5:9,7:3,2:0,33:70\",\"heads\":2,\"head_dim\":16,\"causal\":1}")
static const char *const ML_OUTPUTS[] = {"softmax_max", "softmax_sum", NULL}; /* the optional M and L */
#define OUT_MAX 2
#define OUT_SUM 3

static void check_sentinel(void)
{
    ug_tensor t;
    memset(&t, 0, sizeof t);
    float data[3];
    t.dtype = UG_DT_FP32, t.numel = 3, t.data = data;
    ug_tensor_fill_sentinel(&t);
    CHECK(ug_tensor_provided(&t) == 1, "a tensor that is not optional always counts as provided");
    t.optional = 1;
    CHECK(ug_tensor_provided(&t) == 0, "an optional output holding only the sentinel is not provided");
    CHECK(isnan(data[1]), "the fp32 sentinel is a NaN");
    unsigned u;
    memcpy(&u, &data[2], 4);
    CHECK(u == 0x7FA5A5A5u, "fp32 sentinel 0x%08X, expected 0x7FA5A5A5 (a signalling NaN)", u);
    data[2] = NAN; /* a quiet NaN the kernel wrote: provided */
    CHECK(ug_tensor_provided(&t) == 1, "an output with one element written counts as provided");
    uint16_t h[2];
    t.dtype = UG_DT_BF16, t.numel = 2, t.data = h;
    ug_tensor_fill_sentinel(&t);
    CHECK(h[0] == 0x7FA5 && h[1] == 0x7FA5 && !ug_tensor_provided(&t), "bf16 sentinel 0x%04X", h[0]);
}

/* q = 0: all 40 scores are 0, so M = 0 and L = 40, in oracle and kernel alike. */
static void check_known_values(void)
{
    ug_exec_detail d;
    if (!opc_sim_passes(FA_UNIFORM_SCORES, "uniform-score case", NULL, &d)) return;
    for (int row = 0; row < 3; row++) {
        CHECK(d.oracle.gstar[OUT_MAX][row] == 0.0 && d.a[OUT_MAX][row] == 0.0, "M[%d]: oracle %g kernel %g, expected 0",
              row, d.oracle.gstar[OUT_MAX][row], d.a[OUT_MAX][row]);
        CHECK(d.oracle.gstar[OUT_SUM][row] == 40.0 && d.a[OUT_SUM][row] == 40.0,
              "L[%d]: oracle %g kernel %g, expected 40", row, d.oracle.gstar[OUT_SUM][row], d.a[OUT_SUM][row]);
    }
    ug_exec_detail_free(&d);
}

/* Naive double M and L of row (t, h) of the ragged case; returns the keys the row sees. */
static long naive_max_sum(const ug_case *c, long t, long h, double *m, double *l)
{
    static const long cq[5] = {0, 5, 12, 14, 47}, ck[5] = {0, 9, 12, 12, 82};
    const ug_tensor *q = ug_case_input(c, "q"), *k = ug_case_input(c, "k");
    long H = 2, D = 16, b = 0;
    while (b + 1 < 4 && cq[b + 1] <= t) b++;
    long lq = cq[b + 1] - cq[b], lk = ck[b + 1] - ck[b], n = t - cq[b] + 1 + lk - lq;
    n = n < 0 ? 0 : n > lk ? lk : n;
    double s[128], scale = (float)0.25;
    *m = -INFINITY, *l = 0;
    for (long j = 0; j < n; j++) {
        double dot = 0;
        for (long dd = 0; dd < D; dd++)
            dot += q->values[(t * H + h) * D + dd] * k->values[((ck[b] + j) * H + h) * D + dd];
        s[j] = dot * scale;
        *m = fmax(*m, s[j]);
    }
    for (long j = 0; j < n; j++) *l += exp(s[j] - *m);
    return n;
}

static void check_ragged_and_not_provided(void)
{
    ug_result r;
    ug_exec_detail d;
    if (!opc_sim_passes_judged(RAGGED, "ragged causal case", ML_OUTPUTS, &r, &d)) return;
    double worst = 0;
    long empty = 0;
    for (long t = 0; t < 47; t++)
        for (long h = 0; h < 2; h++) {
            double m, l;
            long row = t * 2 + h, n = naive_max_sum(&d.c, t, h, &m, &l);
            double gm = d.oracle.gstar[OUT_MAX][row], gl = d.oracle.gstar[OUT_SUM][row];
            if (n == 0) {
                empty++;
                CHECK(gm == -INFINITY && gl == 0.0 && d.a[OUT_MAX][row] == -INFINITY && d.a[OUT_SUM][row] == 0.0,
                      "row %ld sees no key: M oracle %g kernel %g (-inf), L oracle %g kernel %g (0)", row, gm,
                      d.a[OUT_MAX][row], gl, d.a[OUT_SUM][row]);
                continue;
            }
            worst = fmax(worst, fmax(fabs(gm - m) / (fabs(m) + 1e-3), fabs(gl - l) / l));
        }
    CHECK(empty == 12, "expected 12 rows that see no key, got %ld", empty);
    CHECK(worst < 1e-12, "oracle M/L differ from the naive double forward by %g", worst);

    /* the same outputs, not provided: NA under every standard, the case PASS on o and lse */
    ug_result np;
    opc_withhold_outputs(&d, &r, OUT_MAX, OUT_SUM, "o", &np);
    CHECK(np.outcome == UG_OUT_PASS, "M and L not provided: outcome %s (%s), expected PASS",
          ug_outcome_name(np.outcome), np.message);
    for (int k = OUT_MAX; k <= OUT_SUM; k++) {
        CHECK(np.out[k].not_provided && np.out[k].m.n == 0, "%s: not flagged as not provided", np.out[k].name);
        opc_expect_not_provided(&np, k, np.out[k].name);
    }

    /* one element written, the rest left at the sentinel: provided, and NaN where unwritten */
    ug_dtype_store(UG_DT_FP32, d.c.out[OUT_MAX].data, 0, d.oracle.g[OUT_MAX][0]);
    ug_result part;
    opc_rejudge_result(&d, &part);
    CHECK(part.outcome == UG_OUT_NONFINITE && !part.out[OUT_MAX].not_provided,
          "M written on one element only: outcome %s, expected NONFINITE", ug_outcome_name(part.outcome));
    ug_exec_detail_free(&d);
}

/* A mutant of M or L fails on that output alone. */

static void check_declaration(void)
{
    static const char *const bad[][2] = {
        {"{\"name\": \"x\", \"role\": \"input\", \"dtype\": \"fp32\", \"shape\": \"n\", \"optional\": true}",
         "only a tensor of role output can be optional"},
        {"{\"name\": \"y\", \"role\": \"output\", \"dtype\": \"fp32\", \"shape\": \"n\", \"optional\": 1}",
         "\"optional\" must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char json[1024], err[512] = "";
        snprintf(
            json, sizeof json,
            "{\"op\": \"t\", \"summary\": \"s\", \"dtypes\": \"fp32\", \"semantics\": \"s\", \"params\": [{\"name\": \"n\", \"type\": "
            "\"int\"}], \"tensors\": [%s], \"outputs\": []}",
            bad[i][0]);
        ug_op_def d;
        memset(&d, 0, sizeof d);
        CHECK(ug_op_def_load(&d, "t", json, err, sizeof err) != 0 && strstr(err, bad[i][1]),
              "declaration %zu: expected refusal \"%s\", got \"%s\"", i, bad[i][1], err);
    }
}

/* The mutants of the optional outputs, each {variant, the one output it fails}. */
static const char *const OUTPUT_MUTANTS[][2] = {{"mut_sum_recip", "softmax_sum"}, {"mut_max_log2", "softmax_max"}};

int main(void)
{
    check_sentinel();
    check_declaration();
    check_known_values();
    check_ragged_and_not_provided();
    OPC_EXPECT_OUTPUT_MUTANTS_AND_IDEAL(RAGGED, OUTPUT_MUTANTS, ML_OUTPUTS);
    return check_done();
}
