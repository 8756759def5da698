/* cli.h — shared pieces of the ulpgym commands: the command table entry, option
 * parsing, and the exit-code convention (0 ok, 1 the run found failures where a command
 * says so, 2 bad input: unknown op, malformed plan, unknown case, not a database, 3 the
 * engine itself failed mid-run: disk full, file size limit, a database write refused). */
#ifndef UG_CLI_H
#define UG_CLI_H
#include <stdio.h>

#include "core/paths.h" /* ug_shell_quote, ug_self_command */
#include "core/registry.h"
#include "db/store.h"

#define UG_EXIT_OK 0
#define UG_EXIT_FOUND 1
#define UG_EXIT_USAGE 2
#define UG_EXIT_ENGINE 3 /* not a finding: the sweep could not go on (docs/SWEEP.md, "Exit codes") */

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;
    const char *usage; /* printed by -h: options, one per line */
} ug_command;

/* Prints "ulpgym: msg" to stderr and returns UG_EXIT_USAGE. */
int ug_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* If argv[*i] is opt, takes its value (argv[*i+1] or the part after '=') into *val and
 * advances *i. Returns 1 on a match, 0 otherwise, -1 when the value is missing. */
int ug_cli_opt(int argc, char **argv, int *i, const char *opt, const char **val);
/* A command's value options as a table: each name and where its value goes, ended by
 * {NULL, NULL}. ug_cli_opts tries ug_cli_opt with each in turn: 1 on a match, 0 none, -1
 * when the value is missing. */
typedef struct {
    const char *opt;
    const char **val;
} ug_cli_valopt;
int ug_cli_opts(int argc, char **argv, int *i, const ug_cli_valopt *opts);
/* A command's flags: each name and the int it sets to 1, ended by {NULL, NULL}. */
typedef struct {
    const char *flag;
    int *set;
} ug_cli_flagopt;
int ug_cli_flag(char **argv, int i, const char *flag);
/* Parses a non-negative integer option value; -1 on junk. */
long ug_cli_long(const char *s);
/* --sample value: "all" -> 0, a positive count -> itself, else -1. */
long ug_cli_sample(const char *v);
/* Prints the command's help when argv has -h/--help; returns 1 if it did. */
int ug_cli_help(const ug_command *cmd, int argc, char **argv);
const ug_command *ug_cli_find(const char *name);
/* Op / group filters shared by plan, sweep, history: --op OP (repeatable), --group G. */
typedef struct {
    unsigned char ops[UG_OP_COUNT];
    int any_op;
    unsigned groups;
} ug_cli_filter;
/* Consumes --op/--group at argv[*i]: 1 consumed, 0 not an op/group option, -2 bad value
 * (message printed). */
int ug_cli_filter_opt(ug_cli_filter *f, int argc, char **argv, int *i);
/* A command's whole argument list as tables: its --op/--group filter (NULL: none), value
 * options, flags (NULL: none) and at most one bare argument (NULL: none taken). */
typedef struct {
    const char *cmd; /* its name, for "CMD: unexpected argument" */
    ug_cli_filter *filter;
    const ug_cli_valopt *values;
    const ug_cli_flagopt *flags;
    const char **positional;
} ug_cli_args;
/* Parses argv[1..]: 0, or UG_EXIT_USAGE after printing why (a missing value, a bad filter,
 * an argument the tables do not name: "CMD: unexpected argument ... (see ulpgym CMD -h)"). */
int ug_cli_parse(int argc, char **argv, const ug_cli_args *a);
/* Opens the drawn-input cache (gen/input_cache.h) for a command that builds cases: a folder
 * that cannot be used is a warning, and the command draws its inputs instead. */
void ug_cli_input_cache_open(void);
/* The environment the cache reads, for a command's help. */
#define UG_CLI_INPUT_CACHE_HELP                                                                                        \
    "  Drawn inputs of 64 KiB or more are kept in $ULPGYM_INPUT_CACHE (default ~/.cache/ulpgym/inputs;\n"              \
    "  \"off\": none), at most $ULPGYM_INPUT_CACHE_MAX bytes (default 4G, least recently used files go):\n"            \
    "  the same bits, read back instead of drawn again; deleting the folder is always safe\n"
/* --case-memory BYTES, taken by every command that builds cases: applies its value (NULL:
 * not given, then $ULPGYM_CASE_MEMORY) as the case memory budget (gen/case_memory.h).
 * Returns 0, or UG_EXIT_USAGE after printing why the value does not parse. */
int ug_cli_case_memory(const char *value);
/* Its line in a command's -h text. */
#define UG_CLI_CASE_MEMORY_HELP                                                                                        \
    "  --case-memory    refuse a case whose memory estimate (tensors, fp64 input copies, kernel\n"                     \
    "                   and oracle scratch) exceeds BYTES (suffix K, M, G or T, powers of 1024);\n"                    \
    "                   default $ULPGYM_CASE_MEMORY, else half the physical memory (per sweep worker);\n"              \
    "                   the kernel's process is capped at its own size + 1.25 x BYTES of address\n"                    \
    "                   space (a runaway allocation is CRASH \"out of memory\")\n"

/* --case-timeout SECONDS of the single-case commands (triage, case): their kernel runs in
 * a contained process (run/contain.h) with this limit, default UG_SWEEP_TIMEOUT_DEFAULT
 * (value NULL). Returns the seconds, or -1 after printing why the value does not parse. */
double ug_cli_case_timeout(const char *cmd, const char *value);
#define UG_CLI_CASE_TIMEOUT_HELP                                                                                       \
    "  --case-timeout   seconds the kernel may take (default 300); it runs in a contained process,\n"                  \
    "                   so a crash or hang is reported as CRASH / TIMEOUT, as a sweep records it\n"

/* The case a case ID or unique prefix (6+ hex digits, any case) names: looked up in db
 * (NULL: none), then in the plan at plan_path (NULL: the default plan). Fills id and a
 * malloc'd spec; *from_plan (may be NULL) says it came from the plan. An ambiguous prefix
 * is refused listing its candidates. 0, or UG_EXIT_USAGE after printing why. */
int ug_cli_find_case(ug_db *db, const char *plan_path, const char *prefix, char id[UG_ID_LEN + 1], char **spec,
                     int *from_plan);
/* Opens the database named by --db/$ULPGYM_DB/./ulpgym.db; prints the error itself. */
int ug_cli_open_db(const char *path, int mode, ug_db **db);

#endif
