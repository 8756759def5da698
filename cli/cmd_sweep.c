/* cmd_sweep.c — `ulpgym sweep`: option parsing around the sweep engine (run/sweep.c).
 * Every option is checked here or by the engine before a row is written; --resume takes
 * the plan and case selection recorded with the run, so it refuses selection options. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fail_on.h"
#include "cli/failure_list.h"
#include "gen/input_cache.h"
#include "oracles/oracle.h"
#include "run/sweep.h"

static void join_argv(int argc, char **argv, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "ulpgym");
    for (int i = 0; i < argc && n < len; i++) n += (size_t)snprintf(buf + n, len - n, " %s", argv[i]);
}

/* --case-timeout SECONDS or OP=SECONDS (repeatable). */
static int parse_timeout(const char *v, ug_sweep_opts *o)
{
    const char *eq = strchr(v, '=');
    char op[64] = "";
    if (eq) snprintf(op, sizeof op, "%.*s", (int)(eq - v < 63 ? eq - v : 63), v);
    const char *num = eq ? eq + 1 : v;
    char *end;
    double t = strtod(num, &end);
    if (end == num || *end || !(t > 0) || t > 1e6)
        return ug_cli_fail("sweep: --case-timeout takes SECONDS or OP=SECONDS with SECONDS > 0, not \"%s\"", v);
    if (!eq) {
        o->case_timeout = t;
        return 0;
    }
    int opi = ug_op_find(op);
    if (opi < 0) return ug_cli_fail("sweep: --case-timeout: unknown op \"%s\" (see `ulpgym ops`)", op);
    o->op_timeout[opi] = t;
    return 0;
}

static int ug_cmd_sweep(int argc, char **argv)
{
    ug_sweep_opts o = {0};
    ug_cli_filter f = {0};
    const char *limit = NULL, *seed = NULL, *sample = NULL, *variant = NULL, *jobs = NULL, *shard = NULL, *mem = NULL;
    o.seed = -1;
    o.sample = UG_SAMPLE_DEFAULT;
    const char *backend_opt = NULL, *top_s = NULL, *fail_on_s = NULL;
    const ug_cli_valopt value_opts[] = {{"-j", &jobs},
                                        {"--jobs", &jobs},
                                        {"--shard", &shard},
                                        {"--cost-from", &o.cost_from},
                                        {"--resume", &o.resume},
                                        {"--case-memory", &mem},
                                        {"--top", &top_s},
                                        {"--fail-on", &fail_on_s},
                                        {"--plan", &o.plan_path},
                                        {"--db", &o.db_path},
                                        {"--limit", &limit},
                                        {"--seed", &seed},
                                        {"--backend", &backend_opt},
                                        {"--kernel-variant", &variant},
                                        {"--sample", &sample},
                                        {"--primary", &o.primary},
                                        {NULL, NULL}};
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        const char *v;
        if ((m = ug_cli_opts(argc, argv, &i, value_opts))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if ((m = ug_cli_opt(argc, argv, &i, "--case-timeout", &v))) {
            if (m < 0 || parse_timeout(v, &o)) return UG_EXIT_USAGE;
        } else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2]) {
            jobs = argv[i] + 2; /* -j4 */
        } else if (ug_cli_flag(argv, i, "--oracle-check"))
            o.oracle_check = 1;
        else if (ug_cli_flag(argv, i, "--quiet") || ug_cli_flag(argv, i, "--no-progress"))
            o.quiet = 1;
        else if (ug_cli_flag(argv, i, "--no-regressions"))
            o.no_regressions = 1;
        else
            return ug_cli_fail("sweep: unexpected argument \"%s\" (see ulpgym sweep -h)", argv[i]);
    }
    if (o.resume && (o.plan_path || limit || seed || sample || variant || shard || f.any_op || f.groups ||
                     o.oracle_check || o.primary || o.cost_from))
        return ug_cli_fail("sweep: --resume reruns a run with its own plan and options; drop --plan, --op, --group, "
                           "--limit, --seed, --sample, --shard, --cost-from, --kernel-variant, --oracle-check and "
                           "--primary");
    if (o.cost_from && !shard) return ug_cli_fail("sweep: --cost-from deals the shards of --shard K/N; give --shard");
    ug_fail_on policy = UG_FAIL_ON_FAIL;
    long top = top_s ? ug_cli_long(top_s) : 5;
    if (top < 0) return ug_cli_fail("sweep: --top takes a number of cases (0: none)");
    if (ug_fail_on_parse("sweep", fail_on_s, &policy)) return UG_EXIT_USAGE;
    char serr[512];
    int primary_std;
    if (o.primary && ug_exec_parse_primary(o.primary, &primary_std, serr, sizeof serr))
        return ug_cli_fail("sweep: %s", serr);
    /* a resume takes the run's own backend; --backend only confirms a plugin (run/sweep.c) */
    o.backend = backend_opt ? backend_opt : o.resume ? NULL : getenv("ULPGYM_BACKEND");
    if (ug_cli_case_memory(mem)) return UG_EXIT_USAGE;
    if (jobs && ((o.jobs = (int)ug_cli_long(jobs)) < 1 || ug_cli_long(jobs) > UG_SWEEP_MAX_JOBS))
        return ug_cli_fail("sweep: -j takes a number of workers from 1 to %d", UG_SWEEP_MAX_JOBS);
    if (shard && ug_sweep_parse_shard(shard, &o.shard_k, &o.shard_n, serr, sizeof serr))
        return ug_cli_fail("sweep: %s", serr);
    if (limit && (o.limit = ug_cli_long(limit)) < 0) return ug_cli_fail("sweep: --limit must be a number");
    if (seed && (o.seed = ug_cli_long(seed)) < 0) return ug_cli_fail("sweep: --seed must be a non-negative integer");
    if (sample && (o.sample = ug_cli_sample(sample)) < 0)
        return ug_cli_fail("sweep: --sample takes a count or \"all\"");
    char backend[300];
    if (variant) {
        if (o.backend && strncmp(o.backend, "sim", 3) != 0)
            return ug_cli_fail("sweep: --kernel-variant applies to the sim backend only");
        snprintf(backend, sizeof backend, "sim:%s", variant);
        o.backend = backend;
    }
    o.ops = f.any_op ? f.ops : NULL;
    o.groups = f.groups;
    char command[2048];
    join_argv(argc, argv, command, sizeof command);
    o.command = command;
    ug_sweep_summary s;
    char err[1024];
    ug_cli_input_cache_open(); /* before the workers fork: they share its write budget */
    int rc = ug_sweep_run(&o, &s, err, sizeof err);
    if (rc == -2) return ug_cli_fail("%s", err);
    if (rc) { /* not a finding: the sweep itself could not go on (disk full, file size limit, ...) */
        ug_cli_fail("sweep stopped (engine failure): %s", err);
        return UG_EXIT_ENGINE;
    }
    ug_sweep_print_summary(&s, stdout);
    char cache_line[4400];
    ug_input_cache_summary(cache_line, sizeof cache_line);
    if (*cache_line) printf("%s\n", cache_line);
    if (top) ug_failures_summary(o.db_path, s.run_id, top, stdout); /* read back from the database, as `failures` */
    fflush(stdout);
    if (s.oracle_unsettled) /* the oracle's values there are its best, not proven: say so where it is seen */
        fprintf(stderr,
                "ulpgym: warning: %lu oracle elements whose rounding still changed at %d bits (their values at "
                "%d bits are used)\n",
                s.oracle_unsettled, UG_ORACLE_PREC_MAX, UG_ORACLE_PREC_MAX);
    if (s.selfcheck_mismatch) {
        fprintf(stderr, "ulpgym: oracle self-check found %lu roundings that change at twice the precision\n",
                s.selfcheck_mismatch);
        return s.interrupted ? UG_EXIT_INTERRUPTED : UG_EXIT_FOUND;
    }
    return s.interrupted ? UG_EXIT_INTERRUPTED : ug_fail_on_run_exit("sweep", o.db_path, s.run_id, policy);
}

const ug_command ug_command_sweep = {
    "sweep", ug_cmd_sweep, "run a plan's cases and store every verdict",
    "usage: ulpgym sweep [--plan FILE|NAME[:light]] [--op OP]... [--group G]... [--limit N] [--db PATH]\n"
    "                    [--seed S] [--backend B] [--kernel-variant V] [--sample N|all]\n"
    "                    [--oracle-check] [-j N] [--case-timeout [OP=]SECONDS]... [--shard K/N [--cost-from DB]]\n"
    "                    [--primary STD] [--case-memory BYTES] [--quiet | --no-progress]\n"
    "                    [--top N] [--fail-on never|fail|new]\n"
    "       ulpgym sweep --resume RUN_ID|latest [--db PATH] [-j N] [--case-timeout ...] [--case-memory BYTES]\n"
    "                    [--backend plugin:PATH.so] [--quiet] [--top N] [--fail-on never|fail|new]\n"
    "  --plan           a plan file, or a name: `--plan reference` is gen/plans/reference.json of\n"
    "                   the data tree (the reference suite's own cases); NAME:light leaves out\n"
    "                   the cases marked heavy (default: $ULPGYM_PLAN or the nightly plan)\n"
    "  -j, --jobs       worker processes (default: all cores); a worker that crashes or\n"
    "                   hangs costs one case (CRASH / TIMEOUT) and is replaced; a kernel that\n"
    "                   writes outside an output or changes an input is ERROR (`wrote after\n"
    "                   output y`, `modified input x`), or CRASH naming the tensor when it runs\n"
    "                   into a guard page (docs/SWEEP.md)\n"
    "  --case-timeout   seconds a case may take (default 300); OP=SECONDS for one op\n" UG_CLI_CASE_MEMORY_HELP
    "                   (a refused case is an ERROR naming the bytes it needs)\n"
    "  --shard K/N      run slice K of N (balanced by estimated cost); join the shard\n"
    "                   databases with `ulpgym merge`\n"
    "  --cost-from DB   balance the shards by the kernel + oracle time each case took in its\n"
    "                   latest result in DB (read-only); a case DB lacks is estimated, scaled by\n"
    "                   its op's measured/estimated ratio. Give every shard the same DB file\n"
    "                   (unchanged while they run; a resume checks): each deals the whole plan\n"
    "                   itself (`ulpgym plan --shard-stats N --cost-from DB` shows the deal)\n"
    "  --resume         run the cases of run RUN_ID (or the latest run) that have no\n"
    "                   result yet, with that run's plan, selection, backend, sample and --primary;\n"
    "                   a plugin run resumes only with --backend naming the same plugin file\n"
    "                   (a database never runs code by itself) with unchanged bytes (SHA-256)\n"
    "  --primary STD    decide every case's outcome by numeric standard STD (e.g. certified,\n"
    "                   pypto; see `ulpgym standards`) instead of each op's own primary;\n"
    "                   discrete compares still decide discrete outputs. Recorded with the run\n"
    "  --quiet, --no-progress  no progress line (the summary is still printed)\n"
    "  --no-regressions leave out the fuzzer's findings (corpus/found/), which every sweep\n"
    "                   of their ops runs by default as regression cases (origin fuzz)\n"
    "  --backend        sim (default), sim:VARIANT or plugin:PATH.so (also $ULPGYM_BACKEND);\n"
    "                   ideal: the oracle's own correctly rounded outputs (must pass every\n"
    "                   standard: the standards' self-check), naive: its same-dtype naive evaluation\n"
    "  --kernel-variant run a sim mutant, e.g. mut_bf16_sum (see `ulpgym ops show OP`)\n"
    "  --sample         output elements checked per output (default all: every one, where\n"
    "                   that fits the case memory budget; 512 where it does not)\n"
    "  --oracle-check   re-evaluate a sample at twice the oracle precision; any differing\n"
    "                   rounding is reported and makes the exit status 1\n"
    "  --db             database (default $ULPGYM_DB or ./ulpgym.db)\n" UG_CLI_INPUT_CACHE_HELP UG_FAILURES_TOP_HELP
    "                   (`ulpgym failures --run R` lists them all)\n" UG_FAIL_ON_HELP(
        "fail") "                   The run's cases are judged; new compares with the last earlier finished\n"
                "                   run of the same plan hash, backend, --op/--group, --limit, --shard,\n"
                "                   --sample and --primary (every failure is new without one)\n"
                "  Exit status: 0 the run is done and --fail-on finds nothing; 1 --fail-on found failing\n"
                "  cases (default: any case neither PASS nor SKIP), or --oracle-check found a changed rounding;\n"
                "  2 bad input (nothing written); 3 the engine failed mid-run (disk full, file size limit:\n"
                "  the run is marked failed, --resume runs the rest); 130 interrupted.\n"};
