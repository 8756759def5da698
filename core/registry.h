/* registry.h — operators, groups, the case in memory, and what each operator provides.
 *
 * core/ops.def is the single list of the 34 operators; this header expands it into the
 * ug_op enum and declares ug_op_def, the table of functions an implemented operator
 * provides (input builder, kernel variants, oracle, output rules). An operator module
 * defines `const ug_op_def ug_opdef_<name>`; nothing else needs to change. */
#ifndef UG_REGISTRY_H
#define UG_REGISTRY_H
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/spec.h"
#include "ulpgym/kernel_abi.h"

typedef enum { UG_GROUP_DEEPSEEK, UG_GROUP_GLM, UG_GROUP_OPERATOR, UG_GROUP_GREENLIGHT, UG_GROUP_COUNT } ug_group;

typedef enum {
#define UG_OP(E, name, group) UG_OP_##E,
#include "core/ops.def"
#undef UG_OP
    UG_OP_COUNT
} ug_op;

#define UG_MAX_TENSORS 16

typedef struct {
    char name[32];
    ug_dtype dtype;
    int ndim;
    int64_t shape[ULPGYM_MAX_DIMS];
    size_t numel;
    void *data; /* numel * ug_dtype_size(dtype) bytes, owned by the case */
    double *values; /* inputs: the decoded values, filled once after build (oracle reads) */
} ug_tensor;

struct ug_op_def;

/* One case in memory: its spec, its input and output tensors. */
typedef struct ug_case {
    ug_spec spec; /* owned */
    const struct ug_op_def *def;
    int n_in, n_out;
    ug_tensor in[UG_MAX_TENSORS];
    ug_tensor out[UG_MAX_TENSORS];
    char *params_json; /* owned: canonical text of spec.params, handed to kernels */
} ug_case;

/* How an output is compared (STANDARDS.md "Discrete outputs"). */
typedef enum { UG_CMP_NUMERIC, UG_CMP_EXACT, UG_CMP_BOUNDARY, UG_CMP_TOPK } ug_cmp;

typedef struct {
    const char *name;
    ug_cmp cmp;
    double pypto_atol, pypto_rtol; /* STANDARDS.md per-operator list */
    double pypto_budget;           /* share of elements allowed to fail (0.005 or 0) */
} ug_output_rule;

/* Geometry of an output for sampling: viewed as rows x cols (cols = last dim). The
 * sample always holds tile edges of both, tails, and first/last rows. */
typedef struct {
    size_t rows, cols;
    size_t row_tile, col_tile;
} ug_geom;

typedef int (*ug_kernel_fn)(const ulpgym_call *call, char *err, size_t errlen);

typedef struct {
    const char *name; /* "sim" is the correct kernel; others are planted-bug mutants */
    const char *desc;
    ug_kernel_fn fn;
    int beyond_plan; /* a mutant the nightly plan is known not to reach: the fuzzer's job
                        (tests assert the plan misses it and corpus/found/ catches it) */
} ug_kernel_variant;

struct ug_ar;
struct ug_selection;

typedef struct ug_op_def {
    ug_op op;
    const char *summary;
    const char *dtypes;    /* comma-separated case dtypes */
    int primary;           /* ug_standard */
    int bench_level;       /* 0..2: level of the benchmark standard */
    const ug_output_rule *outputs;
    int n_outputs;
    /* Allocates inputs and outputs from c->spec and fills the inputs. */
    int (*build)(ug_case *c, char *err, size_t errlen);
    /* Evaluates the reference for the selected elements in arithmetic ar, emitting each
     * with ug_ar_emit(). Written once; the arithmetic decides exact / naive / double. */
    int (*oracle)(const ug_case *c, struct ug_ar *ar, const struct ug_selection *sel);
    void (*geometry)(const ug_case *c, int out, ug_geom *g);
    const ug_kernel_variant *variants; /* ends with an entry whose name is NULL */
    const char *params_doc; /* JSON object: param name -> description */
    /* Optional (NULL: the static rule applies). Adjusts output out's rule for this case
     * before it is judged, for tolerances that depend on the case: a param (a world size)
     * or the oracle's values g[0..n) at the checked elements (atol = rtol * mean|g|).
     * rule arrives as a copy of outputs[out]; only its numbers may change. */
    void (*adjust_rule)(const ug_case *c, int out, const double *g, size_t n, ug_output_rule *rule);
} ug_op_def;

const char *ug_op_name(int op);
ug_group ug_op_group(int op);
int ug_op_find(const char *name);          /* -1 if unknown */
const ug_op_def *ug_op_def_get(int op);    /* NULL if not implemented (linked in) */
const char *ug_group_name(ug_group g);
int ug_group_find(const char *name);       /* case-insensitive; -1 if unknown */
const ug_kernel_variant *ug_op_variant(const ug_op_def *d, const char *name); /* NULL: none */

/* Case lifetime. ug_case_build takes ownership of spec (also on error). */
int ug_case_build(ug_case *c, ug_spec *spec, char *err, size_t errlen);
void ug_case_free(ug_case *c);
/* For build functions: add a tensor; inputs are filled from spec.dist[name] unless
 * fill is 0 (then zeroed for the builder to fill). Returns the tensor or NULL (err set). */
ug_tensor *ug_case_add_input(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape,
                             int fill, char *err, size_t errlen);
ug_tensor *ug_case_add_output(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape,
                              char *err, size_t errlen);
const ug_tensor *ug_case_input(const ug_case *c, const char *name);
/* Each output's data is followed by UG_GUARD_BYTES of canary (a kernel must not touch
 * them). Returns the index of the first output whose canary changed, or -1. */
#define UG_GUARD_BYTES 256
int ug_case_guard_check(const ug_case *c);
/* Fills views (arrays of UG_MAX_TENSORS) and call for a kernel run over c's tensors. */
void ug_case_make_call(const ug_case *c, ulpgym_tensor *ins, ulpgym_tensor *outs, ulpgym_call *call);

/* Views for kernels: find a tensor of a call by name (NULL if absent). */
const ulpgym_tensor *ug_call_input(const ulpgym_call *call, const char *name);
const ulpgym_tensor *ug_call_output(const ulpgym_call *call, const char *name);
size_t ug_abi_numel(const ulpgym_tensor *t);

#endif
