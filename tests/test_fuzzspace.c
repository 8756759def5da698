/* test_fuzzspace.c — the precision fuzzer's decoder reaches list params beyond the grid:
 * over many byte strings, page_attention's context_lens and flash_attention_mha's seqlens
 * come out as strings the grid does not list, every integer in them within the grid's own
 * [smallest, largest], their separators those of a grid string, and with one entry fewer
 * or more than their template; grid strings still decode as themselves (ug_fuzz_encode),
 * and the decoded specs are valid cases most of the time. An op's "fuzz_domain" holds:
 * lightning_indexer_quant's scales and weights keep their set's draw and take only the
 * special values it lists (never +-max or +-inf), while its codes are drawn freely;
 * glm_attention's q and keys get generated draws but never +-max, nor does its value
 * cache (the "*" entry), and zeros in single elements of q but never in all of it (its
 * "whole" list); attn_softmax, with no domain, gets all of these; a malformed domain is
 * refused with a message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/ops.h"
#include "core/philox.h"
#include "gen/case.h"
#include "gen/fuzzspace.h"

/* The grid's strings of param name, and their smallest and largest integer. */
static const cJSON *grid_axis(const ug_fuzz_space *s, const char *name, double *lo, double *hi)
{
    const cJSON *ax = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s->space, "grid"), "params"), name);
    *lo = INFINITY;
    *hi = -INFINITY;
    for (const cJSON *v = ax ? ax->child : NULL; v; v = v->next)
        for (const char *p = v->valuestring; *p;) {
            char *end;
            double x = strtod(p, &end);
            *lo = fmin(*lo, x);
            *hi = fmax(*hi, x);
            p = *end ? end + 1 : end;
        }
    return ax;
}

static int in_axis(const cJSON *ax, const char *str)
{
    for (const cJSON *v = ax->child; v; v = v->next)
        if (strcmp(v->valuestring, str) == 0) return 1;
    return 0;
}

static int entries(const char *str)
{
    int n = 1;
    for (; *str; str++) n += *str == ',';
    return n;
}

static void check_op(const char *op, const char *param, int pairs)
{
    ug_fuzz_space s;
    char err[300];
    int opi = ug_op_find(op);
    CHECK(opi >= 0 && ug_fuzz_space_load(opi, &s, err, sizeof err) == 0, "%s: space: %s", op, err);
    if (opi < 0) return;
    double lo, hi;
    const cJSON *ax = grid_axis(&s, param, &lo, &hi);
    CHECK(ax && cJSON_GetArraySize(ax) > 1 && lo >= 0 && hi > lo, "%s.%s: a grid of integer lists", op, param);
    int beyond = 0, out_of_range = 0, bad_sep = 0, valid = 0, other_counts = 0, total = 4000;
    for (int t = 0; t < total; t++) {
        uint8_t bytes[64];
        for (int b = 0; b < 64; b += 16) {
            uint32_t w[4];
            ug_rng_words(77, (uint32_t)opi, (uint32_t)t, (uint32_t)b, w);
            memcpy(bytes + b, w, 16);
        }
        char *text = ug_fuzz_decode(&s, bytes, sizeof bytes);
        cJSON *spec = cJSON_Parse(text);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "params"), param);
        if (cJSON_IsString(v) && !in_axis(ax, v->valuestring)) {
            beyond++;
            const char *str = v->valuestring;
            if (strspn(str, pairs ? "0123456789,:" : "0123456789,") != strlen(str)) bad_sep++;
            for (const char *p = str; *p;) {
                char *end;
                double x = strtod(p, &end);
                if (x < lo || x > hi || end == p) out_of_range++;
                p = *end ? end + 1 : end;
            }
            int n = entries(str), near = 0;
            for (const cJSON *g = ax->child; g; g = g->next) near |= abs(entries(g->valuestring) - n) == 1;
            other_counts += near;
            ug_spec sp;
            if (ug_spec_parse(text, &sp, err, sizeof err) == 0) {
                valid++;
                ug_spec_free(&sp);
            }
        }
        cJSON_Delete(spec);
        free(text);
    }
    CHECK(beyond > total / 20, "%s.%s: %d of %d decoded lists are not grid strings", op, param, beyond, total);
    CHECK(out_of_range == 0 && bad_sep == 0, "%s.%s: %d integers outside [%g, %g], %d bad separators", op, param,
          out_of_range, lo, hi, bad_sep);
    CHECK(other_counts > 0, "%s.%s: no list with an entry more or fewer than a grid string", op, param);
    CHECK(valid > beyond / 4, "%s.%s: only %d of %d drawn lists are valid cases", op, param, valid, beyond);
    /* a grid string still encodes and decodes as itself */
    const cJSON *first = cJSON_GetArrayItem(ax, cJSON_GetArraySize(ax) - 1);
    char spec_text[512];
    snprintf(spec_text, sizeof spec_text, "{\"op\":\"%s\",\"params\":{\"%s\":\"%s\"}}", op, param, first->valuestring);
    uint8_t enc[256];
    size_t n = ug_fuzz_encode(&s, spec_text, enc, sizeof enc);
    char *back = n ? ug_fuzz_decode(&s, enc, n) : NULL;
    CHECK(back && strstr(back, first->valuestring), "%s.%s: %s does not survive encode/decode (%s)", op, param,
          first->valuestring, back ? back : "no bytes");
    free(back);
    ug_fuzz_space_free(&s);
}

/* The decoded spec of byte string t (Philox bytes, as check_op's). */
static cJSON *decoded(const ug_fuzz_space *s, int opi, int t)
{
    uint8_t bytes[64];
    for (int b = 0; b < 64; b += 16) {
        uint32_t w[4];
        ug_rng_words(78, (uint32_t)opi, (uint32_t)t, (uint32_t)b, w);
        memcpy(bytes + b, w, 16);
    }
    char *text = ug_fuzz_decode(s, bytes, sizeof bytes);
    cJSON *spec = cJSON_Parse(text);
    free(text);
    return spec;
}

/* Whether dist (an input's distribution in a decoded spec) is one of the space's sets'. */
static int from_a_set(const ug_fuzz_space *s, const char *input, const cJSON *dist)
{
    for (const cJSON *set = cJSON_GetObjectItemCaseSensitive(s->space, "dists")->child; set; set = set->next)
        if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(set, input), dist, 1)) return 1;
    return 0;
}

/* Over 4000 decoded specs of an op, for one input: how many draw it from outside the
 * space's sets, how many of those are constants at 65504 or beyond, and how many inject a
 * given special value into it. */
typedef struct {
    int generated, near_max_consts, injected, injected_whole; /* injected: one element or all */
} domain_counts_t;

static domain_counts_t domain_counts(const char *op, const char *input, const char *v)
{
    domain_counts_t n = {0, 0, 0, 0};
    ug_fuzz_space s;
    char err[300];
    int opi = ug_op_find(op);
    CHECK(opi >= 0 && ug_fuzz_space_load(opi, &s, err, sizeof err) == 0, "%s: space: %s", op, err);
    if (opi < 0) return n;
    for (int t = 0; t < 4000; t++) {
        cJSON *spec = decoded(&s, opi, t);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "dist"), input);
        if (d && !from_a_set(&s, input, d)) {
            n.generated++;
            n.near_max_consts += strcmp(cJSON_GetObjectItemCaseSensitive(d, "kind")->valuestring, "const") == 0 &&
                                 fabs(cJSON_GetObjectItemCaseSensitive(d, "value")->valuedouble) >= 65504;
        }
        const cJSON *inj = cJSON_GetObjectItemCaseSensitive(spec, "inject");
        for (const cJSON *e = inj ? inj->child : NULL; e; e = e->next) {
            int hit = strcmp(cJSON_GetObjectItemCaseSensitive(e, "input")->valuestring, input) == 0 &&
                      strcmp(cJSON_GetObjectItemCaseSensitive(e, "v")->valuestring, v) == 0;
            n.injected += hit;
            n.injected_whole += hit && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "i"));
        }
        cJSON_Delete(spec);
    }
    ug_fuzz_space_free(&s);
    return n;
}

static void check_domains(void)
{
    static const char *fixed[] = {"q_scale", "k_scale", "weights"};
    for (int k = 0; k < 3; k++) {
        domain_counts_t mx = domain_counts("lightning_indexer_quant", fixed[k], "max");
        CHECK(mx.generated == 0 && mx.injected == 0,
              "lightning_indexer_quant.%s: %d generated draws, %d +max injections", fixed[k], mx.generated,
              mx.injected);
        domain_counts_t inf = domain_counts("lightning_indexer_quant", fixed[k], "inf");
        CHECK(inf.injected == 0, "lightning_indexer_quant.%s: %d +inf injections", fixed[k], inf.injected);
        domain_counts_t nan = domain_counts("lightning_indexer_quant", fixed[k], "nan");
        CHECK(nan.injected > 0, "lightning_indexer_quant.%s: no NaN injection (the domain lists it)", fixed[k]);
    }
    domain_counts_t n = domain_counts("lightning_indexer_quant", "query", "max");
    CHECK(n.generated > 0 && n.injected > 0, "lightning_indexer_quant.query: free, yet %d generated draws, %d +max",
          n.generated, n.injected);
    n = domain_counts("glm_attention", "q", "max");
    CHECK(n.generated > 0 && n.injected == 0 && n.near_max_consts == 0,
          "glm_attention.q: %d generated draws (want some), %d +max injections, %d constants at 65504 or more (want 0)",
          n.generated, n.injected, n.near_max_consts);
    n = domain_counts("glm_attention", "value_cache", "max"); /* under its "*" entry */
    CHECK(n.generated > 0 && n.injected == 0,
          "glm_attention.value_cache (\"*\"): %d generated draws, %d +max injections", n.generated, n.injected);
    n = domain_counts("glm_attention", "q", "zero"); /* "whole" leaves zero out: every score 0 */
    CHECK(n.injected > 0 && n.injected_whole == 0,
          "glm_attention.q: %d zero injections (want some), %d into the whole q", n.injected, n.injected_whole);
    n = domain_counts("glm_attention", "q", "nan"); /* "whole" keeps NaN */
    CHECK(n.injected_whole > 0, "glm_attention.q: no NaN into the whole q (its \"whole\" list names it)");
    n = domain_counts("attn_softmax", "x", "zero");
    CHECK(n.injected_whole > 0, "attn_softmax.x: no domain, yet no zero into the whole x");
    n = domain_counts("attn_softmax", "x", "max"); /* no domain: free */
    CHECK(n.generated > 0 && n.injected > 0 && n.near_max_consts > 0,
          "attn_softmax.x: no domain, yet %d generated draws, %d +max, %d near-max constants", n.generated, n.injected,
          n.near_max_consts);
}

/* A space whose fuzz_domain is malformed, in a data dir of its own: refused, with the reason. */
static void check_bad_domain(const char *tmp)
{
    static const char *bad[][2] = {
        {"{\"nosuch\": {\"why\": \"x\", \"specials\": []}}", "nosuch"},
        {"{\"x\": {\"specials\": []}}", "why"},
        {"{\"x\": {\"why\": \"w\", \"specials\": [\"huge\"]}}", "not a special value"},
        {"{\"x\": {\"why\": \"w\", \"specials\": [], \"generated\": 1}}", "x"},
        {"[1]", "must be an object"},
        {"{\"x\": {\"why\": \"w\", \"specials\": [\"nan\"], \"whole\": [\"zero\"]}}", "of its \"specials\""},
        {"{\"x\": {\"why\": \"w\", \"specials\": [\"nan\"], \"whole\": \"nan\"}}", "must be a list"},
        {"{\"x\": {\"why\": \"w\", \"specials\": []}, \"x\": {\"why\": \"v\", \"specials\": []}}", "names x twice"},
    };
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/gen/ops", tmp);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0, "mkdir %s", dir);
    setenv("ULPGYM_DATA", tmp, 1);
    int opi = ug_op_find("attn_softmax");
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(path, sizeof path, "%s/attn_softmax.json", dir);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL, "cannot write %s", path);
        if (!f) return;
        fprintf(f,
                "{\"grid\": {\"dtype\": [\"fp32\"]}, \"dists\": {\"a\": {\"x\": {\"kind\": \"const\", \"value\": 1}}},"
                " \"fuzz_domain\": %s}",
                bad[k][0]);
        fclose(f);
        ug_fuzz_space s;
        char err[400] = "";
        CHECK(ug_fuzz_space_load(opi, &s, err, sizeof err) == -2 && strstr(err, bad[k][1]),
              "fuzz_domain %s: not refused with \"%s\": %s", bad[k][0], bad[k][1], err);
    }
    unsetenv("ULPGYM_DATA");
}

int main(void)
{
    check_op("page_attention", "context_lens", 0);
    check_op("flash_attention_mha", "seqlens", 1);
    check_domains();
    const char *tmp = getenv("ULPGYM_TEST_TMP");
    char own[64] = "/tmp/test_fuzzspace-XXXXXX";
    check_bad_domain(tmp && *tmp ? tmp : mkdtemp(own));
    return check_done();
}
