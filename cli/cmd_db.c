/* cmd_db.c — `ulpgym db check [--db PATH]`: whether a results database is sound, for
 * nightly scripts and before a database from elsewhere (a shard, an artifact) is trusted.
 *
 * SQLite's quick_check reads every page once (db/store.h, ug_db_quick_check): a damaged
 * file exits 2 naming the database and the command that lists every problem; the reading
 * commands meet damage only on the pages a query visits, this command on all of them. */
#include <string.h>

#include "cli/cli.h"

static int db_check(int argc, char **argv)
{
    const char *db_path = NULL;
    for (int i = 2; i < argc; i++) {
        int m = ug_cli_opt(argc, argv, &i, "--db", &db_path);
        if (m < 0) return UG_EXIT_USAGE;
        if (!m) return ug_cli_fail("db check: unexpected argument \"%s\" (see ulpgym db -h)", argv[i]);
    }
    const char *path = ug_db_default_path(db_path);
    ug_db *db;
    if (ug_cli_open_db(path, UG_DB_READONLY, &db)) return UG_EXIT_USAGE;
    char err[1024];
    int rc = ug_db_quick_check(db, err, sizeof err);
    ug_db_close(db);
    if (rc == -2) return ug_cli_fail("%s", err);
    if (rc) {
        ug_cli_fail("db check: %s", err);
        return UG_EXIT_ENGINE;
    }
    printf("database %s: ok (quick_check)\n", path);
    return UG_EXIT_OK;
}

static int ug_cmd_db(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "check") != 0)
        return ug_cli_fail("db: give a subcommand: db check [--db PATH] (see ulpgym db -h)");
    return db_check(argc, argv);
}

const ug_command ug_command_db = {
    "db", ug_cmd_db, "check that a results database is sound",
    "usage: ulpgym db check [--db PATH]\n"
    "  Runs SQLite's quick_check on the database (--db, else $ULPGYM_DB, else ./ulpgym.db),\n"
    "  reading every page once, and writes nothing. Exit 0: sound; 2: damaged (the message\n"
    "  names the database and the sqlite3 command that lists every problem), missing, or\n"
    "  not a ulpgym database; 3: the check itself failed (an I/O error).\n"
    "  Run it in a nightly script before trusting a database; `merge` and `--cost-from`\n"
    "  check their input databases the same way.\n"};
