/* backend.h — where a case's kernel comes from: a built-in sim variant (the correct
 * kernel or a planted-bug mutant), a plugin shared library (kernel_abi.h), or outputs a
 * device wrote to files (replay, kernels/replay.h).
 *
 * All three hand the kernel the same ulpgym_call (ug_case_make_call), so a plugin sees
 * exactly what a sim kernel sees. A plugin runs in the calling process: crash and hang
 * containment is the caller's (the sweep's workers, run/contain.h), not this layer's. */
#ifndef UG_BACKEND_H
#define UG_BACKEND_H
#include <stddef.h>

#include "core/registry.h"

/* IDEAL and NAIVE run no kernel: the outputs are the oracle's own correctly rounded
 * values, or its naive same-dtype evaluation, written by run/exec.c (the layer that may
 * call the oracle). IDEAL is the standards' self-check: it must pass every case under
 * every standard. */
typedef enum {
    UG_BACKEND_SIM,
    UG_BACKEND_PLUGIN,
    UG_BACKEND_REPLAY,
    UG_BACKEND_IDEAL,
    UG_BACKEND_NAIVE
} ug_backend_kind;

typedef struct {
    ug_backend_kind kind;
    char variant[64];                   /* sim: variant name ("sim" = correct kernel) */
    char path[512];                     /* plugin: path of the .so; replay: the export folder */
    void *dl;                           /* plugin: dlopen handle */
    ulpgym_run_fn run;                  /* plugin: its ulpgym_run */
    ulpgym_last_device_ms_fn device_ms; /* plugin: its optional ulpgym_last_device_ms (kernel_abi.h); else NULL */
    ulpgym_implements_fn implements;    /* plugin: its optional ulpgym_implements (kernel_abi.h); else NULL */
    char sha256[65];                    /* plugin: SHA-256 of the file loaded (hex); "" otherwise */
} ug_backend;

/* Parses "sim", "sim:VARIANT", "plugin:PATH" (opening the plugin and checking its ABI
 * version; PATH is made absolute — a bare name is the file in the current directory — and
 * the file's SHA-256 kept) or "replay:DIR" (a folder written by `ulpgym export`). -2 on
 * bad input. */
int ug_backend_open(ug_backend *b, const char *spec, char *err, size_t errlen);
void ug_backend_close(ug_backend *b);
/* Whether a backend spec loads code (a plugin). Such a spec read from a database is never
 * opened unless the user names it again (--backend): a database is data, not a program. */
int ug_backend_names_code(const char *spec);
/* Text naming the backend as stored in runs.backend ("sim", "sim:mut_x", "plugin:/p.so",
 * "replay:/d"). */
void ug_backend_describe(const ug_backend *b, char *buf, size_t len);
/* Checks before a sweep that the backend can serve op (a sim variant the op has);
 * -2 with a message otherwise. */
int ug_backend_check_op(const ug_backend *b, int op, char *err, size_t errlen);
/* Runs the kernel on c's tensors: 0 ok, 1 unsupported, <0 error (err set, always
 * NUL-terminated). A sim variant an op does not have is an error; so is a status a
 * plugin returns that ABI v1 does not define. */
int ug_backend_run(const ug_backend *b, ug_case *c, char *err, size_t errlen);

#endif
