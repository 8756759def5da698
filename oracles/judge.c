/* judge.c — a case's judgement: its kernel's outputs against the oracle's values (see
 * judge.h). */
#include "oracles/judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/figure.h"

/* The exact values an output is judged against, where the exact value itself overflows
 * the output dtype: its correctly rounded value is +-inf, so a kernel's +-inf of that sign
 * there is exact and is judged against that infinity (a NaN/Inf match), not against the
 * finite exact value. Returns a malloc'ed copy (the caller frees), NULL without memory. */
static double *overflow_matched(ug_dtype dt, size_t n, const double *a, const double *gstar)
{
    double *g = malloc((n ? n : 1) * sizeof *g);
    if (!g) return NULL;
    for (size_t i = 0; i < n; i++)
        g[i] = isinf(a[i]) && isfinite(gstar[i]) && ug_dtype_round(dt, gstar[i]) == a[i] ? a[i] : gstar[i];
    return g;
}

/* An optional output the kernel did not provide: no element judged, NA under every standard,
 * so the case's verdicts come from its other outputs. */
static void judge_not_provided(const ug_tensor *t, const char *name, ug_output_result *or_)
{
    snprintf(or_->name, sizeof or_->name, "%s", name);
    or_->dtype = t->dtype;
    ug_metrics_none(&or_->m, t->numel); /* its figures NaN: stored as NULL */
    for (int s = 0; s < UG_STD_COUNT; s++) {
        or_->verdict[s] = UG_V_NA;
        snprintf(or_->thresholds[s], UG_THR_LEN, "{\"provided\":false}");
    }
    or_->margin = 0;
    or_->not_provided = 1;
}

/* The reference test's own golden (ug_op_def.reference_golden) of the checked elements that
 * fall outside their output's reference rule against g: only there can it change the
 * verdict (an element passes within the rule of either), and it costs what the test's own
 * evaluation does, so it is formed only there. refg[k] gets NaN elsewhere (no golden: g
 * alone judges), and stays NULL for an output without one. 0, or -1 with err set. */
static int reference_golden_where_outside(const ug_case *c, const ug_oracle_result *orc, double **refg, char *err,
                                          size_t errlen)
{
    ug_selection sub = {.n_out = orc->sel.n_out};
    size_t *pos[UG_MAX_TENSORS] = {0};
    double *out[UG_MAX_TENSORS] = {0};
    int rc = 0, any = 0;
    for (int k = 0; c->def->reference_golden && !rc && k < orc->sel.n_out; k++) {
        const ug_output_rule *rule = ug_op_output_rule(c->def, ug_case_judged_name(c, k));
        const ug_tensor *t = &c->out[ug_case_judged_tensor(c, k)];
        size_t n = orc->sel.n[k], m = 0;
        if (!rule || !rule->reference_golden || !ug_tensor_provided(t)) continue;
        refg[k] = malloc((n ? n : 1) * sizeof *refg[k]);
        sub.idx[k] = malloc((n ? n : 1) * sizeof *sub.idx[k]);
        pos[k] = malloc((n ? n : 1) * sizeof *pos[k]);
        out[k] = malloc((n ? n : 1) * sizeof *out[k]);
        if (!refg[k] || !sub.idx[k] || !pos[k] || !out[k]) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            double a = ug_tload(t, orc->sel.idx[k][i]), g = orc->g[k][i];
            refg[k][i] = NAN;
            if (rule->reference_group > 0 || ug_reference_ratio(rule, a, g) > 1.0) /* ids: every one compared */
                sub.idx[k][m] = orc->sel.idx[k][i], pos[k][m++] = i;
        }
        sub.n[k] = m;
        any |= m > 0;
    }
    if (rc)
        snprintf(err, errlen, "out of memory for the reference golden");
    else if (any)
        rc = c->def->reference_golden(c, &sub, out, err, errlen);
    for (int k = 0; k < orc->sel.n_out; k++) {
        for (size_t i = 0; !rc && i < sub.n[k]; i++) refg[k][pos[k][i]] = out[k][i];
        free(sub.idx[k]), free(pos[k]), free(out[k]);
    }
    return rc ? -1 : 0;
}

/* Judges judged output k of c (a tensor or a view of one, registry.h) against oracle
 * values (and refg, the reference test's own golden or NULL); fills r->out[k]; returns
 * kernel values (NULL for an optional output not provided). */
static double *judge_output(const ug_case *c, int k, const ug_oracle_result *orc, const double *refg,
                            ug_output_result *or_)
{
    const ug_tensor *t = &c->out[ug_case_judged_tensor(c, k)];
    const char *name = ug_case_judged_name(c, k);
    size_t n = orc->sel.n[k];
    or_->not_provided = 0;
    if (!ug_tensor_provided(t)) {
        judge_not_provided(t, name, or_);
        return NULL;
    }
    double *a = malloc((n ? n : 1) * sizeof *a);
    if (!a) return NULL;
    for (size_t i = 0; i < n; i++) a[i] = ug_tload(t, orc->sel.idx[k][i]);
    snprintf(or_->name, sizeof or_->name, "%s", name);
    or_->dtype = t->dtype;
    double *gstar = overflow_matched(t->dtype, n, a, orc->gstar[k]);
    if (!gstar) {
        free(a);
        return NULL;
    }
    ug_metrics_compute(t->dtype, n, orc->sel.idx[k], t->numel, a, gstar, orc->bench[k], &or_->m);
    const ug_output_rule *rule = ug_op_output_rule(c->def, name);
    ug_output_rule case_rule;
    if (rule && c->def->adjust_rule) { /* a per-case tolerance (registry.h) */
        case_rule = *rule;
        c->def->adjust_rule(c, k, orc->g[k], n, &case_rule);
        rule = &case_rule;
    }
    ug_judged j = {
        name,          t->dtype, rule,          c->def->bench_level, n,   orc->sel.idx[k], a, gstar, orc->g[k],
        orc->bench[k], &or_->m,  orc->bound[k], c->def->cert_c,      refg};
    double *tie_g = ug_judged_goldens(&j); /* once, for every standard */
    j.tie_g = tie_g;
    for (int s = 0; s < UG_STD_COUNT; s++) or_->verdict[s] = ug_standard_judge(s, &j, or_->thresholds[s], UG_THR_LEN);
    or_->margin = ug_tolerance_margin(&j);
    free(tie_g);
    free(gstar);
    return a;
}

static void describe_failure(ug_result *r)
{
    for (int k = 0; k < r->n_out; k++) {
        const ug_output_result *o = &r->out[k];
        if (o->m.n_nonfinite_mismatch) {
            snprintf(r->message, sizeof r->message, "%s: %zu NaN/Inf mismatches", o->name, o->m.n_nonfinite_mismatch);
            return;
        }
        if (o->verdict[r->primary] == UG_V_FAIL) { /* what decided, in words, then the raw errors */
            char figure[300];
            if (!ug_figure_of_output(r->primary, o->name, o->thresholds[r->primary], o->m.n, figure, sizeof figure))
                snprintf(figure, sizeof figure, "%s fails %s", o->name, ug_standard_name(r->primary));
            snprintf(r->message, sizeof r->message, "%s under %s; max abs %.4g at %zu, max ulp %.4g", figure,
                     ug_standard_name(r->primary), o->m.max_abs, o->m.max_abs_idx, o->m.max_ulp);
            return;
        }
    }
}

int ug_judge_case(const ug_case *c, const ug_oracle_result *orc, int primary, ug_result *r,
                  double *kernel_values[UG_MAX_TENSORS], char *err, size_t errlen)
{
    r->n_fallback = orc->n_fallback;
    r->n_raised = orc->n_raised;
    r->n_unsettled = orc->n_unsettled;
    r->n_selfcheck = orc->n_checked_twice;
    r->n_selfcheck_mismatch = orc->n_mismatch;
    double *refg[UG_MAX_TENSORS] = {0};
    if (reference_golden_where_outside(c, orc, refg, err, errlen)) {
        for (int k = 0; k < UG_MAX_TENSORS; k++) free(refg[k]);
        return -1;
    }
    r->n_out = orc->sel.n_out;
    for (int k = 0; k < r->n_out; k++) {
        double *a = judge_output(c, k, orc, refg[k], &r->out[k]);
        if (kernel_values)
            kernel_values[k] = a;
        else
            free(a);
        free(refg[k]);
    }
    ug_verdict_combine_outputs(r);
    r->primary = primary;
    r->outcome = ug_verdict_decide_outcome(r);
    r->used = ug_verdict_used(r); /* the headroom figure reports rank and bin by */
    if (r->outcome != UG_OUT_PASS) describe_failure(r);
    return 0;
}
