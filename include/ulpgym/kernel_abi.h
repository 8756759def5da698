/* ulpgym/kernel_abi.h — the stable plugin ABI (version 1) between ulpgym and a kernel.
 *
 * The built-in sim kernels are written against this very header, so anything they can
 * do a plugin can do (examples/plugin_sim proves it for every operator). A plugin is a
 * shared library exporting
 *     int ulpgym_abi_version(void);   returns ULPGYM_ABI_VERSION
 *     int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen);
 * and is used as `ulpgym sweep --backend plugin:PATH.so` (or ULPGYM_BACKEND=plugin:PATH.so).
 * docs/PLUGINS.md walks through writing one.
 *
 * Contract of ulpgym_run:
 *   - Returns ULPGYM_OK (0) when every output is filled, ULPGYM_UNSUPPORTED (1) when the
 *     plugin has no kernel for this op / dtype / shape (the case is recorded as SKIP), or
 *     a negative value on failure (the case is ERROR). Other positive values are errors.
 *   - err[0..errlen) takes a one-line reason for 1 or <0 (it is stored with the verdict);
 *     errlen is at least 256. Write a NUL-terminated string (snprintf).
 *   - ulpgym owns every buffer. Inputs are read-only. Outputs are preallocated and
 *     arrive holding a signalling pattern (docs/PLUGINS.md, "Optional outputs": a
 *     signalling NaN for fp32/fp16/bf16, the byte 0xA5 otherwise); every element of every
 *     required output must be written: one left so is the case's ERROR "output y left
 *     unwritten (N of M elements)". An operator that works in place on a device (e.g. y
 *     written over x1) still gets separate output tensors here.
 *   - ulpgym_run returns only when every write it started has landed: synchronise the
 *     device stream and copy back before returning. The outputs are digested at the return
 *     and looked at again after a 2 ms settle and after judging; a change is ERROR "output
 *     y changed after the kernel returned". A pointer of an earlier call is never written
 *     again: freed buffers stay inaccessible for a while, and a write there faults (CRASH
 *     "... into the freed output y of an earlier case").
 *   - Every tensor's data is 64-byte aligned, with at least 64 canary bytes before and
 *     after it and an inaccessible page beyond those: a write outside an output or into
 *     an input is reported (ERROR), one that reaches the page faults (CRASH); reading up
 *     to 64 bytes past the end is harmless. docs/SWEEP.md states what is caught.
 *   - Tensors are dense C-order (row-major) when strides is NULL, which is the contiguity
 *     flag: ulpgym v1 always passes NULL. Non-NULL strides (in elements, not bytes) are
 *     reserved for later versions; a plugin may return ULPGYM_UNSUPPORTED for them.
 *   - Tensor names, their order, dtypes, shapes and the params keys are the op's
 *     contract, printed by `ulpgym ops show OP --json`. Find tensors by name, not position.
 *   - params_json is the case's params object as canonical JSON text (sorted keys);
 *     params an op documents with a default may be absent.
 *   - ulpgym loads the plugin before it forks its sweep workers and calls ulpgym_run
 *     from one thread per process, many times. Initialise device state lazily on the
 *     first call (a GPU context does not survive fork), not in a library constructor.
 *   - A crash or hang in the plugin costs that case only (CRASH / TIMEOUT) when the sweep
 *     runs workers; it never corrupts the results database.
 * Optional, still version 1: a plugin may also export
 *     double ulpgym_last_device_ms(void);
 * the device time, in milliseconds, of the kernel its latest ulpgym_run call launched
 * (e.g. the elapsed time between two device events around it, the call having waited for
 * the device). ulpgym looks it up with dlsym; where it is present `ulpgym bench kernels
 * --backend B --baseline A` takes it as the plugin's kernel-only time, else the wall time
 * around ulpgym_run. It must return a finite value >= 0 after a call that returned
 * ULPGYM_OK; a plugin without it is unchanged and loads as before (docs/PLUGINS.md).
 * Also optional, still version 1: a plugin may export
 *     const char *ulpgym_implements(const char *op);
 * saying what its kernel for op implements, as JSON text it keeps alive (a static string):
 *     {"contract": "<the 16 hex digits `ulpgym ops show OP` printed when it was written>",
 *      "params": {"<param>": "any" | [<value>, ...], ...}}
 * A case whose param is not listed there and differs from the op's default (a param added
 * to the contract since), or whose value is not among the listed ones, is SKIP with the
 * reason, before ulpgym_run is called: a kernel written to an older contract is not blamed
 * for params it never knew. NULL: no declaration for op (every case runs, as without the
 * export). A text that is not such an object makes the case ERROR with the reason.
 * Element encodings (enum ulpgym_dtype): fp32 IEEE binary32, fp16 IEEE binary16, bf16
 * the top half of binary32, e4m3/e5m2 OCP FP8 (E4M3FN: no inf, NaN S.1111.111), e8m0 OCP
 * MX scale 2^(b-127), int8/int32 two's complement; all little-endian.
 *
 * Stability: this is version 1. Fields are only ever appended at the end of a struct in
 * a new version (with ULPGYM_ABI_VERSION raised); enum values are never renumbered. */
#ifndef ULPGYM_KERNEL_ABI_H
#define ULPGYM_KERNEL_ABI_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ULPGYM_ABI_VERSION 1
#define ULPGYM_MAX_DIMS 8

/* Return values of ulpgym_run. */
#define ULPGYM_OK 0
#define ULPGYM_UNSUPPORTED 1
#define ULPGYM_ERROR (-1)

/* Marks the entry points exported even when a plugin builds with
 * -fvisibility=hidden: `ULPGYM_EXPORT int ulpgym_run(...)`. */
#if defined(_WIN32)
#define ULPGYM_EXPORT __declspec(dllexport)
#else
#define ULPGYM_EXPORT __attribute__((visibility("default")))
#endif

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
    const char *name; /* as listed by `ulpgym ops show OP` */
    int32_t dtype;    /* enum ulpgym_dtype */
    int32_t ndim;
    const int64_t *shape;   /* ndim entries */
    const int64_t *strides; /* NULL: contiguous row-major; else ndim entries, in elements */
    void *data;
} ulpgym_tensor;

typedef struct ulpgym_call {
    int32_t abi_version;     /* ULPGYM_ABI_VERSION of the caller */
    const char *op;          /* operator name, e.g. "attn_softmax" */
    const char *params_json; /* the case's params object as JSON text */
    int32_t n_inputs;
    const ulpgym_tensor *inputs;
    int32_t n_outputs;
    const ulpgym_tensor *outputs;
} ulpgym_call;

typedef int (*ulpgym_abi_version_fn)(void);
typedef int (*ulpgym_run_fn)(const ulpgym_call *call, char *err, size_t errlen);
typedef double (*ulpgym_last_device_ms_fn)(void);            /* the optional device clock (above) */
typedef const char *(*ulpgym_implements_fn)(const char *op); /* the optional declaration (above) */

/* What a plugin defines (declared here so its definitions are checked against them). */
ULPGYM_EXPORT int ulpgym_abi_version(void);
ULPGYM_EXPORT int ulpgym_run(const ulpgym_call *call, char *err, size_t errlen);
ULPGYM_EXPORT double ulpgym_last_device_ms(void); /* optional: define it only if the plugin measures device time */
ULPGYM_EXPORT const char *ulpgym_implements(const char *op); /* optional: what the plugin's kernel for op implements */

#ifdef __cplusplus
}
#endif
#endif
