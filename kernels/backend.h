/* backend.h — where a case's kernel comes from: a built-in sim variant (the correct
 * kernel or a planted-bug mutant) or a plugin shared library (kernel_abi.h). */
#ifndef UG_BACKEND_H
#define UG_BACKEND_H
#include <stddef.h>

#include "core/registry.h"

typedef enum { UG_BACKEND_SIM, UG_BACKEND_PLUGIN } ug_backend_kind;

typedef struct {
    ug_backend_kind kind;
    char variant[64];      /* sim: variant name ("sim" = correct kernel) */
    char path[512];        /* plugin: path of the .so */
    void *dl;              /* plugin: dlopen handle */
    ulpgym_run_fn run;     /* plugin: its ulpgym_run */
} ug_backend;

/* Parses "sim", "sim:VARIANT" or "plugin:PATH" (opening the plugin). -2 on bad input. */
int ug_backend_open(ug_backend *b, const char *spec, char *err, size_t errlen);
void ug_backend_close(ug_backend *b);
/* Text naming the backend as stored in runs.backend ("sim", "sim:mut_x", "plugin:/p.so"). */
void ug_backend_describe(const ug_backend *b, char *buf, size_t len);
/* Checks before a sweep that the backend can serve op (a sim variant the op has);
 * -2 with a message otherwise. */
int ug_backend_check_op(const ug_backend *b, int op, char *err, size_t errlen);
/* Runs the kernel on c's tensors: 0 ok, 1 unsupported, <0 error (err set). A sim
 * variant an op does not have is an error. */
int ug_backend_run(const ug_backend *b, ug_case *c, char *err, size_t errlen);

#endif
