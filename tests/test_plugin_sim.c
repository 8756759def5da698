/* test_plugin_sim.c — the ABI is sufficient for every operator: examples/plugin_sim (the
 * sim kernels behind kernel_abi.h, loaded with dlopen) writes, case for case, the same
 * output bits as the built-in sim backend — and so gets the same verdicts and metrics,
 * which is checked directly on the first cases — for the first 16 plan cases (required
 * cases first: tile edges, production shapes, every dtype) of every implemented
 * operator (16, and 3 per mutant — 12 for an op where no mutant shows in 3 — keep 34
 * operators inside CI's budget). Each planted mutant is compared too (the plugin runs it when
 * ULPGYM_PLUGIN_SIM_VARIANT names it); that the mutants' bits differ from the correct
 * kernel's shows the comparison can fail. The stored rows of `sweep --backend plugin:`
 * and of the sim sweep are compared through the CLI in test_replay_roundtrip. */
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen/plan.h"
#include "run/exec.h"
#include "gen/case.h"

/* Same double, NaN equal to NaN. */
static int same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static int same_metrics(const ug_metrics *a, const ug_metrics *b)
{
    return a->n == b->n && a->n_total == b->n_total && a->n_nonfinite_mismatch == b->n_nonfinite_mismatch &&
           same(a->max_abs, b->max_abs) && same(a->max_rel, b->max_rel) && same(a->max_ulp, b->max_ulp) &&
           same(a->mean_ulp, b->mean_ulp) && a->max_abs_idx == b->max_abs_idx && a->max_rel_idx == b->max_rel_idx &&
           a->max_ulp_idx == b->max_ulp_idx && same(a->mere, b->mere) && same(a->mare, b->mare) &&
           same(a->rmse, b->rmse) && same(a->eb, b->eb) && same(a->small_err_ratio, b->small_err_ratio) &&
           same(a->cosine, b->cosine) && same(a->b_max_abs, b->b_max_abs) && same(a->b_mare, b->b_mare) &&
           same(a->b_rmse, b->b_rmse);
}

/* 1 when two results agree on everything a sweep stores (timings aside). */
static int same_result(const ug_result *a, const ug_result *b, char *why, size_t len)
{
    if (a->outcome != b->outcome || strcmp(a->message, b->message) != 0) {
        snprintf(why, len, "outcome %s \"%.200s\" vs %s \"%.200s\"", ug_outcome_name(a->outcome), a->message,
                 ug_outcome_name(b->outcome), b->message);
        return 0;
    }
    if (a->n_out != b->n_out || memcmp(a->verdict, b->verdict, sizeof a->verdict) != 0) {
        snprintf(why, len, "verdicts per standard differ");
        return 0;
    }
    for (int k = 0; k < a->n_out; k++) {
        if (strcmp(a->out[k].name, b->out[k].name) != 0 || !same_metrics(&a->out[k].m, &b->out[k].m) ||
            memcmp(a->out[k].verdict, b->out[k].verdict, sizeof a->out[k].verdict) != 0) {
            snprintf(why, len, "output %s: metrics or verdicts differ (max ulp %g vs %g)", a->out[k].name,
                     a->out[k].m.max_ulp, b->out[k].m.max_ulp);
            return 0;
        }
        for (int s = 0; s < UG_STD_COUNT; s++)
            if (strcmp(a->out[k].thresholds[s], b->out[k].thresholds[s]) != 0) {
                snprintf(why, len, "output %s: thresholds of %s differ", a->out[k].name, ug_standard_name(s));
                return 0;
            }
    }
    return 1;
}

/* Builds the case of spec and runs backend b on it; *krc is the kernel's status. */
static int run_kernel(const char *spec_text, const ug_backend *b, ug_case *c, int *krc, char *msg, size_t len)
{
    ug_spec spec;
    if (ug_spec_parse(spec_text, &spec, msg, len) || ug_case_build(c, &spec, msg, len)) return -1;
    msg[0] = 0;
    *krc = ug_backend_run(b, c, msg, len);
    return 0;
}

/* 1 when two runs of one case agree bit for bit (status, message, every output byte). */
static int same_bits(const ug_case *a, int ra, const char *ma, const ug_case *b, int rb, const char *mb)
{
    if (ra != rb || (ra != 0 && strcmp(ma, mb) != 0)) return 0;
    for (int k = 0; ra == 0 && k < a->n_out; k++)
        if (memcmp(a->out[k].data, b->out[k].data, a->out[k].numel * (size_t)ug_dtype_size(a->out[k].dtype)) != 0)
            return 0;
    return 1;
}

/* The op's first n_bits plan cases under sim:variant and the plugin: identical output
 * bits; the first n_judged also identical results (verdicts, metrics, messages).
 * Returns in how many cases the variant's outputs differ from the correct kernel's. */
static size_t compare_variant(const ug_plan *p, int op, const char *variant, const ug_backend *plug, size_t n_bits,
                              size_t n_judged)
{
    ug_backend sim, ref;
    char err[512], spec[96];
    snprintf(spec, sizeof spec, "sim:%s", variant);
    CHECK(ug_backend_open(&sim, spec, err, sizeof err) == 0 && ug_backend_open(&ref, "sim", err, sizeof err) == 0, "%s",
          err);
    setenv("ULPGYM_PLUGIN_SIM_VARIANT", variant, 1);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = UG_SAMPLE_PARTIAL; /* identical bits give identical results on any sample; CI's time */
    size_t n = 0, differ = 0, buggy = 0;
    for (size_t i = 0; i < p->n && n < n_bits; i++) {
        if (p->cases[i].op != op) continue;
        ug_case a, b, r;
        int ra = -9, rb = -9, rr = -9;
        char ma[512], mb[512], mr[512];
        int built = run_kernel(p->cases[i].spec, &sim, &a, &ra, ma, sizeof ma) == 0 &&
                    run_kernel(p->cases[i].spec, plug, &b, &rb, mb, sizeof mb) == 0 &&
                    run_kernel(p->cases[i].spec, &ref, &r, &rr, mr, sizeof mr) == 0;
        CHECK(built, "case %s: %s", p->cases[i].id, ma);
        if (built && !same_bits(&a, ra, ma, &b, rb, mb) && differ++ < 3)
            CHECK(0, "%s %s case %s: outputs differ (status %d \"%s\" vs %d \"%s\")", ug_op_name(op), variant,
                  p->cases[i].id, ra, ma, rb, mb);
        buggy += built && !same_bits(&a, ra, ma, &r, rr, mr);
        ug_case_free(&a);
        ug_case_free(&b);
        ug_case_free(&r);
        if (n++ < n_judged) {
            ug_result x, y;
            ug_exec_case(p->cases[i].spec, &sim, &o, &x, NULL);
            ug_exec_case(p->cases[i].spec, plug, &o, &y, NULL);
            char why[600];
            CHECK(same_result(&x, &y, why, sizeof why), "%s %s case %s: %s", ug_op_name(op), variant, x.case_id, why);
        }
    }
    CHECK(differ == 0, "%s %s: %zu of %zu cases differ between sim and plugin", ug_op_name(op), variant, differ, n);
    CHECK(n > 0, "%s has no plan case", ug_op_name(op));
    printf("  %-36s %-22s %3zu cases bit-identical (%zu also judged); %zu differ from the correct kernel\n",
           ug_op_name(op), variant, n - differ, n < n_judged ? n : n_judged, buggy);
    ug_backend_close(&sim);
    ug_backend_close(&ref);
    return buggy;
}

int main(void)
{
    const char *bin = getenv("ULPGYM_BIN");
    CHECK(bin != NULL, "ULPGYM_BIN is set by ctest");
    if (!bin) return check_done();
    char *copy = strdup(bin), path[1024];
    snprintf(path, sizeof path, "plugin:%s/examples/libulpgym_plugin_sim.so", dirname(copy));
    free(copy);
    ug_backend plug;
    char err[1024];
    int opened = ug_backend_open(&plug, path, err, sizeof err) == 0;
    CHECK(opened, "%s", err);
    if (!opened) return check_done();
    ug_plan p;
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err) == 0, "plan: %s", err);
    int ops = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        if (!d) continue;
        ops++;
        CHECK(compare_variant(&p, op, "sim", &plug, 16, 2) == 0, "sim differs from itself");
        size_t buggy = 0; /* 3 cases per mutant; 12 where none of the first 3 shows a mutant's bits */
        for (size_t n = 3; buggy == 0 && n <= 12; n += 9)
            for (int v = 1; ug_op_variants(d->op)[v].name; v++)
                buggy += compare_variant(&p, op, ug_op_variants(d->op)[v].name, &plug, n, 1);
        /* the comparison can see a difference: the mutants' bits differ from the correct kernel's */
        CHECK(buggy > 0, "%s: no mutant changed any output bit in the compared cases", ug_op_name(op));
    }
    CHECK(ops > 0, "no operator implemented");

    /* An op the plugin lacks a variant for answers "unsupported": SKIP, with the reason. */
    setenv("ULPGYM_PLUGIN_SIM_VARIANT", "no_such_variant", 1);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    ug_result r;
    ug_exec_case(p.cases[0].spec, &plug, &o, &r, NULL);
    CHECK(r.outcome == UG_OUT_SKIP && strstr(r.message, "no variant \"no_such_variant\""), "got %s \"%s\"",
          ug_outcome_name(r.outcome), r.message);
    ug_plan_free(&p);
    ug_backend_close(&plug);
    return check_done();
}
