/* shrink.c — the shape shrinker of shrink.h. */
#include "run/shrink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"

/* Outcome and input size of a spec; -1 if it does not build. */
static int probe(const char *spec, const ug_backend *b, int primary, double contain_s, ug_outcome *outcome,
                 size_t *elems)
{
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.contain_s = contain_s;
    o.primary_set = primary >= 0;
    o.primary = primary;
    o.oracle.naive = 0;
    ug_exec_detail d;
    ug_result r;
    int rc = ug_exec_case(spec, b, &o, &r, &d);
    *elems = 0;
    for (int i = 0; d.have_case && i < d.c.n_in; i++) *elems += d.c.in[i].numel;
    int built = d.have_case && d.c.n_out > 0;
    ug_exec_detail_free(&d);
    if (rc || !built) return -1;
    *outcome = r.outcome;
    return 0;
}

static char *with_param(const char *spec, const char *key, long value)
{
    cJSON *j = cJSON_Parse(spec);
    cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
    cJSON_ReplaceItemInObjectCaseSensitive(params, key, cJSON_CreateNumber((double)value));
    char *s = ug_json_canonical(j);
    cJSON_Delete(j);
    return s;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* Smaller values to try for an axis of length v, smallest first: 1, tile edges (and one
 * past them, which keeps a tail), then v/2, 3v/4, 7v/8, v-1 — a bisection towards v. */
static int candidates(long v, long *out)
{
    static const long tiles[] = {256, 128, 64, 16};
    int n = 0;
    out[n++] = 1;
    for (int t = 0; t < 4; t++)
        if (v > tiles[t]) {
            long m = (v - 1) / tiles[t] * tiles[t];
            out[n++] = m + 1;
            out[n++] = m;
        }
    out[n++] = v / 2;
    out[n++] = v - v / 4;
    out[n++] = v - v / 8;
    out[n++] = v - 1;
    qsort(out, (size_t)n, sizeof *out, cmp_long);
    return n;
}

int ug_shrink_case(const char *spec_text, const ug_backend *b, int primary, double contain_s, ug_shrink_result *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ug_outcome want;
    size_t size;
    cJSON *j = cJSON_Parse(spec_text);
    char *cur = j ? ug_json_canonical(j) : NULL;
    cJSON_Delete(j);
    if (!cur || probe(cur, b, primary, contain_s, &want, &size)) {
        free(cur);
        snprintf(err, errlen, "the case does not build; nothing to shrink");
        return -2;
    }
    if (want == UG_OUT_PASS || want == UG_OUT_SKIP) {
        free(cur);
        snprintf(err, errlen, "the case passes with this backend; nothing to shrink");
        return -2;
    }
    out->start_elems = size;
    for (int progress = 1; progress;) {
        progress = 0;
        cJSON *cj = cJSON_Parse(cur);
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(cj, "params");
        for (const cJSON *p = params ? params->child : NULL; p; p = p->next) {
            if (!cJSON_IsNumber(p) || p->valuedouble < 2 || p->valuedouble != (double)(long)p->valuedouble) continue;
            long cand[16];
            int nc = candidates((long)p->valuedouble, cand);
            for (int k = 0; k < nc; k++) {
                if (cand[k] < 1 || cand[k] >= (long)p->valuedouble || (k && cand[k] == cand[k - 1])) continue;
                char *next = with_param(cur, p->string, cand[k]);
                ug_outcome got;
                size_t sz;
                out->tried++;
                if (next && probe(next, b, primary, contain_s, &got, &sz) == 0 && got == want && sz < size) {
                    free(cur);
                    cur = next;
                    size = sz;
                    out->steps++;
                    progress = 1;
                    break;
                }
                free(next);
            }
            if (progress) break; /* params changed: re-read them */
        }
        cJSON_Delete(cj);
    }
    out->spec = cur;
    out->input_elems = size;
    ug_spec_id_of(cur, out->id);
    return 0;
}
