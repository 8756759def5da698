/* ulpgym/ulpgym.h — the engine as a library (libulpgym.so), API version 1.
 *
 * What the command line does case by case, callable from another program: list a plan's
 * cases with their IDs and params, build a case's input tensors bit for bit from its spec,
 * hand in the outputs a kernel computed elsewhere (a torch or NPU kernel run from Python),
 * judge them against the MPFR oracle under every standard, and record them into a ulpgym
 * database as a run that `ulpgym history`, `failures`, `diff`, `report` and `triage` read.
 * The Python package (python/ulpgym) is a ctypes binding of exactly this header; docs/PYTHON.md.
 *
 * Conventions
 *   - Structured answers are JSON text (UTF-8), malloc'd: free them with ulpgym_free.
 *   - A call that can fail returns NULL or a negative number; when err is not NULL it then
 *     sets *err to a one-line message (malloc'd, free with ulpgym_free) and leaves it NULL
 *     otherwise. Bad input never aborts the process.
 *   - Tensors are dense, C order, little-endian. Each has a ulpgym dtype and an encoding in
 *     memory, its "npy_dtype": fp32 '<f4', fp16 '<f2', int8 '|i1', int32 '<i4', and, as raw
 *     bits, bf16 '<u2' (the top half of binary32) and e4m3 / e5m2 / e8m0 '|u1': the same
 *     encoding `ulpgym export` writes (kernels/replay.h).
 *   - Not thread-safe: one thread at a time per process. The memory budget of a case is the
 *     command line's (--case-memory): $ULPGYM_CASE_MEMORY, else half the physical memory.
 *   - The data (plans, op spaces, corpus/found) is found as the command line finds it:
 *     $ULPGYM_DATA, else PREFIX/share/ulpgym beside an installed library, else the source
 *     tree of a build folder (core/paths.h).
 * Stability: functions are only added; a changed meaning gets a new name and a raised
 * ULPGYM_API_VERSION. */
#ifndef ULPGYM_ULPGYM_H
#define ULPGYM_ULPGYM_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ULPGYM_API_VERSION 1

/* ULPGYM_API_VERSION of the loaded library. */
int ulpgym_api_version(void);
/* One line: "ulpgym VERSION (git REV, plugin ABI N, API N)". Static; do not free. */
const char *ulpgym_version(void);
/* Frees text this API returned (answers and error messages). NULL is fine. */
void ulpgym_free(void *p);

/* The cases of a plan. query_json (NULL: the defaults) may hold
 *   "plan"        a plan file or name, "NAME:light" (default: $ULPGYM_PLAN or "nightly")
 *   "ops"         [op names] (default: every op)       "groups"  [group names]
 *   "limit"       N: the first N cases (plan order: required cases first per op)
 *   "per_op"      N: the first N cases of each op
 *   "seed"        S: the plan's seed replaced (new inputs, new IDs)
 *   "regressions" true: the fuzzer's regression cases of corpus/found/ too, as a sweep runs them
 * Returns {"plan":{"name","version","hash","path"},"cases":[{"id","op","group","dtype",
 * "params","spec","origin","source","heavy","required"}]}, "spec" the canonical spec text
 * that ulpgym_case_open takes (and `ulpgym case --spec` runs). NULL on a bad query. */
char *ulpgym_plan_cases(const char *query_json, char **err);

/* The spec of a case ID or unique prefix of 6+ hex digits, looked up as `ulpgym triage`
 * does: in the database db_path (NULL: none), then in plan (NULL: the default plan).
 * Returns the canonical spec text; NULL for an unknown or ambiguous ID (the message says). */
char *ulpgym_find_case(const char *id, const char *db_path, const char *plan, char **err);

/* The op's contract as `ulpgym ops show OP --json` prints it. NULL for an unknown op. */
char *ulpgym_op_contract(const char *op, char **err);

/* Element conversions, by the engine's own rules (core/dtype.h): ulpgym_encode rounds each
 * double to dtype ("fp32", "fp16", "bf16", "e4m3", "e5m2", "e8m0", "int8", "int32") once,
 * to nearest even (e4m3 saturating to +-448, e8m0 to the floor power of two, int8/int32
 * saturating with NaN -> 0), and writes the npy_dtype encoding into out (n elements);
 * ulpgym_decode reads that encoding back as exact doubles. 0, or -2 for an unknown dtype. */
int ulpgym_encode(const char *dtype, const double *values, size_t n, void *out, char **err);
int ulpgym_decode(const char *dtype, const void *data, size_t n, double *values, char **err);

typedef struct ulpgym_case ulpgym_case;

/* Builds the case a spec describes: params checked against the op's declaration (defaults
 * written in), every input drawn bit for bit, outputs allocated. NULL on a bad spec or a
 * case over the memory budget (the message names the field or the bytes). */
ulpgym_case *ulpgym_case_open(const char *spec_json, char **err);
void ulpgym_case_close(ulpgym_case *c);
/* {"id","op","group","dtype","spec","params","params_json","primary",
 *  "inputs":[{"name","dtype","shape","npy_dtype","raw_bits","nbytes"}],
 *  "outputs":[{"name","dtype","shape","npy_dtype","raw_bits","nbytes","optional"}]}:
 * "params" with every default written in, "params_json" the exact text a plugin kernel
 * receives, "primary" the op's own deciding standard. NULL only without memory. */
char *ulpgym_case_describe(const ulpgym_case *c);
/* Input k (describe's order): its bytes, in its npy_dtype encoding; *nbytes its size.
 * NULL when k is out of range. Owned by the case. */
const void *ulpgym_case_input(const ulpgym_case *c, int k, size_t *nbytes);

/* How ulpgym_case_set_output reads data. */
enum ulpgym_encoding {
    ULPGYM_ENC_NATIVE = 0, /* the output's npy_dtype: its own bits, nbytes exactly the output's */
    ULPGYM_ENC_F64 = 1     /* float64 values, one per element, each exactly a value of the output's
                              dtype (NaN and +-inf included): anything else is refused, naming the
                              first element that is not (round on the device, not here) */
};
/* Output k's values from data. 0, or -2 with the reason (size, encoding, an element that is
 * not of the dtype). An optional output never set counts as not provided; a required
 * output never set makes the judgement refuse. Setting again replaces. */
int ulpgym_case_set_output(ulpgym_case *c, int k, const void *data, size_t nbytes, int encoding, char **err);
/* Marks the case as declined by the kernel (unsupported != 0: SKIP) or failed (ERROR), with
 * a one-line reason, as a replayed device's unsupported.txt / error.txt does. */
int ulpgym_case_set_status(ulpgym_case *c, int unsupported, const char *reason, char **err);
/* Judges the outputs set, exactly as a sweep judges a kernel's (the same metrics, standards
 * and outcome). opts_json (NULL: defaults) may hold "sample": N or "all" (elements checked per
 * output, default every one; a sampled case near a tolerance is re-checked on every element) and "primary": a
 * numeric standard deciding the outcome instead of the op's own (as `sweep --primary`).
 * Returns the verdict: {"case_id","op","dtype","verdict","primary_standard","message",
 * "figure" (what decided it, one line), "standards":{name: PASS|FAIL|NA},
 * "outputs":[{"name","dtype","provided","n_checked","n_total", metrics...,
 * "standards":{name:{"verdict","thresholds":{...}}}}], "oracle":{...},"kernel_ms","oracle_ms"}.
 * The case keeps the latest judgement for ulpgym_recorder_add. NULL with a message when a
 * required output was never set or the spec cannot be judged. */
char *ulpgym_case_judge(ulpgym_case *c, const char *opts_json, char **err);

typedef struct ulpgym_recorder ulpgym_recorder;

/* Starts a run in a ulpgym database (created when missing), backend "replay", as
 * `ulpgym check --run NAME` stores a device's outputs. opts_json:
 *   "db"       the database path (required)
 *   "name"     the run's name (its plan_name; default "python")
 *   "outputs"  the folder the judged outputs are kept in, one replay folder per case
 *              (case.json + outputs/<name>.npy), so `ulpgym triage ID` rejudges them later;
 *              default DB_DIR/<db file name>-outputs/run-<run id>
 *   "primary"  the standard that decided the cases (recorded with the run; default: each op's own)
 *   "sample"   the sample the judgements used (recorded; default 0 = all)
 *   "command"  the command line to record (default "python")
 * NULL with a message when the database cannot be opened or is not a ulpgym database. */
ulpgym_recorder *ulpgym_recorder_open(const char *opts_json, char **err);
/* The run's ID in the database. */
long ulpgym_recorder_run_id(const ulpgym_recorder *r);
/* Stores case c with its latest judgement (or its status) as one committed transaction, its
 * outputs written under the recorder's folder first. Returns {"run_id","case_id",
 * "outputs_dir","triage"}: "triage" the command line that triages it, paste-ready. NULL
 * with a message when c has not been judged, or on a write error (nothing half stored). */
char *ulpgym_recorder_add(ulpgym_recorder *r, ulpgym_case *c, char **err);
/* Marks the run done (its counts recomputed) and closes the database; frees r. -2 on error
 * (the run then reads "running", its stored cases kept). */
int ulpgym_recorder_close(ulpgym_recorder *r, char **err);

#ifdef __cplusplus
}
#endif
#endif
