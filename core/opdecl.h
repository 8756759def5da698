/* opdecl.h — an operator's declaration: its params, derived sizes and tensors, as data.
 *
 * Every consumer reads the same declaration: the spec parser validates a case's params
 * against it and writes every default into the canonical params text handed to kernels
 * and plugins (so nobody guesses a default), the case builder allocates the declared
 * tensors with the declared shapes, the oracle and the sim kernel read the same parsed
 * ug_params, and `ulpgym ops show OP --json` prints it as the plugin contract. A shape is
 * a formula of the params, so a plugin author can compute every dimension before a call.
 *
 * Formulas (defaults, derived sizes, tensor dims, presence conditions) are arithmetic over
 * params and earlier derived names, evaluated in double (see ug_decl_eval):
 *   numbers, names, + - * /, unary -, parentheses, comparisons == != < <= > >= (1 or 0),
 *   cdiv(a,b) = ceil(a/b), fdiv(a,b) = floor(a/b), min(a,b), max(a,b), sqrt(x),
 *   is(E, choice) = 1 when enum param E has that choice, else 0,
 *   over an int-list param L: len(L), sum(L), maxof(L), minof(L), sumcdiv(L,k) = sum of ceil(l/k);
 *   over a pair-list param P ("q:k,q:k", a lone "n" meaning n:n): P.q and P.k are its lists,
 *   len(P) the number of pairs.
 * A tensor dimension must come out a non-negative integer, or the case is refused. */
#ifndef UG_OPDECL_H
#define UG_OPDECL_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"

typedef enum {
    UG_PARAM_INT,       /* an integer (JSON number with no fraction) */
    UG_PARAM_F32,       /* an fp32 attribute: the JSON number rounded once to fp32 (RNE) */
    UG_PARAM_NUM,       /* a plain real number, used in double (e.g. a RoPE base) */
    UG_PARAM_ENUM,      /* one string of a fixed list */
    UG_PARAM_INT_LIST,  /* integers as a string "a,b,c" */
    UG_PARAM_PAIR_LIST, /* pairs as a string "q:k,q:k" (a lone "n" is n:n) */
} ug_param_type;

/* A declared param. min/max bound an INT, F32 or NUM value and every element of a list
 * (inclusive; use -UG_DECL_INF / UG_DECL_INF for no bound). def is a formula over the
 * params declared before it (an ENUM's default is one of its choices); NULL means the
 * param is required. */
typedef struct {
    const char *name;
    ug_param_type type;
    const char *def;
    double min, max;
    const char *choices; /* ENUM: "none|causal|padding" */
    const char *doc;     /* what it is, with its unit */
} ug_param_decl;

#define UG_DECL_INF 1e300

/* A named size computed from the params (e.g. total_q = sum(seqlens.q)); tensor shapes
 * and later derived values may use it. */
typedef struct {
    const char *name;
    const char *formula;
    const char *doc;
} ug_derived_decl;

typedef enum {
    UG_TENSOR_INPUT,  /* drawn from the case's distribution for it (spec "dist") */
    UG_TENSOR_BUILT,  /* an input the op's builder fills (indices, masks, tables) */
    UG_TENSOR_OUTPUT, /* written by the kernel, judged against the oracle */
} ug_tensor_role;

/* A declared tensor. dtype: "case" (the case dtype), a dtype name ("fp32", "int32"), or a
 * map from case dtype to tensor dtype ("bf16:fp32,fp32:fp32"). shape: comma-separated
 * formulas, outermost first ("" for a scalar). when: a formula; the tensor exists only
 * where it is non-zero (NULL: always). optional (outputs only): an intermediate the
 * reference judges that a kernel may leave unwritten; its buffer arrives filled with the
 * dtype's sentinel code (core/registry.h) and an output still all sentinel after the call
 * is "not provided": NA under every standard (docs/PLUGINS.md, "Optional outputs"). */
typedef struct {
    const char *name;
    ug_tensor_role role;
    const char *dtype;
    const char *shape;
    const char *doc;
    const char *when;
    int optional;
} ug_tensor_decl;

/* Params, derived sizes and tensors of one op; arrays end with a NULL name. check, when
 * set, enforces what ranges cannot say (a head count divisible by another, a size cap);
 * it gets the parsed params and returns 0 or -2 with a message. */
struct ug_params;
typedef struct {
    const char *op;
    const ug_param_decl *params;
    const ug_derived_decl *derived;
    const ug_tensor_decl *tensors;
    int (*check)(const struct ug_params *p, char *err, size_t errlen);
} ug_op_decl;

#define UG_MAX_PARAMS 32
#define UG_MAX_DERIVED 16

/* Typed params. Each op's declaration also gives a C struct, `ug_<op>_params` (generated
 * at configure time by cmake/op_params.cmake into op_params.h): a field per declared param
 * (int: long; fp32 and number: double; enum: the choice as `ug_<op>_<param>` with values
 * UG_<OP>_<PARAM>_<CHOICE>, and its text as <param>_name; lists: ug_plist) and per derived
 * size (long). Parsing fills it once, after the values are validated and the derived
 * sizes computed; `UG_P(op, p)->heads` reads it, so a misspelt param or choice fails the
 * build instead of aborting at run time. Code shared by ops whose params differ reads by
 * name (ug_p_int and friends, below). */
typedef struct {
    const long *v; /* owned by the ug_params; pair lists hold q0,k0,q1,k1,... */
    size_t n;      /* elements (pairs for a pair list) */
} ug_plist;
/* *vals = l.v; returns l.n (the shape of ug_p_list). */
static inline size_t ug_plist_get(ug_plist l, const long **vals)
{
    *vals = l.v;
    return l.n;
}
typedef enum { UG_TF_INT, UG_TF_REAL, UG_TF_ENUM, UG_TF_LIST, UG_TF_DERIVED } ug_typed_kind;
typedef struct {
    const char *name; /* the declared param or derived size */
    ug_typed_kind kind;
    size_t offset;      /* of the field in the op's struct */
    size_t offset_name; /* ENUM: of its <param>_name */
} ug_typed_field;
typedef struct {
    const char *op;
    const ug_typed_field *fields; /* ends with a NULL name */
} ug_typed_layout;
extern const ug_typed_layout ug_typed_layouts[]; /* op_params.c (generated); ends with a NULL op */
#define UG_TYPED_PARAMS_BYTES 1024

typedef struct {
    double num;      /* INT, F32 (already rounded to fp32), NUM */
    const char *str; /* ENUM: borrowed from the params' JSON */
    long *list;      /* lists: owned; pair lists hold q0,k0,q1,k1,... */
    size_t n;        /* list length (pairs for a pair list) */
} ug_param_value;

/* A case's parsed params: every declared param with its value (given or default), the
 * derived sizes, and the canonical JSON text of the params with every default written
 * in (what kernels and plugins receive as params_json). */
typedef struct ug_params {
    const ug_op_decl *decl;
    int n;
    ug_param_value v[UG_MAX_PARAMS];
    int n_derived;
    double derived[UG_MAX_DERIVED];
    char *json;                    /* owned canonical text */
    cJSON *tree;                   /* owned: the params object with defaults; strings point into it */
    const ug_typed_layout *layout; /* the op's typed params; NULL: an op without one */
    _Alignas(8) unsigned char typed[UG_TYPED_PARAMS_BYTES]; /* its ug_<op>_params, filled by the parse */
} ug_params;

/* Parses and validates params (a JSON object) against decl: unknown keys, wrong types,
 * values out of range or not among the choices, and failed checks are errors (-2, the
 * message names op, param and the allowed values); defaults are filled in. On success the
 * caller owns out (ug_params_free). */
int ug_params_parse(const ug_op_decl *decl, const cJSON *params, ug_params *out, char *err, size_t errlen);
/* The same checks without writing the canonical text (out->json is NULL): what a plan
 * runs on every case it loads. Free out with ug_params_free on success. */
int ug_params_check(const ug_op_decl *decl, const cJSON *params, ug_params *out, char *err, size_t errlen);
/* Parses params JSON text (what a kernel receives) the same way. */
int ug_params_parse_text(const ug_op_decl *decl, const char *text, ug_params *out, char *err, size_t errlen);
void ug_params_free(ug_params *p);

/* Typed reads of a declared param or derived size. Reading a name the declaration does
 * not have, or with the wrong type, is a programming error: it aborts with a message. */
long ug_p_int(const ug_params *p, const char *name);                   /* INT, or a derived size */
double ug_p_num(const ug_params *p, const char *name);                 /* F32 (fp32 value), NUM or INT */
const char *ug_p_str(const ug_params *p, const char *name);            /* ENUM */
int ug_p_is(const ug_params *p, const char *name, const char *choice); /* ENUM == choice */
/* A list param: its length; *vals gets the values (pairs: q0,k0,q1,k1,...). */
size_t ug_p_list(const ug_params *p, const char *name, const long **vals);
/* Whether the op declares a param of that name (code shared by ops whose params differ). */
int ug_p_has(const ug_params *p, const char *name);
/* The typed params (op_params.h's UG_P) of p, which must have been parsed for op: a
 * different op is a programming error and aborts with a message. */
const void *ug_params_typed(const ug_params *p, const char *op);

/* Evaluates formula over p (params and derived sizes). 0, or -2 with a message. */
int ug_decl_eval(const ug_params *p, const char *formula, double *out, char *err, size_t errlen);

/* Tensor i of the declaration for this case: whether it exists (when), its dtype for the
 * case dtype and its shape. Returns 0 (present), 1 (absent: when is 0), -2 (error). */
int ug_decl_tensor_shape(const ug_params *p, const ug_tensor_decl *t, ug_dtype case_dtype, ug_dtype *dt, int *ndim,
                         int64_t *shape, char *err, size_t errlen);
/* Every declared tensor of the case checked before anything is built: each shape a
 * non-negative integer per dimension, each drawn input present in the case given a
 * distribution in dist, and every dist entry naming a drawn input the op declares (a
 * built or output tensor, or a name the op lacks, is refused). 0, or -2 with a message
 * naming the tensor (what ug_case_build would meet later, said when a plan loads). */
int ug_decl_check_tensors(const ug_params *p, ug_dtype case_dtype, const cJSON *dist, char *err, size_t errlen);
/* The tensor dtype a dtype rule gives for a case dtype; -1 when the rule has none. */
int ug_decl_dtype_for(const char *rule, ug_dtype case_dtype);

/* The declaration as JSON (params with type/default/range/choices, derived sizes, tensors
 * with role, dtype per case dtype in dtypes (comma-separated) and shape formulas). */
cJSON *ug_decl_json(const ug_op_decl *decl, const char *dtypes);

const char *ug_param_type_name(ug_param_type t);

#endif
