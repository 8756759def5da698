/* sweep.c — the sweep engine (see sweep.h). */
#include "run/sweep.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/store.h"
#include "gen/plan.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress(const ug_sweep_opts *o, const ug_sweep_summary *s, size_t total, double t0, double *last,
                     int final)
{
    if (o->quiet) return;
    int tty = isatty(STDERR_FILENO);
    double t = now_s();
    if (!final && t - *last < (tty ? 0.2 : 5.0)) return;
    *last = t;
    double rate = s->n_cases / (t - t0 > 1e-9 ? t - t0 : 1e-9);
    double eta = rate > 0 ? (double)(total - s->n_cases) / rate : 0;
    size_t other = s->n_cases - s->n_outcome[UG_OUT_PASS] - s->n_outcome[UG_OUT_FAIL];
    fprintf(stderr, "%s%zu/%zu  pass %zu  fail %zu  other %zu  %.1f cases/s  ETA %.0fs%s", tty ? "\r" : "",
            s->n_cases, total, s->n_outcome[UG_OUT_PASS], s->n_outcome[UG_OUT_FAIL], other, rate, eta,
            tty && !final ? "   " : "\n");
    fflush(stderr);
}

static int store_one(ug_db *db, long run_id, const ug_plan_case *pc, const ug_result *r, char *err, size_t errlen)
{
    if (ug_db_put_case(db, pc->id, pc->spec, "plan", err, errlen)) return -1;
    return ug_db_put_result(db, run_id, r, err, errlen);
}

int ug_sweep_run(const ug_sweep_opts *o, ug_sweep_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    ug_plan plan;
    const char *plan_path = o->plan_path ? o->plan_path : ug_plan_default_path();
    if (ug_plan_load(plan_path, o->seed, &plan, err, errlen)) return -2;
    ug_plan_filter(&plan, o->ops, o->groups);
    if (o->limit > 0 && plan.n > (size_t)o->limit) {
        for (size_t i = (size_t)o->limit; i < plan.n; i++) free(plan.cases[i].spec);
        plan.n = (size_t)o->limit;
    }
    ug_backend b;
    ug_db *db = NULL;
    int rc = ug_backend_open(&b, o->backend, err, errlen);
    if (rc) {
        ug_plan_free(&plan);
        return -2;
    }
    for (size_t i = 0; i < plan.n && !rc; i++) rc = ug_backend_check_op(&b, plan.cases[i].op, err, errlen);
    if (rc) {
        ug_backend_close(&b);
        ug_plan_free(&plan);
        return -2;
    }
    char backend_name[600];
    ug_backend_describe(&b, backend_name, sizeof backend_name);
    if (ug_db_open(ug_db_default_path(o->db_path), 1, &db, err, errlen)) {
        rc = -2;
        goto done;
    }
    ug_run_info info = {plan.name, plan_path, plan.hash, backend_name, NULL, o->command, UG_ORACLE_PREC, o->sample};
    if (ug_db_run_begin(db, &info, &s->run_id, err, errlen)) {
        rc = -1;
        goto done;
    }
    ug_exec_opts eo;
    ug_exec_opts_default(&eo);
    eo.oracle.sample = (size_t)o->sample;
    eo.oracle.self_check = o->oracle_check;
    stop_requested = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    double t0 = now_s(), last = 0;
    int in_tx = 0;
    for (size_t i = 0; i < plan.n && !stop_requested; i++) {
        ug_result r;
        ug_exec_case(plan.cases[i].spec, &b, &eo, &r, NULL);
        if (!in_tx && ug_db_begin(db, err, errlen)) {
            rc = -1;
            break;
        }
        in_tx = 1;
        if (store_one(db, s->run_id, &plan.cases[i], &r, err, errlen)) {
            rc = -1;
            break;
        }
        s->n_cases++;
        s->n_outcome[r.outcome]++;
        s->per_op_cases[plan.cases[i].op]++;
        s->per_op_pass[plan.cases[i].op] += r.outcome == UG_OUT_PASS;
        s->selfcheck_elems += r.n_selfcheck;
        s->selfcheck_mismatch += r.n_selfcheck_mismatch;
        if (s->n_cases % UG_SWEEP_BATCH == 0) {
            if (ug_db_commit(db, err, errlen)) {
                rc = -1;
                break;
            }
            in_tx = 0;
        }
        progress(o, s, plan.n, t0, &last, 0);
    }
    if (in_tx) {
        if (rc) ug_db_rollback(db);
        else if (ug_db_commit(db, err, errlen)) rc = -1;
    }
    s->interrupted = stop_requested != 0;
    s->seconds = now_s() - t0;
    progress(o, s, plan.n, t0, &last, 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    char ferr[256];
    ug_db_run_finish(db, s->run_id, rc ? "failed" : s->interrupted ? "interrupted" : "done", ferr, sizeof ferr);
done:
    ug_db_close(db);
    ug_backend_close(&b);
    ug_plan_free(&plan);
    return rc;
}

void ug_sweep_print_summary(const ug_sweep_summary *s, FILE *f)
{
    fprintf(f, "run %ld: %zu cases in %.1f s%s\n", s->run_id, s->n_cases, s->seconds,
            s->interrupted ? " (interrupted: `ulpgym sweep --resume` is not available yet; rerun)" : "");
    for (int k = 0; k < 8; k++)
        if (s->n_outcome[k]) fprintf(f, "  %-9s %zu\n", ug_outcome_name((ug_outcome)k), s->n_outcome[k]);
    for (int op = 0; op < UG_OP_COUNT; op++)
        if (s->per_op_cases[op])
            fprintf(f, "  %-38s %5zu/%-5zu pass (%.1f%%)\n", ug_op_name(op), s->per_op_pass[op], s->per_op_cases[op],
                    100.0 * (double)s->per_op_pass[op] / (double)s->per_op_cases[op]);
    if (s->selfcheck_elems)
        fprintf(f, "  oracle self-check: %lu elements re-evaluated at twice the precision, %lu differ\n",
                s->selfcheck_elems, s->selfcheck_mismatch);
}
