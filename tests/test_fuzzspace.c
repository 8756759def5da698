/* test_fuzzspace.c — the precision fuzzer's decoder reaches list params beyond the grid:
 * over many byte strings, page_attention's context_lens and flash_attention_mha's seqlens
 * come out as strings the grid does not list, every integer in them within the grid's own
 * [smallest, largest], their separators those of a grid string, and with one entry fewer
 * or more than their template; grid strings still decode as themselves (ug_fuzz_encode),
 * and the decoded specs are valid cases most of the time. */
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

int main(void)
{
    check_op("page_attention", "context_lens", 0);
    check_op("flash_attention_mha", "seqlens", 1);
    return check_done();
}
