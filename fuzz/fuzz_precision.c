/* fuzz_precision.c — libFuzzer target: bytes -> a valid case inside one operator's space
 * (gen/fuzzspace.c) -> kernel vs oracle. A case that fails its primary standard (or is
 * NONFINITE, ERROR, CRASH...) is a finding: its spec is written to $ULPGYM_FUZZ_FOUND and
 * the target aborts so libFuzzer keeps the input as an artifact.
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

#define UG_ULP_BUCKETS 64

/* libFuzzer reads counters in this section as extra coverage (no effect without it). */
__attribute__((used, section("__libfuzzer_extra_counters"))) static unsigned char ulp_counters[UG_ULP_BUCKETS];

static ug_fuzz_space space;
static ug_backend backend, reference; /* reference: the sim kernel, when fuzzing a mutant */
static int ready, signal_on = 1, differential;

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
    if (ug_fuzz_space_load(opi, &space, err, sizeof err) || ug_backend_open(&backend, b && *b ? b : spec, err, sizeof err)) {
        fprintf(stderr, "fuzz_precision: %s\n", err);
        return -1;
    }
    if (ug_backend_check_op(&backend, opi, err, sizeof err)) {
        fprintf(stderr, "fuzz_precision: %s\n", err);
        return -1;
    }
    /* fuzzing a mutant: a finding must be the mutant's, i.e. pass with the sim kernel */
    differential = !(b && *b) && variant && *variant && strcmp(variant, "sim") != 0;
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
        if (finding) {
            report_finding(spec, &r);
            free(spec);
            abort();
        }
    }
    free(spec);
    return 0;
}
