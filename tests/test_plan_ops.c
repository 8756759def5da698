/* test_plan_ops.c — the generic operator test, one ctest entry per operator
 * (test_plan_<op>): every case the default plan holds for the op passes under its
 * primary standard with the correct sim kernel (oracle self-check on), and every planted
 * mutant is caught by at least one plan case — except those marked beyond_plan, which the
 * plan must NOT catch (they are the fuzzer's; tests/test_found.c checks corpus/found/
 * catches them). Prints each mutant's detection share.
 * An op this build does not implement yet is reported as skipped (exit 77). */
#include <string.h>

#include "check.h"
#include "gen/plan.h"
#include "run/exec.h"

static size_t run_variant(const ug_plan *p, const char *variant, int self_check, size_t *first_catch)
{
    ug_backend b;
    char err[512], spec[96];
    snprintf(spec, sizeof spec, "sim:%s", variant);
    if (ug_backend_open(&b, spec, err, sizeof err)) return (size_t)-1;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.self_check = self_check;
    size_t not_pass = 0;
    *first_catch = (size_t)-1;
    for (size_t i = 0; i < p->n; i++) {
        ug_result r;
        ug_exec_case(p->cases[i].spec, &b, &o, &r, NULL);
        if (self_check) {
            CHECK(r.outcome == UG_OUT_PASS, "%s case %s: %s %s", ug_op_name(p->cases[i].op), r.case_id,
                  ug_outcome_name(r.outcome), r.message);
            CHECK(r.n_selfcheck_mismatch == 0, "case %s: %lu oracle roundings change at twice the precision",
                  r.case_id, r.n_selfcheck_mismatch);
        }
        if (r.outcome != UG_OUT_PASS) {
            if (!not_pass) *first_catch = i;
            not_pass++;
        }
    }
    ug_backend_close(&b);
    return not_pass;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    int op = ug_op_find(argv[1]);
    CHECK(op >= 0, "unknown op %s", argv[1]);
    if (op < 0) return check_done();
    const ug_op_def *d = ug_op_def_get(op);
    if (!d) {
        printf("%s is not implemented in this build: skipped\n", argv[1]);
        return 77;
    }
    ug_plan p;
    char err[1024];
    CHECK(ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err) == 0, "plan: %s", err);
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    ug_plan_filter(&p, ops, 0);
    CHECK(p.n > 0, "the default plan has no cases for %s", argv[1]);
    size_t first;
    size_t failing = run_variant(&p, "sim", 1, &first);
    printf("%s: %zu plan cases, correct kernel passes %zu\n", argv[1], p.n, p.n - failing);
    int mutants = 0;
    for (int v = 1; ug_op_variants(d->op)[v].name; v++, mutants++) {
        size_t caught = run_variant(&p, ug_op_variants(d->op)[v].name, 0, &first);
        if (ug_op_variants(d->op)[v].beyond_plan)
            CHECK(caught == 0, "mutant %s of %s is marked beyond_plan but %zu plan cases catch it", ug_op_variants(d->op)[v].name,
                  argv[1], caught);
        else
            CHECK(caught > 0 && caught != (size_t)-1, "mutant %s of %s is caught by no plan case", ug_op_variants(d->op)[v].name,
                  argv[1]);
        if (caught != (size_t)-1)
            printf("  mutant %-22s caught by %3zu/%zu cases (%.1f%%)%s%s\n", ug_op_variants(d->op)[v].name, caught, p.n,
                   100.0 * (double)caught / (double)p.n, caught ? ", first " : "",
                   caught ? p.cases[first].id : "");
        if (ug_op_variants(d->op)[v].beyond_plan) printf("    (beyond the plan by design: found by fuzzing, see corpus/found/%s)\n", argv[1]);
    }
    CHECK(mutants >= 2, "%s has %d mutants; at least two are required", argv[1], mutants);
    ug_plan_free(&p);
    return check_done();
}
