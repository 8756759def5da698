/* mutant_scan.c — the mutant scan (see mutant_scan.h): runs an op's plan cases with
 * each kernel variant and sorts the outcomes into catches, errors, skips and others. */
#include "run/mutant_scan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ug_mutant_scan_plan(int op, ug_plan *p, char *err, size_t errlen)
{
    if (!ug_op_def_get(op)) {
        snprintf(err, errlen, "%s is not implemented in this build", ug_op_name(op));
        return -2;
    }
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    if (ug_plan_load_only(ug_plan_default_path(), -1, ops, 0, p, err, errlen)) return -2;
    return 0;
}

/* Adds one result to the variant's tally. */
static void tally(ug_variant_scan *s, const ug_result *r)
{
    s->n_cases++;
    s->selfcheck_mismatches += r->n_selfcheck_mismatch != 0;
    ug_result as_certified = *r;
    as_certified.primary = UG_STD_CERTIFIED;
    ug_outcome oc = r->outcome == UG_OUT_FAIL || r->outcome == UG_OUT_PASS || r->outcome == UG_OUT_NONFINITE
                        ? ug_verdict_decide_outcome(&as_certified)
                        : r->outcome;
    s->caught_certified += oc == UG_OUT_FAIL || oc == UG_OUT_NONFINITE;
    switch (r->outcome) {
    case UG_OUT_PASS: return;
    case UG_OUT_FAIL:
    case UG_OUT_NONFINITE:
        if (s->n_first < UG_SCAN_FIRST) snprintf(s->first[s->n_first++], sizeof s->first[0], "%s", r->case_id);
        s->caught++;
        return;
    case UG_OUT_ERROR: s->errors++; break;
    case UG_OUT_SKIP: s->skips++; break;
    default: s->other++; break;
    }
    if (!s->message[0])
        snprintf(s->message, sizeof s->message, "case %s: %s %s", r->case_id, ug_outcome_name(r->outcome), r->message);
}

/* sim_digest[i]: the correct kernel's output digest on case i (0: it did not return),
 * filled by variant 0 and read by the others to count the cases each one changes. */
static void scan_variant(const ug_plan *p, int v, const ug_kernel_variant *kv, const ug_scan_opts *o,
                         ug_variant_scan *s, uint64_t *sim_digest)
{
    memset(s, 0, sizeof *s);
    s->variant = kv->name;
    s->beyond_plan = kv->beyond_plan;
    s->legal = ug_variant_legal(kv->name);
    if (v > 0 && !s->legal && o->legal_only) {
        s->unavailable = 1;
        snprintf(s->message, sizeof s->message, "not run: a mutant, and only the legal kernels were asked for");
        return;
    }
    ug_backend b;
    char err[512], spec[96];
    snprintf(spec, sizeof spec, "sim:%s", kv->name);
    if (ug_backend_open(&b, spec, err, sizeof err)) {
        s->unavailable = 1;
        snprintf(s->message, sizeof s->message, "%s", err);
        return;
    }
    ug_exec_opts eo;
    ug_exec_opts_default(&eo);
    if (v == 0 && o->self_check_correct) eo.oracle.self_check = 1;
    for (size_t i = 0; i < p->n; i++) {
        ug_result r;
        ug_exec_case(p->cases[i].spec, &b, &eo, &r, NULL);
        tally(s, &r);
        if (sim_digest && v == 0)
            sim_digest[i] = r.out_digest;
        else if (sim_digest && r.out_digest && sim_digest[i] && r.out_digest != sim_digest[i]) {
            s->changed++;
            s->caught_changed += r.outcome == UG_OUT_FAIL || r.outcome == UG_OUT_NONFINITE;
        }
        if (o->on_case) o->on_case(o->ctx, v, &p->cases[i], &r);
    }
    ug_backend_close(&b);
}

ug_variant_scan *ug_mutant_scan(int op, const ug_plan *p, const ug_scan_opts *o, int *n)
{
    static const ug_scan_opts defaults = {0};
    const ug_op_def *d = ug_op_def_get(op);
    *n = 0;
    if (!d) return NULL;
    if (!o) o = &defaults;
    int nv = 0;
    while (ug_op_variants(d->op)[nv].name) nv++;
    ug_variant_scan *s = calloc(nv ? (size_t)nv : 1, sizeof *s);
    if (!s) return NULL;
    uint64_t *sim_digest = calloc(p->n ? p->n : 1, sizeof *sim_digest); /* NULL: changes not counted */
    for (int v = 0; v < nv; v++) scan_variant(p, v, &ug_op_variants(d->op)[v], o, &s[v], sim_digest);
    free(sim_digest);
    *n = nv;
    return s;
}
