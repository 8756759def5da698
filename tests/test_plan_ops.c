/* test_plan_ops.c — the generic operator test, one ctest entry per operator
 * (test_plan_<op>): every case the default plan holds for the op passes under its
 * primary standard and under certified with the correct sim kernel (oracle self-check on,
 * no ERROR or SKIP either), and every planted mutant is caught by at least
 * UG_MUTANT_MIN_CASES plan cases under one of the two (a bug class shown by one or two cases
 * is one plan change away from not being shown at all) — except those marked beyond_plan,
 * which the plan must NOT catch under the primary standard (they are the fuzzer's;
 * tests/test_found.c checks corpus/found/ catches them). "Caught" is the mutant scan's
 * (run/mutant_scan.h): a FAIL or NaN/Inf-mismatch outcome; a mutant that only makes
 * cases ERROR or SKIP is not caught. Prints each mutant's detection share.
 * The outcomes are pinned case by case in tests/fixtures/verdict_pins/<op>.txt ("variant
 * case_id outcome", sorted: every plan case ID with the correct kernel, the non-PASS
 * outcomes of the mutants), so a refactor that changes a case ID or any verdict fails
 * here; after an intended change, ULPGYM_WRITE_PINS=1 rewrites the pin file (review its
 * diff). A new op without a pin file is reported as unpinned, not failed.
 * The plan is cut to its stratified CI share first (gen/plan_share.h: every required case,
 * dtype, distribution set and param extreme, UG_SHARE_PER_OP cases per op);
 * ULPGYM_PLAN_SHARE=full runs every plan case of the op (the nightly does, without pins).
 * An op this build does not implement yet is reported as skipped (exit 77). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen/plan_share.h"
#include "run/mutant_scan.h"

/* The outcomes seen so far, one "variant case_id outcome" line each: every case of the
 * correct kernel, the non-PASS ones of the mutants. */
typedef struct {
    char (*line)[96];
    size_t n, cap;
    const ug_kernel_variant *variants;
} outcome_lines;

static void record_outcome(outcome_lines *o, int v, const ug_result *r)
{
    if (r->outcome == UG_OUT_PASS && v != 0) return; /* the correct kernel's lines pin the plan's case IDs */
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 256;
        o->line = realloc(o->line, o->cap * sizeof *o->line);
        if (!o->line) abort();
    }
    snprintf(o->line[o->n++], sizeof o->line[0], "%s %s %s", o->variants[v].name, r->case_id,
             ug_outcome_name(r->outcome));
}

static int cmp_line(const void *a, const void *b) { return strcmp(a, b); }

/* Compares the sorted lines with the op's pin file, or writes it (ULPGYM_WRITE_PINS). */
static void check_pins(const char *op, outcome_lines *o)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/verdict_pins/%s.txt", getenv("ULPGYM_DATA"), op);
    qsort(o->line, o->n, sizeof *o->line, cmp_line);
    const char *write = getenv("ULPGYM_WRITE_PINS");
    FILE *f = fopen(path, write && *write == '1' ? "w" : "r");
    if (!f) {
        printf("%s: no pin file %s: outcomes not pinned (ULPGYM_WRITE_PINS=1 writes it)\n", op, path);
        return;
    }
    size_t i = 0, diffs = 0;
    char buf[128];
    if (write && *write == '1') {
        for (; i < o->n; i++) fprintf(f, "%s\n", o->line[i]);
        printf("%s: wrote %zu pinned outcomes to %s\n", op, o->n, path);
    } else {
        for (; fgets(buf, sizeof buf, f); i++) {
            buf[strcspn(buf, "\n")] = 0;
            if (i >= o->n || strcmp(buf, o->line[i])) {
                if (diffs++ < 10) printf("  pinned \"%s\", now \"%s\"\n", buf, i < o->n ? o->line[i] : "(none)");
            }
        }
        CHECK(diffs == 0 && i == o->n,
              "%s: %zu non-PASS outcomes differ from %s (%zu pinned, %zu now); after an "
              "intended change rerun with ULPGYM_WRITE_PINS=1 and review the diff",
              op, diffs + (i < o->n ? o->n - i : 0), path, i, o->n);
    }
    fclose(f);
}

/* Every case of the correct kernel (variant 0) must pass with a self-consistent oracle, and
 * every case of a legal variant must pass; every variant's non-PASS outcomes are recorded
 * for the pins. */
static void check_correct_case(void *ctx, int v, const ug_plan_case *pc, const ug_result *r)
{
    record_outcome(ctx, v, r);
    const outcome_lines *o = ctx;
    if (v != 0 && !ug_variant_legal(o->variants[v].name)) return;
    CHECK(r->outcome == UG_OUT_PASS, "%s case %s, variant %s: %s %s (a false alarm)", ug_op_name(pc->op), r->case_id,
          o->variants[v].name, ug_outcome_name(r->outcome), r->message);
    if (v != 0) return;
    CHECK(r->n_selfcheck_mismatch == 0, "case %s: %lu oracle roundings change at twice the precision", r->case_id,
          r->n_selfcheck_mismatch);
}

/* A legal variant: no case fails under the primary standard or certified, none ERROR or SKIP. */
static void check_legal(const char *op, const ug_variant_scan *s, size_t n_cases)
{
    CHECK(s->caught == 0 && s->caught_certified == 0 && s->errors == 0 && s->skips == 0 && s->other == 0,
          "legal variant %s of %s: %zu false alarms, %zu under certified, %zu ERROR, %zu SKIP, %zu other (%s)",
          s->variant, op, s->caught, s->caught_certified, s->errors, s->skips, s->other, s->message);
    printf("  legal  %-22s false alarms %zu/%zu, under certified %zu\n", s->variant, s->caught, n_cases,
           s->caught_certified);
}

#define UG_MUTANT_MIN_CASES 5

static void check_mutant(const char *op, const ug_variant_scan *s, size_t n_cases)
{
    size_t not_caught = s->errors + s->skips + s->other;
    if (s->beyond_plan) {
        CHECK(s->caught == 0, "mutant %s of %s is marked beyond_plan but %zu plan cases catch it", s->variant, op,
              s->caught);
        CHECK(not_caught == 0, "mutant %s of %s: %zu plan cases ERROR/SKIP (%s)", s->variant, op, not_caught,
              s->message);
    } else if (s->caught == 0 && s->caught_certified == 0 && not_caught) {
        CHECK(0, "mutant %s of %s is caught by no plan case, only made %zu ERROR, %zu SKIP, %zu other (%s)", s->variant,
              op, s->errors, s->skips, s->other, s->message);
    } else {
        CHECK(s->caught > 0 || s->caught_certified > 0,
              "mutant %s of %s is caught by no plan case under the primary standard or certified", s->variant, op);
        CHECK(s->caught >= UG_MUTANT_MIN_CASES || s->caught_certified >= UG_MUTANT_MIN_CASES,
              "mutant %s of %s is caught by %zu plan cases (%zu under certified), fewer than %d: widen the op's "
              "space where the bug shows",
              s->variant, op, s->caught, s->caught_certified, UG_MUTANT_MIN_CASES);
    }
    printf("  mutant %-22s caught by %3zu/%zu cases (%.1f%%), under certified %3zu (%.1f%%)%s%s\n", s->variant,
           s->caught, n_cases, 100.0 * (double)s->caught / (double)n_cases, s->caught_certified,
           100.0 * (double)s->caught_certified / (double)n_cases, s->n_first ? ", first " : "",
           s->n_first ? s->first[0] : "");
    if (not_caught)
        printf("    not counted as caught: %zu ERROR, %zu SKIP, %zu other\n", s->errors, s->skips, s->other);
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
    size_t n_plan = p.n;
    long share = ug_plan_share_from_env(err, sizeof err);
    CHECK(share >= 0, "%s", err);
    if (share < 0) return check_done();
    CHECK(ug_plan_stratify(&p, (size_t)share, err, sizeof err) == 0, "plan share: %s", err);
    if (p.n < n_plan)
        printf("%s: the CI share, %zu of its %zu plan cases (ULPGYM_PLAN_SHARE=full runs them all)\n", argv[1], p.n,
               n_plan);
    if (p.n == 0) return check_done();
    outcome_lines lines = {.variants = ug_op_variants(op)};
    ug_scan_opts o = {.self_check_correct = 1, .on_case = check_correct_case, .ctx = &lines};
    int n;
    ug_variant_scan *s = ug_mutant_scan(op, &p, &o, &n);
    CHECK(s && n > 0 && !s[0].unavailable, "%s: the correct kernel did not run", argv[1]);
    if (!s || n == 0) return check_done();
    CHECK(s[0].caught == 0 && s[0].errors == 0 && s[0].skips == 0 && s[0].other == 0,
          "correct kernel: %zu caught, %zu ERROR, %zu SKIP, %zu other", s[0].caught, s[0].errors, s[0].skips,
          s[0].other);
    CHECK(s[0].caught_certified == 0, "correct kernel: %zu cases fail under certified", s[0].caught_certified);
    printf("%s: %zu plan cases, correct kernel passes %zu\n", argv[1], p.n,
           p.n - s[0].caught - s[0].errors - s[0].skips - s[0].other);
    int mutants = 0, legal = 0;
    for (int v = 1; v < n; v++) {
        CHECK(!s[v].unavailable, "variant %s of %s: %s", s[v].variant, argv[1], s[v].message);
        if (s[v].unavailable) continue;
        if (s[v].legal)
            check_legal(argv[1], &s[v], p.n), legal++;
        else
            check_mutant(argv[1], &s[v], p.n), mutants++;
    }
    CHECK(mutants >= 2, "%s has %d mutants; at least two are required", argv[1], mutants);
    CHECK(legal >= 1, "%s has no legal variant; at least one is required (the false-alarm set)", argv[1]);
    if (share == 0 && p.n > UG_SHARE_PER_OP)
        printf("%s: pins not compared: they pin the CI share of %d cases per op\n", argv[1], UG_SHARE_PER_OP);
    else
        check_pins(argv[1], &lines);
    free(lines.line);
    free(s);
    ug_plan_free(&p);
    return check_done();
}
