/* cmd_triage.c — `ulpgym triage CASE_ID`: rebuild a case from its ID, rerun kernel and
 * oracle, show that the stored metrics are reproduced, then check every element and
 * print what a person needs to understand the verdict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report_text.h"
#include "gen/plan.h"
#include "run/exec.h"

/* Finds a case spec by ID prefix: the database first, then the default plan. */
static int find_spec(ug_db *db, const char *prefix, char id[UG_ID_LEN + 1], char **spec, int *from_plan)
{
    char err[512];
    *from_plan = 0;
    if (ug_db_find_case(db, prefix, id, spec, err, sizeof err) == 0) return 0;
    if (!ug_case_id_prefix_ok(prefix)) return ug_cli_fail("%s", err);
    ug_plan p;
    char perr[512];
    if (ug_plan_load(ug_plan_default_path(), -1, &p, perr, sizeof perr) == 0) {
        for (size_t i = 0; i < p.n && !*spec; i++)
            if (strncmp(p.cases[i].id, prefix, strlen(prefix)) == 0) {
                snprintf(id, UG_ID_LEN + 1, "%s", p.cases[i].id);
                *spec = strdup(p.cases[i].spec);
                *from_plan = 1;
            }
        ug_plan_free(&p);
    }
    return *spec ? 0 : ug_cli_fail("%s (not in the database nor in the default plan)", err);
}

/* The backend and sample of the latest run that stored a result for the case. */
static long stored_run(ug_db *db, const char *id, char *backend, size_t blen, long *sample)
{
    long run = ug_db_latest_result_run(db, id);
    sqlite3_stmt *st;
    if (run <= 0 || sqlite3_prepare_v2(ug_db_handle(db), "SELECT backend, sample FROM runs WHERE run_id = ?", -1, &st,
                                       NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(backend, blen, "%s", (const char *)sqlite3_column_text(st, 0));
        *sample = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return run;
}

/* Compares the stored metrics of (run, case) with a fresh result; prints differences. */
static int compare_stored(ug_db *db, long run, const ug_result *r)
{
    static const char *cols = "n_checked, max_abs, max_rel, max_ulp, mean_ulp, mere, mare, rmse, eb, small_err_ratio,"
                              " cosine, bench_mare, max_ulp_index";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM metrics WHERE run_id = ? AND case_id = ? AND output = ?", cols);
    int diffs = 0, compared = 0;
    for (int k = 0; k < r->n_out; k++) {
        const ug_metrics *m = &r->out[k].m;
        double fresh[] = {(double)m->n, m->max_abs, m->max_rel, m->max_ulp, m->mean_ulp, m->mere, m->mare,
                          m->rmse, m->eb, m->small_err_ratio, m->cosine, m->b_mare, (double)m->max_ulp_idx};
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(ug_db_handle(db), sql, -1, &st, NULL) != SQLITE_OK) return -1;
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_text(st, 2, r->case_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, r->out[k].name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < (int)(sizeof fresh / sizeof *fresh); c++) {
                double stored = sqlite3_column_double(st, c);
                int same = stored == fresh[c] || (sqlite3_column_type(st, c) == SQLITE_NULL && isnan(fresh[c]));
                compared++;
                if (!same) {
                    diffs++;
                    printf("  differs: %s %s stored %.17g, now %.17g\n", r->out[k].name, sqlite3_column_name(st, c),
                           stored, fresh[c]);
                }
            }
        }
        sqlite3_finalize(st);
    }
    printf("stored metrics of run %ld: %d values compared, %s\n", run, compared,
           diffs ? "NOT reproduced" : "reproduced exactly");
    return diffs;
}

static void unravel(const ug_tensor *t, size_t idx, char *buf, size_t len)
{
    size_t rem = idx, coord[ULPGYM_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        coord[d] = rem % (size_t)t->shape[d];
        rem /= (size_t)t->shape[d];
    }
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->ndim && n < len; d++) n += (size_t)snprintf(buf + n, len - n, "%s%zu", d ? "," : "", coord[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

typedef struct {
    size_t pos;
    double ulp;
} worst_entry;

static int cmp_worst(const void *a, const void *b)
{
    double x = ((const worst_entry *)a)->ulp, y = ((const worst_entry *)b)->ulp;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_worst(const ug_exec_detail *d, int k, int nworst)
{
    const ug_tensor *t = &d->c.out[k];
    size_t n = d->oracle.sel.n[k];
    worst_entry *w = malloc((n ? n : 1) * sizeof *w);
    if (!w) return;
    for (size_t i = 0; i < n; i++) {
        double a = d->a[k][i], gs = d->oracle.gstar[k][i];
        w[i].pos = i;
        w[i].ulp = (isfinite(a) && isfinite(gs)) ? fabs(a - gs) / ug_dtype_ulp(t->dtype, gs) : INFINITY;
        if (isnan(a) && isnan(gs)) w[i].ulp = 0;
    }
    qsort(w, n, sizeof *w, cmp_worst);
    printf("  worst elements of %s:\n", t->name);
    for (int j = 0; j < nworst && (size_t)j < n; j++) {
        size_t i = w[j].pos, idx = d->oracle.sel.idx[k][i];
        char where[96], av[64], gv[64], gr[64];
        unravel(t, idx, where, sizeof where);
        ug_fmt_value(d->a[k][i], av, sizeof av);
        ug_fmt_value(d->oracle.gstar[k][i], gv, sizeof gv);
        ug_fmt_value(d->oracle.g[k][i], gr, sizeof gr);
        printf("    %s  kernel %s  exact %s  rounded %s  %.3g ulp\n", where, av, gv, gr, w[j].ulp);
        for (int in = 0; in < d->c.n_in; in++) { /* inputs laid out like the output feed it elementwise */
            const ug_tensor *x = &d->c.in[in];
            if (x->numel != t->numel || x->ndim != t->ndim) continue;
            char xv[64];
            ug_fmt_value(ug_dtype_load(x->dtype, x->data, idx), xv, sizeof xv);
            printf("        input %s%s = %s\n", x->name, where, xv);
        }
    }
    free(w);
}

static int ug_cmd_triage(int argc, char **argv)
{
    const char *db_path = NULL, *backend_opt = NULL, *worst = NULL, *id_arg = NULL;
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--backend", &backend_opt)) ||
            (m = ug_cli_opt(argc, argv, &i, "--worst", &worst))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (argv[i][0] != '-' && !id_arg) id_arg = argv[i];
        else return ug_cli_fail("triage: unexpected argument \"%s\" (see ulpgym triage -h)", argv[i]);
    }
    if (!id_arg) return ug_cli_fail("triage: give a case ID");
    long nworst = worst ? ug_cli_long(worst) : 5;
    if (nworst < 0) return ug_cli_fail("triage: --worst must be a number");
    ug_db *db;
    if (ug_cli_open_db(db_path, 0, &db)) return UG_EXIT_USAGE;
    char id[UG_ID_LEN + 1], backend_name[600] = "sim", err[1024];
    char *spec = NULL;
    int from_plan, rc = 0;
    if (find_spec(db, id_arg, id, &spec, &from_plan)) {
        ug_db_close(db);
        return UG_EXIT_USAGE;
    }
    long sample = UG_SAMPLE_DEFAULT, run = from_plan ? 0 : stored_run(db, id, backend_name, sizeof backend_name, &sample);
    if (backend_opt) snprintf(backend_name, sizeof backend_name, "%s", backend_opt);
    ug_backend b;
    if (ug_backend_open(&b, backend_name, err, sizeof err)) {
        free(spec);
        ug_db_close(db);
        return ug_cli_fail("%s", err);
    }
    printf("case %s%s\nspec %s\nbackend %s\n", id, from_plan ? " (from the default plan; not in the database)" : "", spec,
           backend_name);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    ug_result r;
    if (run > 0 && !backend_opt) { /* same sample as the stored run: metrics must match */
        o.oracle.sample = (size_t)sample;
        ug_exec_case(spec, &b, &o, &r, NULL);
        rc = compare_stored(db, run, &r) ? UG_EXIT_FOUND : 0;
    }
    o.oracle.sample = 0; /* every element */
    ug_exec_detail d;
    ug_exec_case(spec, &b, &o, &r, &d);
    printf("\nall elements:\n");
    ug_print_result(&r, stdout);
    if (d.have_oracle)
        for (int k = 0; k < d.c.n_out; k++) print_worst(&d, k, (int)nworst);
    printf("\nreproduce: ulpgym case --backend %s --spec '%s'\n", backend_name, spec);
    ug_exec_detail_free(&d);
    ug_backend_close(&b);
    free(spec);
    ug_db_close(db);
    return rc;
}

const ug_command ug_command_triage = {
    "triage", ug_cmd_triage, "rebuild a case from its ID, rerun it and explain the verdict",
     "usage: ulpgym triage CASE_ID [--db PATH] [--backend B] [--worst N]\n"
     "  CASE_ID is 16 hex digits or a unique prefix of 6+. Reruns kernel and oracle,\n"
     "  checks that the stored metrics are reproduced, then checks every element and\n"
     "  prints metrics, the verdict per standard and the worst elements.\n"};
