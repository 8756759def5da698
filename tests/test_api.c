/* test_api.c — libulpgym.so through its public header alone (include/ulpgym/ulpgym.h), as a
 * program outside ulpgym uses it: plan listing and its refusals, a case by ID prefix, the
 * engine's element conversions on known bits, a case's tensors and the refusal of outputs that
 * are not of their dtype, judging (FAIL, SKIP) and the recorder's run, files and triage line. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "ulpgym/ulpgym.h"

/* The answer parsed (and freed), or NULL after recording why. */
static cJSON *answer(char *text, char *err, const char *what)
{
    CHECK(text != NULL, "%s: %s", what, err ? err : "(no message)");
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    ulpgym_free(text);
    ulpgym_free(err);
    return j;
}

/* Whether a call refused with a message holding want: REFUSED(call using &err, want, what). */
#define REFUSED(call, want, what)                                                                                      \
    do {                                                                                                               \
        char *err = NULL;                                                                                              \
        void *res_ = (void *)(call);                                                                                   \
        refused(res_, err, want, what);                                                                                \
    } while (0)
static void refused(void *res, char *err, const char *want, const char *what)
{
    CHECK(res == NULL && err && strstr(err, want), "%s: expected a refusal naming \"%s\", got %s", what, want,
          err ? err : "success");
    ulpgym_free(res);
    ulpgym_free(err);
}

static int is_id(const char *s)
{
    if (!s || strlen(s) != 16) return 0;
    for (; *s; s++)
        if (!strchr("0123456789abcdef", *s)) return 0;
    return 1;
}

static void test_plan(cJSON **first_spec)
{
    char *err = NULL;
    cJSON *j =
        answer(ulpgym_plan_cases("{\"ops\":[\"attn_softmax\",\"rms_norm_rope\"],\"per_op\":3}", &err), err, "plan");
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    CHECK(cJSON_GetArraySize(cases) == 6, "3 cases of each of 2 ops: %d", cJSON_GetArraySize(cases));
    int per[2] = {0, 0};
    for (cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        const char *op = cJSON_GetObjectItem(c, "op")->valuestring;
        per[strcmp(op, "attn_softmax") != 0]++;
        CHECK(is_id(cJSON_GetObjectItem(c, "id")->valuestring), "a case ID of 16 hex digits");
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(c, "params")), "params as an object");
    }
    CHECK(per[0] == 3 && per[1] == 3, "per op: %d %d", per[0], per[1]);
    CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "plan"), "name")->valuestring, "nightly") == 0,
          "plan name");
    *first_spec = cJSON_Duplicate(cases->child, 1);
    cJSON_Delete(j);
    REFUSED(ulpgym_plan_cases("{\"ops\":[\"no_such_op\"]}", &err), "unknown op", "unknown op");
    REFUSED(ulpgym_plan_cases("{\"limt\":3}", &err), "unknown key \"limt\"", "misspelt key");
    REFUSED(ulpgym_plan_cases("[1]", &err), "not a JSON object", "not an object");
    REFUSED(ulpgym_plan_cases("{\"limit\":-1}", &err), "non-negative integer", "negative limit");
    REFUSED(ulpgym_plan_cases("{\"plan\":\"/no/such/plan.json\"}", &err), "/no/such/plan.json", "missing plan");
}

static void test_find(const cJSON *c)
{
    const char *id = cJSON_GetObjectItem(c, "id")->valuestring, *spec = cJSON_GetObjectItem(c, "spec")->valuestring;
    char prefix[9], *err = NULL;
    snprintf(prefix, sizeof prefix, "%.8s", id);
    char *found = ulpgym_find_case(prefix, NULL, NULL, &err);
    CHECK(found && strcmp(found, spec) == 0, "prefix %s finds its spec: %s", prefix, err ? err : found);
    ulpgym_free(found);
    ulpgym_free(err);
    REFUSED(ulpgym_find_case("zz", NULL, NULL, &err), "not a case ID", "not hex");
    REFUSED(ulpgym_find_case("0123456789abcdef", NULL, NULL, &err), "unknown case ID", "unknown ID");
}

static void test_conversions(void)
{
    /* bf16: 1 + 2^-8 ties to even (1.0); 1 + 3*2^-8 ties up to 1 + 2^-6; e4m3 saturates at 448 */
    double v[3] = {1.0, 1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8}, back[3];
    uint16_t bits[3];
    char *err = NULL;
    CHECK(ulpgym_encode("bf16", v, 3, bits, &err) == 0, "encode bf16");
    CHECK(bits[0] == 0x3f80 && bits[1] == 0x3f80 && bits[2] == 0x3f82, "bf16 bits %04x %04x %04x", bits[0], bits[1],
          bits[2]);
    CHECK(ulpgym_decode("bf16", bits, 3, back, &err) == 0 && back[2] == 1.015625, "decode bf16: %.17g", back[2]);
    double big = 500;
    uint8_t e4;
    CHECK(ulpgym_encode("e4m3", &big, 1, &e4, &err) == 0 && e4 == 0x7e, "e4m3 of 500 saturates to 448: %02x", e4);
    CHECK(ulpgym_encode("bf17", v, 1, bits, &err) == -2 && err && strstr(err, "bf17"), "unknown dtype refused");
    ulpgym_free(err);
}

/* The case's first output, all zeros as float64; output 0's element count into *n. */
static double *zeros_for(ulpgym_case *c, size_t *n)
{
    char *text = ulpgym_case_describe(c);
    cJSON *d = cJSON_Parse(text);
    ulpgym_free(text);
    cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "outputs"), 0);
    size_t count = 1;
    for (cJSON *x = cJSON_GetObjectItem(out, "shape")->child; x; x = x->next) count *= (size_t)x->valuedouble;
    size_t nbytes = (size_t)cJSON_GetObjectItem(out, "nbytes")->valuedouble;
    CHECK(nbytes == count * 2, "bf16 output: %zu bytes for %zu elements", nbytes, count);
    cJSON_Delete(d);
    *n = count;
    return calloc(count, sizeof(double));
}

static ulpgym_case *open_bf16_softmax(void)
{
    char *err = NULL;
    cJSON *j = answer(ulpgym_plan_cases("{\"ops\":\"attn_softmax\",\"limit\":40}", &err), err, "softmax cases");
    ulpgym_case *c = NULL;
    for (cJSON *e = cJSON_GetObjectItem(j, "cases")->child; e && !c; e = e->next) {
        const cJSON *p = cJSON_GetObjectItem(e, "params");
        if (strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "bf16") == 0 &&
            cJSON_GetObjectItem(p, "cols")->valuedouble >= 8)
            c = ulpgym_case_open(cJSON_GetObjectItem(e, "spec")->valuestring, &err);
    }
    CHECK(c != NULL, "a bf16 attn_softmax case with 8+ columns opens: %s", err ? err : "none in the first 40");
    ulpgym_free(err);
    cJSON_Delete(j);
    return c;
}

static void test_case(ulpgym_case *c)
{
    char *err = NULL;
    size_t n, nb = 0;
    double *zeros = zeros_for(c, &n);
    CHECK(ulpgym_case_input(c, 0, &nb) != NULL && nb > 0, "input 0 has bytes");
    CHECK(ulpgym_case_input(c, 99, &nb) == NULL, "input 99 does not exist");
    REFUSED(ulpgym_case_judge(c, NULL, &err), "output y was not given", "judged before its output was set");
    err = NULL;
    CHECK(ulpgym_case_set_output(c, 0, zeros, 8, ULPGYM_ENC_F64, &err) == -2 && strstr(err, "bytes"), "wrong size");
    ulpgym_free(err);
    err = NULL;
    zeros[n - 1] = 0.1;
    CHECK(ulpgym_case_set_output(c, 0, zeros, n * 8, ULPGYM_ENC_F64, &err) == -2 && strstr(err, "not a bf16 value"),
          "0.1 is not bf16: %s", err ? err : "accepted");
    ulpgym_free(err);
    err = NULL;
    zeros[n - 1] = 0;
    CHECK(ulpgym_case_set_output(c, 0, zeros, n * 8, ULPGYM_ENC_F64, &err) == 0, "zeros accepted");
    REFUSED(ulpgym_case_judge(c, "{\"primary\":\"exact\"}", &err), "discrete compare", "a discrete primary");
    err = NULL;
    cJSON *v = answer(ulpgym_case_judge(c, "{\"sample\":\"all\"}", &err), err, "judge zeros");
    CHECK(strcmp(cJSON_GetObjectItem(v, "verdict")->valuestring, "FAIL") == 0, "softmax of zeros fails");
    CHECK(strstr(cJSON_GetObjectItem(v, "figure")->valuestring, "y: ") != NULL, "the figure names output y");
    cJSON *out0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "outputs"), 0);
    CHECK((size_t)cJSON_GetObjectItem(out0, "n_checked")->valuedouble == n, "sample all checks every element");
    cJSON_Delete(v);
    free(zeros);
}

static void test_recorder(ulpgym_case *c)
{
    char opts[1600], *err = NULL, db[1100];
    snprintf(db, sizeof db, "%s/api.db", check_tmpdir());
    remove(db);
    snprintf(opts, sizeof opts, "{\"db\":\"%s\",\"name\":\"api-test\"}", db);
    ulpgym_recorder *rec = ulpgym_recorder_open(opts, &err);
    CHECK(rec && ulpgym_recorder_run_id(rec) == 1, "the recorder starts run 1: %s", err ? err : "");
    cJSON *a = answer(ulpgym_recorder_add(rec, c, &err), err, "record");
    const char *line = cJSON_GetStringValue(cJSON_GetObjectItem(a, "triage"));
    CHECK(line && strstr(line, " triage ") && strstr(line, " --run 1"), "a triage line: %s", line ? line : "");
    char path[1400];
    struct stat st;
    snprintf(path, sizeof path, "%s/outputs/y.npy", cJSON_GetStringValue(cJSON_GetObjectItem(a, "outputs_dir")));
    CHECK(stat(path, &st) == 0 && st.st_size > 128, "the kept output %s", path);
    cJSON_Delete(a);
    err = NULL;
    CHECK(ulpgym_case_set_status(c, 1, "no kernel for this shape", &err) == 0, "declined");
    a = answer(ulpgym_case_judge(c, NULL, &err), err, "judge a declined case");
    CHECK(strcmp(cJSON_GetObjectItem(a, "verdict")->valuestring, "SKIP") == 0, "a declined case is SKIP");
    cJSON_Delete(a);
    CHECK(ulpgym_recorder_close(rec, &err) == 0, "close");
    err = NULL;
    snprintf(opts, sizeof opts, "{\"db\":\"%s/no/such/folder/x.db\"}", check_tmpdir());
    REFUSED(ulpgym_recorder_open(opts, &err), "x.db", "a database in a missing folder");
    err = NULL;
    snprintf(opts, sizeof opts, "{\"db\":\"%s\"}", path); /* an .npy file is not a database */
    REFUSED(ulpgym_recorder_open(opts, &err), "not a ulpgym database", "a file that is not a database");
}

int main(void)
{
    CHECK(ulpgym_api_version() == ULPGYM_API_VERSION, "API version");
    CHECK(strncmp(ulpgym_version(), "ulpgym ", 7) == 0, "version line: %s", ulpgym_version());
    cJSON *first = NULL;
    test_plan(&first);
    if (first) test_find(first);
    cJSON_Delete(first);
    test_conversions();
    char *err = NULL;
    char *contract = ulpgym_op_contract("attn_softmax", &err);
    CHECK(contract && strstr(contract, "\"tensors\""), "the contract lists tensors");
    ulpgym_free(contract);
    REFUSED(ulpgym_op_contract("no_such_op", &err), "unknown op", "unknown op's contract");
    REFUSED(ulpgym_case_open("{\"v\":1}", &err), "", "a spec without op");
    ulpgym_case *c = open_bf16_softmax();
    if (c) {
        test_case(c);
        test_recorder(c);
        ulpgym_case_close(c);
    }
    return check_done();
}
