/* fuzzspace.c — bytes <-> case specs inside an op's space (see fuzzspace.h). */
#include "gen/fuzzspace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canon.h"
#include "core/registry.h"
#include "gen/inject.h"
#include "gen/plan.h"

typedef struct {
    const uint8_t *p;
    size_t n, at;
} reader;

static unsigned rd8(reader *r) { return r->at < r->n ? r->p[r->at++] : 0u; }
static unsigned rd16(reader *r) { return rd8(r) | rd8(r) << 8; }

static int special_allowed(const cJSON *domain, const char *value, int whole);

/* list is an array of special value names, each also in within's "specials" (within NULL: any). */
static int names_check(const cJSON *list, const cJSON *within, const char *path, const char *input, const char *key,
                       char *err, size_t errlen)
{
    for (const cJSON *v = cJSON_IsArray(list) ? list->child : NULL; v; v = v->next)
        if (!cJSON_IsString(v) || ug_special_index(v->valuestring) < 0 ||
            (within && !special_allowed(within, v->valuestring, 0))) {
            snprintf(err, errlen,
                     "%s: fuzz_domain.%s.%s: not a special value name (zero, -zero, max, -max, subnormal, "
                     "-subnormal, inf, -inf, nan)%s",
                     path, input, key, within ? " of its \"specials\"" : "");
            return -1;
        }
    if (cJSON_IsArray(list)) return 0;
    snprintf(err, errlen, "%s: fuzz_domain.%s.%s must be a list", path, input, key);
    return -1;
}

/* "fuzz_domain": {input: {"why": text, "specials": [names from ug_special_names], "whole":
 * optional [those of the specials a whole input may take], "generated": optional bool}},
 * every input one the space's distribution sets draw, or "*" for every input without an
 * entry of its own. */
static int domain_check(const ug_fuzz_space *s, const char *path, char *err, size_t errlen)
{
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(s->space, "fuzz_domain");
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(s->space, "dists")->child;
    if (!dom) return 0;
    if (!cJSON_IsObject(dom)) {
        snprintf(err, errlen, "%s: fuzz_domain must be an object", path);
        return -1;
    }
    for (const cJSON *in = dom->child; in; in = in->next) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(in, "specials");
        const cJSON *gen = cJSON_GetObjectItemCaseSensitive(in, "generated");
        if (cJSON_GetObjectItemCaseSensitive(dom, in->string) != in) { /* the first entry would win silently */
            snprintf(err, errlen, "%s: fuzz_domain names %s twice", path, in->string);
            return -1;
        }
        if (!set || (strcmp(in->string, "*") != 0 && !cJSON_GetObjectItemCaseSensitive(set, in->string)) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(in, "why")) || !cJSON_IsArray(list) ||
            (gen && !cJSON_IsBool(gen))) {
            snprintf(err, errlen,
                     "%s: fuzz_domain.%s needs to name a drawn input, with \"why\" and a \"specials\" list", path,
                     in->string);
            return -1;
        }
        if (names_check(list, NULL, path, in->string, "specials", err, errlen)) return -1;
        const cJSON *whole = cJSON_GetObjectItemCaseSensitive(in, "whole");
        if (whole && names_check(whole, in, path, in->string, "whole", err, errlen)) return -1;
    }
    return 0;
}

int ug_fuzz_space_load(int op, ug_fuzz_space *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->op = op;
    char path[1024];
    snprintf(path, sizeof path, "%s/gen/ops/%s.json", ug_data_dir(), ug_op_name(op));
    char *buf = ug_text_file_read(path, err, errlen);
    if (!buf) return -2;
    s->space = cJSON_Parse(buf);
    free(buf);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(s->space, "grid");
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(g, "dtype")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(s->space, "dists"))) {
        snprintf(err, errlen, "%s: needs \"dists\" and a \"grid\" with a dtype list", path);
        ug_fuzz_space_free(s);
        return -2;
    }
    if (domain_check(s, path, err, errlen)) {
        ug_fuzz_space_free(s);
        return -2;
    }
    return 0;
}

void ug_fuzz_space_free(ug_fuzz_space *s)
{
    cJSON_Delete(s->space);
    s->space = NULL;
}

static const cJSON *grid(const ug_fuzz_space *s, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s->space, "grid"), key);
}

/* A generated distribution: kind and a magnitude from two bytes. */
static cJSON *gen_dist(unsigned kind, unsigned mag)
{
    static const double consts[] = {0, 1, -1, 0.5, 0x1p-14, 65504, -65504, 1e-30, 3.0e38, 0x1p-24};
    double m = ldexp(1.0, (int)(mag % 24) - 8); /* 2^-8 .. 2^15 */
    cJSON *d = cJSON_CreateObject();
    switch (kind % 5) {
    case 0:
        cJSON_AddStringToObject(d, "kind", "uniform");
        cJSON_AddNumberToObject(d, "lo", -m);
        cJSON_AddNumberToObject(d, "hi", m);
        break;
    case 1:
        cJSON_AddStringToObject(d, "kind", "normal");
        cJSON_AddNumberToObject(d, "mean", 0);
        cJSON_AddNumberToObject(d, "std", m);
        break;
    case 2:
        cJSON_AddStringToObject(d, "kind", "wide");
        cJSON_AddNumberToObject(d, "lo_exp", -(double)(mag % 25));
        cJSON_AddNumberToObject(d, "hi_exp", 1 + (double)((mag >> 5) % 17)); /* up to 2^17 */
        break;
    case 3:
        cJSON_AddStringToObject(d, "kind", "outliers");
        cJSON_AddNumberToObject(d, "std", 1);
        cJSON_AddNumberToObject(d, "p", (double)(mag % 50) / 1000.0);
        cJSON_AddNumberToObject(d, "scale", ldexp(1.0, (int)(mag % 16)));
        break;
    default: cJSON_AddStringToObject(d, "kind", "const"); cJSON_AddNumberToObject(d, "value", consts[mag % 10]);
    }
    return d;
}

/* The space's "fuzz_domain" entry of input, or NULL when the fuzzer may draw it freely.
 * An input named there takes only the special values its "specials" list names, and keeps
 * its distribution set's draw unless "generated" is true: the op's contract leaves the
 * rest outside its device model (e.g. an fp16 scale at 65504 that overflows a device
 * intermediate). */
static const cJSON *domain_of(const ug_fuzz_space *s, const char *input)
{
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(s->space, "fuzz_domain");
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(dom, input);
    return own ? own : cJSON_GetObjectItemCaseSensitive(dom, "*"); /* "*": every input without its own entry */
}

/* Whether an injection of value (into one element, or with whole into every element) stays
 * inside domain: its "specials" list names value, and for a whole input so does its "whole"
 * list where it has one (a value harmless in one element may not be in all: every score 0). */
static int special_allowed(const cJSON *domain, const char *value, int whole)
{
    if (!domain) return 1;
    const cJSON *wl = cJSON_GetObjectItemCaseSensitive(domain, "whole"); /* a subset of "specials" (domain_check) */
    const cJSON *list = whole && wl ? wl : cJSON_GetObjectItemCaseSensitive(domain, "specials");
    for (const cJSON *v = list ? list->child : NULL; v; v = v->next)
        if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0) return 1;
    return 0;
}

/* A generated constant at fp16's max or beyond (65504, 3e38): the "max" special value in
 * all but name, so a domain without "max" does not take it either. */
static int near_max_const(const cJSON *d)
{
    return strcmp(cJSON_GetObjectItemCaseSensitive(d, "kind")->valuestring, "const") == 0 &&
           fabs(cJSON_GetObjectItemCaseSensitive(d, "value")->valuedouble) >= 65504;
}

/* A generated constant of 1e-30 (every element the same tiny value): chained through two
 * or three products it leaves fp32's range where the exact value does not, as a whole
 * input of subnormals does, so a domain whose whole input may not be subnormal does not
 * take it either. */
static int tiny_const(const cJSON *d)
{
    double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(d, "value"));
    return strcmp(cJSON_GetObjectItemCaseSensitive(d, "kind")->valuestring, "const") == 0 && v != 0 &&
           fabs(v) < 0x1p-60;
}

/* Whether a generated distribution may draw values of magnitude limit or more (a normal
 * counted to 6 standard deviations): an fp16 input stores those as +-inf, so a domain
 * without "inf" does not take it for an fp16 case. */
static int may_reach(const cJSON *d, double limit)
{
    const char *k = cJSON_GetObjectItemCaseSensitive(d, "kind")->valuestring;
    double (*num)(const cJSON *) = cJSON_GetNumberValue;
    if (strcmp(k, "uniform") == 0)
        return fmax(fabs(num(cJSON_GetObjectItemCaseSensitive(d, "lo"))),
                    fabs(num(cJSON_GetObjectItemCaseSensitive(d, "hi")))) >= limit;
    if (strcmp(k, "normal") == 0) return 6 * num(cJSON_GetObjectItemCaseSensitive(d, "std")) >= limit;
    if (strcmp(k, "wide") == 0) return ldexp(1.0, (int)num(cJSON_GetObjectItemCaseSensitive(d, "hi_exp"))) >= limit;
    if (strcmp(k, "outliers") == 0)
        return 6 * num(cJSON_GetObjectItemCaseSensitive(d, "std")) *
                   num(cJSON_GetObjectItemCaseSensitive(d, "scale")) >=
               limit;
    return fabs(num(cJSON_GetObjectItemCaseSensitive(d, "value"))) >= limit; /* const */
}

/* Whether an input under domain dom (NULL: none) may take the generated distribution g: the
 * domain allows generated draws, and g reaches neither a "max" nor (fp16) an "inf" the
 * domain leaves out, nor is a tiny constant where a whole subnormal input is left out. */
static int generated_ok(const cJSON *dom, const cJSON *g, int fp16)
{
    if (!dom) return 1;
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dom, "generated")) &&
           (special_allowed(dom, "max", 0) || !near_max_const(g)) &&
           (special_allowed(dom, "subnormal", 1) || !tiny_const(g)) &&
           (special_allowed(dom, "inf", 0) || !fp16 || !may_reach(g, 65504));
}

static int all_integers(const cJSON *list, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (const cJSON *v = list->child; v; v = v->next) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) return 0;
        *lo = fmin(*lo, v->valuedouble);
        *hi = fmax(*hi, v->valuedouble);
    }
    return list->child != NULL;
}

/* Whether every entry of axis is a list param's string ("a,b,c" or "q:k,q:k"); lo and hi
 * are the smallest and largest integer in any of them. */
static int all_int_lists(const cJSON *axis, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (const cJSON *v = axis->child; v; v = v->next) {
        if (!cJSON_IsString(v) || !v->valuestring[0] ||
            strspn(v->valuestring, "0123456789,:") != strlen(v->valuestring))
            return 0;
        for (const char *p = v->valuestring; *p;) {
            char *end;
            double x = strtod(p, &end);
            if (end == p) return 0; /* ",," or a leading separator */
            *lo = fmin(*lo, x);
            *hi = fmax(*hi, x);
            p = *end ? end + 1 : end;
        }
    }
    return axis->child != NULL;
}

/* A list param drawn beyond the grid's strings: one of them as the template (its
 * separators, so its structure), its last entry dropped or repeated by one byte, and
 * every integer redrawn from [lo, hi]. A list another param must match (a count, a sum)
 * may come out invalid: the case is then refused and the input discarded. */
static cJSON *gen_int_list(const cJSON *axis, double lo, double hi, reader *r)
{
    const char *tpl = cJSON_GetArrayItem(axis, (int)(rd8(r) % (unsigned)cJSON_GetArraySize(axis)))->valuestring;
    char entries[256];
    snprintf(entries, sizeof entries, "%s", tpl);
    char *last = strrchr(entries, ',');
    unsigned shape = rd8(r) % 4;
    if (shape == 0 && last)
        *last = '\0';      /* one entry fewer */
    else if (shape == 1) { /* one entry more: the last one again */
        const char *tail = last ? last + 1 : entries;
        size_t n = strlen(entries), t = strlen(tail);
        if (n + 1 + t < sizeof entries) {
            memmove(entries + n + 1, tail, t + 1);
            entries[n] = ',';
        }
    }
    char out[1024];
    size_t n = 0;
    unsigned long span = (unsigned long)(hi - lo + 1);
    for (const char *p = entries; *p && n + 16 < sizeof out;) {
        char *end;
        strtod(p, &end);
        unsigned long draw = (unsigned long)rd16(r) | (unsigned long)rd8(r) << 16;
        n += (size_t)snprintf(out + n, sizeof out - n, "%.0f", lo + (double)(draw % span));
        if (*end) out[n++] = *end;
        p = *end ? end + 1 : end;
    }
    out[n] = '\0';
    return cJSON_CreateString(out);
}

char *ug_fuzz_decode(const ug_fuzz_space *s, const uint8_t *data, size_t size)
{
    reader r = {data, size, 0};
    const cJSON *dts = grid(s, "dtype"), *dists = cJSON_GetObjectItemCaseSensitive(s->space, "dists");
    const cJSON *gparams = grid(s, "params");
    cJSON *spec = cJSON_CreateObject();
    cJSON_AddNumberToObject(spec, "v", UG_SPEC_VERSION);
    cJSON_AddStringToObject(spec, "op", ug_op_name(s->op));
    cJSON_AddStringToObject(spec, "plan", "fuzz/1");
    const cJSON *dt = cJSON_GetArrayItem(dts, (int)(rd8(&r) % (unsigned)cJSON_GetArraySize(dts)));
    cJSON_AddStringToObject(spec, "dtype", cJSON_IsString(dt) ? dt->valuestring : "fp32");
    unsigned dsel = rd8(&r);
    int nsets = cJSON_GetArraySize(dists);
    /* a named set, or with generated draws the space's first (plain) set, whose draw an input
     * keeps where its generated one is refused: a stress set's draw (x near the max, paired
     * with tiny weights) would meet generated partners it was not built for */
    const cJSON *set = cJSON_GetArrayItem(dists, dsel < 192 ? (int)(dsel % (unsigned)(nsets ? nsets : 1)) : 0);
    cJSON *dist = cJSON_CreateObject();
    for (const cJSON *in = set ? set->child : NULL; in; in = in->next) {
        if (dsel < 192)
            cJSON_AddItemToObject(dist, in->string, cJSON_Duplicate(in, 1));
        else {
            unsigned kind = rd8(&r), mag = rd8(&r) | (unsigned)rd8(&r) << 8; /* read alike for every input */
            cJSON *g = gen_dist(kind, mag);
            if (generated_ok(domain_of(s, in->string), g, cJSON_IsString(dt) && strcmp(dt->valuestring, "fp16") == 0))
                cJSON_AddItemToObject(dist, in->string, g);
            else {
                cJSON_Delete(g);
                cJSON_AddItemToObject(dist, in->string, cJSON_Duplicate(in, 1)); /* the set's own draw */
            }
        }
    }
    cJSON_AddItemToObject(spec, "dist", dist);
    cJSON *params = cJSON_CreateObject();
    for (const cJSON *ax = gparams ? gparams->child : NULL; ax; ax = ax->next) {
        unsigned sel = rd8(&r);
        double lo, hi;
        int n = cJSON_GetArraySize(ax);
        if (sel >= 160 && all_integers(ax, &lo, &hi))
            cJSON_AddNumberToObject(params, ax->string, lo + (double)(rd16(&r) % (unsigned)(hi - lo + 1)));
        else if (sel >= 160 && all_int_lists(ax, &lo, &hi))
            cJSON_AddItemToObject(params, ax->string, gen_int_list(ax, lo, hi, &r));
        else
            cJSON_AddItemToObject(params, ax->string,
                                  cJSON_Duplicate(cJSON_GetArrayItem(ax, (int)(sel % (unsigned)n)), 1));
    }
    cJSON_AddItemToObject(spec, "params", params);
    unsigned ninj = rd8(&r) % 4;
    int nin = cJSON_GetArraySize(dist);
    if (ninj && nin) {
        cJSON *inj = cJSON_CreateArray();
        for (unsigned k = 0; k < ninj; k++) {
            cJSON *e = cJSON_CreateObject();
            unsigned which = rd8(&r);
            const char *input = cJSON_GetArrayItem(dist, (int)((which >> 1) % (unsigned)nin))->string;
            cJSON_AddStringToObject(e, "input", input);
            if (which & 1u)
                cJSON_AddStringToObject(e, "i", "all"); /* the whole input */
            else
                cJSON_AddNumberToObject(e, "i", rd16(&r));
            const char *value = ug_special_names[rd8(&r) % UG_SPECIAL_COUNT];
            cJSON_AddStringToObject(e, "v", value);
            if (special_allowed(domain_of(s, input), value, which & 1u))
                cJSON_AddItemToArray(inj, e);
            else
                cJSON_Delete(e); /* outside the op's declared domain: dropped */
        }
        if (cJSON_GetArraySize(inj))
            cJSON_AddItemToObject(spec, "inject", inj);
        else
            cJSON_Delete(inj);
    }
    uint32_t seed = (uint32_t)rd16(&r) | (uint32_t)rd16(&r) << 16;
    cJSON_AddNumberToObject(spec, "seed", seed);
    char *text = ug_json_canonical(spec);
    cJSON_Delete(spec);
    return text;
}

cJSON *ug_fuzz_domain_json(int op)
{
    ug_fuzz_space s;
    char err[512];
    if (ug_fuzz_space_load(op, &s, err, sizeof err)) return NULL;
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(s.space, "fuzz_domain");
    cJSON *out = cJSON_CreateArray();
    for (const cJSON *in = dom ? dom->child : NULL; in; in = in->next) {
        cJSON *e = cJSON_CreateObject(), *ex = cJSON_CreateArray(), *exw = cJSON_CreateArray();
        cJSON_AddStringToObject(e, "input", in->string);
        for (int k = 0; k < UG_SPECIAL_COUNT; k++) {
            const char *v = ug_special_names[k];
            if (!special_allowed(in, v, 0))
                cJSON_AddItemToArray(ex, cJSON_CreateString(v));
            else if (!special_allowed(in, v, 1))
                cJSON_AddItemToArray(exw, cJSON_CreateString(v));
        }
        cJSON_AddItemToObject(e, "excluded_specials", ex);
        cJSON_AddItemToObject(e, "excluded_whole", exw); /* allowed in one element, not in all */
        cJSON_AddBoolToObject(e, "generated_draws", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "generated")));
        cJSON_AddStringToObject(e, "why", cJSON_GetObjectItemCaseSensitive(in, "why")->valuestring);
        cJSON_AddItemToArray(out, e);
    }
    ug_fuzz_space_free(&s);
    return out;
}

static int index_of(const cJSON *list, const cJSON *v)
{
    int i = 0;
    for (const cJSON *x = list ? list->child : NULL; x; x = x->next, i++)
        if (cJSON_Compare(x, v, 1)) return i;
    return -1;
}

size_t ug_fuzz_encode(const ug_fuzz_space *s, const char *spec_text, uint8_t *out, size_t cap)
{
    cJSON *spec = cJSON_Parse(spec_text);
    if (!spec || cap < 64) {
        cJSON_Delete(spec);
        return 0;
    }
    size_t n = 0;
    int dt = index_of(grid(s, "dtype"), cJSON_GetObjectItemCaseSensitive(spec, "dtype"));
    out[n++] = (uint8_t)(dt < 0 ? 0 : dt);
    int set = 0, k = 0;
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(spec, "dist");
    for (const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->space, "dists")->child; d; d = d->next, k++)
        if (cJSON_Compare(d, dist, 1)) set = k;
    out[n++] = (uint8_t)set;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(spec, "params"), *gparams = grid(s, "params");
    for (const cJSON *ax = gparams ? gparams->child : NULL; ax && n + 3 < cap; ax = ax->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, ax->string);
        int i = v ? index_of(ax, v) : 0;
        double lo, hi;
        if (i >= 0 && i < 160)
            out[n++] = (uint8_t)i;
        else if (all_integers(ax, &lo, &hi) && cJSON_IsNumber(v)) {
            unsigned off = (unsigned)(fmin(fmax(v->valuedouble, lo), hi) - lo);
            out[n++] = 160;
            out[n++] = (uint8_t)off;
            out[n++] = (uint8_t)(off >> 8);
        } else
            out[n++] = 0;
    }
    out[n++] = 0; /* no injections */
    uint32_t seed = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(spec, "seed"));
    for (int b = 0; b < 4 && n < cap; b++) out[n++] = (uint8_t)(seed >> (8 * b));
    cJSON_Delete(spec);
    return n;
}
