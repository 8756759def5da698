/* main.c — the ulpgym command line: a sorted command table (as git's), `ulpgym help`,
 * and `ulpgym COMMAND -h` for every command. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"

static const ug_command commands[] = {
    {"bench", ug_cmd_bench, "time the oracle engine against float64 and naive MPFR",
     "usage: ulpgym bench oracle [--plan FILE] [--op OP]... [--group G] [--limit N]\n"
     "  Evaluates the oracle of each selected plan case three ways in one run: the engine\n"
     "  (certified double with MPFR fallback), plain float64, and naive MPFR (every\n"
     "  operation at 256 bits); prints times and the ratios engine/float64 and MPFR/engine.\n"},
    {"case", ug_cmd_case, "run one case from its spec JSON and print its verdict",
     "usage: ulpgym case (--spec JSON | --spec-file FILE) [--backend B] [--sample N|all] [--json]\n"
     "  Runs the kernel and the oracle on the case the spec describes (no database).\n"
     "  --backend sim | sim:VARIANT | plugin:PATH.so   (default sim)\n"},
    {"history", ug_cmd_history, "pass rate per run",
     "usage: ulpgym history [--op OP]... [--group G]... [--last N] [--db PATH]\n"
     "  One line per run (newest last): cases, passed, failed, other, pass %, backend, plan.\n"
     "  --op/--group restrict the counts to those operators.\n"},
    {"ops", ug_cmd_ops, "list the 34 operators, or show one",
     "usage: ulpgym ops [--group G] [--json]\n"
     "       ulpgym ops show OP [--json]\n"
     "  show: the math, dtypes, tensors and params (the plugin contract), output rules,\n"
     "  primary standard and kernel variants (mutants).\n"},
    {"plan", ug_cmd_plan, "expand a plan: count or list its cases",
     "usage: ulpgym plan [--plan FILE] [--op OP]... [--group G]... [--seed S] (--count | --list)\n"
     "  --count  cases per group and per op, then a last line `total N`\n"
     "  --list   one line per case: case ID, op, dtype, params\n"
     "  default plan: $ULPGYM_PLAN or gen/plans/nightly.json\n"},
    {"standards", ug_cmd_standards, "list the precision standards and their thresholds",
     "usage: ulpgym standards\n"},
    {"sweep", ug_cmd_sweep, "run a plan's cases and store every verdict",
     "usage: ulpgym sweep [--plan FILE] [--op OP]... [--group G]... [--limit N] [--db PATH]\n"
     "                    [--seed S] [--backend B] [--kernel-variant V] [--sample N|all]\n"
     "                    [--oracle-check] [--quiet]\n"
     "  --backend        sim (default), sim:VARIANT or plugin:PATH.so (also $ULPGYM_BACKEND)\n"
     "  --kernel-variant run a sim mutant, e.g. mut_bf16_sum (see `ulpgym ops show OP`)\n"
     "  --sample         output elements checked per case (default 512; all = every one)\n"
     "  --oracle-check   re-evaluate a sample at twice the oracle precision; any differing\n"
     "                   rounding is reported and makes the exit status 1\n"
     "  --db             database (default $ULPGYM_DB or ./ulpgym.db)\n"},
    {"triage", ug_cmd_triage, "rebuild a case from its ID, rerun it and explain the verdict",
     "usage: ulpgym triage CASE_ID [--db PATH] [--backend B] [--worst N]\n"
     "  CASE_ID is 16 hex digits or a unique prefix of 6+. Reruns kernel and oracle,\n"
     "  checks that the stored metrics are reproduced, then checks every element and\n"
     "  prints metrics, the verdict per standard and the worst elements.\n"},
};

#define N_COMMANDS (sizeof commands / sizeof *commands)

const ug_command *ug_cli_find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ulpgym COMMAND [options]   (ulpgym COMMAND -h for its options)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    for (size_t i = 1; i < N_COMMANDS; i++) /* the table must stay sorted */
        if (strcmp(commands[i - 1].name, commands[i].name) >= 0) return 3;
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        if (argc >= 3 && ug_cli_find(argv[2])) {
            const ug_command *c = ug_cli_find(argv[2]);
            printf("ulpgym %s — %s\n\n%s", c->name, c->summary, c->usage);
            return 0;
        }
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? UG_EXIT_USAGE : 0;
    }
    const ug_command *c = ug_cli_find(argv[1]);
    if (!c) {
        ug_cli_fail("unknown command \"%s\"", argv[1]);
        usage(stderr);
        return UG_EXIT_USAGE;
    }
    if (ug_cli_help(c, argc - 1, argv + 1)) return 0;
    return c->run(argc - 1, argv + 1);
}
