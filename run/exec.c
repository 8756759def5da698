/* exec.c — runs one case (see exec.h): builds it, runs its kernel, runs the oracle and has
 * oracles/judge.c judge the outputs. */
#include "run/exec.h"
#include "gen/case.h"
#include "gen/case_memory.h"
#include "run/contain.h"
#include "oracles/judge.h"

#include <malloc.h>
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
        snprintf(err, errlen,
                 "--primary: %s is a discrete compare, which judges discrete outputs only and already "
                 "decides every case it applies to; give a numeric standard: %s",
                 name, names);
    else
        snprintf(err, errlen, "--primary: unknown standard \"%s\"; give a numeric standard: %s", name, names);
    return -2;
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
        if (r->out[k].m.n < c->out[ug_case_judged_tensor(c, k)].numel && r->out[k].margin > UG_RECHECK_MARGIN) near = 1;
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
    int primary = o->primary_set ? o->primary : c->def->primary; /* also for callers that judge without ug_exec_case */
    if (ug_judge_case(c, &orc, primary, r, detail ? detail->a : NULL, err, sizeof err)) {
        r->outcome = UG_OUT_ERROR;
        snprintf(r->message, sizeof r->message, "oracle: %s", err);
        ug_oracle_result_free(&orc);
        return 0;
    }
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
/* How long a plugin's freed buffers stay inaccessible (ug_guard_quarantine): a write a
 * device stream lands later than this is not told from the next case's own. */
#define UG_PLUGIN_QUARANTINE_MS 1000.0

/* Each output's values as the call returned them, judged and reported from a copy
 * (ug_guard_snapshot) while the buffer stays watched: a stray write, whenever it lands, can
 * change no verdict, only be reported (outputs_changed). */
static void seal_outputs(ug_case *c)
{
    for (int k = 0; k < c->n_out; k++) {
        void *copy = ug_guard_snapshot(&c->out[k].guard);
        if (copy) c->out[k].data = copy;
    }
}

/* The first output that changed since seal_outputs: its message in err, 1; else 0. */
static int outputs_changed(const ug_case *c, const char *when, char *err, size_t errlen)
{
    for (int k = 0; k < c->n_out; k++)
        if (ug_guard_changed(&c->out[k].guard)) {
            snprintf(err, errlen,
                     "output %s changed after the kernel returned (%s): a device write not waited for "
                     "(missing stream synchronisation?)",
                     c->out[k].name, when);
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
            snprintf(err, errlen,
                     "output %s left unwritten (%zu of %zu elements): a kernel writes every element of "
                     "every output",
                     c->out[k].name, n, c->out[k].numel);
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
    if (b->kind == UG_BACKEND_PLUGIN) ug_guard_quarantine(UG_PLUGIN_QUARANTINE_MS);
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

/* A process running case after case (a sweep worker, bench oracle) keeps what a case freed
 * for the next case, where glibc would hand it back: its tensors, fp64 input copies and
 * judged arrays are freed at the end of each case and, above the trim threshold, unmapped,
 * so every page of the next case's faulted in afresh (zeroed by the kernel). Allocations of
 * up to UG_WORKER_HEAP_BLOCK come from the heap and up to UG_WORKER_HEAP_KEEP of free heap
 * stays mapped; larger tensors are still mapped and unmapped on their own. The address-space cap (run/contain.c) counts what is kept, as it counts any
 * mapping. Minor page faults of a sweep -j1 of shard 1/24 of the nightly: 142,677 -> ~82,000. */
#define UG_WORKER_HEAP_BLOCK (256u << 20)
#define UG_WORKER_HEAP_KEEP (512u << 20)
void ug_exec_keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, (int)UG_WORKER_HEAP_BLOCK);
    mallopt(M_TRIM_THRESHOLD, (int)UG_WORKER_HEAP_KEEP);
#endif
}
