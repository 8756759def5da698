/* cli.c — helpers shared by the commands (see cli.h). */
#include "cli/cli.h"
#include "gen/case_memory.h"
#include "gen/input_cache.h"
#include "run/sweep.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int ug_cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ulpgym: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return UG_EXIT_USAGE;
}

int ug_cli_opt(int argc, char **argv, int *i, const char *opt, const char **val)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) != 0) return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != 0) return 0;
    if (*i + 1 >= argc) {
        ug_cli_fail("option %s needs a value", opt);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int ug_cli_opts(int argc, char **argv, int *i, const ug_cli_valopt *opts)
{
    for (; opts->opt; opts++) {
        int m = ug_cli_opt(argc, argv, i, opts->opt, opts->val);
        if (m) return m;
    }
    return 0;
}

int ug_cli_flag(char **argv, int i, const char *flag) { return strcmp(argv[i], flag) == 0; }

long ug_cli_long(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v >= 0) ? v : -1;
}

long ug_cli_sample(const char *v)
{
    if (strcmp(v, "all") == 0) return 0;
    long n = ug_cli_long(v);
    return n > 0 ? n : -1;
}

int ug_cli_help(const ug_command *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("ulpgym %s — %s\n\n%s", cmd->name, cmd->summary, cmd->usage);
            return 1;
        }
    return 0;
}

int ug_cli_filter_opt(ug_cli_filter *f, int argc, char **argv, int *i)
{
    const char *v;
    int m = ug_cli_opt(argc, argv, i, "--op", &v);
    if (m < 0) return -2;
    if (m) {
        int op = ug_op_find(v);
        if (op < 0) {
            ug_cli_fail("unknown op \"%s\" (see `ulpgym ops`)", v);
            return -2;
        }
        f->ops[op] = 1;
        f->any_op = 1;
        return 1;
    }
    m = ug_cli_opt(argc, argv, i, "--group", &v);
    if (m < 0) return -2;
    if (m) {
        int g = ug_group_find(v);
        if (g < 0) {
            ug_cli_fail("unknown group \"%s\" (DeepSeek, GLM, Operator, GreenLight)", v);
            return -2;
        }
        f->groups |= 1u << g;
        return 1;
    }
    return 0;
}

static int cli_flag_set(const ug_cli_flagopt *flags, const char *arg)
{
    for (; flags && flags->flag; flags++)
        if (strcmp(arg, flags->flag) == 0) return *flags->set = 1;
    return 0;
}

int ug_cli_parse(int argc, char **argv, const ug_cli_args *a)
{
    for (int i = 1; i < argc; i++) {
        int m = a->filter ? ug_cli_filter_opt(a->filter, argc, argv, &i) : 0;
        if (!m) m = ug_cli_opts(argc, argv, &i, a->values);
        if (m < 0) return UG_EXIT_USAGE;
        if (m || cli_flag_set(a->flags, argv[i])) continue;
        if (a->positional && argv[i][0] != '-' && !*a->positional) {
            *a->positional = argv[i];
            continue;
        }
        return ug_cli_fail("%s: unexpected argument \"%s\" (see ulpgym %s -h)", a->cmd, argv[i], a->cmd);
    }
    return 0;
}

int ug_cli_case_memory(const char *value)
{
    char err[256];
    return ug_case_memory_configure(value, err, sizeof err) ? ug_cli_fail("%s", err) : 0;
}

void ug_cli_input_cache_open(void)
{
    char err[4200];
    if (ug_input_cache_open(err, sizeof err) < 0)
        fprintf(stderr, "ulpgym: warning: %s; inputs are drawn instead\n", err);
}

double ug_cli_case_timeout(const char *cmd, const char *value)
{
    if (!value) return UG_SWEEP_TIMEOUT_DEFAULT;
    char *end;
    double t = strtod(value, &end);
    if (end != value && !*end && t > 0 && t < 1e9) return t;
    ug_cli_fail("%s: --case-timeout takes SECONDS > 0, not \"%s\"", cmd, value);
    return -1;
}

int ug_cli_open_db(const char *path, int mode, ug_db **db)
{
    char err[512];
    if (ug_db_open(ug_db_default_path(path), mode, db, err, sizeof err)) {
        ug_cli_fail("%s", err);
        return -2;
    }
    return 0;
}
