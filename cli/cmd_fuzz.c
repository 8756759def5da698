/* cmd_fuzz.c — `ulpgym fuzz OP`: run the precision fuzzer (libFuzzer, fuzz/fuzz_precision.c)
 * on one operator, seeded with the plan's cases, until --time or --max-findings distinct
 * findings. Findings are deduplicated by failure signature (run/found.h), sorted into kernel
 * findings and contract findings (the correct sim kernel or the ideal backend fails them
 * too) and written outside the source tree (--out, $ULPGYM_FINDINGS or ./ulpgym-found);
 * `ulpgym corpus import` makes kernel findings regression cases.
 *
 * The libFuzzer binary lives in a separate clang build (build-fuzz/ beside build/, or
 * --fuzz-build DIR / $ULPGYM_FUZZ_BUILD); it is configured and built on first use. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/canon.h"
#include "gen/fuzzspace.h"
#include "gen/plan.h"
#include "run/found.h"

/* Writes the plan's cases of op, encoded as fuzzer inputs, into dir; returns how many.
 * At most limit of them (0: all), spread evenly over the plan: libFuzzer runs every seed
 * before it mutates one, and on the heavy ops (a few cases a second under ASan) a whole
 * plan of seeds would use up a 60 s search. */
static int write_seeds(int op, const ug_fuzz_space *space, const char *dir, size_t limit)
{
    ug_plan p;
    char err[512];
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    if (ug_plan_load_only(ug_plan_default_path(), -1, ops, 0, &p, err, sizeof err))
        return ug_cli_fail("fuzz: %s", err), -1;
    mkdir(dir, 0755);
    int n = 0;
    size_t take = limit && limit < p.n ? limit : p.n;
    for (size_t k = 0; k < take; k++) {
        size_t i = k * p.n / take;
        unsigned char buf[256];
        size_t len = ug_fuzz_encode(space, p.cases[i].spec, buf, sizeof buf);
        char path[1200];
        snprintf(path, sizeof path, "%s/plan-%s", dir, p.cases[i].id);
        FILE *f = len ? fopen(path, "wb") : NULL;
        if (f) {
            n += fwrite(buf, 1, len, f) == len;
            fclose(f);
        }
    }
    ug_plan_free(&p);
    return n;
}

static int count_found(const char *found);
static double now_s(void);

/* Starts argv with stdout and stderr appended to log; the child's pid, or -1. */
static pid_t spawn_logged(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stdout);
        if (f) dup2(fileno(stdout), 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int run_quiet(char *const argv[], const char *log)
{
    pid_t pid = spawn_logged(argv, log);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define FUZZ_GRACE_S 60.0 /* after SIGINT or --time, the seconds libFuzzer gets to exit before SIGKILL */

/* Runs argv with output to log; while it runs, stops it (SIGINT: libFuzzer exits cleanly)
 * once found/ holds max_findings signatures (0: never). A fuzzer still there FUZZ_GRACE_S
 * after that, or after its `seconds` (-max_total_time), is killed (SIGKILL): libFuzzer
 * interrupted while a slow unit ran has been seen to deadlock in its timeout handler,
 * waiting on llvm-symbolizer (a test then hung until ctest's timeout), and `fuzz` must end. */
static int run_fuzzer(char *const argv[], const char *log, const char *found, long max_findings, long seconds,
                      int *stopped)
{
    pid_t pid = spawn_logged(argv, log);
    if (pid < 0) return -1;
    int st = 0, killed = 0;
    double deadline = now_s() + (double)seconds + FUZZ_GRACE_S;
    *stopped = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (!*stopped && max_findings > 0 && count_found(found) >= max_findings) {
            kill(pid, SIGINT);
            *stopped = 1;
            if (now_s() + FUZZ_GRACE_S < deadline) deadline = now_s() + FUZZ_GRACE_S;
        }
        if (!killed && now_s() > deadline) {
            fprintf(stderr, "ulpgym fuzz: the fuzzer did not exit %.0f s after it was due to; killed (log: %s)\n",
                    FUZZ_GRACE_S, log);
            kill(pid, SIGKILL); /* what it started (llvm-symbolizer) reads EOF on its pipe and ends */
            killed = 1;
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) ? -1 : 0;
}

/* The run's scratch folder (its corpus, libFuzzer's artefacts, the log), which mkdtemp made:
 * removed depth first without following a link, once what it found is in the findings
 * folder. Kept (and named) when libFuzzer itself ended badly, for its log. */
static void finish_work(const char *work, int fuzzer_failed)
{
    if (fuzzer_failed) {
        fprintf(stderr, "ulpgym fuzz: the fuzzer's log and corpus are kept in %s\n", work);
        return;
    }
    if (nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "ulpgym fuzz: could not remove the scratch folder %s: %s\n", work, strerror(errno));
}

/* The fuzz_precision binary, built on demand. */
static int ensure_binary(const char *build, char *bin, size_t len)
{
    snprintf(bin, len, "%s/fuzz/fuzz_precision", build);
    char log[1100];
    snprintf(log, sizeof log, "%s.log", build);
    char *make[] = {"cmake", "--build", (char *)build, "--target", "fuzz_precision", "-j", "2", NULL};
    if (access(bin, X_OK) == 0) { /* brought up to date with the sources (a no-op when it is) */
        if (run_quiet(make, log) != 0)
            fprintf(stderr, "ulpgym fuzz: rebuilding %s failed (see %s); using it as is\n", bin, log);
        return 0;
    }
    char lists[1100]; /* the target is built from the sources: an installed tree has none */
    snprintf(lists, sizeof lists, "%s/CMakeLists.txt", ug_data_dir());
    if (access(lists, R_OK) != 0)
        return ug_cli_fail("fuzz: the libFuzzer target is built from ulpgym's sources, and %s has none (an installed "
                           "tree); point ULPGYM_DATA at a source checkout",
                           ug_data_dir()[0] ? ug_data_dir() : "no data folder");
    fprintf(stderr, "ulpgym fuzz: building the libFuzzer target in %s (log: %s) ...\n", build, log);
    setenv("CC", "clang", 1);
    char *conf[] = {
        "cmake", "-S", (char *)ug_data_dir(), "-B", (char *)build, "-DULPGYM_FUZZ=ON", "-DCMAKE_BUILD_TYPE=Release",
        NULL};
    if (run_quiet(conf, log) != 0 || run_quiet(make, log) != 0 || access(bin, X_OK) != 0)
        return ug_cli_fail("fuzz: building the fuzz target failed; see %s (needs clang and libclang-rt-14-dev)", log);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The findings index OUT/findings.tsv: one line per failure signature,
 * KEY \t HITS \t SORT \t CASE_ID \t FILE \t SIGNATURE. */
#define UG_MAX_INDEX 4096
typedef struct {
    char key[17], sort[24], id[UG_ID_LEN + 1], file[600], sig[1024];
    long hits;
} index_row;

static int index_load(const char *path, index_row *rows, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    char line[2048];
    while (n < cap && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        index_row *r = &rows[n];
        char *fld[6] = {0}, *p = line;
        for (int i = 0; i < 6 && p; i++) {
            fld[i] = p;
            p = strchr(p, '\t');
            if (p) *p++ = 0;
        }
        if (!fld[5]) continue;
        snprintf(r->key, sizeof r->key, "%s", fld[0]);
        r->hits = atol(fld[1]);
        snprintf(r->sort, sizeof r->sort, "%s", fld[2]);
        snprintf(r->id, sizeof r->id, "%s", fld[3]);
        snprintf(r->file, sizeof r->file, "%s", fld[4]);
        snprintf(r->sig, sizeof r->sig, "%s", fld[5]);
        n++;
    }
    fclose(f);
    return n;
}

static int index_save(const char *path, const index_row *rows, int n)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "# key\thits\tsort\tcase_id\tfile\tsignature (ulpgym fuzz; see README, \"Fuzzing beyond the plan\")\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\t%ld\t%s\t%s\t%s\t%s\n", rows[i].key, rows[i].hits, rows[i].sort, rows[i].id, rows[i].file,
                rows[i].sig);
    return fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : -1;
}

/* A whole file with its trailing newlines cut (a .sig line), or NULL. */
static char *read_line_file(const char *path)
{
    char err[256];
    char *t = ug_text_file_read(path, err, sizeof err);
    for (size_t n = t ? strlen(t) : 0; n && (t[n - 1] == '\n' || t[n - 1] == '\r');) t[--n] = 0;
    return t;
}

/* How many distinct signatures the target has written to found/. */
static int count_found(const char *found)
{
    DIR *d = opendir(found);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 21 && strcmp(e->d_name + 16, ".json") == 0) n++;
    closedir(d);
    return n;
}

static long count_hits(const char *found, const char *key)
{
    char path[1200], line[256];
    snprintf(path, sizeof path, "%s/hits.tsv", found);
    FILE *f = fopen(path, "r");
    long n = 0;
    while (f && fgets(line, sizeof line, f)) n += strncmp(line, key, 16) == 0 && line[16] == '\t';
    if (f) fclose(f);
    return n;
}

typedef struct {
    int kernel, contract, repeated; /* signatures new to OUT by sort, and ones OUT already had */
    long hits;
} tally;

/* Sorts and keeps the one case per signature that the target wrote to found/ in OUT:
 * kernel findings in OUT/<op>/, contract findings in OUT/contract/<op>/; a signature OUT
 * already holds only adds its hits. Cases go into the database too, so triage finds them. */
static void collect(const char *found, const char *out, const char *backend, const char *db_path, tally *t)
{
    DIR *d = opendir(found);
    if (!d) return;
    static index_row rows[UG_MAX_INDEX];
    char index_path[1200], err[512];
    snprintf(index_path, sizeof index_path, "%s/findings.tsv", out);
    int nrows = index_load(index_path, rows, UG_MAX_INDEX);
    ug_db *db = NULL;
    if (ug_db_open(ug_db_default_path(db_path), 1, &db, err, sizeof err)) fprintf(stderr, "ulpgym: %s\n", err);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 21 || strcmp(e->d_name + 16, ".json") != 0) continue;
        char key[17], path[1400];
        snprintf(key, sizeof key, "%.16s", e->d_name);
        snprintf(path, sizeof path, "%s/%s", found, e->d_name);
        char *spec = read_line_file(path);
        snprintf(path, sizeof path, "%s/%s.sig", found, key);
        char *sig = read_line_file(path);
        long hits = count_hits(found, key);
        t->hits += hits;
        int have = -1;
        for (int i = 0; i < nrows && have < 0; i++)
            if (strcmp(rows[i].key, key) == 0) have = i;
        if (have >= 0) {
            rows[have].hits += hits;
            t->repeated++;
            printf("known signature %s (%s finding %s): %ld more hits, %ld in all; not written again\n", key,
                   rows[have].sort, rows[have].id, hits, rows[have].hits);
        } else if (spec && sig && nrows < UG_MAX_INDEX) {
            char why[700], id[UG_ID_LEN + 1], dir[1200];
            int sort = ug_found_sort_case(spec, "sim", "ideal", why, sizeof why);
            if (sort < 0) sort = UG_FOUND_CONTRACT_SIM; /* cannot be rerun: never a regression case */
            int kernel = sort == UG_FOUND_KERNEL;
            snprintf(dir, sizeof dir, kernel ? "%s" : "%s/contract", out);
            if (ug_found_store_in(dir, spec, db, id, err, sizeof err)) {
                fprintf(stderr, "ulpgym: finding %s not kept: %s\n", key, err);
            } else {
                index_row *r = &rows[nrows++];
                snprintf(r->key, sizeof r->key, "%s", key);
                r->hits = hits;
                snprintf(r->sort, sizeof r->sort, "%s", ug_found_sort_name((ug_found_sort)sort));
                snprintf(r->id, sizeof r->id, "%s", id);
                snprintf(r->file, sizeof r->file, "%s%s.json", kernel ? "" : "contract/", id);
                ug_spec s;
                if (ug_spec_parse(spec, &s, err, sizeof err) == 0) {
                    snprintf(r->file, sizeof r->file, "%s%s/%s.json", kernel ? "" : "contract/", ug_op_name(s.op), id);
                    ug_spec_free(&s);
                }
                snprintf(r->sig, sizeof r->sig, "%s", sig);
                if (kernel)
                    t->kernel++;
                else
                    t->contract++;
                char *line = ug_triage_line(id, db_path, 0, NULL), *qb = ug_shell_word(backend);
                printf("%s finding %s (%ld hits) -> %s/%s\n  signature %s\n  %s: %s\n  triage: %s --backend %s\n",
                       kernel ? "kernel" : "contract", id, hits, out, r->file, sig,
                       kernel ? "sorted" : "the correct kernel or the oracle fails it too", why, line ? line : id,
                       qb ? qb : backend);
                free(line);
                free(qb);
            }
        }
        free(spec);
        free(sig);
    }
    closedir(d);
    ug_db_close(db);
    if (nrows && index_save(index_path, rows, nrows))
        fprintf(stderr, "ulpgym: cannot write %s: %s\n", index_path, strerror(errno));
}

static int ug_cmd_fuzz(int argc, char **argv)
{
    const char *op_name = NULL, *time_s = NULL, *variant = NULL, *backend = NULL, *build = NULL, *seeds = NULL,
               *db_path = NULL, *max_s = NULL, *out_opt = NULL, *nseeds_s = NULL;
    int no_signal = 0;
    const ug_cli_valopt value_opts[] = {{"--time", &time_s},       {"--kernel-variant", &variant},
                                        {"--backend", &backend},   {"--fuzz-build", &build},
                                        {"--seed-corpus", &seeds}, {"--seeds", &nseeds_s},
                                        {"--db", &db_path},        {"--max-findings", &max_s},
                                        {"--out", &out_opt},       {NULL, NULL}};
    const ug_cli_flagopt flags[] = {{"--no-signal", &no_signal}, {NULL, NULL}};
    const ug_cli_args cli_args = {"fuzz", NULL, value_opts, flags, &op_name};
    if (ug_cli_parse(argc, argv, &cli_args)) return UG_EXIT_USAGE;
    int op = op_name ? ug_op_find(op_name) : -1;
    if (op < 0 || !ug_op_def_get(op)) return ug_cli_fail("fuzz: give an implemented op (see `ulpgym ops`)");
    long seconds = time_s ? ug_cli_long(time_s) : 60;
    if (seconds <= 0) return ug_cli_fail("fuzz: --time must be a positive number of seconds");
    long max_findings = max_s ? ug_cli_long(max_s) : 0;
    if (max_s && max_findings <= 0) return ug_cli_fail("fuzz: --max-findings must be a positive number");
    long seed_limit = !nseeds_s ? 64 : strcmp(nseeds_s, "all") == 0 ? 0 : ug_cli_long(nseeds_s);
    if (nseeds_s && strcmp(nseeds_s, "all") != 0 && seed_limit <= 0)
        return ug_cli_fail("fuzz: --seeds must be a positive number or \"all\"");
    if (variant && backend) return ug_cli_fail("fuzz: give --kernel-variant or --backend, not both");
    const char *out = out_opt && *out_opt ? out_opt : ug_found_out_dir();
    if (variant && !ug_op_variant(ug_op_def_get(op), variant))
        return ug_cli_fail("fuzz: op %s has no kernel variant \"%s\"", op_name, variant);
    ug_fuzz_space space;
    char err[512];
    if (ug_fuzz_space_load(op, &space, err, sizeof err)) return ug_cli_fail("fuzz: %s", err);
    if (seeds) { /* only write the seed corpus */
        int n = write_seeds(op, &space, seeds, (size_t)seed_limit);
        ug_fuzz_space_free(&space);
        if (n < 0) return UG_EXIT_USAGE;
        printf("%d seed inputs written to %s\n", n, seeds);
        return 0;
    }
    char build_dir[1024], bin[1100], work[] = "/tmp/ulpgym-fuzz-XXXXXX";
    const char *env_build = getenv("ULPGYM_FUZZ_BUILD");
    snprintf(build_dir, sizeof build_dir, "%s", build ? build : env_build && *env_build ? env_build : "");
    if (!build_dir[0]) snprintf(build_dir, sizeof build_dir, "%s/build-fuzz", ug_data_dir());
    if (ensure_binary(build_dir, bin, sizeof bin) || !mkdtemp(work)) {
        ug_fuzz_space_free(&space);
        return UG_EXIT_USAGE;
    }
    char corpus[1100], found[1100], log[1100], prefix[1100], max_time[64], dict[1100];
    snprintf(corpus, sizeof corpus, "%s/corpus", work);
    snprintf(found, sizeof found, "%s/found", work);
    snprintf(log, sizeof log, "%s/fuzz.log", work);
    snprintf(prefix, sizeof prefix, "-artifact_prefix=%s/", work);
    snprintf(max_time, sizeof max_time, "-max_total_time=%ld", seconds);
    snprintf(dict, sizeof dict, "-dict=%s/fuzz/fuzz_precision.dict", ug_data_dir());
    mkdir(found, 0755);
    int nseeds = write_seeds(op, &space, corpus, (size_t)seed_limit);
    ug_fuzz_space_free(&space);
    setenv("ULPGYM_FUZZ_OP", op_name, 1);
    setenv("ULPGYM_FUZZ_FOUND", found, 1);
    if (variant) setenv("ULPGYM_KERNEL_VARIANT", variant, 1);
    if (backend) setenv("ULPGYM_BACKEND", backend, 1);
    if (no_signal) setenv("ULPGYM_FUZZ_NO_SIGNAL", "1", 1);
    setenv("ULPGYM_FUZZ_KEEP_GOING", "1", 1);
    char backend_name[600];
    snprintf(backend_name, sizeof backend_name, "%s%s",
             backend   ? ""
             : variant ? "sim:"
                       : "sim",
             backend   ? backend
             : variant ? variant
                       : "");
    char max_desc[64] = "";
    if (max_findings) snprintf(max_desc, sizeof max_desc, " or %ld distinct findings", max_findings);
    printf("fuzzing %s with %s for up to %ld s%s (%d seeds from the plan, error-magnitude signal %s); findings -> %s;"
           " log %s (removed with its folder after a clean run)\n",
           op_name, backend_name, seconds, max_desc, nseeds, no_signal ? "off" : "on", out, log);
    fflush(stdout);
    char *args[] = {bin,    max_time, prefix, dict, "-timeout=30", "-rss_limit_mb=4096", "-print_final_stats=1",
                    corpus, NULL};
    double t0 = now_s();
    int stopped = 0;
    int rc = run_fuzzer(args, log, found, max_findings, seconds, &stopped);
    double took = now_s() - t0;
    tally t = {0};
    collect(found, out, backend_name, db_path, &t);
    finish_work(work, rc != 0 && !stopped);
    int distinct = t.kernel + t.contract + t.repeated;
    if (!distinct) {
        printf("no finding in %.0f s (libFuzzer exit %d%s)\n", took, rc,
               rc && !stopped ? "; a crash or sanitizer report stops the search: see the log" : "");
        return 0;
    }
    printf("%ld failing cases in %.0f s, %d distinct signatures: %d new kernel findings, %d new contract findings, "
           "%d already in %s%s\n",
           t.hits, took, distinct, t.kernel, t.contract, t.repeated, out,
           stopped ? " (stopped at --max-findings)" : "");
    if (t.kernel) printf("keep kernel findings as regression cases: ulpgym corpus import %s\n", out);
    return UG_EXIT_FOUND;
}

const ug_command ug_command_fuzz = {
    "fuzz", ug_cmd_fuzz, "search beyond the plan with libFuzzer; sort and deduplicate what it finds",
    "usage: ulpgym fuzz OP [--time S] [--max-findings N] [--out DIR] [--kernel-variant V | --backend B]\n"
    "                  [--no-signal] [--db PATH] [--fuzz-build DIR] [--seeds N|all] [--seed-corpus DIR]\n"
    "  Runs fuzz/fuzz_precision (libFuzzer + ASan/UBSan, built on demand in build-fuzz/ with\n"
    "  clang) on OP for up to S seconds (default 60), seeded with the plan's cases and\n"
    "  fuzz/fuzz_precision.dict. Inputs decode to valid cases inside the op's space\n"
    "  (shapes, dtypes, distributions, special values). Every case that fails its primary\n"
    "  standard (or a discrete compare, or errors) is a hit; the search goes on after it.\n"
    "  Hits are deduplicated by failure signature (op, backend, outcome, error kind\n"
    "  nonfinite/numeric/discrete, deciding standard, failing outputs, dtype, degenerate\n"
    "  axes): the first case of a signature is kept, later ones are counted. Each kept case\n"
    "  is sorted by rerunning it with the correct sim kernel and the ideal backend: if both\n"
    "  pass it is a kernel finding (DIR/OP/<id>.json), else a contract finding\n"
    "  (DIR/contract/OP/<id>.json: the standard or the oracle, not the kernel, is at issue;\n"
    "  never a regression case). DIR/findings.tsv lists every signature with its hit count;\n"
    "  a signature DIR already holds is counted, not written again. The cases also go into\n"
    "  the database (origin fuzz) so `ulpgym triage ID --backend B` finds them. Only\n"
    "  `ulpgym corpus import DIR` makes kernel findings regression cases (corpus/found/).\n"
    "  Exit status 1 when something was found.\n"
    "  --max-findings N  stop after N distinct signatures (default: none, run for --time)\n"
    "  --out DIR         where findings go (default $ULPGYM_FINDINGS, else ./ulpgym-found)\n"
    "  --no-signal       switch off the error-magnitude coverage signal (for comparison)\n"
    "  --seeds N|all     seed with N of the op's plan cases, spread over the plan (default 64;\n"
    "                    libFuzzer runs every seed before it mutates, which on a heavy op\n"
    "                    would take the whole --time), or all of them\n"
    "  --seed-corpus DIR only write the plan's cases (as many as --seeds) as fuzzer inputs into DIR\n"};
