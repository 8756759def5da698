/* replay_plugin.c — runs a kernel plugin (kernel_abi.h) on case folders written by
 * `ulpgym export`, writing the outputs `ulpgym check` judges.
 *
 *     ulpgym_replay_plugin PLUGIN.so CASE_DIR...
 *
 * The two bridges meet here: a device machine that has the plugin but not ulpgym (or
 * not its database) receives exported folders, runs this, and sends the folders back.
 * It knows no operator: every tensor's name, dtype, shape and file come from case.json,
 * the params are handed over as JSON text. It reads and writes .npy with ulpgym's
 * strict reader/writer (core/npy.c, compiled in) and otherwise depends only on cJSON and
 * the public header. Exit status: 0 when every case was run (including ones the plugin
 * declined, recorded as outputs/unsupported.txt, or failed, outputs/error.txt), 2 on a
 * bad argument or unreadable folder. */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/npy.h"
#include "ulpgym/kernel_abi.h"

#define MAX_TENSORS 32 /* as many as an op may declare (ulpgym's UG_MAX_TENSORS; the fused prolog has 22 inputs) */

static const char *dtype_names[] = {"fp32", "fp16", "bf16", "e4m3", "e5m2", "e8m0", "int8", "int32"};
static const int dtype_sizes[] = {4, 2, 2, 1, 1, 1, 1, 4};

typedef struct {
    char name[64];
    int64_t shape[ULPGYM_MAX_DIMS];
    void *data; /* inputs: the file's bytes (data points inside); outputs: malloc'd */
    void *file;
} slot;

typedef struct {
    cJSON *json;
    char *params;
    int n_in, n_out;
    slot in[MAX_TENSORS], out[MAX_TENSORS];
    ulpgym_tensor vin[MAX_TENSORS], vout[MAX_TENSORS];
} replay_case;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) buf[fread(buf, 1, (size_t)n, f)] = 0;
    }
    fclose(f);
    return buf;
}

static int dtype_of(const char *name)
{
    for (int i = 0; i < (int)(sizeof dtype_names / sizeof *dtype_names); i++)
        if (strcmp(dtype_names[i], name) == 0) return i;
    return -1;
}

/* Fills view v (and slot s) from one entry of case.json's "inputs" / "outputs". */
static int describe(const cJSON *e, slot *s, ulpgym_tensor *v, char *err, size_t errlen)
{
    const cJSON *name = cJSON_GetObjectItem(e, "name"), *dt = cJSON_GetObjectItem(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItem(e, "shape");
    int d = cJSON_IsString(dt) ? dtype_of(dt->valuestring) : -1;
    if (!cJSON_IsString(name) || d < 0 || !cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > ULPGYM_MAX_DIMS) {
        snprintf(err, errlen, "a tensor entry lacks name, a known dtype or a shape");
        return -1;
    }
    snprintf(s->name, sizeof s->name, "%s", name->valuestring);
    memset(v, 0, sizeof *v);
    v->name = s->name;
    v->dtype = d;
    v->ndim = cJSON_GetArraySize(shape);
    for (int i = 0; i < v->ndim; i++) s->shape[i] = (int64_t)cJSON_GetArrayItem(shape, i)->valuedouble;
    v->shape = s->shape;
    v->strides = NULL;
    return 0;
}

static size_t numel_of(const ulpgym_tensor *v)
{
    size_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= (size_t)v->shape[i];
    return n;
}

static int load_case(const char *dir, replay_case *rc, char *err, size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/case.json", dir);
    char *text = slurp(path);
    rc->json = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *ins = cJSON_GetObjectItem(rc->json, "inputs"), *outs = cJSON_GetObjectItem(rc->json, "outputs");
    const cJSON *params = cJSON_GetObjectItem(rc->json, "params_json"); /* exact text, not reprinted */
    rc->params = cJSON_IsString(params) ? strdup(params->valuestring) : NULL;
    if (!cJSON_IsArray(ins) || !cJSON_IsArray(outs) || !rc->params || cJSON_GetArraySize(ins) > MAX_TENSORS ||
        cJSON_GetArraySize(outs) > MAX_TENSORS) {
        snprintf(err, errlen, "%.900s is missing or not an ulpgym case.json", path);
        return -1;
    }
    for (const cJSON *e = ins->child; e; e = e->next) {
        slot *s = &rc->in[rc->n_in];
        ulpgym_tensor *v = &rc->vin[rc->n_in++];
        if (describe(e, s, v, err, errlen)) return -1;
        ug_npy a;
        const cJSON *file = cJSON_GetObjectItem(e, "file");
        if (!cJSON_IsString(file)) {
            snprintf(err, errlen, "input \"%s\" in %s/case.json has no \"file\"", s->name, dir);
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s", dir, file->valuestring);
        if (ug_npy_read_file(path, &s->file, &a, err, errlen)) return -1;
        if (a.numel != numel_of(v) || a.itemsize != dtype_sizes[v->dtype]) {
            snprintf(err, errlen, "%.900s does not match its case.json entry", path);
            return -1;
        }
        v->data = (void *)a.data;
    }
    for (const cJSON *e = outs->child; e; e = e->next) {
        slot *s = &rc->out[rc->n_out];
        ulpgym_tensor *v = &rc->vout[rc->n_out++];
        if (describe(e, s, v, err, errlen)) return -1;
        s->data = v->data = calloc(numel_of(v) ? numel_of(v) : 1, (size_t)dtype_sizes[v->dtype]);
        if (!v->data) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

static void free_case(replay_case *rc)
{
    for (int i = 0; i < rc->n_in; i++) free(rc->in[i].file);
    for (int i = 0; i < rc->n_out; i++) free(rc->out[i].data);
    free(rc->params);
    cJSON_Delete(rc->json);
}

static int write_status(const char *dir, const char *file, const char *msg)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/outputs/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "%s\n", msg);
    return fclose(f);
}

static int run_case(ulpgym_run_fn run, const char *dir)
{
    replay_case rc;
    memset(&rc, 0, sizeof rc);
    char err[1024] = "";
    int status = 0;
    if (load_case(dir, &rc, err, sizeof err)) {
        fprintf(stderr, "ulpgym_replay_plugin: %s\n", err);
        free_case(&rc);
        return 2;
    }
    const cJSON *op = cJSON_GetObjectItem(rc.json, "op");
    ulpgym_call call = {
        ULPGYM_ABI_VERSION, cJSON_IsString(op) ? op->valuestring : "", rc.params, rc.n_in, rc.vin, rc.n_out, rc.vout};
    int krc = run(&call, err, sizeof err);
    err[sizeof err - 1] = 0;
    if (krc == ULPGYM_OK) {
        for (int i = 0; i < rc.n_out && !status; i++) {
            char path[1200];
            const ulpgym_tensor *v = &rc.vout[i];
            snprintf(path, sizeof path, "%s/outputs/%s.npy", dir, v->name);
            if (ug_npy_write_file(path, ug_npy_descr_of_dtype(v->dtype), v->ndim, v->shape, v->data, err, sizeof err)) {
                fprintf(stderr, "ulpgym_replay_plugin: %s\n", err);
                status = 2;
            }
        }
    } else if (write_status(dir, krc == ULPGYM_UNSUPPORTED ? "unsupported.txt" : "error.txt",
                            err[0] ? err : "(no message)")) {
        fprintf(stderr, "ulpgym_replay_plugin: cannot write a status file in %s/outputs\n", dir);
        status = 2;
    }
    free_case(&rc);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ulpgym_replay_plugin PLUGIN.so CASE_DIR...\n");
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    ulpgym_abi_version_fn ver = dl ? (ulpgym_abi_version_fn)dlsym(dl, "ulpgym_abi_version") : NULL;
    ulpgym_run_fn run = dl ? (ulpgym_run_fn)dlsym(dl, "ulpgym_run") : NULL;
    if (!ver || !run || ver() != ULPGYM_ABI_VERSION) {
        fprintf(stderr, "ulpgym_replay_plugin: %s is not an ABI v%d plugin%s%s\n", argv[1], ULPGYM_ABI_VERSION,
                dl ? "" : ": ", dl ? "" : dlerror());
        return 2;
    }
    int status = 0;
    for (int i = 2; i < argc; i++) {
        int rc = run_case(run, argv[i]);
        if (rc > status) status = rc;
    }
    dlclose(dl);
    return status;
}
