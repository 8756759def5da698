/* main.c — the ulpgym command line: the sorted command table of commands.def (as git's),
 * `ulpgym help [COMMAND]`, and `ulpgym COMMAND -h` for every command. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define UG_CMD(name) extern const ug_command ug_command_##name __attribute__((weak));
#include "cli/commands.def"
#undef UG_CMD

static const ug_command *const commands[] = {
#define UG_CMD(name) &ug_command_##name,
#include "cli/commands.def"
#undef UG_CMD
};

#define N_COMMANDS (sizeof commands / sizeof *commands)

const ug_command *ug_cli_find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i] && strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "ulpgym — precision generalization fuzzing for AI-accelerator operators\n\n"
               "usage: ulpgym COMMAND [options]   (ulpgym COMMAND -h for its options)\n"
               "       ulpgym --version           version, source revision, plugin ABI and library API\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i]) fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        const ug_command *c = argc >= 3 ? ug_cli_find(argv[2]) : NULL;
        if (c) {
            printf("ulpgym %s — %s\n\n%s", c->name, c->summary, c->usage);
            return 0;
        }
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? UG_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("%s\n", ug_version_line());
        return 0;
    }
    const ug_command *c = ug_cli_find(argv[1]);
    if (!c) {
        ug_cli_fail("unknown command \"%s\"", argv[1]);
        usage(stderr);
        return UG_EXIT_USAGE;
    }
    if (ug_cli_help(c, argc - 1, argv + 1)) return 0;
    /* Past `ulimit -f` a write then fails with EFBIG, which every command reports (one line,
     * non-zero exit) and a database write rolls back, instead of SIGXFSZ killing the process
     * half-way (merge, check and corpus import died so). Sweep workers set the default back
     * for the kernels they run (run/workers.c). */
    signal(SIGXFSZ, SIG_IGN);
    return c->run(argc - 1, argv + 1);
}
