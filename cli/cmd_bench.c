/* cmd_bench.c — `ulpgym bench oracle`: the oracle engine timed against plain float64 and
 * naive MPFR in one run, so that the ratios are comparable on a noisy shared machine. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "gen/plan.h"
#include "oracles/oracle.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds to evaluate c's oracle in one mode on the default sample. */
static double time_oracle(const ug_case *c, ug_ar_mode mode, mpfr_prec_t prec, unsigned long *fallback)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.mode = mode;
    o.prec = prec;
    o.naive = 0;
    ug_oracle_result r;
    char err[256];
    double t0 = now_s();
    int rc = ug_oracle_run(c, &o, &r, err, sizeof err);
    double t = now_s() - t0;
    if (!rc) {
        if (fallback) *fallback += r.n_fallback;
        ug_oracle_result_free(&r);
    }
    return rc ? -1 : t;
}

static int bench_oracle(int argc, char **argv)
{
    const char *plan_path = NULL, *limit = NULL;
    ug_cli_filter f = {0};
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opt(argc, argv, &i, "--plan", &plan_path)) || (m = ug_cli_opt(argc, argv, &i, "--limit", &limit))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else return ug_cli_fail("bench: unexpected argument \"%s\"", argv[i]);
    }
    long per_op = limit ? ug_cli_long(limit) : 30;
    if (per_op <= 0) return ug_cli_fail("bench: --limit must be a positive number (cases per op)");
    ug_plan p;
    char err[1024];
    if (ug_plan_load(plan_path ? plan_path : ug_plan_default_path(), -1, &p, err, sizeof err)) return ug_cli_fail("%s", err);
    ug_plan_filter(&p, f.any_op ? f.ops : NULL, f.groups);
    double t_eng[UG_OP_COUNT] = {0}, t_f64[UG_OP_COUNT] = {0}, t_mp[UG_OP_COUNT] = {0};
    long n[UG_OP_COUNT] = {0};
    unsigned long fb[UG_OP_COUNT] = {0};
    for (size_t i = 0; i < p.n; i++) {
        int op = p.cases[i].op;
        if (n[op] >= per_op) continue;
        ug_spec s;
        ug_case c;
        if (ug_spec_parse(p.cases[i].spec, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err)) continue;
        double a = time_oracle(&c, UG_AR_CERT, UG_ORACLE_PREC, &fb[op]);
        double b = time_oracle(&c, UG_AR_F64, UG_ORACLE_PREC, NULL);
        double m = time_oracle(&c, UG_AR_MPFR_SEQ, 256, NULL);
        ug_case_free(&c);
        if (a < 0 || b < 0 || m < 0) continue;
        t_eng[op] += a;
        t_f64[op] += b;
        t_mp[op] += m;
        n[op]++;
    }
    ug_plan_free(&p);
    printf("%-28s %5s %11s %11s %11s %12s %12s %9s\n", "op", "cases", "engine ms", "float64 ms", "MPFR256 ms",
           "engine/f64", "MPFR/engine", "fallback");
    double se = 0, sf = 0, sm = 0;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        if (!n[op]) continue;
        printf("%-28s %5ld %11.2f %11.2f %11.2f %12.2f %12.1f %9lu\n", ug_op_name(op), n[op], t_eng[op] * 1e3,
               t_f64[op] * 1e3, t_mp[op] * 1e3, t_eng[op] / t_f64[op], t_mp[op] / t_eng[op], fb[op]);
        se += t_eng[op];
        sf += t_f64[op];
        sm += t_mp[op];
    }
    if (sf > 0) printf("%-28s %5s %11.2f %11.2f %11.2f %12.2f %12.1f\n", "all", "", se * 1e3, sf * 1e3, sm * 1e3, se / sf, sm / se);
    return 0;
}

static int ug_cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "oracle") == 0) return bench_oracle(argc, argv);
    return ug_cli_fail("bench: give a target: `ulpgym bench oracle`");
}

const ug_command ug_command_bench = {
    "bench", ug_cmd_bench, "time the oracle engine against float64 and naive MPFR",
     "usage: ulpgym bench oracle [--plan FILE] [--op OP]... [--group G] [--limit N]\n"
     "  Evaluates the oracle of each selected plan case three ways in one run: the engine\n"
     "  (certified double with MPFR fallback), plain float64, and naive MPFR (every\n"
     "  operation at 256 bits); prints times and the ratios engine/float64 and MPFR/engine.\n"};
