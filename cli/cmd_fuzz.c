/* cmd_fuzz.c — `ulpgym fuzz OP`: run the precision fuzzer (libFuzzer, fuzz/fuzz_precision.c)
 * on one operator, seeded with the plan's cases, and keep every finding as a regression
 * case (corpus/found/<op>/<id>.json and the database, origin fuzz).
 *
 * The libFuzzer binary lives in a separate clang build (build-fuzz/ beside build/, or
 * --fuzz-build DIR / $ULPGYM_FUZZ_BUILD); it is configured and built on first use. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gen/fuzzspace.h"
#include "gen/plan.h"
#include "run/found.h"

#ifndef UG_SOURCE_DIR
#define UG_SOURCE_DIR "."
#endif

static const char *source_dir(void)
{
    const char *d = getenv("ULPGYM_DATA");
    return d && *d ? d : UG_SOURCE_DIR;
}

/* Writes the plan's cases of op, encoded as fuzzer inputs, into dir; returns how many. */
static int write_seeds(int op, const ug_fuzz_space *space, const char *dir)
{
    ug_plan p;
    char err[512];
    if (ug_plan_load(ug_plan_default_path(), -1, &p, err, sizeof err)) return ug_cli_fail("fuzz: %s", err), -1;
    unsigned char ops[UG_OP_COUNT] = {0};
    ops[op] = 1;
    ug_plan_filter(&p, ops, 0);
    mkdir(dir, 0755);
    int n = 0;
    for (size_t i = 0; i < p.n; i++) {
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

static int run_quiet(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stdout);
        if (f) dup2(fileno(stdout), 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The fuzz_precision binary, built on demand. */
static int ensure_binary(const char *build, char *bin, size_t len)
{
    snprintf(bin, len, "%s/fuzz/fuzz_precision", build);
    if (access(bin, X_OK) == 0) return 0;
    char log[1100];
    snprintf(log, sizeof log, "%s.log", build);
    fprintf(stderr, "ulpgym fuzz: building the libFuzzer target in %s (log: %s) ...\n", build, log);
    setenv("CC", "clang", 1);
    char *conf[] = {"cmake", "-S", (char *)source_dir(), "-B", (char *)build, "-DULPGYM_FUZZ=ON",
                    "-DCMAKE_BUILD_TYPE=Release", NULL};
    char *make[] = {"cmake", "--build", (char *)build, "--target", "fuzz_precision", "-j", "2", NULL};
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

/* Stores every spec the target wrote into found/; returns the count. */
static int collect(const char *found, const char *op_name, const char *db_path, double seconds)
{
    DIR *d = opendir(found);
    if (!d) return 0;
    ug_db *db = NULL;
    char err[512];
    if (ug_db_open(ug_db_default_path(db_path), 1, &db, err, sizeof err)) fprintf(stderr, "ulpgym: %s\n", err);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".json")) continue;
        char path[1400], spec[1 << 16], id[UG_ID_LEN + 1];
        snprintf(path, sizeof path, "%s/%s", found, e->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(spec, 1, sizeof spec - 1, f) : 0;
        if (f) fclose(f);
        spec[len] = 0;
        if (ug_found_store(spec, db, id, err, sizeof err)) {
            fprintf(stderr, "ulpgym: finding %s not kept: %s\n", e->d_name, err);
            continue;
        }
        printf("finding %s after %.1f s -> %s/%s/%s.json\n  triage: ulpgym triage %s\n", id, seconds, ug_found_dir(),
               op_name, id, id);
        n++;
    }
    closedir(d);
    ug_db_close(db);
    return n;
}

static int ug_cmd_fuzz(int argc, char **argv)
{
    const char *op_name = NULL, *time_s = NULL, *variant = NULL, *backend = NULL, *build = NULL, *seeds = NULL,
               *db_path = NULL;
    int no_signal = 0;
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = ug_cli_opt(argc, argv, &i, "--time", &time_s)) || (m = ug_cli_opt(argc, argv, &i, "--kernel-variant", &variant)) ||
            (m = ug_cli_opt(argc, argv, &i, "--backend", &backend)) || (m = ug_cli_opt(argc, argv, &i, "--fuzz-build", &build)) ||
            (m = ug_cli_opt(argc, argv, &i, "--seed-corpus", &seeds)) || (m = ug_cli_opt(argc, argv, &i, "--db", &db_path))) {
            if (m < 0) return UG_EXIT_USAGE;
        } else if (ug_cli_flag(argv, i, "--no-signal")) no_signal = 1;
        else if (argv[i][0] != '-' && !op_name) op_name = argv[i];
        else return ug_cli_fail("fuzz: unexpected argument \"%s\" (see ulpgym fuzz -h)", argv[i]);
    }
    int op = op_name ? ug_op_find(op_name) : -1;
    if (op < 0 || !ug_op_def_get(op)) return ug_cli_fail("fuzz: give an implemented op (see `ulpgym ops`)");
    long seconds = time_s ? ug_cli_long(time_s) : 60;
    if (seconds <= 0) return ug_cli_fail("fuzz: --time must be a positive number of seconds");
    if (variant && !ug_op_variant(ug_op_def_get(op), variant))
        return ug_cli_fail("fuzz: op %s has no kernel variant \"%s\"", op_name, variant);
    ug_fuzz_space space;
    char err[512];
    if (ug_fuzz_space_load(op, &space, err, sizeof err)) return ug_cli_fail("fuzz: %s", err);
    if (seeds) { /* only write the seed corpus */
        int n = write_seeds(op, &space, seeds);
        ug_fuzz_space_free(&space);
        if (n < 0) return UG_EXIT_USAGE;
        printf("%d seed inputs written to %s\n", n, seeds);
        return 0;
    }
    char build_dir[1024], bin[1100], work[] = "/tmp/ulpgym-fuzz-XXXXXX";
    const char *env_build = getenv("ULPGYM_FUZZ_BUILD");
    snprintf(build_dir, sizeof build_dir, "%s", build ? build : env_build && *env_build ? env_build : "");
    if (!build_dir[0]) snprintf(build_dir, sizeof build_dir, "%s/build-fuzz", source_dir());
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
    snprintf(dict, sizeof dict, "-dict=%s/fuzz/fuzz_precision.dict", source_dir());
    mkdir(found, 0755);
    int nseeds = write_seeds(op, &space, corpus);
    ug_fuzz_space_free(&space);
    setenv("ULPGYM_FUZZ_OP", op_name, 1);
    setenv("ULPGYM_FUZZ_FOUND", found, 1);
    if (variant) setenv("ULPGYM_KERNEL_VARIANT", variant, 1);
    if (backend) setenv("ULPGYM_BACKEND", backend, 1);
    if (no_signal) setenv("ULPGYM_FUZZ_NO_SIGNAL", "1", 1);
    printf("fuzzing %s with %s for up to %ld s (%d seeds from the plan, error-magnitude signal %s); log %s\n", op_name,
           backend ? backend : variant ? variant : "sim", seconds, nseeds, no_signal ? "off" : "on", log);
    fflush(stdout);
    char *args[] = {bin, max_time, prefix, dict, "-timeout=30", "-rss_limit_mb=4096", "-print_final_stats=1", corpus, NULL};
    double t0 = now_s();
    int rc = run_quiet(args, log);
    double took = now_s() - t0;
    int n = collect(found, op_name, db_path, took);
    if (!n) printf("no finding in %.0f s (libFuzzer exit %d)\n", took, rc);
    return n ? UG_EXIT_FOUND : 0;
}

const ug_command ug_command_fuzz = {
    "fuzz", ug_cmd_fuzz, "search beyond the plan with libFuzzer; keep findings as regression cases",
    "usage: ulpgym fuzz OP [--time S] [--kernel-variant V | --backend B] [--no-signal] [--db PATH]\n"
    "                  [--fuzz-build DIR] [--seed-corpus DIR]\n"
    "  Runs fuzz/fuzz_precision (libFuzzer + ASan/UBSan, built on demand in build-fuzz/ with\n"
    "  clang) on OP for up to S seconds (default 60), seeded with the plan's cases and\n"
    "  fuzz/fuzz_precision.dict. Inputs decode to valid cases inside the op's space\n"
    "  (shapes, dtypes, distributions, special values). The first case that fails its\n"
    "  primary standard, or crashes, is a finding: written to corpus/found/OP/<id>.json\n"
    "  and stored in the database (origin fuzz), so every later sweep runs it. Exit\n"
    "  status 1 when something was found.\n"
    "  --no-signal       switch off the error-magnitude coverage signal (for comparison)\n"
    "  --seed-corpus DIR only write the plan's cases as fuzzer inputs into DIR\n"};
