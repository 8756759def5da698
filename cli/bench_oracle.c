/* bench_oracle.c — `ulpgym bench oracle`: each selected plan case's oracle timed as the
 * engine (certified double with MPFR fallback: the exact values), plain float64 and naive
 * MPFR, per op and overall, on a sample of 512 elements an output (default) or every element (--sample all); with
 * --digest the bits of every value the oracle hands the judge, per case (the guard of
 * oracle speed work: a faster oracle must print the same digests).
 *
 * Times are CPU seconds of this process (CLOCK_PROCESS_CPUTIME_ID), so that a loaded
 * machine inflates neither side of a ratio, with freed memory kept for reuse as in a sweep's
 * worker (ug_exec_keep_freed_memory); each arithmetic evaluates only its own values
 * (no naive or device-bound pass), and the "sweep ms" column adds what a sweep's oracle
 * also pays: the naive benchmark values and the certified standard's device bound.
 *
 * Each case's sim kernel runs first, untimed: an op whose oracle continues from the
 * kernel's own earlier outputs (the quantised prologs' queries from its q_norm codes and
 * scale) then reads them as in a sweep, where it read the unwritten sentinel and sent a
 * case's whole q_nope_abs to MPFR (147,461 elements in one mla_prolog_quant case). */
#include "cli/bench_oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "gen/case.h"
#include "gen/plan.h"
#include "kernels/backend.h"
#include "oracles/oracle.h"
#include "run/exec.h"

/* One op's sums over its timed cases. */
typedef struct {
    long cases;
    size_t elements;                         /* selected output elements */
    double engine_s, f64_s, mpfr_s, sweep_s; /* CPU seconds */
    double naive_s, device_s;                /* the sweep's naive and device-bound passes (in sweep_s) */
    unsigned long by_mpfr;                   /* elements the engine settled in MPFR */
} bo_row;

typedef struct {
    long per_op;    /* cases per op */
    long sample;    /* elements per output, 0 = all */
    int mpfr;       /* time the naive MPFR column */
    int digest;     /* print digests instead of timing */
    long reps;      /* runs per case and arithmetic; the fastest counts */
    ug_backend sim; /* the correct kernel, run on each case before its oracle */
} bo_opts;

static double bo_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of c's oracle with options o, the fastest of reps runs, or -1 when it
 * fails; the last run's result kept when asked, and each pass's fastest CPU seconds
 * (ug_oracle_result.cpu_s) in pass_s when given. */
static double bo_time(const ug_case *c, const ug_oracle_opts *o, long reps, ug_oracle_result *keep, double *pass_s)
{
    double best = -1;
    for (long i = 0; i < reps; i++) {
        ug_oracle_result r;
        char err[256];
        double t0 = bo_cpu_s();
        int rc = ug_oracle_run(c, o, &r, err, sizeof err);
        double t = bo_cpu_s() - t0;
        if (rc) return -1;
        for (int p = 0; pass_s && p < UG_ORACLE_PASSES; p++)
            if (i == 0 || r.cpu_s[p] < pass_s[p]) pass_s[p] = r.cpu_s[p];
        if (keep && i == reps - 1)
            *keep = r;
        else
            ug_oracle_result_free(&r);
        if (best < 0 || t < best) best = t;
    }
    return best;
}

/* Options evaluating one arithmetic alone on the sample. */
static ug_oracle_opts bo_mode(ug_ar_mode mode, mpfr_prec_t prec, long sample)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.mode = mode;
    o.prec = prec;
    o.sample = (size_t)sample;
    o.naive = 0;
    o.device_bound = 0;
    return o;
}

/* FNV-1a 64 over the bits of r's values per judged output: with gstar its exact values'
 * nearest doubles, else the values the standards compare (exact values rounded to the
 * output dtype, naive values, device bounds). A certified element's nearest double is the
 * fast path's value, within its bound of the exact one; an element settled by MPFR gets
 * MPFR's, so a fast path that settles more elements may change the gstar digest (by an
 * ulp of a double, within the bound) but never the other. Every NaN is hashed as one
 * NaN: the standards judge a NaN by its class, and its sign and payload are whichever
 * operand's the compiler put first in an IEEE operation (a + b and b + a), not the oracle's. */
static uint64_t bo_digest(const ug_oracle_result *r, int gstar)
{
    uint64_t h = 14695981039346656037ull;
    for (int k = 0; k < r->sel.n_out; k++) {
        const double *arrays[3] = {r->g[k], r->bench[k], r->bound[k]}, *exact[1] = {r->gstar[k]};
        const double *const *list = gstar ? exact : arrays;
        for (int a = 0; a < (gstar ? 1 : 3); a++)
            for (size_t i = 0; list[a] && i < r->sel.n[k]; i++) {
                double x = isnan(list[a][i]) ? NAN : list[a][i];
                unsigned char b[sizeof x];
                memcpy(b, &x, sizeof x);
                for (size_t j = 0; j < sizeof x; j++) h = (h ^ b[j]) * 1099511628211ull;
            }
    }
    return h;
}

/* Times (or digests) one case into its op's row; 0, or -1 when it cannot be built or evaluated. */
static int bo_case(const ug_plan_case *pc, const bo_opts *o, bo_row *row)
{
    ug_spec s;
    ug_case c;
    char err[1024];
    if (ug_spec_parse(pc->spec, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err)) {
        fprintf(stderr, "ulpgym: bench oracle: case %s skipped: %s\n", pc->id, err);
        return -1;
    }
    if (ug_backend_run(&o->sim, &c, err, sizeof err)) { /* untimed: the outputs a sweep's oracle sees */
        fprintf(stderr, "ulpgym: bench oracle: case %s skipped: its sim kernel failed: %s\n", pc->id, err);
        ug_case_free(&c);
        return -1;
    }
    ug_oracle_opts full;
    ug_oracle_opts_default(&full);
    full.sample = (size_t)o->sample;
    ug_oracle_result r;
    int rc = 0;
    if (o->digest) {
        rc = bo_time(&c, &full, 1, &r, NULL) < 0;
        if (!rc) {
            printf("%s %s %016llx %016llx %lu\n", pc->id, ug_op_name(pc->op), (unsigned long long)bo_digest(&r, 0),
                   (unsigned long long)bo_digest(&r, 1), r.n_fallback);
            ug_oracle_result_free(&r);
        }
    } else {
        ug_oracle_opts eng = bo_mode(UG_AR_CERT, UG_ORACLE_PREC, o->sample),
                       f64 = bo_mode(UG_AR_F64, UG_ORACLE_PREC, o->sample),
                       mp = bo_mode(UG_AR_MPFR_SEQ, 256, o->sample);
        double pass_s[UG_ORACLE_PASSES];
        double a = bo_time(&c, &eng, o->reps, &r, NULL), b = bo_time(&c, &f64, o->reps, NULL, NULL),
               m = o->mpfr ? bo_time(&c, &mp, o->reps, NULL, NULL) : 0, w = bo_time(&c, &full, o->reps, NULL, pass_s);
        rc = a < 0 || b < 0 || m < 0 || w < 0;
        if (a >= 0) {
            if (!rc) {
                row->engine_s += a, row->f64_s += b, row->mpfr_s += m, row->sweep_s += w;
                row->naive_s += pass_s[UG_PASS_NAIVE], row->device_s += pass_s[UG_PASS_DEVICE];
                row->by_mpfr += r.n_fallback;
                for (int k = 0; k < r.sel.n_out; k++) row->elements += r.sel.n[k];
            }
            ug_oracle_result_free(&r);
        }
    }
    if (rc)
        fprintf(stderr, "ulpgym: bench oracle: case %s skipped: its oracle failed\n", pc->id);
    else
        row->cases++;
    ug_case_free(&c);
    return rc ? -1 : 0;
}

static void bo_print_row(const char *name, const bo_row *r, int mpfr)
{
    printf("%-36s %5ld %9zu %11.2f %11.2f", name, r->cases, r->elements, r->engine_s * 1e3, r->f64_s * 1e3);
    if (mpfr)
        printf(" %11.2f", r->mpfr_s * 1e3);
    else
        printf(" %11s", "-");
    printf(" %10.2f", r->f64_s > 0 ? r->engine_s / r->f64_s : 0.0);
    if (mpfr)
        printf(" %11.1f", r->engine_s > 0 ? r->mpfr_s / r->engine_s : 0.0);
    else
        printf(" %11s", "-");
    printf(" %9lu %11.2f %9.2f %9.2f %9.2f\n", r->by_mpfr, r->sweep_s * 1e3,
           r->engine_s > 0 ? r->sweep_s / r->engine_s : 0.0, r->naive_s * 1e3, r->device_s * 1e3);
}

static void bo_print_table(const bo_row *rows, const unsigned char *selected, const bo_opts *o)
{
    printf("%-36s %5s %9s %11s %11s %11s %10s %11s %9s %11s %9s %9s %9s\n", "op", "cases", "elements", "engine ms",
           "float64 ms", "MPFR256 ms", "eng/f64", "MPFR/eng", "by MPFR", "sweep ms", "sweep/eng", "naive ms",
           "device ms");
    bo_row all = {0};
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!selected[op]) continue;
        bo_print_row(ug_op_name(op), &rows[op], o->mpfr);
        all.cases += rows[op].cases, all.elements += rows[op].elements, all.by_mpfr += rows[op].by_mpfr;
        all.engine_s += rows[op].engine_s, all.f64_s += rows[op].f64_s, all.mpfr_s += rows[op].mpfr_s;
        all.sweep_s += rows[op].sweep_s, all.naive_s += rows[op].naive_s, all.device_s += rows[op].device_s;
    }
    bo_print_row("all", &all, o->mpfr);
    printf("CPU ms, the fastest of %ld evaluation%s per case; ", o->reps, o->reps > 1 ? "s" : "");
    if (o->sample)
        printf("sample %ld elements per output\n", o->sample);
    else
        printf("every element (--sample all)\n");
}

int ug_bench_oracle(int argc, char **argv)
{
    const char *plan_path = NULL, *limit = NULL, *sample = NULL, *repeat = NULL;
    ug_cli_filter f = {0};
    bo_opts o = {30, UG_SAMPLE_PARTIAL, 1, 0, 1, {0}};
    const ug_cli_valopt value_opts[] = {
        {"--plan", &plan_path}, {"--limit", &limit}, {"--sample", &sample}, {"--repeat", &repeat}, {NULL, NULL}};
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if (ug_cli_flag(argv, i, "--no-mpfr"))
            o.mpfr = 0;
        else if (ug_cli_flag(argv, i, "--digest"))
            o.digest = 1;
        else if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("bench oracle: unexpected argument \"%s\"", argv[i]);
    }
    if (limit && (o.per_op = ug_cli_long(limit)) <= 0)
        return ug_cli_fail("bench oracle: --limit must be a positive number (cases per op)");
    if (repeat && (o.reps = ug_cli_long(repeat)) <= 0)
        return ug_cli_fail("bench oracle: --repeat must be a positive number");
    if (sample && (o.sample = ug_cli_sample(sample)) < 0)
        return ug_cli_fail("bench oracle: --sample takes a positive number of elements per output, or all");
    ug_plan p;
    char err[1024];
    if (ug_plan_load_only(plan_path ? plan_path : ug_plan_default_path(), -1, f.any_op ? f.ops : NULL, f.groups, &p,
                          err, sizeof err))
        return ug_cli_fail("%s", err);
    if (ug_backend_open(&o.sim, "sim", err, sizeof err)) {
        ug_plan_free(&p);
        return ug_cli_fail("bench oracle: %s", err);
    }
    ug_exec_keep_freed_memory(); /* as a sweep's worker does: the oracle's arrays not faulted in afresh per case */
    bo_row rows[UG_OP_COUNT] = {{0}};
    unsigned char selected[UG_OP_COUNT] = {0};
    long tried[UG_OP_COUNT] = {0};
    int failed = 0;
    for (size_t i = 0; i < p.n; i++) {
        int op = p.cases[i].op;
        selected[op] = 1;
        if (tried[op]++ >= o.per_op) continue;
        failed |= bo_case(&p.cases[i], &o, &rows[op]) != 0;
    }
    ug_plan_free(&p);
    ug_backend_close(&o.sim);
    if (!o.digest) bo_print_table(rows, selected, &o);
    return failed ? UG_EXIT_FOUND : UG_EXIT_OK;
}
