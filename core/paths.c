/* paths.c — the data folder, the command line that runs ulpgym and its version, found from
 * where this image (the program or libulpgym.so) lies (see paths.h). */
#include "core/paths.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/build_rev.h"
#include "ulpgym/kernel_abi.h"

#ifndef UG_SOURCE_DIR
#define UG_SOURCE_DIR "."
#endif
#ifndef UG_BUILD_DIR
#define UG_BUILD_DIR ""
#endif
#ifndef UG_VERSION
#define UG_VERSION "0"
#endif
#define UG_API_VERSION_TEXT "1" /* ULPGYM_API_VERSION of include/ulpgym/ulpgym.h */

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_program(const char *path) { return is_file(path) && access(path, X_OK) == 0; }

/* The absolute path of this image into buf, and whether it is a shared library (not the
 * program the process runs). */
static int own_image(char *buf, size_t len)
{
    char exe[PATH_MAX] = "", img[PATH_MAX] = "";
    if (!realpath("/proc/self/exe", exe)) exe[0] = 0;
    Dl_info info;
    if (dladdr((void *)ug_data_dir, &info) && info.dli_fname && info.dli_fname[0] && realpath(info.dli_fname, img) &&
        strcmp(img, exe) != 0) {
        snprintf(buf, len, "%s", img);
        return 1;
    }
    snprintf(buf, len, "%s", exe);
    return 0;
}

static void parent_dir(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    snprintf(buf, len, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
}

/* Whether dir is root or lies under it (both absolute, resolved). */
static int under(const char *dir, const char *root)
{
    size_t n = strlen(root);
    return n && strncmp(dir, root, n) == 0 && (dir[n] == 0 || dir[n] == '/');
}

static const char *data_origin = "none";

const char *ug_data_dir(void)
{
    static char dir[PATH_MAX];
    static int done;
    const char *env = getenv("ULPGYM_DATA");
    if (env && *env) {
        data_origin = "env";
        return env;
    }
    if (done) return dir;
    done = 1;
    char img[PATH_MAX], idir[PATH_MAX], probe[PATH_MAX + 64], build[PATH_MAX];
    own_image(img, sizeof img);
    parent_dir(img, idir, sizeof idir);
    snprintf(probe, sizeof probe, "%s/../share/ulpgym/gen/plans/nightly.json", idir);
    if (is_file(probe) && realpath(probe, build)) { /* PREFIX/share/ulpgym, the plans two levels below */
        snprintf(probe, sizeof probe, "%s/../share/ulpgym", idir);
        if (!realpath(probe, dir)) dir[0] = 0;
        data_origin = "installed";
        return dir;
    }
    snprintf(probe, sizeof probe, "%s/gen/plans/nightly.json", UG_SOURCE_DIR);
    int in_build = realpath(UG_BUILD_DIR, build) && under(idir, build);
    if (is_file(probe)) { /* a build folder's image, or a copy of one whose sources still exist */
        snprintf(dir, sizeof dir, "%s", UG_SOURCE_DIR);
        data_origin = in_build ? "build" : "source";
    }
    return dir;
}

const char *ug_data_dir_origin(void)
{
    ug_data_dir();
    return data_origin;
}

/* Where $PATH finds name: its resolved path into buf, or 0. */
static int on_path(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    char cand[PATH_MAX];
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n && snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name) < (int)sizeof cand && is_program(cand) &&
            realpath(cand, buf) && strlen(buf) < len)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

const char *ug_self_command(void)
{
    static char cmd[PATH_MAX + 16];
    if (cmd[0]) return cmd;
    char img[PATH_MAX], idir[PATH_MAX], cand[PATH_MAX + 32], prog[PATH_MAX] = "", found[PATH_MAX];
    int lib = own_image(img, sizeof img);
    parent_dir(img, idir, sizeof idir);
    const char *base = strrchr(img, '/');
    if (!lib && base && strcmp(base + 1, "ulpgym") == 0) snprintf(prog, sizeof prog, "%s", img);
    /* the library, a test or a fuzz target: the command line installed or built beside it */
    const char *beside[] = {"%s/ulpgym", "%s/../bin/ulpgym", "%s/../ulpgym"};
    for (int k = 0; !prog[0] && k < 3; k++)
        if (snprintf(cand, sizeof cand, beside[k], idir) < (int)sizeof cand && is_program(cand) &&
            !realpath(cand, prog))
            prog[0] = 0;
    if (!prog[0] || (on_path("ulpgym", found, sizeof found) && strcmp(found, prog) == 0)) {
        snprintf(cmd, sizeof cmd, "ulpgym");
        return cmd;
    }
    char *q = ug_shell_word(prog);
    snprintf(cmd, sizeof cmd, "%s", q ? q : "ulpgym");
    free(q);
    return cmd;
}

char *ug_shell_quote(const char *s)
{
    size_t n = 3;
    for (const char *c = s; *c; c++) n += *c == '\'' ? 4 : 1;
    char *q = malloc(n), *w = q;
    if (!q) return NULL;
    *w++ = '\'';
    for (const char *c = s; *c; c++) {
        if (*c == '\'') {
            memcpy(w, "'\\''", 4); /* close, escaped quote, reopen */
            w += 4;
        } else {
            *w++ = *c;
        }
    }
    *w++ = '\'';
    *w = 0;
    return q;
}

char *ug_triage_line(const char *case_id, const char *db_path, long run, const char *backend)
{
    char abs[PATH_MAX], runs[40] = "";
    const char *db = db_path && realpath(db_path, abs) ? abs : db_path;
    char *qid = ug_shell_word(case_id), *qdb = db ? ug_shell_word(db) : NULL;
    char *qb = backend && strncmp(backend, "plugin:", 7) == 0 ? ug_shell_word(backend) : NULL;
    if (run > 0) snprintf(runs, sizeof runs, " --run %ld", run);
    size_t n =
        strlen(ug_self_command()) + (qid ? strlen(qid) : 0) + (qdb ? strlen(qdb) : 0) + (qb ? strlen(qb) : 0) + 80;
    char *line = qid && (!db || qdb) ? malloc(n) : NULL;
    if (line)
        snprintf(line, n, "%s triage %s%s%s%s%s%s", ug_self_command(), qid, qdb ? " --db " : "", qdb ? qdb : "", runs,
                 qb ? " --backend " : "", qb ? qb : "");
    free(qid);
    free(qdb);
    free(qb);
    return line;
}

char *ug_shell_word(const char *s)
{
    int plain = *s != 0; /* safe characters paste as they are; anything else is quoted */
    for (const char *c = s; *c && plain; c++)
        plain =
            (*c && strchr("/._-+,:@%=", *c)) || (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z');
    return plain ? strdup(s) : ug_shell_quote(s);
}

const char *ug_version_line(void)
{
    static char line[160];
    if (!line[0])
        snprintf(line, sizeof line, "ulpgym %s (git %s, plugin ABI %d, API %s)", UG_VERSION, ug_build_rev,
                 ULPGYM_ABI_VERSION, UG_API_VERSION_TEXT);
    return line;
}
