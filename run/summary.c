/* summary.c — what a sweep tells its user: the counts per outcome and op, the progress
 * line while it runs (done/total, pass/fail, rate, ETA) and the summary at the end. */
#include <stdio.h>
#include <unistd.h>

#include "run/summary.h"

void ug_sweep_summary_count(ug_sweep_summary *s, int op, const ug_result *r)
{
    s->n_cases++;
    s->n_outcome[r->outcome & 7]++;
    s->per_op_cases[op]++;
    s->per_op_pass[op] += r->outcome == UG_OUT_PASS;
    s->selfcheck_elems += r->n_selfcheck;
    s->selfcheck_mismatch += r->n_selfcheck_mismatch;
    s->oracle_mpfr += r->n_fallback;
    s->oracle_raised += r->n_raised;
    s->oracle_unsettled += r->n_unsettled;
    int sampled = 0;
    for (int k = 0; k < r->n_out; k++) {
        s->elems_judged += r->out[k].m.n;
        s->elems_total += r->out[k].m.n_total;
        sampled |= r->out[k].m.n < r->out[k].m.n_total;
    }
    s->n_sampled += (size_t)sampled;
    s->compute_s += (r->kernel_ms + r->oracle_ms) / 1e3;
}

void ug_sweep_progress(ug_sweep_engine *e, int final)
{
    const ug_sweep_summary *s = e->s;
    if (e->o->quiet) return;
    int tty = isatty(STDERR_FILENO);
    double t = ug_sweep_now_s();
    if (!final && t - e->last_progress < (tty ? 0.2 : 5.0)) return;
    e->last_progress = t;
    double rate = (double)s->n_cases / (t - e->t0 > 1e-9 ? t - e->t0 : 1e-9);
    size_t done = s->n_before + s->n_cases;
    char eta[32] = "-";
    if (rate > 0) snprintf(eta, sizeof eta, "%.0fs", (double)(s->n_total - done) / rate);
    size_t other = s->n_cases - s->n_outcome[UG_OUT_PASS] - s->n_outcome[UG_OUT_FAIL];
    fprintf(stderr, "%s%zu/%zu  pass %zu  fail %zu  other %zu  %.1f cases/s  ETA %s%s", tty ? "\r" : "", done,
            s->n_total, s->n_outcome[UG_OUT_PASS], s->n_outcome[UG_OUT_FAIL], other, rate, eta,
            tty && !final ? "   " : "\n");
    fflush(stderr);
}

void ug_sweep_print_summary(const ug_sweep_summary *s, FILE *f)
{
    fprintf(f, "run %ld: %zu cases in %.1f s with %d workers%s\n", s->run_id, s->n_cases, s->seconds, s->jobs,
            s->interrupted ? " (interrupted: `ulpgym sweep --resume latest` runs the rest)" : "");
    if (s->n_regression) /* the count reconciles with `plan --count`, which lists plan cases only */
        fprintf(f,
                "  the run's %zu cases: %zu plan cases and %zu regression cases from corpus/found/ "
                "(--no-regressions leaves them out)\n",
                s->n_total, s->n_total - s->n_regression, s->n_regression);
    if (s->n_before)
        fprintf(f, "  resumed: %zu of the run's %zu cases were stored before, %zu now\n", s->n_before, s->n_total,
                s->n_before + s->n_cases);
    if (s->primary >= 0)
        fprintf(f, "  every outcome decided by the %s standard (--primary), not each op's own\n",
                ug_standard_name(s->primary));
    for (int k = 0; k < 8; k++)
        if (s->n_outcome[k]) fprintf(f, "  %-9s %zu\n", ug_outcome_name((ug_outcome)k), s->n_outcome[k]);
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (s->per_op_cases[op])
            fprintf(f, "  %-38s %5zu/%-5zu pass (%.1f%%)\n", ug_op_name(op), s->per_op_pass[op], s->per_op_cases[op],
                    100.0 * (double)s->per_op_pass[op] / (double)s->per_op_cases[op]);
    if (s->elems_total) /* how much of the outputs the verdicts rest on */
        fprintf(f,
                "  judged %llu of %llu output elements (%.3g%%); %zu of the cases on a sample (--sample N, or every "
                "element over the case memory budget)\n",
                s->elems_judged, s->elems_total, 100.0 * (double)s->elems_judged / (double)s->elems_total,
                s->n_sampled);
    if (s->oracle_raised) /* Ziv's strategy (docs/STANDARDS.md): shown only when it acted */
        fprintf(f,
                "  oracle: %lu elements settled by MPFR, %lu of them at raised precision, %lu not settled at %d "
                "bits\n",
                s->oracle_mpfr, s->oracle_raised, s->oracle_unsettled, UG_ORACLE_PREC_MAX);
    if (s->selfcheck_elems)
        fprintf(f, "  oracle self-check: %lu elements re-evaluated at twice the precision, %lu differ\n",
                s->selfcheck_elems, s->selfcheck_mismatch);
}
