/* cmd_sweep.c — `ulpgym sweep`: option parsing around the sweep engine (run/sweep.c). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "oracles/oracle.h"
#include "run/sweep.h"

static void join_argv(int argc, char **argv, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "ulpgym");
    for (int i = 0; i < argc && n < len; i++) n += (size_t)snprintf(buf + n, len - n, " %s", argv[i]);
}

static int ug_cmd_sweep(int argc, char **argv)
{
    ug_sweep_opts o = {0};
    ug_cli_filter f = {0};
    const char *limit = NULL, *seed = NULL, *sample = NULL, *variant = NULL;
    o.seed = -1;
    o.sample = UG_SAMPLE_DEFAULT;
    o.backend = getenv("ULPGYM_BACKEND");
    for (int i = 1; i < argc; i++) {
        int m = ug_cli_filter_opt(&f, argc, argv, &i);
        if (m < 0) return UG_EXIT_USAGE;
        if (m) continue;
        if ((m = ug_cli_opt(argc, argv, &i, "--plan", &o.plan_path)) || (m = ug_cli_opt(argc, argv, &i, "--db", &o.db_path)) ||
            (m = ug_cli_opt(argc, argv, &i, "--limit", &limit)) || (m = ug_cli_opt(argc, argv, &i, "--seed", &seed)) ||
            (m = ug_cli_opt(argc, argv, &i, "--backend", &o.backend)) ||
            (m = ug_cli_opt(argc, argv, &i, "--kernel-variant", &variant)) ||
            (m = ug_cli_opt(argc, argv, &i, "--sample", &sample))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (ug_cli_flag(argv, i, "--oracle-check")) o.oracle_check = 1;
        else if (ug_cli_flag(argv, i, "--quiet")) o.quiet = 1;
        else return ug_cli_fail("sweep: unexpected argument \"%s\" (see ulpgym sweep -h)", argv[i]);
    }
    if (limit && (o.limit = ug_cli_long(limit)) < 0) return ug_cli_fail("sweep: --limit must be a number");
    if (seed && (o.seed = ug_cli_long(seed)) < 0) return ug_cli_fail("sweep: --seed must be a non-negative integer");
    if (sample && (o.sample = ug_cli_sample(sample)) < 0) return ug_cli_fail("sweep: --sample takes a count or \"all\"");
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
    int rc = ug_sweep_run(&o, &s, err, sizeof err);
    if (rc == -2) return ug_cli_fail("%s", err);
    if (rc) {
        ug_cli_fail("sweep stopped: %s", err);
        return 1;
    }
    ug_sweep_print_summary(&s, stdout);
    if (s.selfcheck_mismatch) {
        fprintf(stderr, "ulpgym: oracle self-check found %lu roundings that change at twice the precision\n",
                s.selfcheck_mismatch);
        return UG_EXIT_FOUND;
    }
    return s.interrupted ? 130 : 0;
}

const ug_command ug_command_sweep = {
    "sweep", ug_cmd_sweep, "run a plan's cases and store every verdict",
     "usage: ulpgym sweep [--plan FILE] [--op OP]... [--group G]... [--limit N] [--db PATH]\n"
     "                    [--seed S] [--backend B] [--kernel-variant V] [--sample N|all]\n"
     "                    [--oracle-check] [--quiet]\n"
     "  --backend        sim (default), sim:VARIANT or plugin:PATH.so (also $ULPGYM_BACKEND)\n"
     "  --kernel-variant run a sim mutant, e.g. mut_bf16_sum (see `ulpgym ops show OP`)\n"
     "  --sample         output elements checked per case (default 512; all = every one)\n"
     "  --oracle-check   re-evaluate a sample at twice the oracle precision; any differing\n"
     "                   rounding is reported and makes the exit status 1\n"
     "  --db             database (default $ULPGYM_DB or ./ulpgym.db)\n"};
