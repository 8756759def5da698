/* cmd_corpus.c — `ulpgym corpus import DIR|FILE`: the one way a finding becomes a regression
 * case. Keeps kernel findings (spec JSON files from `ulpgym fuzz --out DIR`, or raw fuzzer
 * inputs with --op) in the data dir's corpus/found/<op>/ and the database; refuses contract
 * findings (the correct sim kernel or the ideal backend fails them too), cases corpus/found
 * already holds, and files that are not valid case specs (an unknown key included) or that
 * a sweep would refuse (gen/plan.h ug_plan_check_spec). Reads regular files only (a FIFO is
 * never opened blocking) and follows no symbolic link out of the import folder; every
 * refusal has its line on stderr. */
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/canon.h"
#include "gen/fuzzspace.h"
#include "run/found.h"

typedef struct {
    ug_db *db;
    ug_fuzz_space *space; /* --op: raw inputs decode in this op's space */
    int kept, refused, skipped;
    struct stat *walked; /* the folders entered so far (device and inode): a symlink loop is entered once */
    size_t n_walked;
    char *root; /* the import folder, resolved: no symbolic link inside it is followed out of it */
} importer;

/* Records folder st as walked; 0 when it was already (a symlink loop or a second link to it). */
static int first_visit(importer *im, const struct stat *st)
{
    for (size_t i = 0; i < im->n_walked; i++)
        if (im->walked[i].st_dev == st->st_dev && im->walked[i].st_ino == st->st_ino) return 0;
    struct stat *grown = realloc(im->walked, (im->n_walked + 1) * sizeof *grown);
    if (!grown) return 0;
    im->walked = grown;
    im->walked[im->n_walked++] = *st;
    return 1;
}

/* A refusal: one line on stderr, counted (exit status 2). */
static void refuse(importer *im, const char *path, const char *why)
{
    fprintf(stderr, "ulpgym: %s: %s\n", path, why);
    im->refused++;
}

#define SPEC_FILE_MAX ((size_t)1 << 20) /* a spec or a raw fuzzer input is far smaller */

static void import_file(importer *im, const char *path)
{
    static unsigned char buf[SPEC_FILE_MAX + 1];
    char rerr[1400];
    size_t size, n = 0;
    int fd = ug_regular_file_open(path, SPEC_FILE_MAX, &size, rerr, sizeof rerr); /* a FIFO is never opened blocking */
    if (fd < 0) {
        fprintf(stderr, "ulpgym: %s; not imported\n", rerr);
        im->refused++;
        return;
    }
    for (ssize_t got; n < size && (got = read(fd, buf + n, size - n)) > 0;) n += (size_t)got;
    close(fd);
    buf[n] = 0;
    char *spec = NULL, id[UG_ID_LEN + 1], err[512];
    cJSON *j = cJSON_Parse((const char *)buf);
    if (cJSON_IsObject(j))
        spec = strdup((const char *)buf);
    else if (im->space)
        spec = ug_fuzz_decode(im->space, buf, n);
    cJSON_Delete(j);
    if (!spec) {
        fprintf(stderr, "ulpgym: %s: not a case spec (give --op OP for raw fuzzer inputs)\n", path);
        im->refused++;
        return;
    }
    ug_spec s;
    if (ug_spec_parse(spec, &s, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s: not a case spec: %s\n", path, err);
        im->refused++;
        free(spec);
        return;
    }
    char have[1400], why[700];
    snprintf(have, sizeof have, "%s/%s/%s.json", ug_found_dir(), ug_op_name(s.op), s.id);
    snprintf(id, sizeof id, "%s", s.id);
    ug_spec_free(&s);
    struct stat st;
    int exists = stat(have, &st) == 0;
    int sort = exists ? 0 : ug_found_sort_case(spec, "sim", "ideal", why, sizeof why);
    if (exists) {
        fprintf(stderr, "ulpgym: %s: case %s is already a regression case (%s); not imported again\n", path, id, have);
        im->refused++;
    } else if (sort == -2) {
        fprintf(stderr, "ulpgym: %s: case %s cannot be rerun: %s\n", path, id, why);
        im->refused++;
    } else if (sort != UG_FOUND_KERNEL) {
        fprintf(stderr, "ulpgym: %s: case %s is a contract finding, not a kernel's bug (%s); not imported\n", path, id,
                why);
        im->refused++;
    } else if (ug_found_store(spec, im->db, id, err, sizeof err)) {
        fprintf(stderr, "ulpgym: %s: %s\n", path, err);
        im->refused++;
    } else {
        printf("%s  <- %s\n", id, path);
        im->kept++;
    }
    free(spec);
}

/* Whether real (a resolved path) is root or inside it. */
static int inside(const char *root, const char *real)
{
    size_t n = strlen(root);
    return strncmp(root, real, n) == 0 && (real[n] == 0 || real[n] == '/' || (n == 1 && root[0] == '/'));
}

/* A folder entry reached through a symlink: followed only when its target exists and lies
 * inside the import folder; 0 to follow, else refused with a message. */
static int link_allowed(importer *im, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real)
        refuse(im, path, "a dangling symbolic link (its target does not exist); not followed");
    else if (!inside(im->root, real)) {
        char why[1400];
        snprintf(why, sizeof why, "a symbolic link that leads out of the import folder %s (to %s); not followed",
                 im->root, real);
        refuse(im, path, why);
    }
    int ok = real && inside(im->root, real);
    free(real);
    return ok ? 0 : -1;
}

static void import_path(importer *im, const char *path, int named);

/* Every entry of folder path (hidden ones left out). */
static void walk(importer *im, const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        refuse(im, path, "cannot be read as a folder");
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            import_path(im, sub, 0);
        }
    closedir(d);
}

/* Folder path (st its stat): walked once, unless it is a contract/ folder of `ulpgym fuzz`
 * findings met inside the import folder. */
static void enter_folder(importer *im, const char *path, int named, const struct stat *st)
{
    const char *base = strrchr(path, '/');
    if (!named && strcmp(base ? base + 1 : path, "contract") == 0) {
        printf("skipping %s: contract findings are not regression cases\n", path);
        im->skipped++;
    } else if (!first_visit(im, st)) {
        printf("skipping %s: the same folder was walked already (a symlink loop or a second link)\n", path);
        im->skipped++;
    } else
        walk(im, path);
}

/* A named file is always tried; inside a folder, only *.json files (every file with --op).
 * Only regular files are read, and no symbolic link inside the folder leads out of it. */
static void import_path(importer *im, const char *path, int named)
{
    struct stat st, lst;
    size_t n = strlen(path);
    if (lstat(path, &lst) != 0) {
        refuse(im, path, "cannot be read");
        return;
    }
    if (!named && S_ISLNK(lst.st_mode) && link_allowed(im, path)) return;
    if (stat(path, &st) != 0) {
        refuse(im, path, "a dangling symbolic link (its target does not exist)");
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        enter_folder(im, path, named, &st);
        return;
    }
    if (!named && !im->space && !(n > 5 && strcmp(path + n - 5, ".json") == 0)) return;
    if (S_ISREG(st.st_mode))
        import_file(im, path);
    else
        refuse(im, path, "not a regular file (a FIFO, socket or device); not read");
}

static int ug_cmd_corpus(int argc, char **argv)
{
    const char *db_path = NULL, *op_name = NULL, *dir = NULL;
    if (argc < 2 || strcmp(argv[1], "import") != 0) return ug_cli_fail("corpus: give a subcommand: corpus import DIR");
    for (int i = 2; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--db", &db_path)) || (m = ug_cli_opt(argc, argv, &i, "--op", &op_name))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else
            return ug_cli_fail("corpus: unexpected argument \"%s\" (see ulpgym corpus -h)", argv[i]);
    }
    struct stat st;
    if (dir && lstat(dir, &st) == 0 && stat(dir, &st) != 0)
        return ug_cli_fail("corpus import: %s is a dangling symbolic link (its target does not exist)", dir);
    if (!dir || stat(dir, &st) != 0)
        return ug_cli_fail("corpus import: no such file or folder %s", dir ? dir : "(none)");
    importer im = {0};
    ug_fuzz_space space;
    char err[512];
    if (op_name) {
        int op = ug_op_find(op_name);
        if (op < 0 || !ug_op_def_get(op)) return ug_cli_fail("corpus: unknown or unimplemented op \"%s\"", op_name);
        if (ug_fuzz_space_load(op, &space, err, sizeof err)) return ug_cli_fail("corpus: %s", err);
        im.space = &space;
    }
    if (!(im.root = realpath(dir, NULL)) || ug_cli_open_db(db_path, 1, &im.db)) {
        if (!im.root) ug_cli_fail("corpus import: %s cannot be resolved", dir);
        free(im.root);
        if (im.space) ug_fuzz_space_free(im.space);
        return UG_EXIT_USAGE;
    }
    import_path(&im, dir, 1);
    free(im.walked);
    free(im.root);
    ug_db_close(im.db);
    if (im.space) ug_fuzz_space_free(im.space);
    printf("%d cases kept as regression cases (origin fuzz), %d refused\n", im.kept, im.refused);
    return im.kept == 0 || im.refused ? UG_EXIT_USAGE : 0;
}

const ug_command ug_command_corpus = {
    "corpus", ug_cmd_corpus, "import kernel findings as regression cases",
    "usage: ulpgym corpus import DIR|FILE [--op OP] [--db PATH]\n"
    "  Every *.json case spec under DIR (e.g. the --out folder of `ulpgym fuzz`), or FILE,\n"
    "  or with --op every raw fuzz_precision input (a libFuzzer artifact, decoded in OP's\n"
    "  space), is checked and written to corpus/found/<op>/<case_id>.json under the data dir\n"
    "  ($ULPGYM_DATA, else the source tree) and stored in the database with origin fuzz;\n"
    "  every later sweep of the op runs it. Refused: files that are not valid case specs,\n"
    "  cases corpus/found already holds, and contract findings (rerun here: the correct sim\n"
    "  kernel or the ideal backend fails them too); a folder named contract/ is skipped, and a\n"
    "  folder reached again through a symlink is walked once. Only regular files are read (a\n"
    "  FIFO or device is refused unread), and a symlink inside DIR that leads out of DIR, or\n"
    "  nowhere, is refused, not followed; each refusal is one line on stderr.\n"
    "  Exit status 2 when anything was refused or nothing was kept.\n"};
