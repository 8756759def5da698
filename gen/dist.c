/* dist.c — the input distributions of dist.h (the reference suite's draws included:
 * uniform ±1, randn × s as normal, |randn| × s as half_normal, int8 randint). Parameters are read once per fill into a
 * small struct so the per-element path is arithmetic on Philox words only.
 *
 * Two paths give the same bits. draw() is the definition: one element from its Philox
 * words (ug_dist_value, ug_dist_fill_scalar). ug_dist_fill draws BLOCK elements at a time:
 * the Philox rounds, the uniform doubles and the normal's log and cosine series each as a
 * loop over the block, which the compiler vectorises (AVX-512 or AVX2 where the CPU has it), every
 * element's IEEE operations the same and in the same order as in draw() (no FMA: the build
 * has -ffp-contract=off), so every element is bit for bit draw()'s;
 * tests/test_dist_reference.c compares the two on every element of each kind and dtype.
 * Large tensors (the reference suite's 7168 × 24576 AdamW states) made the per-element
 * path, ~70 ns an element, the bulk of building a case. */
#include "gen/dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"

typedef enum { D_UNIFORM, D_NORMAL, D_WIDE, D_OUTLIERS, D_RANDINT, D_CONST, D_HALF_NORMAL, D_CHOICE } dist_kind;

#define UG_CHOICE_MAX 16
typedef struct {
    dist_kind kind;
    double a, b, c, d; /* meaning per kind, see parse() */
    int nv;            /* choice: values[k] is drawn when u*total falls below cum[k] */
    double values[UG_CHOICE_MAX], cum[UG_CHOICE_MAX];
} dist_params;

static const char *kind_names[] = {"uniform", "normal", "wide",        "outliers",
                                   "randint", "const",  "half_normal", "choice"};

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

/* "choice": "values" (1..16 finite numbers) and optional "p" (as many weights >= 0, not all
 * 0; default equal): p->cum[k] = p[0] + ... + p[k], p->a the total. */
static int parse_choice(const cJSON *dist, dist_params *p, char *err, size_t errlen)
{
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(dist, "values"),
                *w = cJSON_GetObjectItemCaseSensitive(dist, "p");
    int n = cJSON_GetArraySize(vals);
    if (!cJSON_IsArray(vals) || n < 1 || n > UG_CHOICE_MAX) {
        snprintf(err, errlen, "distribution: choice needs \"values\", a list of 1 to %d numbers", UG_CHOICE_MAX);
        return -2;
    }
    if (w && (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != n)) {
        snprintf(err, errlen, "distribution: choice \"p\" must list one weight per value");
        return -2;
    }
    double total = 0;
    for (int k = 0; k < n; k++) {
        const cJSON *v = cJSON_GetArrayItem(vals, k), *pk = w ? cJSON_GetArrayItem(w, k) : NULL;
        double weight = pk ? cJSON_GetNumberValue(pk) : 1.0;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (pk && !cJSON_IsNumber(pk)) || !(weight >= 0) ||
            !isfinite(weight)) {
            snprintf(err, errlen, "distribution: choice values must be finite numbers and weights finite and >= 0");
            return -2;
        }
        p->values[k] = v->valuedouble;
        total += weight;
        p->cum[k] = total;
    }
    if (!(total > 0)) {
        snprintf(err, errlen, "distribution: choice weights must not all be 0");
        return -2;
    }
    p->nv = n;
    p->a = total;
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
        snprintf(
            err, errlen,
            "distribution: unknown kind \"%s\" (uniform, normal, wide, outliers, randint, const, half_normal, choice)",
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
    case D_CONST: rc = num(dist, "value", NAN, &p->a, err, errlen); break;
    case D_CHOICE: return parse_choice(dist, p, err, errlen);
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
    case D_CHOICE: {
        double u = p->a * ug_rng_unit(w[0], w[1]); /* in [0, total) */
        int k = 0;
        while (k < p->nv - 1 && !(u < p->cum[k])) k++;
        return p->values[k];
    }
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

int ug_dist_fill_scalar(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                        size_t errlen)
{
    dist_params p;
    if (parse(dist, &p, err, errlen)) return -2;
    for (size_t i = 0; i < n; i++) ug_dtype_store(dt, data, i, draw(&p, seed, tensor, i));
    return 0;
}

#define BLOCK 16
/* The 52 stored significand bits of sqrt(1/2) as ug_det_log compares it (0x3fe6a09e667f3bcd):
 * a significand below them is below it in every binade. */
#define SQRT_HALF_MANT UINT64_C(0x6a09e667f3bcd)
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The Philox words (ug_rng_words) of elements i0 .. i0+BLOCK-1, w[word][element]. */
ALWAYS_INLINE void words_block(uint64_t seed, uint32_t tensor, uint64_t i0, uint32_t draw_index, uint32_t w[4][BLOCK])
{
    uint32_t c0[BLOCK], c1[BLOCK], c2[BLOCK], c3[BLOCK];
    for (int j = 0; j < BLOCK; j++) {
        uint64_t e = i0 + (uint64_t)j;
        c0[j] = (uint32_t)e;
        c1[j] = (uint32_t)(e >> 32);
        c2[j] = tensor;
        c3[j] = draw_index;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        for (int j = 0; j < BLOCK; j++) UG_PHILOX_ROUND(c0[j], c1[j], c2[j], c3[j], k0, k1);
        k0 += UG_PHILOX_W0;
        k1 += UG_PHILOX_W1;
    }
    memcpy(w[0], c0, sizeof c0);
    memcpy(w[1], c1, sizeof c1);
    memcpy(w[2], c2, sizeof c2);
    memcpy(w[3], c3, sizeof c3);
}

/* std_normal of each element of the block. rounds: as std_normal (sqrt correctly rounded);
 * the sine is computed and dropped, as std_normal drops it. */
ALWAYS_INLINE void std_normal_block(uint32_t w[4][BLOCK], double out[BLOCK])
{
    for (int j = 0; j < BLOCK; j++) {
        double u1 = ug_rng_unit_inline(w[0][j], w[1][j]), u2 = ug_rng_unit_inline(w[2][j], w[3][j]);
        /* ug_det_log's reduction of u1 (a normal double in (0,1)) on its bits, without a
         * branch: f = u1's significand in [sqrt(1/2), sqrt(2)), u1 = f * 2^k, exact. */
        uint64_t b, mant;
        memcpy(&b, &u1, sizeof b);
        mant = b & (((uint64_t)1 << 52) - 1u);
        int low = mant < SQRT_HALF_MANT; /* frexp's f = 0.mant below sqrt(1/2): doubled */
        int k = (int)(b >> 52) - 1022 - low;
        b = mant | ((uint64_t)(1022 + low) << 52);
        double f, s, c;
        memcpy(&f, &b, sizeof f);
        ug_det_sincos2pi_inline(u2, &s, &c);
        out[j] = sqrt(-2.0 * ug_det_log_reduced(f, k)) * c;
    }
}

/* Elements i0 .. i0+BLOCK-1 of the distribution, each bit for bit draw()'s. */
ALWAYS_INLINE void values_block(const dist_params *p, uint64_t seed, uint32_t tensor, uint64_t i0, double out[BLOCK])
{
    uint32_t w[4][BLOCK];
    switch (p->kind) {
    case D_UNIFORM:
        words_block(seed, tensor, i0, 0, w);
        for (int j = 0; j < BLOCK; j++) out[j] = p->a + (p->b - p->a) * ug_rng_unit_inline(w[0][j], w[1][j]);
        return;
    case D_RANDINT:
        words_block(seed, tensor, i0, 0, w);
        for (int j = 0; j < BLOCK; j++)
            out[j] = p->a + floor((p->b - p->a + 1.0) * ug_rng_unit_inline(w[0][j], w[1][j]));
        return;
    case D_NORMAL:
    case D_HALF_NORMAL:
        words_block(seed, tensor, i0, 0, w);
        std_normal_block(w, out);
        if (p->kind == D_NORMAL)
            for (int j = 0; j < BLOCK; j++) out[j] = p->a + p->b * out[j];
        else
            for (int j = 0; j < BLOCK; j++) out[j] = p->a + p->b * fabs(out[j]);
        return;
    case D_OUTLIERS:
        words_block(seed, tensor, i0, 0, w);
        std_normal_block(w, out);
        words_block(seed, tensor, i0, 1, w);
        for (int j = 0; j < BLOCK; j++) {
            double x = p->b * out[j];
            out[j] = ug_rng_unit_inline(w[0][j], w[1][j]) < p->c ? x * p->d : x;
        }
        return;
    default: /* wide, const, choice: per element */
        for (int j = 0; j < BLOCK; j++) out[j] = draw(p, seed, tensor, i0 + (uint64_t)j);
    }
}

/* The fp16 bits of r, a value normal in fp16 (the only encoding of it); 0 when r is not
 * (zero, subnormal, inf or NaN: ug_dtype_store's to give). */
static uint16_t fp16_normal_bits(double r)
{
    uint64_t u;
    memcpy(&u, &r, sizeof u);
    int e = (int)((u >> 52) & 0x7ffu) - 1023;
    if (e < -14 || e > 15) return 0;
    return (uint16_t)(((u >> 63) << 15) | ((uint64_t)(e + 15) << 10) | ((u >> 42) & 0x3ffu));
}

/* Stores v[0..m) at elements i0.. of data: ug_dtype_store's bits (fp32, bf16 and normal
 * fp16 values inline, after the same rounding). */
static void store_block(ug_dtype dt, void *data, size_t i0, const double *v, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        double x = v[j];
        uint16_t h = 0;
        if (isnan(x) || (dt != UG_DT_FP32 && dt != UG_DT_BF16 && dt != UG_DT_FP16)) {
            ug_dtype_store(dt, data, i0 + j, x);
            continue;
        }
        double r = ug_dtype_round_fast(dt, x); /* rounds: to dt (exact to float after) */
        if (dt == UG_DT_FP16) {
            if (!(h = fp16_normal_bits(r)))
                ug_dtype_store(dt, data, i0 + j, x);
            else
                memcpy((char *)data + 2 * (i0 + j), &h, 2);
            continue;
        }
        float f = (float)r;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (dt == UG_DT_FP32)
            memcpy((char *)data + 4 * (i0 + j), &u, 4);
        else {
            h = (uint16_t)(u >> 16);
            memcpy((char *)data + 2 * (i0 + j), &h, 2);
        }
    }
}

ALWAYS_INLINE void fill_blocks(const dist_params *p, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n)
{
    double v[BLOCK];
    for (size_t i = 0; i < n; i += BLOCK) { /* the last block draws past n and stores only up to it */
        values_block(p, seed, tensor, i, v);
        store_block(dt, data, i, v, n - i < BLOCK ? n - i : BLOCK);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx512f,avx512dq,avx512vl"))) static void
fill_blocks_avx512(const dist_params *p, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n)
{
    fill_blocks(p, seed, tensor, dt, data, n);
}
__attribute__((target("avx2"))) static void fill_blocks_avx2(const dist_params *p, uint64_t seed, uint32_t tensor,
                                                             ug_dtype dt, void *data, size_t n)
{
    fill_blocks(p, seed, tensor, dt, data, n);
}
#define HAVE_X86_PATHS 1
#endif

static void fill_blocks_plain(const dist_params *p, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n)
{
    fill_blocks(p, seed, tensor, dt, data, n);
}

const char *ug_dist_fill_path(void)
{
    const char *cap = getenv("ULPGYM_DRAW_PATH"); /* a lower path forced: "avx2" or "plain" */
    int plain = cap && strcmp(cap, "plain") == 0, avx2 = plain || (cap && strcmp(cap, "avx2") == 0);
#ifdef HAVE_X86_PATHS
    if (!avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return "avx512";
    if (!plain && __builtin_cpu_supports("avx2")) return "avx2";
#endif
    (void)avx2;
    return "plain";
}

int ug_dist_fill(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                 size_t errlen)
{
    dist_params p;
    if (parse(dist, &p, err, errlen)) return -2;
    const char *path = ug_dist_fill_path();
#ifdef HAVE_X86_PATHS
    if (strcmp(path, "avx512") == 0)
        fill_blocks_avx512(&p, seed, tensor, dt, data, n);
    else if (strcmp(path, "avx2") == 0)
        fill_blocks_avx2(&p, seed, tensor, dt, data, n);
    else
#endif
        fill_blocks_plain(&p, seed, tensor, dt, data, n);
    (void)path;
    return 0;
}
