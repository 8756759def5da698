/* exec.c — runs one case (see exec.h). */
#include "run/exec.h"
#include "gen/case.h"
#include "gen/case_memory.h"
#include "run/contain.h"
#include "oracles/figure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void ug_exec_opts_default(ug_exec_opts *o)
{
    memset(o, 0, sizeof *o);
    ug_oracle_opts_default(&o->oracle);
}

int ug_exec_parse_primary(const char *name, int *std, char *err, size_t errlen)
{
    int s = ug_standard_find(name);
    if (s >= 0 && !ug_standard_is_discrete(s)) {
        *std = s;
        return 0;
    }
    char names[256];
    size_t n = 0;
    names[0] = 0;
    for (int k = 0; k < UG_STD_COUNT && n < sizeof names; k++)
        if (!ug_standard_is_discrete(k))
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", ug_standard_name(k));
    if (s >= 0)
        snprintf(err, errlen, "--primary: %s is a discrete compare, which judges discrete outputs only and already "
                 "decides every case it applies to; give a numeric standard: %s", name, names);
    else snprintf(err, errlen, "--primary: unknown standard \"%s\"; give a numeric standard: %s", name, names);
    return -2;
}

static const ug_output_rule *rule_for(const ug_op_def *d, const char *name)
{
    for (int i = 0; i < d->n_outputs; i++)
        if (strcmp(d->outputs[i].name, name) == 0) return &d->outputs[i];
    return NULL;
}

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
    memset(&or_->m, 0, sizeof or_->m);
    or_->m.n_total = t->numel;
    double *nan_fields[] = {&or_->m.max_abs, &or_->m.max_rel, &or_->m.max_ulp, &or_->m.mean_ulp, &or_->m.mere,
                            &or_->m.mare, &or_->m.rmse, &or_->m.eb, &or_->m.small_err_ratio, &or_->m.cosine,
                            &or_->m.b_max_abs, &or_->m.b_mere, &or_->m.b_mare, &or_->m.b_rmse,
                            &or_->m.b_small_err_ratio};
    for (size_t i = 0; i < sizeof nan_fields / sizeof *nan_fields; i++) *nan_fields[i] = NAN; /* stored as NULL */
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
        const ug_output_rule *rule = rule_for(c->def, ug_case_judged_name(c, k));
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
            if (ug_reference_ratio(rule, a, g) > 1.0) sub.idx[k][m] = orc->sel.idx[k][i], pos[k][m++] = i;
        }
        sub.n[k] = m;
        any |= m > 0;
    }
    if (rc) snprintf(err, errlen, "out of memory for the reference golden");
    else if (any) rc = c->def->reference_golden(c, &sub, out, err, errlen);
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
    const ug_output_rule *rule = rule_for(c->def, name);
    ug_output_rule case_rule;
    if (rule && c->def->adjust_rule) { /* a per-case tolerance (registry.h) */
        case_rule = *rule;
        c->def->adjust_rule(c, k, orc->g[k], n, &case_rule);
        rule = &case_rule;
    }
    ug_judged j = {name, t->dtype, rule, c->def->bench_level, n, orc->sel.idx[k],
                   a, gstar, orc->g[k], orc->bench[k], &or_->m, orc->bound[k], c->def->cert_c, refg};
    for (int s = 0; s < UG_STD_COUNT; s++)
        or_->verdict[s] = ug_standard_judge(s, &j, or_->thresholds[s], UG_THR_LEN);
    or_->margin = ug_tolerance_margin(&j);
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

/* Whether judging case c on every element fits the case memory budget. */
static int full_check_fits(const ug_case *c)
{
    ug_case_memory m;
    char err[256];
    return ug_case_memory_estimate(c->def, &c->params, c->spec.dtype, &m, err, sizeof err) == 0 &&
           ug_case_memory_full_check_fits(&m);
}

/* Exact verdicts near the budget: a case judged on a sample whose checked elements come
 * within UG_RECHECK_MARGIN of an output's per-element tolerance (or miss it, or differ in a
 * code or a NaN/Inf) is judged again on every element, so its verdict is the one
 * `--sample all` gives; its metrics then show n_checked = n_total. A sample whose every
 * element sits well inside the tolerances keeps its verdict, and so does a case whose
 * every-element check would not fit the case memory budget (gen/case_memory.h): its
 * metrics show n_checked < n_total. An op with check_all is always judged again. */
static int needs_recheck(const ug_case *c, const ug_exec_opts *o, const ug_result *r)
{
    if (o->selection || o->oracle.sample == 0) return 0;
    int near = c->def->check_all;
    for (int k = 0; k < r->n_out; k++)
        if (r->out[k].m.n < c->out[ug_case_judged_tensor(c, k)].numel && r->out[k].margin > UG_RECHECK_MARGIN)
            near = 1;
    return near && full_check_fits(c);
}

static int judge_once(ug_case *c, const ug_exec_opts *o, ug_result *r, ug_exec_detail *detail);

/* Every element (sample 0) where that fits the case memory budget; a case too large for it
 * is judged on UG_SAMPLE_PARTIAL elements an output (its metrics show n_checked < n_total)
 * and, near a tolerance, not judged again (needs_recheck). */
int ug_exec_judge(ug_case *c, const ug_exec_opts *o_in, ug_result *r, ug_exec_detail *detail)
{
    ug_exec_opts fit = *o_in;
    const ug_exec_opts *o = &fit;
    if (!fit.selection && fit.oracle.sample == 0 && !full_check_fits(c)) fit.oracle.sample = UG_SAMPLE_PARTIAL;
    int rc = judge_once(c, o, r, detail);
    if (rc || r->outcome == UG_OUT_ERROR || !needs_recheck(c, o, r)) return rc;
    if (detail) { /* the first judgement's values give way to the full one's */
        if (detail->have_oracle) ug_oracle_result_free(&detail->oracle);
        detail->have_oracle = 0;
        for (int k = 0; k < UG_MAX_TENSORS; k++) free(detail->a[k]), detail->a[k] = NULL;
    }
    ug_exec_opts all = *o;
    all.oracle.sample = 0;
    double first_ms = r->oracle_ms;
    r->message[0] = 0;
    rc = judge_once(c, &all, r, detail);
    r->oracle_ms += first_ms;
    return rc;
}

static int judge_once(ug_case *c, const ug_exec_opts *o, ug_result *r, ug_exec_detail *detail)
{
    char err[256] = "";
    ug_oracle_result orc;
    double t0 = now_ms();
    int rc = o->selection ? ug_oracle_run_sel(c, &o->oracle, o->selection, &orc, err, sizeof err)
                          : ug_oracle_run(c, &o->oracle, &orc, err, sizeof err);
    r->oracle_ms = now_ms() - t0;
    if (rc) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "oracle: %s", err);
        return 0;
    }
    r->n_fallback = orc.n_fallback;
    r->n_raised = orc.n_raised;
    r->n_unsettled = orc.n_unsettled;
    r->n_selfcheck = orc.n_checked_twice;
    r->n_selfcheck_mismatch = orc.n_mismatch;
    r->n_out = orc.sel.n_out;
    double *refg[UG_MAX_TENSORS] = {0};
    if (reference_golden_where_outside(c, &orc, refg, err, sizeof err)) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "oracle: %s", err);
        for (int k = 0; k < UG_MAX_TENSORS; k++) free(refg[k]);
        ug_oracle_result_free(&orc);
        return 0;
    }
    for (int k = 0; k < r->n_out; k++) {
        double *a = judge_output(c, k, &orc, refg[k], &r->out[k]);
        if (detail && a) detail->a[k] = a;
        else free(a);
        free(refg[k]);
    }
    ug_verdict_combine_outputs(r);
    r->primary = o->primary_set ? o->primary : c->def->primary; /* also for callers that judge without ug_exec_case */
    r->outcome = ug_verdict_decide_outcome(r);
    r->used = ug_verdict_used(r); /* the headroom figure reports rank and bin by */
    if (r->outcome != UG_OUT_PASS) describe_failure(r);
    if (detail) {
        detail->oracle = orc;
        detail->have_oracle = 1;
    } else {
        ug_oracle_result_free(&orc);
    }
    return 0;
}

/* The ideal / naive backends: every output element is the oracle's correctly rounded value
 * (ideal) or its naive same-dtype evaluation (naive), computed on every element. An oracle
 * that reads outputs the kernel wrote (quantised codes judged against the kernel's own
 * scales; a staged op whose every stage starts from the last one's exported values) sees
 * the previous pass's values, so passes repeat until one changes nothing: at least two
 * (as before), one per stage of a staged chain, at most UG_REF_PASSES. */
#define UG_REF_PASSES 8

/* Stores output k's selected values; whether any stored element changed. */
static int store_reference(ug_tensor *t, const size_t *idx, size_t n, const double *v)
{
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        double old = ug_dtype_load(t->dtype, t->data, idx[i]);
        ug_dtype_store(t->dtype, t->data, idx[i], v[i]); /* rounds: already in the output dtype, stored exactly */
        double now = ug_dtype_load(t->dtype, t->data, idx[i]);
        changed |= !(old == now || (old != old && now != now));
    }
    return changed;
}

static int write_reference_outputs(ug_case *c, int naive, char *err, size_t errlen)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.naive = naive;
    int changed = 1;
    for (int pass = 0; pass < UG_REF_PASSES && (changed || pass < 2); pass++) {
        ug_oracle_result r;
        if (ug_oracle_run(c, &o, &r, err, errlen)) return -2;
        changed = 0;
        for (int k = 0; k < c->n_out; k++) /* the tensors; a view's values are its tensor's */
            changed |= store_reference(&c->out[k], r.sel.idx[k], r.sel.n[k], naive ? r.bench[k] : r.g[k]);
        ug_oracle_result_free(&r);
    }
    return 0;
}

/* run_kernel_checked's status for a kernel that wrote outside an output or changed an
 * input (err says which); below the range a plugin's own negative statuses reach in practice. */
#define UG_EXEC_GUARD (-1002)

/* A plugin's outputs, digested when its call returned, looked at again after a short settle:
 * a device kernel whose stream was not synchronised is still writing them (kernel_abi.h).
 * Built-in kernels run no threads and are not waited for. */
#define UG_SETTLE_NS 2000000L /* 2 ms */

static void seal_outputs(ug_case *c)
{
    for (int k = 0; k < c->n_out; k++) ug_guard_seal(&c->out[k].guard);
}

/* The first output that changed since seal_outputs: its message in err, 1; else 0. */
static int outputs_changed(const ug_case *c, const char *when, char *err, size_t errlen)
{
    for (int k = 0; k < c->n_out; k++)
        if (ug_guard_changed(&c->out[k].guard)) {
            snprintf(err, errlen, "output %s changed after the kernel returned (%s): a device write not waited for "
                     "(missing stream synchronisation?)", c->out[k].name, when);
            return 1;
        }
    return 0;
}

/* The first required output with elements the kernel never wrote (registry.h): 1 with err. */
static int outputs_unwritten(const ug_case *c, char *err, size_t errlen)
{
    for (int k = 0; k < c->n_out; k++) {
        size_t n = c->out[k].optional ? 0 : ug_tensor_unwritten(&c->out[k]);
        if (n) {
            snprintf(err, errlen, "output %s left unwritten (%zu of %zu elements): a kernel writes every element of "
                     "every output", c->out[k].name, n, c->out[k].numel);
            return 1;
        }
    }
    return 0;
}

/* Runs the kernel, then checks the case's guards (registry.h) and its outputs: in the process
 * the kernel ran in, so a contained kernel's tensors are checked where it could have changed
 * them. A plugin's outputs are checked again after a settle for writes that land late. */
static int run_kernel_checked(const void *vb, ug_case *c, char *err, size_t errlen)
{
    const ug_backend *b = vb;
    ug_case_seal_inputs(c);
    int rc = ug_backend_run(b, c, err, errlen);
    char damage[512];
    if (rc == 0 && b->kind == UG_BACKEND_PLUGIN) {
        seal_outputs(c);
        struct timespec settle = {0, UG_SETTLE_NS};
        nanosleep(&settle, NULL);
        if (outputs_changed(c, "within 2 ms", damage, sizeof damage)) rc = UG_EXEC_GUARD;
    }
    int damaged = rc == UG_EXEC_GUARD; /* a late write: its message is in damage already */
    if (!damaged) damaged = ug_case_guard_check(c, damage, sizeof damage) > 0;
    if (!damaged && rc == 0) damaged = outputs_unwritten(c, damage, sizeof damage);
    if (!damaged) return rc;
    snprintf(err, errlen, "%s", damage);
    return UG_EXEC_GUARD;
}

static int run_backend(const ug_backend *b, const ug_exec_opts *o, ug_case *c, char *err, size_t errlen)
{
    if (b->kind == UG_BACKEND_IDEAL || b->kind == UG_BACKEND_NAIVE)
        return write_reference_outputs(c, b->kind == UG_BACKEND_NAIVE, err, errlen);
    if (o->contain_s > 0) return ug_contain_kernel(run_kernel_checked, b, c, o->contain_s, err, errlen);
    return run_kernel_checked(b, c, err, errlen);
}

int ug_exec_case(const char *spec_text, const ug_backend *b, const ug_exec_opts *o, ug_result *r,
                 ug_exec_detail *detail)
{
    memset(r, 0, sizeof *r);
    if (detail) memset(detail, 0, sizeof *detail);
    char err[512] = "";
    ug_spec spec;
    if (ug_spec_parse(spec_text, &spec, err, sizeof err)) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "%s", err);
        return -2;
    }
    snprintf(r->case_id, sizeof r->case_id, "%s", spec.id);
    r->op = spec.op;
    r->dtype = spec.dtype;
    ug_case local, *c = detail ? &detail->c : &local;
    if (detail) detail->have_case = 1;
    r->primary = o->primary_set ? o->primary : ug_op_def_get(spec.op)->primary;
    if (ug_case_build(c, &spec, err, sizeof err)) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "inputs: %s", err);
        if (!detail) ug_case_free(c);
        return -2;
    }
    double t0 = now_ms();
    int krc = run_backend(b, o, c, err, sizeof err);
    r->kernel_ms = now_ms() - t0;
    if (krc == UG_CONTAIN_CRASH || krc == UG_CONTAIN_TIMEOUT || krc == UG_EXEC_GUARD) {
        r->outcome = krc == UG_CONTAIN_CRASH ? UG_OUT_CRASH : krc == UG_CONTAIN_TIMEOUT ? UG_OUT_TIMEOUT : UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "%s", err);
    } else if (krc == 1) {
        r->outcome = UG_OUT_SKIP;
        snprintf(r->message, sizeof r->message, "unsupported: %s", err[0] ? err : "kernel declined the case");
    } else if (krc != 0) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "kernel error %d: %s", krc, err[0] ? err : "(no message)");
    } else {
        r->out_digest = ug_case_outputs_digest(c);
        ug_exec_judge(c, o, r, detail);
        char late[512]; /* a plugin still writing while its outputs were judged (sealed when it returned) */
        if (b->kind == UG_BACKEND_PLUGIN && outputs_changed(c, "while they were judged", late, sizeof late)) {
            r->outcome = UG_OUT_ERROR;
            snprintf(r->message, sizeof r->message, "%s", late);
        }
    }
    if (!detail) ug_case_free(c);
    return 0;
}

void ug_exec_detail_free(ug_exec_detail *d)
{
    if (!d) return;
    if (d->have_case) ug_case_free(&d->c);
    if (d->have_oracle) ug_oracle_result_free(&d->oracle);
    for (int k = 0; k < UG_MAX_TENSORS; k++) free(d->a[k]);
    memset(d, 0, sizeof *d);
}
