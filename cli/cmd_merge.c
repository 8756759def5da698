/* cmd_merge.c — `ulpgym merge OUT.db IN.db...`: joins the shard databases of one sweep
 * (`ulpgym sweep --shard K/N`, e.g. the tasks of a Slurm job array) into one run of OUT.
 *
 * The work is in db/merge.c (ug_db_merge): it takes the latest run of each input, checks
 * that they are shards of one sweep (same plan hash, backend, sample, selection) and
 * copies cases, results, metrics and verdicts under one new run ID in a single
 * transaction, so a refused merge leaves OUT as it was. */
#include <string.h>

#include "cli/cli.h"
#include "db/merge.h"

static int ug_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char *inputs[4096];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') return ug_cli_fail("merge: unexpected option \"%s\" (see ulpgym merge -h)", argv[i]);
        if (!out) out = argv[i];
        else if (n < (int)(sizeof inputs / sizeof *inputs)) inputs[n++] = argv[i];
        else return ug_cli_fail("merge: more than %zu input databases", sizeof inputs / sizeof *inputs);
    }
    if (!out || n == 0) return ug_cli_fail("merge: give the output database and at least one input: ulpgym merge OUT.db IN.db...");
    for (int i = 0; i < n; i++)
        if (strcmp(inputs[i], out) == 0) return ug_cli_fail("merge: %s is both the output and an input", out);
    ug_db *db;
    if (ug_cli_open_db(out, 1, &db)) return UG_EXIT_USAGE;
    char command[4096], err[1024] = "";
    size_t len = (size_t)snprintf(command, sizeof command, "ulpgym");
    for (int i = 0; i < argc && len < sizeof command; i++) len += (size_t)snprintf(command + len, sizeof command - len, " %s", argv[i]);
    long run;
    int rc = ug_db_merge(db, inputs, n, command, &run, err, sizeof err);
    ug_db_close(db);
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
    "usage: ulpgym merge OUT.db IN.db...\n"
    "  Takes the latest run of each IN.db (the shards of one sweep: same plan hash,\n"
    "  backend, sample and case selection; no case in two inputs) and stores them as one\n"
    "  new run of OUT.db (created if missing), with the shards, hosts and input files\n"
    "  recorded in runs.shard, runs.host and runs.merged_from. All or nothing.\n"};
