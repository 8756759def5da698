/* backend.c — dispatch of a case to its kernel: sim variants or a dlopen'd plugin. */
#include "kernels/backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int ug_backend_open(ug_backend *b, const char *spec, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    if (!spec || !*spec || strcmp(spec, "sim") == 0) {
        snprintf(b->variant, sizeof b->variant, "sim");
        return 0;
    }
    if (strncmp(spec, "sim:", 4) == 0) {
        snprintf(b->variant, sizeof b->variant, "%s", spec + 4);
        return 0;
    }
    if (strncmp(spec, "plugin:", 7) == 0) {
        b->kind = UG_BACKEND_PLUGIN;
        snprintf(b->path, sizeof b->path, "%s", spec + 7);
        b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
        if (!b->dl) {
            snprintf(err, errlen, "cannot load plugin %s: %s", b->path, dlerror());
            return -2;
        }
        ulpgym_abi_version_fn ver = (ulpgym_abi_version_fn)dlsym(b->dl, "ulpgym_abi_version");
        b->run = (ulpgym_run_fn)dlsym(b->dl, "ulpgym_run");
        if (!ver || !b->run) {
            snprintf(err, errlen, "plugin %s does not export ulpgym_abi_version and ulpgym_run", b->path);
            ug_backend_close(b);
            return -2;
        }
        if (ver() != ULPGYM_ABI_VERSION) {
            snprintf(err, errlen, "plugin %s speaks ABI v%d, ulpgym speaks v%d", b->path, ver(), ULPGYM_ABI_VERSION);
            ug_backend_close(b);
            return -2;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown backend \"%s\" (use sim, sim:VARIANT or plugin:PATH.so)", spec);
    return -2;
}

void ug_backend_close(ug_backend *b)
{
    if (b->dl) dlclose(b->dl);
    b->dl = NULL;
    b->run = NULL;
}

void ug_backend_describe(const ug_backend *b, char *buf, size_t len)
{
    if (b->kind == UG_BACKEND_PLUGIN) snprintf(buf, len, "plugin:%s", b->path);
    else if (strcmp(b->variant, "sim") == 0) snprintf(buf, len, "sim");
    else snprintf(buf, len, "sim:%s", b->variant);
}

int ug_backend_check_op(const ug_backend *b, int op, char *err, size_t errlen)
{
    const ug_op_def *d = ug_op_def_get(op);
    if (b->kind != UG_BACKEND_SIM || !d || ug_op_variant(d, b->variant)) return 0;
    snprintf(err, errlen, "op %s has no kernel variant \"%s\" (see `ulpgym ops show %s`)", ug_op_name(op), b->variant,
             ug_op_name(op));
    return -2;
}

int ug_backend_run(const ug_backend *b, ug_case *c, char *err, size_t errlen)
{
    ulpgym_tensor ins[UG_MAX_TENSORS], outs[UG_MAX_TENSORS];
    ulpgym_call call;
    ug_case_make_call(c, ins, outs, &call);
    if (b->kind == UG_BACKEND_PLUGIN) return b->run(&call, err, errlen);
    const ug_kernel_variant *v = ug_op_variant(c->def, b->variant);
    if (!v) {
        snprintf(err, errlen, "op %s has no kernel variant \"%s\" (see `ulpgym ops show %s`)",
                 ug_op_name(c->spec.op), b->variant, ug_op_name(c->spec.op));
        return -2;
    }
    return v->fn(&call, err, errlen);
}
