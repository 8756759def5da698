/* registry.h — the case in memory: its spec, parsed params and tensors, and the views a
 * kernel call gets of them. The operator tables are core/ops.h; building a case from a
 * spec (drawing its inputs) is gen/case.h. */
#ifndef UG_REGISTRY_H
#define UG_REGISTRY_H
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/guard.h"
#include "core/spec.h"
#include "ulpgym/kernel_abi.h"

#include "core/ops.h"

/* Tensors per side of a case: mla_indexer_prolog_quant, the widest DeepSeek op, has 20
 * inputs (weights, norms, caches, scales, rope tables, indices). */
#define UG_MAX_TENSORS 32

typedef struct {
    char name[32];
    ug_dtype dtype;
    int ndim;
    int64_t shape[ULPGYM_MAX_DIMS];
    size_t numel;
    void *data;         /* numel * ug_dtype_size(dtype) bytes, owned by the case: guard.data, or for a
                           plugin's output after its call its snapshot (ug_guard_snapshot) */
    ug_guard_buf guard; /* the mapping data lives in, with its guard pages and canaries (core/guard.h) */
    double *values;     /* inputs: the decoded values, filled once after build (oracle reads) */
    int optional;       /* outputs: declared optional (core/opdecl.h); allocated full of the sentinel */
} ug_tensor;

struct ug_op_def;

/* One case in memory: its spec, its parsed params, its input and output tensors. */
typedef struct ug_case {
    ug_spec spec; /* owned */
    const struct ug_op_def *def;
    int n_in, n_out;
    ug_tensor in[UG_MAX_TENSORS];
    ug_tensor out[UG_MAX_TENSORS];
    ug_params params;  /* owned: the params parsed against the op's declaration, defaults in */
    char *params_json; /* owned: canonical text of the params with every default written in,
                          handed to kernels and plugins */
} ug_case;

/* Optional outputs. An optional output is allocated holding its dtype's sentinel code in
 * every element, and a kernel (or replayed file) that provides it overwrites every element;
 * one still all sentinel after the call was not provided. The sentinel is a signalling NaN
 * of the element's width, which no arithmetic produces (an operation on a NaN returns a
 * quiet one): fp32 0x7FA5A5A5, fp16 0x7DA5, bf16 0x7FA5, the fp8 formats and every other
 * dtype the byte 0xA5 (docs/PLUGINS.md, "Optional outputs"). */
void ug_tensor_fill_sentinel(ug_tensor *t);
/* 1 when t is not optional or some element differs from the sentinel; 0: not provided. */
int ug_tensor_provided(const ug_tensor *t);
/* Elements of t still holding the sentinel after a kernel ran: for fp32/fp16/bf16 each such
 * element (a signalling NaN no arithmetic yields); for the other dtypes, whose sentinel byte
 * is also a value, t's element count when every element is the sentinel, else 0. */
size_t ug_tensor_unwritten(const ug_tensor *t);

/* Frees everything a case owns (safe on a zeroed or partly built case). */
void ug_case_free(ug_case *c);
/* FNV-1a 64 over the raw bytes of every output tensor, in declaration order: two kernels
 * whose outputs differ in any bit (almost surely) differ here. */
uint64_t ug_case_outputs_digest(const ug_case *c);
/* Adds a tensor of the given dtype and shape, zeroed, in a guarded buffer (core/guard.h:
 * guard pages and canaries before and after its data). Returns it or NULL (err set).
 * Drawing inputs is gen/case.h's job. */
ug_tensor *ug_case_alloc_input(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape, char *err,
                               size_t errlen);
ug_tensor *ug_case_add_output(ug_case *c, const char *name, ug_dtype dt, int ndim, const int64_t *shape, char *err,
                              size_t errlen);
const ug_tensor *ug_case_input(const ug_case *c, const char *name);
ug_tensor *ug_case_input_mut(ug_case *c, const char *name); /* for builders */
const ug_tensor *ug_case_output(const ug_case *c, const char *name);
/* Judged outputs: the case's output tensors (judged output k < n_out is c->out[k]), then
 * the op's views, the output rules with "of" whose tensor the case has, in declaration
 * order: each judges that tensor's values a second time, against the exact values the
 * oracle emits under the view's index (ug_case_judged_find). Every place that judges,
 * selects or reports outputs counts them with ug_case_n_judged. */
int ug_case_n_judged(const ug_case *c);
int ug_case_judged_tensor(const ug_case *c, int k); /* index into c->out; -1 if k is none */
const char *ug_case_judged_name(const ug_case *c, int k);
int ug_case_judged_find(const ug_case *c, const char *name); /* -1 if the case judges none */
/* What a kernel must leave alone: ug_case_seal_inputs records each input's digest just
 * before the kernel runs; ug_case_guard_check, after it, checks the canaries before and
 * after every input and output and each sealed input's data. It returns how many tensors
 * were damaged, and says how in msg ("wrote after output y; modified input x"). */
void ug_case_seal_inputs(ug_case *c);
int ug_case_guard_check(const ug_case *c, char *msg, size_t len);
/* Fills views (arrays of UG_MAX_TENSORS) and call for a kernel run over c's tensors. */
void ug_case_make_call(const ug_case *c, ulpgym_tensor *ins, ulpgym_tensor *outs, ulpgym_call *call);

/* Views for kernels: find a tensor of a call by name (NULL if absent). */
const ulpgym_tensor *ug_call_input(const ulpgym_call *call, const char *name);
const ulpgym_tensor *ug_call_output(const ulpgym_call *call, const char *name);
size_t ug_abi_numel(const ulpgym_tensor *t);

#endif
