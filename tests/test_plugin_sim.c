/* test_plugin_sim.c — the ABI is sufficient for every operator: examples/plugin_sim (the
 * sim kernels behind kernel_abi.h, loaded with dlopen) gives, case for case, the same
 * outcome, verdict per standard, message and every metric of every output as the
 * built-in sim backend, over all plan cases of every implemented operator. Each planted
 * mutant is compared too (the plugin runs it when ULPGYM_PLUGIN_SIM_VARIANT names it),
 * so the identity also holds for failing verdicts, not just for passes. */
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen/plan.h"
#include "run/exec.h"

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

/* Runs the op's plan cases (at most limit) with sim:variant and the plugin; returns how
 * many did not pass under the sim backend (to show the comparison covers failures). */
static size_t compare_variant(const ug_plan *p, int op, const char *variant, const ug_backend *plug, size_t limit)
{
    ug_backend sim;
    char err[512], spec[96];
    snprintf(spec, sizeof spec, "sim:%s", variant);
    CHECK(ug_backend_open(&sim, spec, err, sizeof err) == 0, "%s", err);
    setenv("ULPGYM_PLUGIN_SIM_VARIANT", variant, 1);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    size_t n = 0, not_pass = 0, differ = 0;
    for (size_t i = 0; i < p->n && n < limit; i++) {
        if (p->cases[i].op != op) continue;
        n++;
        ug_result a, b;
        ug_exec_case(p->cases[i].spec, &sim, &o, &a, NULL);
        ug_exec_case(p->cases[i].spec, plug, &o, &b, NULL);
        char why[600];
        int eq = same_result(&a, &b, why, sizeof why);
        if (!eq && differ++ < 3) CHECK(eq, "%s %s case %s: %s", ug_op_name(op), variant, a.case_id, why);
        not_pass += a.outcome != UG_OUT_PASS;
    }
    CHECK(differ == 0, "%s %s: %zu of %zu cases differ between sim and plugin", ug_op_name(op), variant, differ, n);
    CHECK(n > 0, "%s has no plan case", ug_op_name(op));
    printf("  %-28s %-20s %4zu cases identical%s (%zu not PASS)\n", ug_op_name(op), variant, n - differ,
           differ ? " NOT all" : "", not_pass);
    ug_backend_close(&sim);
    return not_pass;
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
    size_t mutant_fails = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        const ug_op_def *d = ug_op_def_get(op);
        if (!d) continue;
        ops++;
        compare_variant(&p, op, "sim", &plug, (size_t)-1);           /* every plan case */
        for (int v = 1; d->variants[v].name; v++)                   /* every mutant, a slice */
            mutant_fails += compare_variant(&p, op, d->variants[v].name, &plug, 40);
    }
    CHECK(ops > 0, "no operator implemented");
    CHECK(mutant_fails > 0, "the mutant comparisons never saw a failing verdict");

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
