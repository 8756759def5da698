/* replay.c — export of a case to files and loading of a device's outputs (see replay.h).
 *
 * Both directions describe tensors from the built case itself (names, dtypes, shapes
 * come from the op's build()), so the bridge serves every operator without knowing any. */
#include "kernels/replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/canon.h"
#include "core/paths.h"
#include "core/npy.h"

static int mkdir_p(const char *dir, char *err, size_t errlen)
{
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "folder name too long: %s", dir);
        return -1;
    }
    for (char *p = path + 1;; p++) {
        char saved = *p;
        if (saved != '/' && saved != 0) continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create folder %s: %s", path, strerror(errno));
            return -1;
        }
        *p = saved;
        if (!saved) break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a folder", dir);
        return -1;
    }
    return 0;
}

/* dir and its missing parents, then dir itself a real folder: a link there (to another folder)
 * is refused, so nothing the export writes lands outside it. */
static int own_folder(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (mkdir_p(dir, err, errlen)) return -1;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is a symbolic link or not a folder: ulpgym never writes through a link", dir);
        return -1;
    }
    return 0;
}

static char *slurp(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz >= 0 && sz < (1L << 26) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)sz + 1)))
            n = fread(buf, 1, (size_t)sz, f), buf[n] = 0;
    }
    fclose(f);
    if (!buf) snprintf(err, errlen, "cannot read %s", path);
    return buf;
}

static cJSON *tensor_json(const ug_tensor *t, const char *folder)
{
    cJSON *o = cJSON_CreateObject();
    char file[96];
    snprintf(file, sizeof file, "%s/%s.npy", folder, t->name);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "dtype", ug_dtype_name(t->dtype));
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int i = 0; i < t->ndim; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[i]));
    cJSON_AddStringToObject(o, "npy_dtype", ug_npy_descr_of_dtype(t->dtype));
    cJSON_AddBoolToObject(o, "raw_bits", !strchr("fi", ug_npy_descr_of_dtype(t->dtype)[1]));
    cJSON_AddStringToObject(o, "file", file);
    if (t->optional) /* the device may leave it out: no file, not provided (docs/PLUGINS.md) */
        cJSON_AddBoolToObject(o, "optional", 1);
    return o;
}

static int write_case_json(const ug_case *c, const char *dir, char *err, size_t errlen)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", UG_REPLAY_FORMAT);
    cJSON_AddStringToObject(j, "case_id", c->spec.id);
    cJSON_AddStringToObject(j, "op", ug_op_name(c->spec.op));
    cJSON_AddStringToObject(j, "dtype", ug_dtype_name(c->spec.dtype));
    /* Numbers go in as canonical text: cJSON's own printer may drop the last digit of a
     * double or of a seed near 2^53, and the spec must hash to its ID again. */
    char *params = ug_json_canonical(c->spec.params);
    if (!params) {
        cJSON_Delete(j);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cJSON_AddRawToObject(j, "params", params);
    free(params);
    /* exactly what ulpgym_call.params_json carries: every default written in */
    cJSON_AddStringToObject(j, "params_json", c->params_json ? c->params_json : "{}");
    cJSON *ins = cJSON_AddArrayToObject(j, "inputs"), *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int i = 0; i < c->n_in; i++) cJSON_AddItemToArray(ins, tensor_json(&c->in[i], "inputs"));
    for (int i = 0; i < c->n_out; i++) cJSON_AddItemToArray(outs, tensor_json(&c->out[i], "outputs"));
    cJSON_AddStringToObject(j, "encoding",
                            "little-endian, C order; bf16 as uint16 bits, e4m3/e5m2/e8m0 as uint8 bits "
                            "(raw_bits true); a device that declines writes outputs/unsupported.txt, one that "
                            "fails writes outputs/error.txt, each with a one-line reason");
    char check[1400], *qdir = ug_shell_word(dir);
    snprintf(check, sizeof check, "%s check %s --outputs %s", ug_self_command(), c->spec.id, qdir ? qdir : dir);
    free(qdir);
    cJSON_AddStringToObject(j, "check", check);
    cJSON_AddRawToObject(j, "spec", c->spec.canonical);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    char path[1100];
    snprintf(path, sizeof path, "%s/case.json", dir);
    FILE *f = text ? ug_file_create(path) : NULL; /* never through a link */
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    if (!ok)
        snprintf(err, errlen, "cannot write %s: %s", path,
                 errno == ELOOP ? "it is a symbolic link (ulpgym never writes through one)" : strerror(errno));
    return ok ? 0 : -1;
}

/* Creates dir/outputs and removes what an earlier export or recording left there: the output
 * files and the status files (a link is removed itself, never followed). */
static int fresh_outputs(const ug_case *c, const char *dir, char *err, size_t errlen)
{
    char sub[1100], path[1200];
    snprintf(sub, sizeof sub, "%s/outputs", dir);
    if (own_folder(dir, err, errlen) || own_folder(sub, err, errlen)) return -1;
    for (int i = 0; i < c->n_out; i++) {
        snprintf(path, sizeof path, "%s/outputs/%s.npy", dir, c->out[i].name);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/outputs/unsupported.txt", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/outputs/error.txt", dir);
    remove(path);
    return 0;
}

static int write_npy(const ug_tensor *t, const char *dir, const char *folder, char *err, size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/%s.npy", dir, folder, t->name);
    return ug_npy_write_file(path, ug_npy_descr_of_dtype(t->dtype), t->ndim, t->shape, t->data, err, errlen);
}

int ug_replay_export(const ug_case *c, const char *dir, char *err, size_t errlen)
{
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/inputs", dir);
    if (own_folder(dir, err, errlen) || own_folder(sub, err, errlen) || fresh_outputs(c, dir, err, errlen)) return -1;
    for (int i = 0; i < c->n_in; i++)
        if (write_npy(&c->in[i], dir, "inputs", err, errlen)) return -1;
    return write_case_json(c, dir, err, errlen);
}

int ug_replay_keep_outputs(const ug_case *c, int status, const char *reason, const char *dir, char *err, size_t errlen)
{
    if (fresh_outputs(c, dir, err, errlen)) return -1;
    for (int i = 0; i < c->n_out && !status; i++)
        if (ug_tensor_provided(&c->out[i]) && write_npy(&c->out[i], dir, "outputs", err, errlen)) return -1;
    if (status) {
        char path[1200];
        snprintf(path, sizeof path, "%s/outputs/%s", dir, status > 0 ? "unsupported.txt" : "error.txt");
        FILE *f = ug_file_create(path);
        int ok = f && fprintf(f, "%s\n", reason ? reason : "") >= 0;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return write_case_json(c, dir, err, errlen);
}

int ug_replay_read_spec(const char *dir, char **spec_text, char id[UG_ID_LEN + 1], char *err, size_t errlen)
{
    *spec_text = NULL;
    char path[1100];
    snprintf(path, sizeof path, "%s/case.json", dir);
    char *text = slurp(path, err, errlen);
    if (!text) return -2;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    const cJSON *cid = cJSON_GetObjectItemCaseSensitive(j, "case_id");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(j, "spec");
    int rc = -2;
    if (!j)
        snprintf(err, errlen, "%s is not valid JSON", path);
    else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, UG_REPLAY_FORMAT) != 0)
        snprintf(err, errlen, "%s: \"format\" is not \"%s\" (write it with `ulpgym export`)", path, UG_REPLAY_FORMAT);
    else if (!cJSON_IsString(cid) || !cJSON_IsObject(spec))
        snprintf(err, errlen, "%s: needs \"case_id\" (string) and \"spec\" (object)", path);
    else {
        ug_spec parsed;
        char inner[512];
        cJSON *copy = cJSON_Duplicate(spec, 1); /* canonicalised from the parsed values, not reprinted */
        if (!copy)
            snprintf(err, errlen, "out of memory");
        else if (ug_spec_from_json(copy, &parsed, inner, sizeof inner))
            snprintf(err, errlen, "%s: \"spec\": %s", path, inner);
        else {
            if (strcmp(parsed.id, cid->valuestring) != 0)
                snprintf(err, errlen, "%s: the spec hashes to %s, not to the recorded case_id %s (was it edited?)",
                         path, parsed.id, cid->valuestring);
            else {
                snprintf(id, UG_ID_LEN + 1, "%s", parsed.id);
                *spec_text = strdup(parsed.canonical);
                rc = *spec_text ? 0 : -1;
            }
            ug_spec_free(&parsed);
        }
    }
    cJSON_Delete(j);
    return rc;
}

/* First line of a status file the device wrote, into err. */
static void first_line(const char *path, const char *fallback, char *err, size_t errlen)
{
    char inner[64];
    char *text = slurp(path, inner, sizeof inner);
    size_t n = text ? strcspn(text, "\r\n") : 0;
    if (text) text[n] = 0;
    snprintf(err, errlen, "%s", text && n ? text : fallback);
    free(text);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int shape_text(const int64_t *shape, int ndim, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < len) snprintf(buf + n, len - n, "%s)", ndim == 1 ? "," : "");
    return 0;
}

/* Reads output t from path: its header first, checked against t's dtype and shape, then
 * exactly t's bytes straight into t (a huge or endless file is refused unread). */
static int load_one(ug_tensor *t, const char *path, char *err, size_t errlen)
{
    int fd;
    ug_npy a;
    if (ug_npy_open(path, &a, &fd, err, errlen)) return -2;
    const char *want = ug_npy_descr_of_dtype(t->dtype);
    int same_shape = a.ndim == t->ndim;
    for (int i = 0; same_shape && i < t->ndim; i++) same_shape = a.shape[i] == t->shape[i];
    char ws[160], gs[160];
    shape_text(t->shape, t->ndim, ws, sizeof ws);
    shape_text(a.shape, a.ndim, gs, sizeof gs);
    if (strcmp(a.descr, want) != 0)
        snprintf(err, errlen, "%s: dtype %s, but output \"%s\" is %s, stored as %s%s", path, a.descr, t->name,
                 ug_dtype_name(t->dtype), want, want[1] == 'u' ? " (raw bits)" : "");
    else if (!same_shape)
        snprintf(err, errlen, "%s: shape %s, but output \"%s\" has shape %s", path, gs, t->name, ws);
    else
        return ug_npy_read_data(path, fd, t->data, a.data_len, err, errlen);
    close(fd);
    return -2;
}

int ug_replay_load_outputs(ug_case *c, const char *dir, char *err, size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/outputs/unsupported.txt", dir);
    if (file_exists(path)) {
        first_line(path, "the device declined the case", err, errlen);
        return 1;
    }
    snprintf(path, sizeof path, "%s/outputs/error.txt", dir);
    if (file_exists(path)) {
        first_line(path, "the device reported an error", err, errlen);
        return -1;
    }
    for (int i = 0; i < c->n_out; i++) {
        snprintf(path, sizeof path, "%s/outputs/%s.npy", dir, c->out[i].name);
        if (!file_exists(path) && c->out[i].optional) continue; /* not provided: its buffer keeps the sentinel */
        if (!file_exists(path)) {
            snprintf(err, errlen,
                     "missing output file %s (the device writes one .npy per output listed in "
                     "%s/case.json that is not marked optional)",
                     path, dir);
            return -2;
        }
        if (load_one(&c->out[i], path, err, errlen)) return -2;
    }
    return 0;
}

int ug_replay_case_dir(const char *root, const char *id, char *out, size_t outlen, char *err, size_t errlen)
{
    char path[1100], *spec = NULL, got[UG_ID_LEN + 1];
    snprintf(path, sizeof path, "%s/case.json", root);
    if (file_exists(path)) {
        if (ug_replay_read_spec(root, &spec, got, err, errlen)) return -2;
        free(spec);
        if (strcmp(got, id) == 0) {
            snprintf(out, outlen, "%s", root);
            return 0;
        }
    }
    snprintf(path, sizeof path, "%s/%s/case.json", root, id);
    if (!file_exists(path)) {
        snprintf(err, errlen, "no exported case %s under %s (expected %s/case.json or %s/%s/case.json)", id, root, root,
                 root, id);
        return -2;
    }
    snprintf(out, outlen, "%s/%s", root, id);
    return 0;
}
