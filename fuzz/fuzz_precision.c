/* fuzz_precision.c — libFuzzer target: bytes -> a valid case inside one operator's space
 * (gen/fuzzspace.c) -> kernel vs oracle. A case that fails its primary standard (or is
 * NONFINITE, ERROR, CRASH...) is a finding: its spec is written to $ULPGYM_FUZZ_FOUND and
 * the target aborts so libFuzzer keeps the input as an artifact.
 *
 * With ULPGYM_FUZZ_KEEP_GOING=1 (what `ulpgym fuzz` sets) the target does not abort: every
 * hit appends "KEY CASE_ID" to $ULPGYM_FUZZ_FOUND/hits.tsv, and the first hit of each
 * failure signature (run/found.h) writes KEY.json (the spec) and KEY.sig (the signature),
 * so the search goes on and `ulpgym fuzz` counts, sorts and keeps one case per signature.
 * Keep-going mode reports every failing case, also those the sim kernel fails: sorting
 * them into kernel and contract findings is the caller's.
 *
 * Environment: ULPGYM_FUZZ_OP (required), ULPGYM_KERNEL_VARIANT (default sim) or
 * ULPGYM_BACKEND (plugin:PATH.so), ULPGYM_FUZZ_NO_SIGNAL=1 to switch off the
 * error-magnitude signal. That signal is one libFuzzer extra counter per log2 bucket of
 * the case's max ulp error: new, larger errors count as new coverage, so the fuzzer
 * climbs towards failures instead of wandering. When a mutant is fuzzed, a finding must
 * also pass with the sim kernel (differential): the case shows the mutant's bug, not a
 * limit that the correct kernel shares (such as fp32 squares of bf16 max overflowing). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/fuzzspace.h"
#include "kernels/backend.h"
#include "run/exec.h"
#include "run/found.h"

#define UG_ULP_BUCKETS 64

/* libFuzzer reads counters in this section as extra coverage (no effect without it). */
__attribute__((used, section("__libfuzzer_extra_counters"))) static unsigned char ulp_counters[UG_ULP_BUCKETS];

static ug_fuzz_space space;
static ug_backend backend, reference; /* reference: the sim kernel, when fuzzing a mutant */
static int ready, signal_on = 1, differential, keep_going;
static char backend_name[600];
#define UG_MAX_SIGS 4096
static char seen[UG_MAX_SIGS][17]; /* keep-going: signature keys already written */
static int n_seen;

static int setup(void)
{
    char err[512], spec[256];
    const char *op = getenv("ULPGYM_FUZZ_OP"), *variant = getenv("ULPGYM_KERNEL_VARIANT");
    const char *b = getenv("ULPGYM_BACKEND");
    int opi = op ? ug_op_find(op) : -1;
    if (opi < 0 || !ug_op_def_get(opi)) {
        fprintf(stderr, "fuzz_precision: set ULPGYM_FUZZ_OP to an implemented op (got %s)\n", op ? op : "nothing");
        return -1;
    }
    snprintf(spec, sizeof spec, "sim:%s", variant && *variant ? variant : "sim");
    snprintf(backend_name, sizeof backend_name, "%s", b && *b ? b : variant && *variant ? spec : "sim");
    const char *kg = getenv("ULPGYM_FUZZ_KEEP_GOING");
    keep_going = kg && *kg == '1';
    if (ug_fuzz_space_load(opi, &space, err, sizeof err) ||
        ug_backend_open(&backend, b && *b ? b : spec, err, sizeof err)) {
        fprintf(stderr, "fuzz_precision: %s\n", err);
        return -1;
    }
    if (ug_backend_check_op(&backend, opi, err, sizeof err)) {
        fprintf(stderr, "fuzz_precision: %s\n", err);
        return -1;
    }
    /* fuzzing a mutant: a finding must be the mutant's, i.e. pass with the sim kernel */
    differential = !keep_going && !(b && *b) && variant && *variant && strcmp(variant, "sim") != 0;
    if (differential) ug_backend_open(&reference, "sim", err, sizeof err);
    const char *ns = getenv("ULPGYM_FUZZ_NO_SIGNAL");
    signal_on = !(ns && *ns == '1');
    return 0;
}

static void report_finding(const char *spec, const ug_result *r)
{
    const char *dir = getenv("ULPGYM_FUZZ_FOUND");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.json", dir, r->case_id);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s\n", spec);
            fclose(f);
        }
    }
    fprintf(stderr, "ulpgym-finding %s %s %s\n", r->case_id, ug_outcome_name(r->outcome), r->message);
}

static void write_file(const char *dir, const char *key, const char *ext, const char *text)
{
    char path[1024], tmp[1100];
    snprintf(path, sizeof path, "%s/%s.%s", dir, key, ext);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s\n", text);
    if (fclose(f) == 0) rename(tmp, path); /* whole files only: ulpgym fuzz counts them while we run */
}

/* Keep-going: counts the hit and writes the first case of each signature. */
static void record_hit(const char *spec, const ug_result *r)
{
    const char *dir = getenv("ULPGYM_FUZZ_FOUND");
    if (!dir || !*dir) return;
    char sig[1024], key[17], path[1024];
    ug_found_signature(r, spec, backend_name, sig, sizeof sig);
    ug_found_signature_key(sig, key);
    snprintf(path, sizeof path, "%s/hits.tsv", dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\t%s\n", key, r->case_id);
        fclose(f);
    }
    for (int i = 0; i < n_seen; i++)
        if (strcmp(seen[i], key) == 0) return;
    if (n_seen < UG_MAX_SIGS) snprintf(seen[n_seen++], sizeof seen[0], "%s", key);
    write_file(dir, key, "sig", sig);
    write_file(dir, key, "json", spec);
    fprintf(stderr, "ulpgym-finding %s %s %s\n", r->case_id, ug_outcome_name(r->outcome), sig);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!ready) {
        if (setup()) abort();
        ready = 1;
    }
    char *spec = ug_fuzz_decode(&space, data, size);
    if (!spec) return 0;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.naive = 0; /* the primary standards need no benchmark; keeps executions fast */
    ug_result r;
    if (ug_exec_case(spec, &backend, &o, &r, NULL) == 0 && r.outcome != UG_OUT_SKIP) {
        double worst = 0;
        for (int k = 0; k < r.n_out; k++) worst = fmax(worst, r.out[k].m.max_ulp);
        int bucket = worst > 1 ? (int)fmin(log2(worst), UG_ULP_BUCKETS - 2) + 1 : 0;
        if (r.outcome == UG_OUT_NONFINITE) bucket = UG_ULP_BUCKETS - 1;
        if (signal_on) ulp_counters[bucket]++;
        int finding = r.outcome != UG_OUT_PASS && !(r.outcome == UG_OUT_ERROR && strncmp(r.message, "inputs:", 7) == 0);
        if (finding && differential) {
            ug_result ref;
            ug_exec_case(spec, &reference, &o, &ref, NULL);
            finding = ref.outcome == UG_OUT_PASS;
        }
        if (finding && keep_going)
            record_hit(spec, &r);
        else if (finding) {
            report_finding(spec, &r);
            free(spec);
            abort();
        }
    }
    free(spec);
    return 0;
}
