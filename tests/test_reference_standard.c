/* test_reference_standard.c — the `reference` standard (the reference test's own rule,
 * oracles/verdict.c) on hand-built outputs: an element just inside and just outside
 * atol + rtol*|g|, a ratio budget at its edge and one past it, budget 0 as "every element"
 * (assert_allclose), NA on an output without a reference rule, and the re-check margin
 * seeing a reference rule tighter than the pypto one. Then the declarations: the ops with a
 * reference test carry a reference rule with its source on every numeric output it judges;
 * a malformed reference key in a declaration is refused with the key named. The test's own
 * golden (reference_golden): an element within the rule of it or of the exact value passes,
 * one outside both fails, a NaN golden leaves the exact value alone to judge, the margin
 * takes the nearer; the ops that declare one compute one, and a declaration that says so
 * without the function (or the reverse) is refused. A topk_set output's id compare
 * (reference_group: the test's topk_idx_compare) on hand-built ids: groups of 4 with one
 * miss allowed, a reordered group passing, two golden ids missing from one group failing
 * while the same two misses split across groups pass, golden ids that only moved across a
 * group's edge counting as missing, and the thresholds saying so. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/ops.h"
#include "oracles/figure.h"
#include "oracles/verdict.h"

#define N_MAX 2048

static double a_[N_MAX], g_[N_MAX], t_[N_MAX];
static size_t idx_[N_MAX];

static ug_vstate judge(const ug_output_rule *rule, size_t n, char *thr)
{
    ug_metrics m;
    for (size_t i = 0; i < n; i++) idx_[i] = i;
    ug_metrics_compute(UG_DT_FP32, n, idx_, n, a_, g_, NULL, &m);
    ug_judged j = {"y", UG_DT_FP32, rule, 0, n, idx_, a_, g_, g_, NULL, &m};
    return ug_standard_judge(UG_STD_REFERENCE, &j, thr, UG_THR_LEN);
}

static void fill(size_t n, double g)
{
    for (size_t i = 0; i < n; i++) a_[i] = g_[i] = g;
}

static ug_output_rule rule_of(double atol, double rtol, double budget)
{
    ug_output_rule r = {"y", UG_CMP_NUMERIC, 1, 1, 0.5};
    r.has_reference = 1, r.reference_atol = atol, r.reference_rtol = rtol, r.reference_budget = budget;
    r.reference_source = "test";
    return r;
}

static void element_edge(void)
{
    char thr[UG_THR_LEN];
    ug_output_rule r = rule_of(1e-4, 0x1p-7, 0); /* AdamW's assert_allclose: every element */
    fill(4, 2.0);                                /* limit 1e-4 + 2/128 = 0.0157250 */
    a_[2] = 2.0 + 0.0157;
    CHECK(judge(&r, 4, thr) == UG_V_PASS, "just inside atol + rtol*|g|: %s", thr);
    a_[2] = 2.0 + 0.01575;
    CHECK(judge(&r, 4, thr) == UG_V_FAIL && strstr(thr, "\"failed\":1"), "just outside: %s", thr);
    a_[2] = 2.0 - 0.01575; /* the sign does not matter */
    CHECK(judge(&r, 4, thr) == UG_V_FAIL, "just outside below: %s", thr);
    fill(4, 0.0); /* at g = 0 only atol counts */
    a_[0] = 0.99e-4;
    CHECK(judge(&r, 4, thr) == UG_V_PASS, "within atol at 0: %s", thr);
    a_[0] = 1.01e-4;
    CHECK(judge(&r, 4, thr) == UG_V_FAIL, "past atol at 0: %s", thr);
}

static void ratio_budget(void)
{
    char thr[UG_THR_LEN];
    ug_output_rule r = rule_of(0, 1e-3, 0.005); /* chunked GDR: rtol 1e-3, 0.5 % may fail */
    fill(1000, 1.0);
    for (int i = 0; i < 5; i++) a_[i] = 1.002;
    CHECK(judge(&r, 1000, thr) == UG_V_PASS && strstr(thr, "\"allowed\":5"), "5 of 1000 allowed: %s", thr);
    a_[5] = 1.002;
    CHECK(judge(&r, 1000, thr) == UG_V_FAIL && strstr(thr, "\"failed\":6"), "6 of 1000 fail: %s", thr);
    r.reference_budget = 0;
    fill(1000, 1.0);
    a_[999] = 1.002;
    CHECK(judge(&r, 1000, thr) == UG_V_FAIL, "budget 0: one element fails the output: %s", thr);
}

static void without_reference(void)
{
    char thr[UG_THR_LEN];
    ug_output_rule r = {"y", UG_CMP_NUMERIC, 1e-3, 1e-3, 0.005};
    fill(8, 1.0);
    a_[0] = 100;
    CHECK(judge(&r, 8, thr) == UG_V_NA && strstr(thr, "no reference"), "no rule: NA (%s)", thr);
    CHECK(judge(NULL, 8, thr) == UG_V_NA, "no output rule at all: NA");
}

static void margin_sees_reference(void)
{
    ug_output_rule r = rule_of(1e-6, 0, 0); /* far tighter than pypto's 1 + 1*|g| */
    fill(4, 1.0);
    a_[1] = 1.0 + 0.9e-6;
    ug_metrics m;
    for (size_t i = 0; i < 4; i++) idx_[i] = i;
    ug_metrics_compute(UG_DT_FP32, 4, idx_, 4, a_, g_, NULL, &m);
    ug_judged j = {"y", UG_DT_FP32, &r, 0, 4, idx_, a_, g_, g_, NULL, &m};
    double margin = ug_tolerance_margin(&j);
    CHECK(margin > UG_RECHECK_MARGIN && margin < 1, "margin %g: a sample near the reference edge is re-checked",
          margin);
}

/* The reference rule against the test's own golden t_ beside g_. */
static ug_vstate judge_golden(const ug_output_rule *rule, size_t n, char *thr, double *margin)
{
    ug_metrics m;
    for (size_t i = 0; i < n; i++) idx_[i] = i;
    ug_metrics_compute(UG_DT_FP32, n, idx_, n, a_, g_, NULL, &m);
    ug_judged j = {"y", UG_DT_FP32, rule, 0, n, idx_, a_, g_, g_, NULL, &m, NULL, 0, t_};
    *margin = ug_tolerance_margin(&j);
    return ug_standard_judge(UG_STD_REFERENCE, &j, thr, UG_THR_LEN);
}

static void test_golden(void)
{
    char thr[UG_THR_LEN];
    double margin;
    ug_output_rule r = rule_of(1e-4, 0, 0); /* every element within 1e-4 */
    fill(4, 1.0);
    for (int i = 0; i < 4; i++) t_[i] = 1.001; /* the test's golden rounds differently */
    a_[1] = 1.001;                             /* the kernel makes the golden's rounding */
    CHECK(judge_golden(&r, 4, thr, &margin) == UG_V_PASS && strstr(thr, "\"failed\":0,\"used\":") &&
              strstr(thr, "\"golden\":\"exact or test\",\"failed_exact\":1}"),
          "within the rule of the test's golden (the exact value alone fails one): %s", thr);
    CHECK(margin < 0.5, "the margin takes the nearer of the two goldens: %g", margin);
    a_[2] = 1.0005; /* half way: outside both */
    CHECK(judge_golden(&r, 4, thr, &margin) == UG_V_FAIL && strstr(thr, "\"failed\":1"), "outside both: %s", thr);
    CHECK(margin > 1, "margin past 1 when outside both: %g", margin);
    a_[2] = 1.0;
    t_[1] = NAN; /* no golden here: the exact value alone judges */
    CHECK(judge_golden(&r, 4, thr, &margin) == UG_V_FAIL, "a NaN golden leaves the exact value to judge: %s", thr);
    t_[1] = 1.001;
    char thr2[UG_THR_LEN];
    CHECK(judge(&r, 4, thr2) == UG_V_FAIL && strstr(thr2, "\"golden\":\"exact\""),
          "without the test's golden the same kernel fails against the exact value: %s", thr2);
    /* the ops that declare one compute one (core/ops.c refuses the mismatch at load) */
    int declared = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        for (int i = 0; d && i < d->n_outputs; i++)
            if (d->outputs[i].reference_golden) {
                declared++;
                CHECK(d->reference_golden && d->outputs[i].has_reference, "%s.%s: golden declared and computed",
                      ug_op_name(op), d->outputs[i].name);
            }
    }
    CHECK(declared == 14,
          "%d outputs declare the test's golden (flash_attention_mha o, its gradient's dq dk dv, "
          "page_attention o, lightning_indexer_prolog_quant weights q_scale k_scale, the sparse quant "
          "attentions' o, mla_indexer_prolog_quant weights k_scale, glm_attention_fusion o, "
          "lightning_indexer_quant topk_idx: its ids)",
          declared);
}

static void declarations(void)
{
    int with = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        if (!d) continue;
        int numeric = 0, ref = 0;
        for (int i = 0; i < d->n_outputs; i++) {
            const ug_output_rule *o = &d->outputs[i];
            if (o->cmp != UG_CMP_NUMERIC) continue;
            numeric++;
            if (!o->has_reference) continue;
            ref++;
            CHECK(o->reference_source && strstr(o->reference_source, "tests/ops/"), "%s.%s: source names the test",
                  ug_op_name(op), o->name);
        }
        /* Outputs the reference test does not compare carry no reference rule: flash_attention_mha's lse (its test
         * judges L and M, which the op does not output), and the staged intermediates our fused ops export so a
         * legal flip cannot cascade (pre_quant's n/n_i8/qk_mm/qk_norm, the MoE router's logits and act, the shared
         * expert's scales and activation, the fused prolog's q_norm codes and scale, the all-reduce's optional
         * partials). Every other op judges all its
         * numeric outputs by the reference or none (mla_prolog all five: the non-quantised test's qNope, qRope, kv,
         * kr and qNorm). */
        int staged = op == UG_OP_FLASH_ATTENTION_MHA || op == UG_OP_GLM_ATTENTION_PRE_QUANT ||
                     op == UG_OP_GLM_ATTENTION_FUSION || op == UG_OP_GLM_MOE_FUSION ||
                     op == UG_OP_MLA_INDEXER_PROLOG_QUANT || op == UG_OP_GLM_FFN_SHARED_EXPERT_QUANT ||
                     op == UG_OP_MATMUL_ALLREDUCE_ADD_RMSNORM;
        CHECK(ref == numeric || ref == 0 || (staged && ref > 0), "%s: reference rule on %d of %d numeric outputs",
              ug_op_name(op), ref, numeric);
        with += ref > 0;
    }
    CHECK(with == 27, "%d implemented ops carry a reference rule (27 have a reference test that judges them)", with);
    const ug_op_def *adamw = ug_op_def_get(UG_OP_APPLY_ADAMW);
    CHECK(adamw && adamw->outputs[0].has_reference && adamw->outputs[0].reference_atol == 1e-4 &&
              adamw->outputs[0].reference_rtol == 0x1p-7 && adamw->outputs[0].reference_budget == 0,
          "apply_adamw w_out: the reference test's assert_allclose 1e-4 / 2^-7, every element");
    const ug_op_def *mla = ug_op_def_get(UG_OP_MLA_PROLOG);
    for (int i = 0; mla && i < mla->n_outputs; i++) {
        const ug_output_rule *o = &mla->outputs[i];
        int cache = !strcmp(o->name, "kv_cache") || !strcmp(o->name, "kr_cache");
        int q = !strcmp(o->name, "q_nope_abs") || !strcmp(o->name, "q_rope");
        if (!cache && !q) continue;
        CHECK(
            o->has_reference && o->reference_atol == (cache ? 1e-4 : 0.005) && o->reference_rtol == 0x1p-7 &&
                o->reference_budget == (cache ? 0 : 0.005),
            "mla_prolog %s: the non-quantised test's compare (qNope/qRope 0.005 / 2^-7 / 0.005, kv/kr 1e-4 / 2^-7 / 0)",
            o->name);
    }
}

static void strict_loading(void)
{
    static const char *const bad[][2] = {
        {"\"reference_atol\": 1e-4", "reference_rtol"}, /* half a rule */
        {"\"reference_atol\": 1e-4, \"reference_rtol\": 0, \"reference_source\": \"t\", \"reference_budget\": 2",
         "reference_budget"}, /* not a share */
        {"\"reference_atol\": -1, \"reference_rtol\": 0, \"reference_source\": \"t\"", "reference_atol"},
        {"\"reference_atol\": 1, \"reference_rtol\": 0", "reference_source"}, /* no source */
        {"\"reference_tol\": 1", "reference_tol"},                            /* a typo */
        {"\"reference_golden\": \"g\"", "needs a reference rule"},            /* golden, no rule */
        {"\"reference_atol\": 1, \"reference_rtol\": 0, \"reference_source\": \"t\", \"reference_golden\": \"g\"",
         "computes none"}, /* declared, but no function */
        {"\"reference_atol\": 1, \"reference_rtol\": 0, \"reference_source\": \"t\", \"reference_golden\": 3",
         "reference_golden"}, /* not a text */
        {"\"reference_atol\": 1, \"reference_rtol\": 0, \"reference_source\": \"t\", \"reference_unjudged\": \"w\"",
         "reference_unjudged"},                              /* a rule and a reason for none */
        {"\"reference_unjudged\": 1", "reference_unjudged"}, /* not a text */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char json[1024], err[512];
        snprintf(json, sizeof json,
                 "{\"op\": \"attn_softmax\", \"summary\": \"s\", \"dtypes\": \"fp32\", \"semantics\": \"s\","
                 " \"params\": [{\"name\": \"rows\", \"type\": \"int\", \"default\": \"1\"}],"
                 " \"tensors\": [{\"name\": \"y\", \"role\": \"output\", \"dtype\": \"case\", \"shape\": \"rows\"}],"
                 " \"outputs\": [{\"name\": \"y\", \"compare\": \"numeric\", %s}]}",
                 bad[i][0]);
        ug_op_def d = {0};
        err[0] = 0;
        CHECK(ug_op_def_load(&d, "attn_softmax", json, err, sizeof err) != 0 && strstr(err, bad[i][1]),
              "declaration with %s refused naming %s: %s", bad[i][0], bad[i][1], err);
    }
}

/* A golden function without a declaration that uses it is refused too. */
static int no_golden(const ug_case *c, const struct ug_selection *sel, double **out, char *err, size_t errlen)
{
    (void)c, (void)sel, (void)out, (void)err, (void)errlen;
    return 0;
}

static void golden_without_declaration(void)
{
    char err[512] = "";
    ug_op_def d = {.reference_golden = no_golden};
    const char *json =
        "{\"op\": \"attn_softmax\", \"summary\": \"s\", \"dtypes\": \"fp32\", \"semantics\": \"s\","
        " \"params\": [{\"name\": \"rows\", \"type\": \"int\", \"default\": \"1\"}],"
        " \"tensors\": [{\"name\": \"y\", \"role\": \"output\", \"dtype\": \"case\", \"shape\": \"rows\"}],"
        " \"outputs\": [{\"name\": \"y\", \"compare\": \"numeric\"}]}";
    CHECK(ug_op_def_load(&d, "attn_softmax", json, err, sizeof err) != 0 && strstr(err, "no output rule declares"),
          "a golden function no output declares is refused: %s", err);
}

/* The test's topk_idx_compare on a topk_set output: groups of 4 ids, int(4 * 0.25) = 1 miss
 * allowed per group. a_ the kernel's ids, t_ the golden's (the op's reference golden). */
static ug_vstate judge_ids(size_t n, const double *kernel, const double *golden, char *thr)
{
    ug_output_rule r = {"ids", UG_CMP_TOPK, 0, 0, 0};
    r.has_reference = 1, r.reference_atol = 0.25, r.reference_group = 4;
    r.reference_source = "test", r.reference_golden = "the test's top-k";
    ug_metrics m;
    for (size_t i = 0; i < n; i++) idx_[i] = i, a_[i] = kernel[i], t_[i] = golden[i];
    ug_metrics_compute(UG_DT_INT32, n, idx_, n, a_, a_, NULL, &m);
    ug_judged j = {"ids", UG_DT_INT32, &r, 0, n, idx_, a_, a_, a_, NULL, &m, NULL, 0, t_};
    return ug_standard_judge(UG_STD_REFERENCE, &j, thr, UG_THR_LEN);
}

static void id_groups(void)
{
    char thr[UG_THR_LEN];
    const double gold[8] = {7, 3, 9, 1, 4, 8, 2, -1};
    const double same_set[8] = {1, 9, 3, 7, 2, 8, 4, -1}; /* each group reordered */
    CHECK(judge_ids(8, same_set, gold, thr) == UG_V_PASS && strstr(thr, "\"worst_group\":0"), "reordered: %s", thr);
    const double one_miss[8] = {7, 3, 9, 5, 4, 8, 2, -1}; /* 1 replaced by 5: one golden id missing */
    CHECK(judge_ids(8, one_miss, gold, thr) == UG_V_PASS && strstr(thr, "\"allowed\":1"), "one miss: %s", thr);
    const double two_miss[8] = {7, 3, 6, 5, 4, 8, 2, -1}; /* 9 and 1 missing from group 0 */
    CHECK(judge_ids(8, two_miss, gold, thr) == UG_V_FAIL && strstr(thr, "\"worst_group\":2") &&
              strstr(thr, "\"failed\":1"),
          "two misses in one group: %s", thr);
    const double split[8] = {7, 3, 9, 5, 4, 8, 6, -1}; /* one miss in each group */
    CHECK(judge_ids(8, split, gold, thr) == UG_V_PASS, "one miss per group: %s", thr);
    const double across[8] = {4, 3, 9, 1, 7, 8, 2, -1}; /* 7 and 4 swapped across the edge: both missing */
    CHECK(judge_ids(8, across, gold, thr) == UG_V_PASS && strstr(thr, "\"worst_group\":1"), "across: %s", thr);
    const double pad[8] = {7, 3, 9, 1, 4, 8, -1, 2}; /* a -1 moved: 2 and -1 each present in group 1 */
    CHECK(judge_ids(8, pad, gold, thr) == UG_V_PASS && strstr(thr, "\"worst_group\":0"), "padding moved: %s", thr);
    const double dup[8] = {7, 7, 9, 7, 4, 8, 2, -1}; /* 3 and 1 missing (a duplicate does not stand in) */
    CHECK(judge_ids(8, dup, gold, thr) == UG_V_FAIL && strstr(thr, "\"worst_group\":2"), "duplicates: %s", thr);
    char figure[300]; /* its deciding figure in words (oracles/figure.c) */
    CHECK(ug_figure_of_output(UG_STD_REFERENCE, "ids", thr, 8, figure, sizeof figure) &&
              strstr(figure, "ids: 1 group of 4 ids missing more than 1 of the golden's ids (worst 2)"),
          "figure: %s", figure);
    const ug_op_def *li = ug_op_def_get(UG_OP_LIGHTNING_INDEXER_QUANT); /* the declared rule: the test's figures */
    CHECK(li && li->n_outputs == 1 && li->outputs[0].reference_group == 2048 && li->outputs[0].reference_atol == 5e-4,
          "lightning_indexer_quant topk_idx: groups of 2048 ids, int(2048 * 5e-4) = 1 miss each");
}

/* The GLM routers' ids: their tests compare ids position by position against an order torch
 * does not fix, so the declarations say why no reference rule applies, and `ops show` (via
 * the contract) says it instead of "no reference test judges this output". */
static void unjudged_ids(void)
{
    const int ops[] = {UG_OP_GLM_SELECT_EXPERTS, UG_OP_GLM_MOE_FUSION};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        const ug_op_def *d = ug_op_def_get(ops[k]);
        const ug_output_rule *ids = NULL;
        for (int i = 0; d && i < d->n_outputs; i++)
            if (strcmp(d->outputs[i].name, "topk_ids") == 0) ids = &d->outputs[i];
        CHECK(ids && !ids->has_reference && ids->reference_unjudged &&
                  strstr(ids->reference_unjudged, "tests/ops/glm_v4_5/") &&
                  strstr(ids->reference_unjudged, "assert_allclose(topk_ids"),
              "%s topk_ids: why no reference rule, naming the test's compare", ug_op_name(ops[k]));
    }
}

int main(void)
{
    strict_loading();
    golden_without_declaration();
    test_golden();
    element_edge();
    ratio_budget();
    without_reference();
    margin_sees_reference();
    declarations();
    id_groups();
    unjudged_ids();
    return check_done();
}
