/* ops.h — the 34 operators, their groups, and what an implemented operator provides.
 *
 * core/ops.def is the single list of the 34 operators; this header expands it into the
 * ug_op enum and declares ug_op_def: an operator's declaration (summary, dtypes, semantics,
 * params, derived sizes, tensors and output rules: data, in oracles/<family>/<name>.json,
 * compiled in and loaded by core/opdecl_json.c) and its functions (check, builder of the
 * built inputs, oracle, sampling geometry: `const ug_op_def ug_opdef_<name>` in
 * oracles/<family>/<name>.c). Its sim kernel is
 * `const ug_kernel_fn ug_sim_<name>` (kernels/sim/<family>/<name>.c); the tables here
 * refer to both weakly, so neither side includes the other. */
#ifndef UG_OPS_H
#define UG_OPS_H
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/opdecl.h"
#include "ulpgym/kernel_abi.h"

struct ug_case;
typedef enum { UG_GROUP_DEEPSEEK, UG_GROUP_GLM, UG_GROUP_OPERATOR, UG_GROUP_GREENLIGHT, UG_GROUP_COUNT } ug_group;

typedef enum {
#define UG_OP(E, name, group) UG_OP_##E,
#include "core/ops.def"
#undef UG_OP
    UG_OP_COUNT
} ug_op;

/* How an output is compared (docs/STANDARDS.md "Discrete outputs"). */
typedef enum { UG_CMP_NUMERIC, UG_CMP_EXACT, UG_CMP_BOUNDARY, UG_CMP_TOPK, UG_CMP_COUNT } ug_cmp;
/* Their names in declarations and reports: numeric, exact, boundary_aware, topk_set
 * (defined in core/opdecl_json.c, which reads them). */
extern const char *const ug_cmp_names[UG_CMP_COUNT];

typedef struct {
    const char *name;
    ug_cmp cmp;
    double pypto_atol, pypto_rtol; /* docs/STANDARDS.md per-operator list */
    double pypto_budget;           /* share of elements allowed to fail (0.005 or 0) */
    const char *source;            /* why the rule is what it is, and any part applied per case; NULL */
    /* NULL: the rule judges output tensor `name`. Else a view: a second judgement of output
     * tensor `of` against other exact values the oracle emits under `name` (quantised codes
     * against the oracle's own scale beside the kernel's: docs/STANDARDS.md "Views"). */
    const char *of;
    /* The reference test's own rule (the `reference` standard): |a - g| <= atol + rtol*|g|,
     * at most llround(budget*N) elements outside (budget 0: every element). has_reference
     * 0: the op has no reference test for this output, and `reference` is NA on it. */
    int has_reference;
    double reference_atol, reference_rtol, reference_budget;
    const char *reference_source; /* "tests/ops/<path>.py::<function>: <rule as written>" */
    /* NULL: the reference rule judges against g, the exact value rounded. Else the reference
     * test's golden is not the exact value but its own evaluation with roundings of its own (P
     * cast to bf16 before P.V, P quantised to e4m3 per key tile), which this text states, and
     * `reference` judges against that golden (ug_op_def.reference_golden), as the test does. */
    const char *reference_golden;
    /* A topk_set output's reference rule, where its test judges ids (topk_idx_compare): 0
     * none. Else the kernel's ids and the test's golden ids (reference_golden: the exact
     * top-n in the golden's order), flattened, are cut into groups of reference_group
     * consecutive elements; in each group, the golden ids at the positions where the two
     * differ that are missing from the kernel's ids at those positions are counted, and a
     * group counting more than floor(reference_group * reference_atol) fails. */
    long reference_group;
    /* No reference rule, though the reference test compares this output: why ulpgym does not
     * apply that compare (e.g. an order of ids the test's golden does not fix), said by `ops
     * show`; NULL where no reference test judges the output. */
    const char *reference_unjudged;
} ug_output_rule;

/* Geometry of an output for sampling: viewed as rows x cols (cols = last dim). The
 * sample always holds tile edges of both, tails, and first/last rows. */
#define UG_GEOM_HOT 8
typedef struct {
    size_t rows, cols;
    size_t row_tile, col_tile;
    /* Rows the sample must hold besides the structural ones: where a scatter writes (a
     * cache slot a token maps to) and its neighbours, which tile edges and random rows of a
     * large, mostly untouched output would miss. Set with ug_geom_hot (n_hot starts at 0). */
    size_t hot[UG_GEOM_HOT];
    size_t n_hot;
} ug_geom;
/* Adds row r (and r-1, r+1 when neighbours) to g's hot rows, within g->rows and UG_GEOM_HOT. */
void ug_geom_hot(ug_geom *g, size_t r, int neighbours);

/* A sim kernel: the plugin ABI's entry plus the variant's code (ug_variant_code, op_params.h),
 * so one function serves the correct kernel, its legal variants and its planted mutants. */
typedef int (*ug_kernel_fn)(const ulpgym_call *call, char *err, size_t errlen, int bug);

/* One variant of a sim kernel, as the op's declaration lists it ("sim_variants": name, desc,
 * beyond_plan), with its code: the generated ug_variant_code of its name (op_params.h), which
 * the kernel function gets as bug and tests as `bug == UG_VAR_MUT_PV_BF16`. An op's sim kernel
 * is exported as `const ug_kernel_fn ug_sim_<name>` from kernels/sim/<family>/<name>.c. */
typedef struct {
    const char *name; /* "sim" is the correct kernel; "legal_*" other legal implementations of the
                         contract (ug_variant_legal); others are planted-bug mutants */
    int bug;          /* passed to the kernel function: the name's ug_variant_code */
    const char *desc;
    int beyond_plan; /* a mutant the nightly plan is known not to reach: the fuzzer's job
                        (tests assert the plan misses it and corpus/found/ catches it) */
} ug_kernel_variant;

struct ug_ar;
struct ug_selection;

typedef struct ug_op_def {
    ug_op op; /* set when the definitions load (core/ops.c), by the name ug_opdef_<name> */
    /* The standard (ug_standard, core/standard.h) that decides the op's outcome: the
     * declaration's "primary" (absent: UG_STD_PYPTO), filled in by the loader. */
    int primary;
    /* Set by the oracle file (left out: level 0): */
    int bench_level; /* 0..2: level of the benchmark standard */
    /* c of the certified standard for this op (0: UG_CERT_C = 2), raised only where the
     * op's device algorithm is not an evaluation order of its reference formula (the
     * oracle file's header says why and by how much). */
    double cert_c;
    /* From the declaration file (oracles/<family>/<name>.json), filled in by the loader;
     * the oracle file leaves them empty: */
    const char *summary;
    const char *dtypes; /* comma-separated case dtypes */
    const ug_output_rule *outputs;
    int n_outputs;
    /* params, derived sizes, tensors (core/opdecl.h); decl.op is the op's name. Only
     * decl.check, which enforces what ranges cannot say, is set by the oracle file. */
    ug_op_decl decl;
    /* What the contract promises beyond the math: special values (NaN, +-inf, fully
     * masked rows), which intermediates are rounded to which dtype, how fp32 attributes
     * are formed. Printed by `ulpgym ops show`. */
    const char *semantics;
    /* The sim kernel's variants as declared ("sim_variants": name, desc, beyond_plan), each
     * with its code once the definitions are loaded (core/ops.c). Not part of the contract
     * (ug_op_contract_digest leaves them out, and "primary" and "check_all"). */
    ug_kernel_variant *variants;
    int n_variants;
    /* Set by the oracle file: */
    /* Fills the inputs of role "built" (indices, masks, tables) after the declared
     * tensors are allocated and the drawn inputs filled; NULL when there are none. */
    int (*build)(struct ug_case *c, char *err, size_t errlen);
    /* Evaluates the reference for the selected elements in arithmetic ar, emitting each
     * with ug_ar_emit(). Written once; the arithmetic decides exact / naive / double. */
    int (*oracle)(const struct ug_case *c, struct ug_ar *ar, const struct ug_selection *sel);
    /* Optional (NULL: oracle). The device bound (UG_AR_DEVICE) evaluated on the order a
     * device computes in, where that is not an evaluation order of the formula (the chunked
     * WY form of chunked_gated_delta_rule beside its recurrence): the certified standard
     * bounds what a device running that algorithm may compute. The values come from oracle. */
    int (*device_oracle)(const struct ug_case *c, struct ug_ar *ar, const struct ug_selection *sel);
    void (*geometry)(const struct ug_case *c, int out, ug_geom *g);
    /* Optional (NULL: the static rule applies). Adjusts output out's rule for this case
     * before it is judged, for tolerances that depend on the case: a param (a world size)
     * or the oracle's values g[0..n) at the checked elements (atol = rtol * mean|g|).
     * rule arrives as a copy of outputs[out]; only its numbers may change. */
    void (*adjust_rule)(const struct ug_case *c, int out, const double *g, size_t n, ug_output_rule *rule);
    /* Optional (NULL: none). Bytes of scratch the sim kernel, the builder and the oracle
     * allocate for a case with params p that grow with the case (fp32 copies of staged
     * tensors, permutations, one row's keys in fp64, an exact forward judged on every
     * element), beyond the tensors, the fp64 input copies and the fixed base that
     * gen/case_memory.h counts. Read by the case memory estimate before anything is
     * allocated; keep it in step with the kernel's and the oracle's allocations. */
    double (*scratch)(const ug_params *p);
    /* 1: every sampled case is judged again on every element (when that fits the case
     * memory budget), as if near a tolerance: for an elementwise op judged by certified,
     * whose failures are isolated elements a sample misses (apply_adamw). The declaration's
     * "check_all": true, filled in by the loader. */
    int check_all;
    /* Set exactly when some output rule declares reference_golden: fills out[k] (NULL for the
     * judged outputs without one) with that output's golden as the reference test forms it,
     * per element of sel's output k, rounded to the output dtype as the test's golden tensor
     * is, NaN where it has none (oracles/attention/reference_golden.h). The judge
     * (oracles/judge.c) asks for the elements outside the reference rule against g only.
     * Returns 0, or -1 with err set. */
    int (*reference_golden)(const struct ug_case *c, const struct ug_selection *sel, double **out, char *err,
                            size_t errlen);
} ug_op_def;

const char *ug_op_name(int op);
ug_group ug_op_group(int op);
int ug_op_find(const char *name);       /* -1 if unknown */
const ug_op_def *ug_op_def_get(int op); /* NULL if not implemented (linked in) */
/* The declared rule of d's output name, NULL for an output the declaration gives none. */
const ug_output_rule *ug_op_output_rule(const ug_op_def *d, const char *name);
const char *ug_group_name(ug_group g);
int ug_group_find(const char *name); /* case-insensitive; -1 if unknown */
/* The op's kernel variants (the sim kernel first, then its mutants; NULL-name ended),
 * from kernels/sim/<family>/<op>.c; NULL when the op has none linked in. */
const ug_kernel_variant *ug_op_variants(int op);
const ug_kernel_variant *ug_op_variant(const ug_op_def *d, const char *name); /* NULL: none */
/* Runs variant v of op's sim kernel on call; -2 with err set when op has no sim kernel. */
int ug_op_run_variant(int op, const ug_kernel_variant *v, const ulpgym_call *call, char *err, size_t errlen);
/* Whether a variant name is a legal one ("legal_..."): another correct implementation of the
 * contract (another summation order, tiling, rounding the contract allows), which must pass
 * every plan case under every deciding standard, as "sim" must: the false-alarm test set. */
int ug_variant_legal(const char *name);
/* The declaration files compiled into the binary (op_decls.c, generated by CMake from
 * oracles/<family>/<name>.json): {name, text}, ended by a NULL name. */
typedef struct {
    const char *op;
    const char *json;
} ug_embedded_decl;
extern const ug_embedded_decl ug_embedded_decls[];
/* Reads declaration text json of op into d's declaration fields (core/opdecl_json.c).
 * 0, or -1 with a message naming the key. */
int ug_op_def_load(ug_op_def *d, const char *op, const char *json, char *err, size_t errlen);
/* Gives each of d's declared variants its code: its name's index in codes[0..n_codes)
 * (ug_variant_names, generated from all declarations). "sim" must come first (core/ops.c,
 * when the definitions load). 0, or -1 with err naming the variant. */
int ug_op_join_variants(ug_op_def *d, const char *const *codes, int n_codes, char *err, size_t errlen);
/* The op's contract version: 16 hex digits, the hash of its declaration file's canonical
 * JSON (oracles/<family>/<op>.json: params, defaults, tensors, rules, semantics; not
 * "primary", "check_all" and "sim_variants", how ulpgym judges and tests), so any change
 * of the contract, not of its file's layout, changes it. `ops show` prints it and a
 * plugin may name the one it was written to (docs/PLUGINS.md). 0, or -1 (no such op). */
int ug_op_contract_digest(int op, char out[17]);
/* The declaration of op by name (a kernel's call->op); NULL if unknown or undeclared. */
const ug_op_decl *ug_op_decl_find(const char *name);

#endif
