/* op_check.h — helpers shared by the per-operator tests (tests/test_op_<op>.c): run one
 * case spec end to end with every element checked and keep its tensors (opc_sim_passes:
 * and assert the sim kernel passes it), read them back, judge them again after an edit or
 * with optional outputs withheld, assert that mutants fail (on one output alone) and the
 * ideal backend passes, and that a bad spec, or each of a table of bad params, is refused
 * with a message naming what is wrong.
 *
 * Per-op tests then only hold what is specific to their op: the independent naive
 * evaluation, the hand-computed values and the invariants. Include after check.h. */
#ifndef UG_OP_CHECK_H
#define UG_OP_CHECK_H
#include <string.h>

#include "core/registry.h"
#include "gen/case.h"
#include "run/exec.h"

/* Parses and builds the case of spec_text into *c: 0, or -1 after a failed CHECK naming
 * the spec and why (the caller then has nothing to free). */
static inline int opc_build_case(const char *spec_text, ug_case *c)
{
    char err[512] = "";
    ug_spec spec;
    if (ug_spec_parse(spec_text, &spec, err, sizeof err) || ug_case_build(c, &spec, err, sizeof err)) {
        CHECK(0, "spec %s: %s", spec_text, err);
        return -1;
    }
    return 0;
}

/* Opens sim variant `variant` into b; on failure says why on stderr and returns non-zero. */
static inline int opc_open(ug_backend *b, const char *variant)
{
    char err[256], bs[96];
    snprintf(bs, sizeof bs, "sim:%s", variant);
    if (ug_backend_open(b, bs, err, sizeof err)) {
        fprintf(stderr, "backend %s: %s\n", bs, err);
        return -1;
    }
    return 0;
}

/* Runs spec on the open backend b with every output element checked by the oracle,
 * self_check: a sample re-evaluated at twice the oracle's precision. Fills r, and d unless
 * it is NULL (the case's tensors kept: free d with ug_exec_detail_free). Returns
 * ug_exec_case's status. */
static inline int opc_exec(const ug_backend *b, const char *spec, int self_check, ug_result *r, ug_exec_detail *d)
{
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    o.oracle.self_check = self_check;
    o.keep = d != NULL;
    return ug_exec_case(spec, b, &o, r, d);
}

/* Runs spec with sim variant `variant`, every output element checked by the oracle
 * (self-check on). Fills r and d (free d with ug_exec_detail_free). Returns
 * ug_exec_case's status, or -1 if the backend does not open. */
static inline int opc_run(const char *spec, const char *variant, ug_result *r, ug_exec_detail *d)
{
    ug_backend b;
    if (opc_open(&b, variant)) return -1;
    int rc = opc_exec(&b, spec, 1, r, d);
    ug_backend_close(&b);
    return rc;
}

/* Runs spec with the sim kernel, every element checked and the case kept, and CHECKs that it
 * PASSes ("what: outcome message" otherwise); r may be NULL. Returns d->have_oracle: 1 when
 * d holds the oracle's result to look into (free d with ug_exec_detail_free), else 0. r and d
 * are zeroed first, so a backend that does not open leaves nothing to free. */
static inline int opc_sim_passes(const char *spec, const char *what, ug_result *r, ug_exec_detail *d)
{
    ug_result own;
    if (!r) r = &own;
    memset(r, 0, sizeof *r);
    memset(d, 0, sizeof *d);
    CHECK(opc_run(spec, "sim", r, d) == 0 && r->outcome == UG_OUT_PASS, "%s: %s %s", what, ug_outcome_name(r->outcome),
          r->message);
    return d->have_oracle;
}

/* opc_sim_passes (r not kept) on spec_fmt with its one %s replaced by arg; the case is named
 * "what [arg]". */
static inline int opc_sim_passes_fmt(const char *spec_fmt, const char *arg, const char *what, ug_exec_detail *d)
{
    char spec[8192], name[256];
    snprintf(spec, sizeof spec, spec_fmt, arg);
    snprintf(name, sizeof name, "%s [%s]", what, arg);
    return opc_sim_passes(spec, name, NULL, d);
}

/* Element i of input `name` / of output o of a kept case, as an exact double. */
static inline double opc_in(const ug_exec_detail *d, const char *name, size_t i)
{
    const ug_tensor *t = ug_case_input(&d->c, name);
    return t ? ug_dtype_load(t->dtype, t->data, i) : 0.0 / 0.0;
}

static inline double opc_out(const ug_exec_detail *d, int o, size_t i)
{
    return ug_dtype_load(d->c.out[o].dtype, d->c.out[o].data, i);
}

/* Judged output `name` of r, or NULL. */
static inline const ug_output_result *opc_output_named(const ug_result *r, const char *name)
{
    for (int k = 0; k < r->n_out; k++)
        if (strcmp(r->out[k].name, name) == 0) return &r->out[k];
    return NULL;
}

/* The verdict under standard std of judged output `name` in r (NA when r has no such output). */
static inline ug_vstate opc_out_verdict(const ug_result *r, const char *name, int std)
{
    const ug_output_result *o = opc_output_named(r, name);
    return o ? o->verdict[std] : UG_V_NA;
}

/* Output `name` of r was provided and judged, no standard FAILs it, and pypto, certified and
 * reference PASS it (an optional output's check: tests/test_optional_*.c). */
static inline void opc_expect_judged_pass(const ug_result *r, const char *name, const char *what)
{
    const ug_output_result *o = opc_output_named(r, name);
    CHECK(o && !o->not_provided, "%s: %s not judged", what, name);
    if (!o) return;
    for (int s = 0; s < UG_STD_COUNT; s++)
        CHECK(o->verdict[s] != UG_V_FAIL, "%s: %s fails %s: %s", what, name, ug_standard_name(s), o->thresholds[s]);
    CHECK(o->verdict[UG_STD_PYPTO] == UG_V_PASS && o->verdict[UG_STD_CERTIFIED] == UG_V_PASS &&
              o->verdict[UG_STD_REFERENCE] == UG_V_PASS,
          "%s: %s must PASS pypto, certified and reference", what, name);
}

/* opc_sim_passes, then each output of names (NULL-ended) judged PASS as opc_expect_judged_pass
 * does. Returns d->have_oracle. */
static inline int opc_sim_passes_judged(const char *spec, const char *what, const char *const *names, ug_result *r,
                                        ug_exec_detail *d)
{
    if (!opc_sim_passes(spec, what, r, d)) return 0;
    for (; *names; names++) opc_expect_judged_pass(r, *names, "sim");
    return 1;
}

/* Sim variant `variant` on spec FAILs, with output `bad` failing pypto, certified and
 * reference, and every other output passing pypto (or NA): a mutant of one output is caught
 * there and nowhere else. */
static inline void opc_expect_only_output_fails(const char *spec, const char *variant, const char *bad)
{
    ug_result r;
    CHECK(opc_run(spec, variant, &r, NULL) == 0 && r.outcome == UG_OUT_FAIL, "%s: outcome %s, expected FAIL", variant,
          ug_outcome_name(r.outcome));
    const ug_output_result *b = opc_output_named(&r, bad);
    CHECK(b && b->verdict[UG_STD_PYPTO] == UG_V_FAIL && b->verdict[UG_STD_CERTIFIED] == UG_V_FAIL &&
              b->verdict[UG_STD_REFERENCE] == UG_V_FAIL,
          "%s: %s must fail pypto, certified and reference", variant, bad);
    for (int k = 0; k < r.n_out; k++)
        if (strcmp(r.out[k].name, bad) != 0)
            CHECK(r.out[k].verdict[UG_STD_PYPTO] != UG_V_FAIL, "%s: %s must still pass", variant, r.out[k].name);
}

/* Each sim variant of variants (NULL-ended) FAILs spec ("variant: outcome" otherwise). */
static inline void opc_expect_mutants_fail(const char *spec, const char *const *variants)
{
    for (; *variants; variants++) {
        ug_result r;
        CHECK(opc_run(spec, *variants, &r, NULL) == 0 && r.outcome == UG_OUT_FAIL, "%s: %s", *variants,
              ug_outcome_name(r.outcome));
    }
}

/* The ideal backend passes spec, and each output of names (NULL-ended) as opc_expect_judged_pass. */
static inline void opc_expect_ideal_passes(const char *spec, const char *const *names)
{
    ug_backend b;
    char err[256];
    if (ug_backend_open(&b, "ideal", err, sizeof err)) {
        CHECK(0, "ideal backend: %s", err);
        return;
    }
    ug_result r;
    CHECK(opc_exec(&b, spec, 0, &r, NULL) == 0 && r.outcome == UG_OUT_PASS, "ideal: %s", r.message);
    ug_backend_close(&b);
    for (; *names; names++) opc_expect_judged_pass(&r, *names, "ideal");
}

/* The optional-output checks of a case: each row {variant, output} of mutants caught on that
 * output alone (opc_expect_only_output_fails), then the ideal backend passing spec with each
 * output of names (NULL-ended) judged (opc_expect_ideal_passes). */
static inline void opc_expect_output_mutants_and_ideal(const char *spec, const char *const mutants[][2], size_t n,
                                                       const char *const *names)
{
    for (size_t i = 0; i < n; i++) opc_expect_only_output_fails(spec, mutants[i][0], mutants[i][1]);
    opc_expect_ideal_passes(spec, names);
}
#define OPC_EXPECT_OUTPUT_MUTANTS_AND_IDEAL(spec, mutants, names)                                                      \
    opc_expect_output_mutants_and_ideal(spec, mutants, sizeof mutants / sizeof mutants[0], names)

/* The result of judging the (edited) outputs of a kept case d->c again, every element. */
static inline void opc_rejudge_result(ug_exec_detail *d, ug_result *r)
{
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    memset(r, 0, sizeof *r);
    ug_exec_judge(&d->c, &o, r, NULL);
}

/* The outcome of the same. */
static inline ug_outcome opc_rejudge(ug_exec_detail *d)
{
    ug_result r;
    opc_rejudge_result(d, &r);
    return r.outcome;
}

/* Output k of the rejudged result np was not provided: NA under every standard, with the
 * threshold {"provided":false} ("what not provided: standard is verdict threshold" otherwise). */
static inline void opc_expect_not_provided(const ug_result *np, int k, const char *what)
{
    const ug_output_result *o = &np->out[k];
    for (int s = 0; s < UG_STD_COUNT; s++)
        CHECK(o->not_provided && o->verdict[s] == UG_V_NA && strcmp(o->thresholds[s], "{\"provided\":false}") == 0,
              "%s not provided: %s is %s %s", what, ug_standard_name(s), ug_vstate_name(o->verdict[s]),
              o->thresholds[s]);
}

/* Outputs first..last of the kept case d withheld (sentinel-filled) and the case judged again
 * into np; output `other` keeps under every standard the verdict it had in r. */
static inline void opc_withhold_outputs(ug_exec_detail *d, const ug_result *r, int first, int last, const char *other,
                                        ug_result *np)
{
    for (int k = first; k <= last; k++) ug_tensor_fill_sentinel(&d->c.out[k]);
    opc_rejudge_result(d, np);
    for (int s = 0; s < UG_STD_COUNT; s++)
        CHECK(opc_out_verdict(np, other, s) == opc_out_verdict(r, other, s), "%s's %s verdict changed", other,
              ug_standard_name(s));
}

/* A spec the op must refuse: ug_exec_case() < 0 (a bad spec; its outcome ERROR), and a
 * message holding `needle` (the param's name). */
static inline void opc_expect_refused(const char *spec, const char *needle)
{
    ug_backend b;
    if (opc_open(&b, "sim")) {
        CHECK(0, "no sim backend to refuse %s", spec);
        return;
    }
    ug_result r;
    int rc = opc_exec(&b, spec, 0, &r, NULL);
    ug_backend_close(&b);
    CHECK(rc < 0 && r.outcome == UG_OUT_ERROR, "spec %s was not refused (status %d, outcome %s)", spec, rc,
          ug_outcome_name(r.outcome));
    CHECK(strstr(r.message, needle) != NULL, "message \"%s\" does not name %s", r.message, needle);
}

/* A table of bad params, each row {params, needle}: the spec spec_fmt with the row's params
 * in place of its one %s must be refused naming needle (opc_expect_refused). A spec
 * builder of the test gives spec_fmt when called with "%s" as the params. */
static inline void opc_expect_refused_each(const char *spec_fmt, const char *const bad[][2], size_t n_bad)
{
    for (size_t i = 0; i < n_bad; i++) {
        char spec[8192];
        int len = snprintf(spec, sizeof spec, spec_fmt, bad[i][0]);
        if (len < 0 || (size_t)len >= sizeof spec) {
            CHECK(0, "the spec of bad params %s is over %zu bytes", bad[i][0], sizeof spec);
            continue;
        }
        opc_expect_refused(spec, bad[i][1]);
    }
}
#define OPC_EXPECT_REFUSED_EACH(spec_fmt, bad) opc_expect_refused_each(spec_fmt, bad, sizeof bad / sizeof bad[0])

#endif
