/* cmd_corpus.c — `ulpgym corpus import DIR`: keep cases found elsewhere (spec JSON files,
 * or raw fuzzer inputs with --op) as regression cases, like `ulpgym fuzz` keeps its own. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "gen/fuzzspace.h"
#include "run/found.h"

typedef struct {
    ug_db *db;
    ug_fuzz_space *space; /* --op: raw inputs decode in this op's space */
    int kept, refused;
} importer;

static void import_file(importer *im, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return;
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *spec = NULL, id[UG_ID_LEN + 1], err[512];
    cJSON *j = cJSON_Parse((const char *)buf);
    if (cJSON_IsObject(j)) spec = strdup((const char *)buf);
    else if (im->space) spec = ug_fuzz_decode(im->space, buf, n);
    cJSON_Delete(j);
    if (!spec) {
        fprintf(stderr, "ulpgym: %s: not a case spec (give --op OP for raw fuzzer inputs)\n", path);
        im->refused++;
        return;
    }
    if (ug_found_store(spec, im->db, id, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s: %s\n", path, err);
        im->refused++;
    } else {
        printf("%s  <- %s\n", id, path);
        im->kept++;
    }
    free(spec);
}

static void import_path(importer *im, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        import_file(im, path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            import_path(im, sub);
        }
    if (d) closedir(d);
}

static int ug_cmd_corpus(int argc, char **argv)
{
    const char *db_path = NULL, *op_name = NULL, *dir = NULL;
    if (argc < 2 || strcmp(argv[1], "import") != 0) return ug_cli_fail("corpus: give a subcommand: corpus import DIR");
    for (int i = 2; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--op", &op_name))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else return ug_cli_fail("corpus: unexpected argument \"%s\" (see ulpgym corpus -h)", argv[i]);
    }
    struct stat st;
    if (!dir || stat(dir, &st) != 0) return ug_cli_fail("corpus import: no such file or folder %s", dir ? dir : "(none)");
    importer im = {0};
    ug_fuzz_space space;
    char err[512];
    if (op_name) {
        int op = ug_op_find(op_name);
        if (op < 0 || !ug_op_def_get(op)) return ug_cli_fail("corpus: unknown or unimplemented op \"%s\"", op_name);
        if (ug_fuzz_space_load(op, &space, err, sizeof err)) return ug_cli_fail("corpus: %s", err);
        im.space = &space;
    }
    if (ug_cli_open_db(db_path, 1, &im.db)) {
        if (im.space) ug_fuzz_space_free(im.space);
        return UG_EXIT_USAGE;
    }
    import_path(&im, dir);
    ug_db_close(im.db);
    if (im.space) ug_fuzz_space_free(im.space);
    printf("%d cases kept as regression cases (origin fuzz), %d refused\n", im.kept, im.refused);
    return im.kept == 0 ? UG_EXIT_USAGE : 0;
}

const ug_command ug_command_corpus = {
    "corpus", ug_cmd_corpus, "import cases found elsewhere as regression cases",
    "usage: ulpgym corpus import DIR|FILE [--op OP] [--db PATH]\n"
    "  Every file that is a case spec (JSON), or with --op every raw fuzz_precision input\n"
    "  (a libFuzzer artifact, decoded in OP's space), is checked, written to\n"
    "  corpus/found/<op>/<case_id>.json and stored in the database with origin fuzz.\n"};
