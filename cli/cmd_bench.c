/* cmd_bench.c — `ulpgym bench oracle`: the oracle engine timed against plain float64 and
 * naive MPFR, per op (cli/bench_oracle.c); `ulpgym bench sweep`: the sweep engine at -j1
 * and -jN; `ulpgym bench kernels`: the sim kernels alone (cli/bench_kernels.c), or with
 * --backend B --baseline A the kernel-timing table of B against A (cli/bench_table.c);
 * `ulpgym bench plan`: plan expansion, whole and per op; `ulpgym bench draw`: input drawing
 * (cli/bench_draw.c). bench sweep compares its
 * configurations in one run (interleaved, best of --repeat), so that the ratios are
 * comparable on a noisy shared machine; bench oracle times CPU seconds for the same reason. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/bench_draw.h"
#include "cli/bench_kernels.h"
#include "cli/bench_oracle.h"
#include "cli/cli.h"
#include "gen/plan.h"
#include "gen/case.h"
#include "run/sweep.h"

typedef struct {
    double seconds, parent_cpu_s, compute_s;
    size_t cases;
    int ok;
} sweep_time;

/* One sweep of o into a fresh database at path; keeps the fastest of the repeats in *best. */
static int time_sweep(ug_sweep_opts *o, const char *path, sweep_time *best)
{
    unlink(path);
    char wal[1100], shm[1100], err[1024];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    o->db_path = path;
    ug_sweep_summary s;
    int rc = ug_sweep_run(o, &s, err, sizeof err);
    unlink(path);
    unlink(wal);
    unlink(shm);
    if (rc) return ug_cli_fail("bench sweep: %s", err);
    if (!best->ok || s.seconds < best->seconds)
        *best = (sweep_time){s.seconds, s.parent_cpu_s, s.compute_s, s.n_cases, 1};
    return 0;
}

/* One row; a worker's time outside kernel + oracle per case is its share of jobs x wall
 * less the cases' kernel + oracle time (input build, judging, fork and pipe, and the idle
 * wait for the last cases at -jN). */
static void print_sweep(const char *label, int jobs, const sweep_time *t, const sweep_time *base)
{
    double n = (double)(t->cases ? t->cases : 1);
    printf("%-6s %5d %7zu %9.2f %9.1f %9.2f %14.3f %14.3f\n", label, jobs, t->cases, t->seconds,
           (double)t->cases / t->seconds, base->seconds / t->seconds, t->parent_cpu_s * 1e3 / n,
           ((double)jobs * t->seconds - t->compute_s) * 1e3 / n);
}

static int bench_sweep(int argc, char **argv)
{
    ug_sweep_opts o = {0};
    ug_cli_filter f = {0};
    const char *limit = NULL, *jobs = NULL, *repeat = NULL;
    o.seed = -1;
    o.sample = UG_SAMPLE_DEFAULT; /* what a sweep pays: every element */
    o.quiet = 1;
    o.command = "ulpgym bench sweep";
    const ug_cli_valopt value_opts[] = {{"--plan", &o.plan_path},  {"--limit", &limit},   {"-j", &jobs},
                                        {"--backend", &o.backend}, {"--repeat", &repeat}, {NULL, NULL}};
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("bench: unexpected argument \"%s\"", argv[i]);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN), n = jobs ? ug_cli_long(jobs) : cores,
         reps = repeat ? ug_cli_long(repeat) : 2;
    if (n < 1 || n > UG_SWEEP_MAX_JOBS)
        return ug_cli_fail("bench sweep: -j takes a number of workers from 1 to %d", UG_SWEEP_MAX_JOBS);
    if (reps < 1) return ug_cli_fail("bench sweep: --repeat must be a positive number");
    if (limit && (o.limit = ug_cli_long(limit)) < 0) return ug_cli_fail("bench sweep: --limit must be a number");
    o.ops = f.any_op ? f.ops : NULL;
    o.groups = f.groups;
    const char *tmp = getenv("TMPDIR");
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/ulpgym-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return ug_cli_fail("bench sweep: cannot create a scratch folder in %s", tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/bench.db", dir);
    sweep_time one = {0}, many = {0};
    int rc = 0;
    for (long r = 0; r < reps && !rc; r++) { /* interleaved: both see the same machine load */
        o.jobs = 1;
        rc = time_sweep(&o, path, &one);
        o.jobs = (int)n;
        if (!rc) rc = time_sweep(&o, path, &many);
    }
    rmdir(dir);
    if (rc) return rc;
    printf("%-6s %5s %7s %9s %9s %9s %14s %14s\n", "sweep", "jobs", "cases", "seconds", "cases/s", "speed-up",
           "parent ms/case", "worker ms/case");
    print_sweep("-j1", 1, &one, &one);
    print_sweep("-jN", (int)n, &many, &one);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("parent peak RSS %.1f MiB; best of %ld interleaved repeats; %ld cores online\n",
           (double)ru.ru_maxrss / 1024.0, reps, cores);
    return 0;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of the fastest of reps expansions of the plan (only ops when given). */
static double time_plan(const char *path, const unsigned char *ops, long reps, size_t *cases, char *err, size_t errlen)
{
    double best = 1e30;
    for (long r = 0; r < reps; r++) {
        ug_plan p;
        double t0 = cpu_s();
        if (ug_plan_load_only(path, -1, ops, 0, &p, err, errlen)) return -1;
        double t = cpu_s() - t0;
        best = t < best ? t : best;
        *cases = p.n;
        ug_plan_free(&p);
    }
    return best;
}

/* `bench plan`: expanding (and hashing) the whole plan, and each op's part alone. */
static int bench_plan(int argc, char **argv)
{
    const char *plan_path = NULL, *repeat = NULL;
    for (int i = 2; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--plan", &plan_path)) ||
            (m = ug_cli_opt(argc, argv, &i, "--repeat", &repeat))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else
            return ug_cli_fail("bench: unexpected argument \"%s\"", argv[i]);
    }
    long reps = repeat ? ug_cli_long(repeat) : 5;
    if (reps < 1) return ug_cli_fail("bench plan: --repeat must be a positive number");
    const char *path = plan_path ? plan_path : ug_plan_default_path();
    char err[1024];
    size_t n = 0, n_op = 0, worst_n = 0;
    double all = time_plan(path, NULL, reps, &n, err, sizeof err), worst = 0;
    if (all < 0) return ug_cli_fail("%s", err);
    int worst_op = -1;
    for (int op = 0; op < UG_OP_COUNT; op++) {
        unsigned char ops[UG_OP_COUNT] = {0};
        ops[op] = 1;
        double t = time_plan(path, ops, reps, &n_op, err, sizeof err);
        if (t < 0) return ug_cli_fail("%s", err);
        if (n_op && t > worst) worst = t, worst_op = op, worst_n = n_op;
    }
    printf("plan %s: %zu cases expanded and hashed in %.3f s CPU (%.1f cases/ms)\n", path, n, all,
           (double)n / (all * 1e3));
    if (worst_op >= 0)
        printf("one op alone (--op): at most %.3f s CPU (%s, %zu cases)\n", worst, ug_op_name(worst_op), worst_n);
    printf("best of %ld expansions each\n", reps);
    return 0;
}

static int ug_cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "plan") == 0) return bench_plan(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "oracle") == 0) return ug_bench_oracle(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "sweep") == 0) return bench_sweep(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "kernels") == 0) return ug_bench_kernels(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "draw") == 0) return ug_bench_draw(argc, argv);
    return ug_cli_fail("bench: give a target: `ulpgym bench oracle`, `ulpgym bench sweep`, `ulpgym bench kernels`, "
                       "`ulpgym bench plan` or `ulpgym bench draw`");
}

const ug_command ug_command_bench = {
    "bench", ug_cmd_bench, "time the oracle engine, the sweep engine at -j1 and -jN, the sim kernels or the plan",
    "usage: ulpgym bench oracle [--plan FILE] [--op OP]... [--group G] [--limit N] [--sample N|all]\n"
    "                           [--repeat R] [--no-mpfr] [--digest]\n"
    "       ulpgym bench sweep [--plan FILE] [--op OP]... [--group G] [--limit N] [-j N]\n"
    "                          [--backend B] [--repeat R]\n"
    "       ulpgym bench kernels [--plan FILE] [--op OP]... [--group G] [--limit N] [--share N]\n"
    "                            [--spec-file FILE] [--kernel-variant V|all] [--digest] [--no-time]\n"
    "       ulpgym bench kernels --backend B --baseline A [--op OP]... [--group G] [--repeat R]\n"
    "                            [--warmup W] [--clock wall|cpu] [--limit N] [--plan FILE]\n"
    "                            [--db FILE] [--md FILE] [--html FILE]\n"
    "       ulpgym bench kernels --scenes [--op OP]...\n"
    "       ulpgym bench plan [--plan FILE] [--repeat R]\n"
    "       ulpgym bench draw [--n N] [--repeat R]\n"
    "  oracle: evaluates the oracle of the first N (default 30) plan cases of each selected\n"
    "  op (after its sim kernel ran, untimed, as in a sweep) three ways: the engine (certified double with MPFR fallback: the exact values),\n"
    "  plain float64, and naive MPFR (every operation at 256 bits; --no-mpfr skips it), on\n"
    "  512 elements an output (default) or every element (--sample all); prints per op and overall the\n"
    "  CPU ms of each (the fastest of R runs, default 1), engine/float64, MPFR/engine, the\n"
    "  elements settled by MPFR, the sweep's whole oracle (engine + naive values +\n"
    "  device bound), its ratio to the engine, and the naive and device-bound passes' own\n"
    "  CPU ms within it. --digest prints instead per case: ID, op, the FNV-1a-64 of the bits of\n"
    "  the values the standards compare (exact values rounded to the output dtype, naive\n"
    "  values, device bounds), that of the exact values' nearest doubles, and the elements\n"
    "  settled by MPFR (the guard of oracle speed work: docs/PERFORMANCE.md). Exit 1 when a\n"
    "  case could not be evaluated (named on stderr).\n"
    "  sweep: sweeps the selected plan (default: all of it) into a scratch database with\n"
    "  one worker and with N (default: all cores), interleaved, best of R (default 2);\n"
    "  prints cases/s, the speed-up, the parent's CPU time per case (dispatch, result\n"
    "  reading, database writes), a worker's time per case outside kernel + oracle (input\n"
    "  build, judging, fork and pipe, idle at the end) and the parent's peak RSS.\n"
    "  kernels: runs the sim kernel (or variant V; `all`: every variant) on each selected\n"
    "  plan case, or on the case of --spec-file, without the oracle; prints per run: case\n"
    "  ID, op, variant, with --digest the FNV-1a-64 of the raw bytes of every output, then\n"
    "  the kernel's wall and CPU time and, for the attention ops, GFLOP and GFLOP/s per CPU\n"
    "  second (docs/PERFORMANCE.md). --share N: only the CI share of N cases per op\n"
    "  (`ulpgym plan --share`), the cases tests/test_kernel_digests.sh guards.\n"
    "  kernels --backend B --baseline A: the kernel-timing table. B and A (sim, sim:VARIANT,\n"
    "  plugin:PATH, or slow:N:one of them, whose kernel call runs N times) run on the same\n"
    "  cases of each scene of the selected ops (default: every op whose gen/ops/<op>.json\n"
    "  declares \"scenes\"; an op named by --op without scenes: its first --limit plan cases,\n"
    "  default 4, as scene \"plan\"), interleaved, W warm-up rounds (default 1) then R kept\n"
    "  (default 5). Each case is built once, untimed; each round gets fresh outputs. Per\n"
    "  case the median, min and max of each side's kernel-only time (the call alone; a\n"
    "  plugin's own ulpgym_last_device_ms where it exports one) and end-to-end time (the\n"
    "  call through the backend entry, a plugin's host-side conversions and copies\n"
    "  included, then reading every output byte back), on --clock (cpu, default: this\n"
    "  process's CPU time, steady on a shared host; wall: elapsed time, for a plugin whose\n"
    "  device works while the host waits and that reports no device time; the table says\n"
    "  which clock each side used); ratio B / A: the median of paired ratios per case, the geometric\n"
    "  mean per scene and per op. Stored in the database (--db, $ULPGYM_DB, ./ulpgym.db;\n"
    "  `ulpgym report --format html` shows the latest), printed as markdown, also to --md\n"
    "  FILE, and as a page to --html FILE. Exit 1 when a backend declined or failed a case\n"
    "  (left out of the table, named on stderr). --scenes lists the scenes and their case IDs.\n"
    "  plan: CPU time to expand and hash the whole plan, and the most one op's part takes\n"
    "  alone (what a command with --op pays), best of R (default 5).\n"
    "  draw: CPU ns per element of drawing inputs (gen/dist.c) per distribution and dtype,\n"
    "  element by element (the definition) and blocked (vectorised), best of R (default 3)\n"
    "  fills of N elements (default 4194304) each, and whether both gave the same bytes\n"
    "  (exit 1 if not).\n"};
