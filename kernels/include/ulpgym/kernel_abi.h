/* ulpgym/kernel_abi.h — the stable plugin ABI (version 1) between ulpgym and a kernel.
 *
 * The built-in sim kernels are written against this very header, so anything they can
 * do a plugin can do. A plugin is a shared library exporting
 *     int ulpgym_abi_version(void);   returns ULPGYM_ABI_VERSION
 *     int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen);
 * ulpgym owns every buffer: inputs are read-only, outputs are preallocated (contents
 * undefined on entry) and must be filled completely. ulpgym_run returns
 *     0  ok,  1  unsupported (the case is recorded as SKIP),  <0  error (ERROR, with err).
 * Tensors are dense row-major unless strides is non-NULL (strides in elements). Element
 * encodings: fp32 IEEE binary32, fp16 IEEE binary16, bf16 the top half of binary32,
 * e4m3/e5m2 OCP FP8, e8m0 OCP MX scale, int8/int32 two's complement, little-endian.
 * `ulpgym ops show OP --json` lists each op's tensor names, dtypes, shapes and params. */
#ifndef ULPGYM_KERNEL_ABI_H
#define ULPGYM_KERNEL_ABI_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ULPGYM_ABI_VERSION 1
#define ULPGYM_MAX_DIMS 8

enum ulpgym_dtype {
    ULPGYM_FP32 = 0,
    ULPGYM_FP16 = 1,
    ULPGYM_BF16 = 2,
    ULPGYM_E4M3 = 3,
    ULPGYM_E5M2 = 4,
    ULPGYM_E8M0 = 5,
    ULPGYM_INT8 = 6,
    ULPGYM_INT32 = 7
};

typedef struct ulpgym_tensor {
    const char *name;       /* as listed by `ulpgym ops show OP` */
    int32_t dtype;          /* enum ulpgym_dtype */
    int32_t ndim;
    const int64_t *shape;   /* ndim entries */
    const int64_t *strides; /* NULL: contiguous row-major; else ndim entries, in elements */
    void *data;
} ulpgym_tensor;

typedef struct ulpgym_call {
    int32_t abi_version;        /* ULPGYM_ABI_VERSION of the caller */
    const char *op;             /* operator name, e.g. "attn_softmax" */
    const char *params_json;    /* the case's params object as JSON text */
    int32_t n_inputs;
    const ulpgym_tensor *inputs;
    int32_t n_outputs;
    const ulpgym_tensor *outputs;
} ulpgym_call;

typedef int (*ulpgym_abi_version_fn)(void);
typedef int (*ulpgym_run_fn)(const ulpgym_call *call, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
