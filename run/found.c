/* found.c — fuzz findings: signatures, sorting, the findings folder and corpus/found (see found.h). */
#include "run/found.h"
#include "core/canon.h"
#include "gen/case.h"
#include "run/exec.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *ug_found_dir(void)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/corpus/found", ug_data_dir());
    return buf;
}

const char *ug_found_out_dir(void)
{
    const char *d = getenv("ULPGYM_FINDINGS");
    return d && *d ? d : "./ulpgym-found";
}

static int mkdirs(const char *path)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Regression case file path: its spec when it is a regular file holding a spec that
 * passes ug_plan_check_spec (the checks every plan case gets); -2 with err otherwise. */
static int read_found(const char *path, ug_spec *s, char *err, size_t errlen)
{
    char inner[512];
    char *text = ug_text_file_read(path, inner, sizeof inner); /* a FIFO or a device is refused unread */
    int rc = text ? ug_spec_parse(text, s, inner, sizeof inner) : -2;
    if (!rc && ug_plan_check_spec(s->json, inner, sizeof inner)) {
        ug_spec_free(s);
        rc = -2;
    }
    free(text);
    if (rc)
        snprintf(err, errlen, "regression case %s: %s (fix or remove it; --no-regressions leaves them all out)", path,
                 inner);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends spec s as a regression case unless the plan has it (ids: the plan's own n_ids
 * case IDs as numbers, sorted; the regression cases after them are few, scanned). 1 added,
 * 0 not, -1 without memory. */
static int append_found(ug_plan *plan, const ug_spec *s, const uint64_t *ids, size_t n_ids)
{
    uint64_t key = strtoull(s->id, NULL, 16);
    if (n_ids && bsearch(&key, ids, n_ids, sizeof *ids, cmp_u64)) return 0;
    for (size_t i = n_ids; i < plan->n; i++)
        if (strcmp(plan->cases[i].id, s->id) == 0) return 0; /* two files of one case */
    ug_plan_case *grown = realloc(plan->cases, (plan->n + 1) * sizeof *plan->cases);
    if (grown) plan->cases = grown;
    char *spec = grown ? strdup(s->canonical) : NULL;
    if (!spec) return -1;
    ug_plan_case *c = &plan->cases[plan->n++];
    memset(c, 0, sizeof *c);
    c->spec = spec;
    snprintf(c->id, sizeof c->id, "%s", s->id);
    c->op = s->op;
    c->origin = "fuzz";
    return 1;
}

/* The regression cases of one op's folder; the count added, or -2 (strict: err says which
 * file) / -1 (no memory). */
static long append_op(ug_plan *plan, int op, const uint64_t *ids, size_t n_ids, int strict, char *err, size_t errlen)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", ug_found_dir(), ug_op_name(op));
    DIR *d = opendir(dir);
    struct dirent *e;
    long added = 0;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        char path[1400];
        ug_spec s;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (read_found(path, &s, err, errlen)) {
            if (strict) return closedir(d), -2;
            continue; /* the library's lenient path: test_found reports unreadable findings */
        }
        int rc = s.op == op ? append_found(plan, &s, ids, n_ids) : 0;
        ug_spec_free(&s);
        if (rc < 0) return closedir(d), snprintf(err, errlen, "out of memory adding regression cases"), -1;
        added += rc;
    }
    if (d) closedir(d);
    return added;
}

long ug_found_append_checked(ug_plan *plan, const unsigned char *ops, unsigned groups, int strict, char *err,
                             size_t errlen)
{
    unsigned char planned[UG_OP_COUNT] = {0}; /* the plan's own ops: regression cases follow them */
    uint64_t *ids = malloc((plan->n ? plan->n : 1) * sizeof *ids);
    if (!ids) return snprintf(err, errlen, "out of memory adding regression cases"), -1;
    for (size_t i = 0; i < plan->n; i++) planned[plan->cases[i].op] = 1, ids[i] = strtoull(plan->cases[i].id, NULL, 16);
    size_t n_ids = plan->n;
    qsort(ids, n_ids, sizeof *ids, cmp_u64);
    long added = 0;
    for (int op = 0; op < UG_OP_COUNT && added >= 0; op++) {
        if (!planned[op] || (ops && !ops[op]) || (groups && !(groups >> ug_op_group(op) & 1u))) continue;
        long rc = append_op(plan, op, ids, n_ids, strict, err, errlen);
        added = rc < 0 ? rc : added + rc;
    }
    free(ids);
    return added;
}

size_t ug_found_append(ug_plan *plan, const unsigned char *ops, unsigned groups)
{
    char err[64];
    long n = ug_found_append_checked(plan, ops, groups, 0, err, sizeof err);
    return n > 0 ? (size_t)n : 0;
}

int ug_found_store(const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err, size_t errlen)
{
    return ug_found_store_in(NULL, spec_text, db, id, err, errlen);
}

int ug_found_store_in(const char *root, const char *spec_text, ug_db *db, char id[UG_ID_LEN + 1], char *err,
                      size_t errlen)
{
    ug_spec s;
    ug_case c;
    char inner[512];
    if (ug_spec_parse(spec_text, &s, inner, sizeof inner)) {
        snprintf(err, errlen, "not a case spec: %s", inner);
        return -2;
    }
    if (ug_plan_check_spec(s.json, inner, sizeof inner)) { /* what every sweep checks it against */
        snprintf(err, errlen, "case %s is refused: %s", s.id, inner);
        ug_spec_free(&s);
        return -2;
    }
    snprintf(id, UG_ID_LEN + 1, "%s", s.id);
    char *canonical = strdup(s.canonical);
    int op = s.op;
    int rc = ug_case_build(&c, &s, inner, sizeof inner);
    ug_case_free(&c);
    if (rc) {
        snprintf(err, errlen, "case %s does not build: %s", id, inner);
        free(canonical);
        return -2;
    }
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s/%s", root ? root : ug_found_dir(), ug_op_name(op));
    snprintf(path, sizeof path, "%s/%s.json", dir, id);
    FILE *f = mkdirs(dir) == 0 ? fopen(path, "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        free(canonical);
        return -1;
    }
    fprintf(f, "%s\n", canonical);
    rc = fclose(f) ? -1 : 0;
    if (!rc && db) rc = ug_db_put_case(db, id, canonical, "fuzz", err, errlen);
    free(canonical);
    return rc;
}

static void add(char *buf, size_t len, size_t *at, const char *fmt, const char *a, const char *b)
{
    if (*at >= len) return;
    int n = snprintf(buf + *at, len - *at, fmt, a, b);
    if (n > 0) *at += (size_t)n;
}

/* Whether name is a declared INT param of op (a shape axis or count). */
static int int_param(int op, const char *name)
{
    const ug_op_def *d = ug_op_def_get(op);
    for (const ug_param_decl *p = d ? d->decl.params : NULL; p && p->name; p++)
        if (strcmp(p->name, name) == 0) return p->type == UG_PARAM_INT;
    return 0;
}

void ug_found_signature(const ug_result *r, const char *spec_text, const char *backend, char *sig, size_t len)
{
    int std = -1;
    const char *kind;
    switch (r->outcome) {
    case UG_OUT_NONFINITE: kind = "nonfinite"; break;
    case UG_OUT_FAIL: kind = "numeric"; break;
    case UG_OUT_ERROR: kind = "error"; break;
    case UG_OUT_CRASH: kind = "crash"; break;
    case UG_OUT_TIMEOUT: kind = "timeout"; break;
    case UG_OUT_SHAPE: kind = "shape"; break;
    default: kind = "other"; break;
    }
    if (r->outcome == UG_OUT_FAIL || r->outcome == UG_OUT_NONFINITE) {
        if (r->primary >= 0 && r->primary < UG_STD_COUNT && r->verdict[r->primary] == UG_V_FAIL) std = r->primary;
        for (int s = UG_STD_EXACT; std < 0 && s <= UG_STD_TOPK_SET; s++)
            if (r->verdict[s] == UG_V_FAIL) std = s;
        if (r->outcome == UG_OUT_FAIL && std >= UG_STD_EXACT) kind = "discrete";
    }
    char outs[256] = "";
    size_t o = 0;
    for (int k = 0; k < r->n_out; k++) {
        int bad = r->outcome == UG_OUT_NONFINITE ? r->out[k].m.n_nonfinite_mismatch > 0
                                                 : std >= 0 && r->out[k].verdict[std] == UG_V_FAIL;
        if (bad) add(outs, sizeof outs, &o, "%s%s", o ? "," : "", r->out[k].name);
    }
    char shape[256] = "";
    size_t sh = 0;
    cJSON *j = spec_text ? cJSON_Parse(spec_text) : NULL;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params"), *p;
    cJSON_ArrayForEach(p, params)
    {
        if (!cJSON_IsNumber(p) || (p->valuedouble != 0 && p->valuedouble != 1) || !p->string) continue;
        if (!int_param(r->op, p->string)) continue; /* a scale of 1 is no degenerate axis */
        add(shape, sizeof shape, &sh, "%s%s", sh ? "," : "", p->string);
        add(shape, sizeof shape, &sh, "=%s%s", p->valuedouble == 0 ? "0" : "1", "");
    }
    cJSON_Delete(j);
    snprintf(sig, len, "op=%s backend=%s outcome=%s kind=%s std=%s outputs=%s dtype=%s shape=%s", ug_op_name(r->op),
             backend && *backend ? backend : "sim", ug_outcome_name(r->outcome), kind,
             std >= 0 ? ug_standard_name(std) : "-", o ? outs : "-", ug_dtype_name(r->dtype), sh ? shape : "general");
}

void ug_found_signature_key(const char *sig, char key[17])
{
    unsigned long long h = 14695981039346656037ull;
    for (const unsigned char *c = (const unsigned char *)sig; *c; c++) h = (h ^ *c) * 1099511628211ull;
    snprintf(key, 17, "%016llx", h);
}

const char *ug_found_sort_name(ug_found_sort s)
{
    return s == UG_FOUND_KERNEL ? "kernel" : s == UG_FOUND_CONTRACT_SIM ? "contract-sim" : "contract-ideal";
}

/* The outcome of spec on the named backend (the fuzzer's options: the op's primary, no benchmark). */
static int outcome_on(const char *spec, const char *name, ug_result *r, char *err, size_t errlen)
{
    ug_backend b;
    if (ug_backend_open(&b, name, err, errlen)) return -2;
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.naive = 0;
    int rc = ug_exec_case(spec, &b, &o, r, NULL);
    ug_backend_close(&b);
    if (rc) snprintf(err, errlen, "%s", r->message);
    return rc ? -2 : 0;
}

int ug_found_sort_case(const char *spec_text, const char *correct, const char *ideal, char *why, size_t whylen)
{
    const char *names[2] = {correct, ideal};
    for (int i = 0; i < 2; i++) {
        ug_result r;
        if (outcome_on(spec_text, names[i], &r, why, whylen)) return -2;
        if (r.outcome != UG_OUT_PASS && r.outcome != UG_OUT_SKIP) {
            snprintf(why, whylen, "%s with backend %s (%s)", ug_outcome_name(r.outcome), names[i], r.message);
            return i == 0 ? UG_FOUND_CONTRACT_SIM : UG_FOUND_CONTRACT_IDEAL;
        }
    }
    snprintf(why, whylen, "passes with backends %s and %s", correct, ideal);
    return UG_FOUND_KERNEL;
}
