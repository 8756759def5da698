/* dist.c — the input distributions of dist.h (the reference suite's draws included:
 * uniform ±1, randn × s as normal, |randn| × s as half_normal, int8 randint). Parameters are read once per fill into a
 * small struct so the per-element path is arithmetic on Philox words only. */
#include "gen/dist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/philox.h"

typedef enum { D_UNIFORM, D_NORMAL, D_WIDE, D_OUTLIERS, D_RANDINT, D_CONST, D_HALF_NORMAL } dist_kind;

typedef struct {
    dist_kind kind;
    double a, b, c, d; /* meaning per kind, see parse() */
} dist_params;

static const char *kind_names[] = {"uniform", "normal", "wide", "outliers", "randint", "const", "half_normal"};

static int num(const cJSON *o, const char *k, double def, double *out, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!it) {
        if (isnan(def)) {
            snprintf(err, errlen, "distribution: missing number \"%s\"", k);
            return -2;
        }
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
        snprintf(err, errlen, "distribution: \"%s\" must be a finite number", k);
        return -2;
    }
    *out = it->valuedouble;
    return 0;
}

static int parse(const cJSON *dist, dist_params *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(dist, "kind");
    if (!cJSON_IsObject(dist) || !cJSON_IsString(k)) {
        snprintf(err, errlen, "distribution: expected an object with a string \"kind\"");
        return -2;
    }
    int kind = -1;
    for (int i = 0; i < (int)(sizeof kind_names / sizeof *kind_names); i++)
        if (strcmp(k->valuestring, kind_names[i]) == 0) kind = i;
    if (kind < 0) {
        snprintf(err, errlen, "distribution: unknown kind \"%s\" (uniform, normal, wide, outliers, randint, const, half_normal)",
                 k->valuestring);
        return -2;
    }
    p->kind = (dist_kind)kind;
    int rc = 0;
    switch (p->kind) {
    case D_UNIFORM:
    case D_RANDINT:
        rc = num(dist, "lo", NAN, &p->a, err, errlen) || num(dist, "hi", NAN, &p->b, err, errlen);
        if (!rc && !(p->a <= p->b)) {
            snprintf(err, errlen, "distribution: \"lo\" must not exceed \"hi\"");
            return -2;
        }
        break;
    case D_NORMAL:
    case D_HALF_NORMAL: /* half_normal: loc + std*|N(0,1)|, torch's randn(...).abs() * std */
        rc = num(dist, "mean", 0, &p->a, err, errlen) || num(dist, "std", 1, &p->b, err, errlen);
        if (!rc && p->kind == D_HALF_NORMAL && !(p->b >= 0)) {
            snprintf(err, errlen, "distribution: half_normal \"std\" must be >= 0");
            return -2;
        }
        break;
    case D_WIDE:
        rc = num(dist, "lo_exp", NAN, &p->a, err, errlen) || num(dist, "hi_exp", NAN, &p->b, err, errlen);
        if (!rc && !(p->a < p->b && p->a >= -1000 && p->b <= 1000)) {
            snprintf(err, errlen, "distribution: need -1000 <= lo_exp < hi_exp <= 1000");
            return -2;
        }
        break;
    case D_OUTLIERS:
        rc = num(dist, "std", 1, &p->b, err, errlen) || num(dist, "p", 0.01, &p->c, err, errlen) ||
             num(dist, "scale", 100, &p->d, err, errlen);
        break;
    case D_CONST:
        rc = num(dist, "value", NAN, &p->a, err, errlen);
        break;
    }
    return rc ? -2 : 0;
}

int ug_dist_validate(const cJSON *dist, char *err, size_t errlen)
{
    dist_params p;
    return parse(dist, &p, err, errlen);
}

static double std_normal(const uint32_t w[4])
{
    double u1 = ug_rng_unit(w[0], w[1]), u2 = ug_rng_unit(w[2], w[3]);
    double s, c;
    ug_det_sincos2pi(u2, &s, &c);
    return sqrt(-2.0 * ug_det_log(u1)) * c;
}

static double draw(const dist_params *p, uint64_t seed, uint32_t tensor, uint64_t i)
{
    uint32_t w[4];
    ug_rng_words(seed, tensor, i, 0, w);
    switch (p->kind) {
    case D_UNIFORM: return p->a + (p->b - p->a) * ug_rng_unit(w[0], w[1]);
    case D_NORMAL: return p->a + p->b * std_normal(w);
    case D_HALF_NORMAL: return p->a + p->b * fabs(std_normal(w));
    case D_WIDE: {
        double span = p->b - p->a;
        double e = floor(p->a + span * ug_rng_unit(w[0], w[1]));
        double m = 1.0 + ug_rng_unit(w[2], 0);
        return ldexp(w[3] & 1u ? -m : m, (int)e);
    }
    case D_OUTLIERS: {
        double x = p->b * std_normal(w);
        uint32_t v[4];
        ug_rng_words(seed, tensor, i, 1, v);
        return ug_rng_unit(v[0], v[1]) < p->c ? x * p->d : x;
    }
    case D_RANDINT: {
        double span = p->b - p->a + 1.0;
        return p->a + floor(span * ug_rng_unit(w[0], w[1]));
    }
    case D_CONST: return p->a;
    }
    return 0.0;
}

double ug_dist_value(const cJSON *dist, uint64_t seed, uint32_t tensor, uint64_t i)
{
    dist_params p;
    char err[8];
    if (parse(dist, &p, err, sizeof err)) return NAN;
    return draw(&p, seed, tensor, i);
}

int ug_dist_fill(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n,
                 char *err, size_t errlen)
{
    dist_params p;
    if (parse(dist, &p, err, errlen)) return -2;
    for (size_t i = 0; i < n; i++) ug_dtype_store(dt, data, i, draw(&p, seed, tensor, i));
    return 0;
}
