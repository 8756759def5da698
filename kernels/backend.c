/* backend.c — dispatch of a case to its kernel: sim variants, a dlopen'd plugin, or
 * outputs replayed from files.
 *
 * A plugin is foreign code: its error text is forced to end inside the buffer, and a
 * status outside ABI v1's {0, 1, <0} is reported as an error rather than trusted. */
#include "kernels/backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "kernels/plugin_decl.h"
#include "kernels/replay.h"

/* The plugin file's absolute path into b->path (a bare name means the file here, never
 * the library search path) and its SHA-256 into b->sha256: runs store both, so a run names
 * exactly the bytes it loaded wherever it is read. */
static int resolve_plugin(ug_backend *b, const char *path, char *err, size_t errlen)
{
    char abs[PATH_MAX];
    if (!realpath(path, abs)) {
        snprintf(err, errlen, "cannot load plugin %s: %s", path, strerror(errno));
        return -2;
    }
    if (strlen(abs) >= sizeof b->path) {
        snprintf(err, errlen, "cannot load plugin %s: its absolute path is longer than %zu bytes", path,
                 sizeof b->path - 1);
        return -2;
    }
    snprintf(b->path, sizeof b->path, "%s", abs);
    if (ug_sha256_file(abs, b->sha256)) {
        snprintf(err, errlen, "cannot load plugin %s: cannot read it: %s", abs, strerror(errno));
        return -2;
    }
    return 0;
}

/* A plugin's constructors and destructors run in ulpgym's own process and may print:
 * around dlopen and dlclose stdout goes to stderr, so a command's output (`case --json`,
 * a sweep's summary) stays its own. Returns the saved stdout (-1: none saved). */
static int stdout_to_stderr(void)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
    return saved;
}

static void stdout_restore(int saved)
{
    fflush(stdout);
    if (saved < 0) return;
    dup2(saved, STDOUT_FILENO);
    close(saved);
}

static int open_plugin(ug_backend *b, const char *path, char *err, size_t errlen)
{
    b->kind = UG_BACKEND_PLUGIN;
    snprintf(b->path, sizeof b->path, "%s", path);
    if (!*path) {
        snprintf(err, errlen, "backend plugin: needs a path, e.g. plugin:./libmykernels.so");
        return -2;
    }
    if (resolve_plugin(b, path, err, errlen)) return -2;
    dlerror();
    int saved = stdout_to_stderr();
    b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
    stdout_restore(saved);
    if (!b->dl) {
        const char *why = dlerror();
        snprintf(err, errlen, "cannot load plugin %s: %s", b->path, why ? why : "dlopen failed");
        return -2;
    }
    ulpgym_abi_version_fn ver = (ulpgym_abi_version_fn)dlsym(b->dl, "ulpgym_abi_version");
    b->run = (ulpgym_run_fn)dlsym(b->dl, "ulpgym_run");
    if (!ver || !b->run) {
        snprintf(err, errlen, "plugin %s does not export %s (see docs/PLUGINS.md)", b->path,
                 !ver && !b->run ? "ulpgym_abi_version and ulpgym_run"
                 : !ver          ? "ulpgym_abi_version"
                                 : "ulpgym_run");
        ug_backend_close(b);
        return -2;
    }
    /* optional (still ABI v1): the plugin's own device clock, which `bench kernels` prefers to wall time */
    b->device_ms = (ulpgym_last_device_ms_fn)dlsym(b->dl, "ulpgym_last_device_ms");
    /* optional (still ABI v1): which params and values its kernels implement (kernels/plugin_decl.h) */
    b->implements = (ulpgym_implements_fn)dlsym(b->dl, "ulpgym_implements");
    int v = ver();
    if (v != ULPGYM_ABI_VERSION) {
        snprintf(err, errlen,
                 "plugin %s speaks ABI v%d, this ulpgym speaks v%d: rebuild it against this "
                 "ulpgym's kernel_abi.h",
                 b->path, v, ULPGYM_ABI_VERSION);
        ug_backend_close(b);
        return -2;
    }
    return 0;
}

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
    if (strncmp(spec, "plugin:", 7) == 0) return open_plugin(b, spec + 7, err, errlen);
    if (strncmp(spec, "replay:", 7) == 0 && spec[7]) {
        struct stat st; /* checked before a run starts: a missing or unreadable folder is not N case errors */
        if (stat(spec + 7, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "backend %s: %s is not a folder (%s)", spec, spec + 7,
                     stat(spec + 7, &st) != 0 ? strerror(errno) : "a file");
            return -2;
        }
        if (access(spec + 7, R_OK | X_OK) != 0) {
            snprintf(err, errlen, "backend %s: cannot read the folder %s (%s)", spec, spec + 7, strerror(errno));
            return -2;
        }
        b->kind = UG_BACKEND_REPLAY;
        /* stored by its absolute path, as a plugin is: a resume from another folder finds the same outputs */
        char abs[PATH_MAX];
        if (!realpath(spec + 7, abs) || strlen(abs) >= sizeof b->path) {
            snprintf(err, errlen, "backend %s: its absolute path is unknown or longer than %zu bytes", spec,
                     sizeof b->path - 1);
            return -2;
        }
        snprintf(b->path, sizeof b->path, "%s", abs);
        return 0;
    }
    if (strcmp(spec, "ideal") == 0 || strcmp(spec, "naive") == 0) {
        b->kind = spec[0] == 'i' ? UG_BACKEND_IDEAL : UG_BACKEND_NAIVE;
        return 0;
    }
    if (strcmp(spec, "replay") == 0) {
        snprintf(err, errlen,
                 "backend replay needs the folder the outputs are in: replay:DIR "
                 "(or judge one case with `ulpgym check CASE_ID --outputs DIR`)");
        return -2;
    }
    snprintf(err, errlen, "unknown backend \"%s\" (use sim, sim:VARIANT, plugin:PATH.so, replay:DIR, ideal or naive)",
             spec);
    return -2;
}

void ug_backend_close(ug_backend *b)
{
    if (b->dl) {
        int saved = stdout_to_stderr();
        dlclose(b->dl);
        stdout_restore(saved);
    }
    b->dl = NULL;
    b->run = NULL;
    b->device_ms = NULL;
    b->implements = NULL;
}

void ug_backend_describe(const ug_backend *b, char *buf, size_t len)
{
    if (b->kind == UG_BACKEND_PLUGIN)
        snprintf(buf, len, "plugin:%s", b->path);
    else if (b->kind == UG_BACKEND_REPLAY)
        snprintf(buf, len, "replay:%s", b->path);
    else if (b->kind == UG_BACKEND_IDEAL || b->kind == UG_BACKEND_NAIVE)
        snprintf(buf, len, "%s", b->kind == UG_BACKEND_IDEAL ? "ideal" : "naive");
    else if (strcmp(b->variant, "sim") == 0)
        snprintf(buf, len, "sim");
    else
        snprintf(buf, len, "sim:%s", b->variant);
}

int ug_backend_check_op(const ug_backend *b, int op, char *err, size_t errlen)
{
    const ug_op_def *d = ug_op_def_get(op);
    if (b->kind != UG_BACKEND_SIM || !d || ug_op_variant(d, b->variant)) return 0;
    snprintf(err, errlen, "op %s has no kernel variant \"%s\" (see `ulpgym ops show %s`)", ug_op_name(op), b->variant,
             ug_op_name(op));
    return -2;
}

static int run_plugin(const ug_backend *b, const ulpgym_call *call, char *err, size_t errlen)
{
    if (errlen) err[0] = 0;
    if (b->implements) { /* a case the plugin's declaration leaves out is SKIP, its kernel never called */
        int d = ug_plugin_declines(b->implements(call->op), call->op, call->params_json, err, errlen);
        if (d) return d > 0 ? ULPGYM_UNSUPPORTED : -2;
    }
    int rc = b->run(call, err, errlen);
    if (errlen) err[errlen - 1] = 0;
    if (rc > 1) {
        char said[200];
        snprintf(said, sizeof said, "%s", err);
        snprintf(err, errlen, "plugin returned %d, which ABI v1 does not define (0 ok, 1 unsupported, <0 error)%s%s",
                 rc, said[0] ? ": " : "", said);
        return -1;
    }
    return rc;
}

static int run_replay(const ug_backend *b, ug_case *c, char *err, size_t errlen)
{
    char dir[1100];
    if (ug_replay_case_dir(b->path, c->spec.id, dir, sizeof dir, err, errlen)) return -2;
    return ug_replay_load_outputs(c, dir, err, errlen);
}

int ug_backend_run(const ug_backend *b, ug_case *c, char *err, size_t errlen)
{
    ulpgym_tensor ins[UG_MAX_TENSORS], outs[UG_MAX_TENSORS];
    ulpgym_call call;
    ug_case_make_call(c, ins, outs, &call);
    if (b->kind == UG_BACKEND_PLUGIN) return run_plugin(b, &call, err, errlen);
    if (b->kind == UG_BACKEND_REPLAY) return run_replay(b, c, err, errlen);
    if (b->kind == UG_BACKEND_IDEAL || b->kind == UG_BACKEND_NAIVE) {
        snprintf(err, errlen, "the %s backend is computed by the oracle (run/exec.c), not by a kernel",
                 b->kind == UG_BACKEND_IDEAL ? "ideal" : "naive");
        return -2;
    }
    const ug_kernel_variant *v = ug_op_variant(c->def, b->variant);
    if (!v) {
        snprintf(err, errlen, "op %s has no kernel variant \"%s\" (see `ulpgym ops show %s`)", ug_op_name(c->spec.op),
                 b->variant, ug_op_name(c->spec.op));
        return -2;
    }
    return ug_op_run_variant(c->spec.op, v, &call, err, errlen);
}

int ug_backend_names_code(const char *spec) { return spec && strncmp(spec, "plugin:", 7) == 0; }
