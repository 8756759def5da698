/* test_plan_ops.c — the generic operator test, one ctest entry per operator
 * (test_plan_<op>): every case the default plan holds for the op passes under its
 * primary standard with the correct sim kernel (oracle self-check on, no ERROR or SKIP
 * either), and every planted mutant is caught by at least one plan case — except those
 * marked beyond_plan, which the plan must NOT catch (they are the fuzzer's;
 * tests/test_found.c checks corpus/found/ catches them). "Caught" is the mutant scan's
 * (run/mutant_scan.h): a FAIL or NaN/Inf-mismatch outcome; a mutant that only makes
 * cases ERROR or SKIP is not caught. Prints each mutant's detection share.
 * An op this build does not implement yet is reported as skipped (exit 77). */
#include <string.h>

#include "check.h"
#include "run/mutant_scan.h"

/* Every case of the correct kernel (variant 0) must pass with a self-consistent oracle. */
static void check_correct_case(void *ctx, int v, const ug_plan_case *pc, const ug_result *r)
{
    if (v != 0) return;
    CHECK(r->outcome == UG_OUT_PASS, "%s case %s: %s %s", ug_op_name(pc->op), r->case_id, ug_outcome_name(r->outcome),
          r->message);
    CHECK(r->n_selfcheck_mismatch == 0, "case %s: %lu oracle roundings change at twice the precision", r->case_id,
          r->n_selfcheck_mismatch);
}

static void check_mutant(const char *op, const ug_variant_scan *s, size_t n_cases)
{
    size_t not_caught = s->errors + s->skips + s->other;
    if (s->beyond_plan) {
        CHECK(s->caught == 0, "mutant %s of %s is marked beyond_plan but %zu plan cases catch it", s->variant, op,
              s->caught);
        CHECK(not_caught == 0, "mutant %s of %s: %zu plan cases ERROR/SKIP (%s)", s->variant, op, not_caught,
              s->message);
    } else if (s->caught == 0 && not_caught) {
        CHECK(0, "mutant %s of %s is caught by no plan case, only made %zu ERROR, %zu SKIP, %zu other (%s)",
              s->variant, op, s->errors, s->skips, s->other, s->message);
    } else {
        CHECK(s->caught > 0, "mutant %s of %s is caught by no plan case", s->variant, op);
    }
    printf("  mutant %-22s caught by %3zu/%zu cases (%.1f%%)%s%s\n", s->variant, s->caught, n_cases,
           100.0 * (double)s->caught / (double)n_cases, s->n_first ? ", first " : "", s->n_first ? s->first[0] : "");
    if (not_caught) printf("    not counted as caught: %zu ERROR, %zu SKIP, %zu other\n", s->errors, s->skips, s->other);
    if (s->beyond_plan) printf("    (beyond the plan by design: found by fuzzing, see corpus/found/%s)\n", op);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    int op = ug_op_find(argv[1]);
    CHECK(op >= 0, "unknown op %s", argv[1]);
    if (op < 0) return check_done();
    if (!ug_op_def_get(op)) {
        printf("%s is not implemented in this build: skipped\n", argv[1]);
        return 77;
    }
    ug_plan p;
    char err[1024];
    CHECK(ug_mutant_scan_plan(op, &p, err, sizeof err) == 0, "plan: %s", err);
    CHECK(p.n > 0, "the default plan has no cases for %s", argv[1]);
    if (p.n == 0) return check_done();
    ug_scan_opts o = {.self_check_correct = 1, .on_case = check_correct_case};
    int n;
    ug_variant_scan *s = ug_mutant_scan(op, &p, &o, &n);
    CHECK(s && n > 0 && !s[0].unavailable, "%s: the correct kernel did not run", argv[1]);
    if (!s || n == 0) return check_done();
    CHECK(s[0].caught == 0 && s[0].errors == 0 && s[0].skips == 0 && s[0].other == 0,
          "correct kernel: %zu caught, %zu ERROR, %zu SKIP, %zu other", s[0].caught, s[0].errors, s[0].skips,
          s[0].other);
    printf("%s: %zu plan cases, correct kernel passes %zu\n", argv[1], p.n,
           p.n - s[0].caught - s[0].errors - s[0].skips - s[0].other);
    for (int v = 1; v < n; v++) {
        CHECK(!s[v].unavailable, "mutant %s of %s: %s", s[v].variant, argv[1], s[v].message);
        if (!s[v].unavailable) check_mutant(argv[1], &s[v], p.n);
    }
    CHECK(n - 1 >= 2, "%s has %d mutants; at least two are required", argv[1], n - 1);
    free(s);
    ug_plan_free(&p);
    return check_done();
}
