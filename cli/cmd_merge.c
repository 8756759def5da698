/* cmd_merge.c — `ulpgym merge OUT.db IN.db...`: joins the shard databases of one sweep
 * (`ulpgym sweep --shard K/N`, e.g. the tasks of a Slurm job array) into one run of OUT.
 *
 * The work is in db/merge.c (ug_db_merge): it takes the latest run of each input, checks
 * that each file is sound (quick_check) and that they are shards of one sweep (same plan
 * hash, backend, sample, selection) before OUT is opened, and copies cases, results,
 * metrics and verdicts under one new run ID in a single transaction, so a refused merge
 * leaves OUT as it was (not even an empty OUT where none was). */
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "db/merge.h"

/* Whether paths a and b name one file (by device and inode, so x.db and ./x.db match);
 * a path that does not exist names no file yet. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int ug_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char *inputs[4096];
    int n = 0, partial = 0;
    for (int i = 1; i < argc; i++) {
        if (ug_cli_flag(argv, i, "--partial")) {
            partial = 1;
            continue;
        }
        if (argv[i][0] == '-') return ug_cli_fail("merge: unexpected option \"%s\" (see ulpgym merge -h)", argv[i]);
        if (!out)
            out = argv[i];
        else if (n < (int)(sizeof inputs / sizeof *inputs))
            inputs[n++] = argv[i];
        else
            return ug_cli_fail("merge: more than %zu input databases", sizeof inputs / sizeof *inputs);
    }
    if (!out || n == 0)
        return ug_cli_fail("merge: give the output database and at least one input: ulpgym merge OUT.db IN.db...");
    for (int i = 0; i < n; i++) {
        if (strcmp(inputs[i], out) == 0 || same_file(inputs[i], out))
            return ug_cli_fail("merge: %s is both the output and an input (%s)", out, inputs[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(inputs[i], inputs[j]) == 0 || same_file(inputs[i], inputs[j]))
                return ug_cli_fail("merge: %s and %s are the same database", inputs[j], inputs[i]);
    }
    char command[4096], err[1024] = "";
    size_t len = (size_t)snprintf(command, sizeof command, "ulpgym");
    for (int i = 0; i < argc && len < sizeof command; i++)
        len += (size_t)snprintf(command + len, sizeof command - len, " %s", argv[i]);
    long run;
    int rc = ug_db_merge(out, inputs, n, partial, command, &run, err, sizeof err);
    if (rc == -2) return ug_cli_fail("%s", err);
    if (rc) {
        ug_cli_fail("merge failed: %s", err);
        return 1;
    }
    printf("merged %d databases into run %ld of %s\n", n, run, out);
    return 0;
}

const ug_command ug_command_merge = {
    "merge", ug_cmd_merge, "join the shard databases of a sweep into one run",
    "usage: ulpgym merge [--partial] OUT.db IN.db...\n"
    "  Takes the latest run of each IN.db (the shards of one sweep: same plan hash,\n"
    "  backend, sample and case selection; no case in two inputs) and stores them as one\n"
    "  new run of OUT.db (created if missing), with the shards, hosts and input files\n"
    "  recorded in runs.shard, runs.host and runs.merged_from. All or nothing: a\n"
    "  refused merge leaves OUT.db as it was (or absent). A damaged input (quick_check\n"
    "  fails) is refused, naming it.\n"
    "  Every shard K/N must be given (files compared by inode, so x.db and ./x.db are one)\n"
    "  --partial        merge the shards given even if some are missing; the run is\n"
    "                   marked partial\n"};
