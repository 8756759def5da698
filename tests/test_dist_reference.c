/* test_dist_reference.c — the distributions the reference suite (hicann/pypto-gym
 * tests/ops) draws its inputs from, as gen/dist.c gives them: uniform ±1, randn × 0.01 and
 * × 0.1 (normal), |randn| × s (half_normal), int8 randint and few-valued codes (choice). Known values over a fixed
 * seed: moments and ranges of 2^16 draws, the half_normal as the folded normal element by
 * element, every int8 code reached, and pinned bits of the first draws so that a change to
 * any draw (and so to every reference case's inputs) fails here. Then the blocked fill
 * (ug_dist_fill, vectorised: AVX-512, AVX2 and plain, as far as the CPU has them) against the element-by-element
 * definition (ug_dist_fill_scalar) on every byte, for every kind and dtype, parameters that
 * overflow included. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen/dist.h"
#include "tests/check.h"

#define N 65536

typedef struct {
    double mean, meansq, lo, hi;
} moments;

/* Value v (one of N) added into m. */
static void moments_add(moments *m, double v)
{
    m->mean += v / N;
    m->meansq += v * v / N;
    m->lo = fmin(m->lo, v);
    m->hi = fmax(m->hi, v);
}

static moments fill_moments(const char *json, ug_dtype dt, uint64_t seed, double *vals)
{
    cJSON *d = cJSON_Parse(json);
    static unsigned char buf[N * 8];
    char err[128];
    moments m = {0, 0, INFINITY, -INFINITY};
    CHECK(ug_dist_fill(d, seed, 2, dt, buf, N, err, sizeof err) == 0, "%s: %s", json, err);
    for (size_t i = 0; i < N; i++) {
        double v = ug_dtype_load(dt, buf, i);
        if (vals) vals[i] = v;
        moments_add(&m, v);
    }
    cJSON_Delete(d);
    return m;
}

/* The same over the values before any rounding (ug_dist_value). */
static moments value_moments(const char *json, uint64_t seed, double *vals)
{
    cJSON *d = cJSON_Parse(json);
    moments m = {0, 0, INFINITY, -INFINITY};
    for (uint64_t i = 0; i < N; i++) {
        double v = ug_dist_value(d, seed, 2, i);
        vals[i] = v;
        moments_add(&m, v);
    }
    cJSON_Delete(d);
    return m;
}

static void uniform_pm1(void)
{
    moments m = fill_moments("{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}", UG_DT_FP32, 42, NULL);
    CHECK(m.lo >= -1 && m.hi < 1 && m.lo < -0.999 && m.hi > 0.999, "range [%g, %g]", m.lo, m.hi);
    CHECK(fabs(m.mean) < 0.01 && fabs(m.meansq - 1.0 / 3) < 0.01, "uniform ±1 moments %g %g", m.mean, m.meansq);
}

static void randn_scaled(void)
{
    static const double scales[] = {0.01, 0.1};
    for (int k = 0; k < 2; k++) {
        char json[96];
        double s = scales[k];
        snprintf(json, sizeof json, "{\"kind\":\"normal\",\"mean\":0,\"std\":%g}", s);
        moments m = fill_moments(json, UG_DT_FP32, 42, NULL);
        CHECK(fabs(m.mean) < 0.02 * s && fabs(m.meansq / (s * s) - 1) < 0.02, "randn x %g: %g %g", s, m.mean, m.meansq);
        CHECK(m.hi > 3.5 * s && m.lo < -3.5 * s && m.hi < 6 * s && m.lo > -6 * s, "randn x %g tails [%g, %g]", s, m.lo,
              m.hi);
    }
}

static void half_normal(void)
{
    static double h[N], n[N];
    double s = 1e-6; /* AdamW's v: randn(...).abs() * 1e-6 */
    moments mh = value_moments("{\"kind\":\"half_normal\",\"std\":1e-6}", 42, h);
    value_moments("{\"kind\":\"normal\",\"std\":1e-6}", 42, n);
    int folded = 1;
    for (size_t i = 0; i < N; i++) folded &= h[i] == fabs(n[i]);
    CHECK(folded, "half_normal is not |normal| element by element");
    CHECK(mh.lo >= 0, "half_normal below 0: %g", mh.lo);
    CHECK(fabs(mh.mean / s - sqrt(2 / M_PI)) < 0.01 && fabs(mh.meansq / (s * s) - 1) < 0.02,
          "half_normal moments %g %g", mh.mean / s, mh.meansq / (s * s));
    moments shifted = value_moments("{\"kind\":\"half_normal\",\"mean\":1,\"std\":0.5}", 42, n);
    CHECK(shifted.lo >= 1 && fabs(shifted.mean - (1 + 0.5 * sqrt(2 / M_PI))) < 0.01, "loc %g %g", shifted.lo,
          shifted.mean);
    char err[128];
    cJSON *d = cJSON_Parse("{\"kind\":\"half_normal\",\"std\":-1}");
    CHECK(ug_dist_validate(d, err, sizeof err) == -2 && strstr(err, "std"), "negative std refused: %s", err);
    cJSON_Delete(d);
}

static void randint_int8(void)
{
    static double v[N];
    moments m = fill_moments("{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}", UG_DT_INT8, 42, v);
    int seen[256] = {0}, all = 1, integral = 1;
    for (size_t i = 0; i < N; i++) {
        integral &= v[i] == floor(v[i]);
        if (v[i] >= -128 && v[i] <= 127) seen[(int)v[i] + 128] = 1;
    }
    for (int c = 0; c < 256; c++) all &= seen[c];
    CHECK(m.lo == -128 && m.hi == 127 && integral && all, "int8 randint: [%g, %g], every code %d", m.lo, m.hi, all);
    CHECK(fabs(m.mean + 0.5) < 1.0, "int8 randint mean %g (expected -0.5)", m.mean);
}

/* choice: only the listed values, each about as often as its weight asks (the reference's
 * few-valued int8 codes: 70 % zeros); malformed lists refused. */
static void choice(void)
{
    static double v[N];
    static const double vals[] = {0, 42, -42, 127};
    fill_moments("{\"kind\":\"choice\",\"values\":[0,42,-42,127],\"p\":[0.7,0.1,0.1,0.1]}", UG_DT_INT8, 42, v);
    int count[4] = {0}, other = 0;
    for (size_t i = 0; i < N; i++) {
        int k = 0;
        while (k < 4 && v[i] != vals[k]) k++;
        if (k == 4)
            other++;
        else
            count[k]++;
    }
    CHECK(other == 0, "choice: %d draws outside the listed values", other);
    CHECK(fabs(count[0] / (double)N - 0.7) < 0.01 && fabs(count[3] / (double)N - 0.1) < 0.01,
          "choice shares: 0 at %g (0.7), 127 at %g (0.1)", count[0] / (double)N, count[3] / (double)N);
    fill_moments("{\"kind\":\"choice\",\"values\":[-1,1]}", UG_DT_FP32, 42, v);
    int plus = 0;
    for (size_t i = 0; i < N; i++) plus += v[i] == 1;
    CHECK(fabs(plus / (double)N - 0.5) < 0.01, "choice with equal weights: +1 at %g", plus / (double)N);
    static const char *bad[] = {
        "{\"kind\":\"choice\"}",
        "{\"kind\":\"choice\",\"values\":[]}",
        "{\"kind\":\"choice\",\"values\":[1,2],\"p\":[1]}",
        "{\"kind\":\"choice\",\"values\":[1,2],\"p\":[0,0]}",
        "{\"kind\":\"choice\",\"values\":[1,2],\"p\":[1,-1]}",
        "{\"kind\":\"choice\",\"values\":[1,\"x\"]}",
        "{\"kind\":\"choice\",\"values\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char err[160];
        cJSON *d = cJSON_Parse(bad[k]);
        CHECK(ug_dist_validate(d, err, sizeof err) == -2 && strstr(err, "choice"), "%s not refused: %s", bad[k], err);
        cJSON_Delete(d);
    }
}

/* The first draws' fp32 bits (seed 42, tensor 2): any change to Philox, the normal or the
 * folding changes every reference case's inputs. */
static void pinned_bits(void)
{
    static const struct {
        const char *json;
        uint32_t bits[4];
    } pins[] = {
        {"{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}", {0xbe500c7bu, 0x3dfe60f6u, 0x3eeab359u, 0xbf65db35u}},
        {"{\"kind\":\"normal\",\"std\":0.01}", {0xbc43dc05u, 0x3a737feau, 0xbbf5d809u, 0xbb62845bu}},
        {"{\"kind\":\"half_normal\",\"std\":1e-6}", {0x35a072b4u, 0x33c77994u, 0x35496534u, 0x34b99010u}},
    };
    for (size_t k = 0; k < sizeof pins / sizeof *pins; k++) {
        cJSON *d = cJSON_Parse(pins[k].json);
        for (uint64_t i = 0; i < 4; i++) {
            float f = (float)ug_dist_value(d, 42, 2, i);
            uint32_t b;
            memcpy(&b, &f, 4);
            CHECK(b == pins[k].bits[i], "%s element %llu: bits 0x%08x, pinned 0x%08x", pins[k].json,
                  (unsigned long long)i, b, pins[k].bits[i]);
        }
        cJSON_Delete(d);
    }
}

/* Every element of the blocked fill equals the scalar one (N + 5: a partial last block). */
static void blocked_equals_scalar(const char *path)
{
    static const char *dists[] = {
        "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}",
        "{\"kind\":\"uniform\",\"lo\":-1e308,\"hi\":1.7e308}", /* hi - lo overflows */
        "{\"kind\":\"normal\",\"mean\":0,\"std\":0.01}",
        "{\"kind\":\"normal\",\"mean\":3,\"std\":1e306}",
        "{\"kind\":\"half_normal\",\"std\":1e-6}",
        "{\"kind\":\"half_normal\",\"mean\":-1,\"std\":0.5}",
        "{\"kind\":\"wide\",\"lo_exp\":-140,\"hi_exp\":140}",
        "{\"kind\":\"outliers\",\"std\":1,\"p\":0.05,\"scale\":1e300}",
        "{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}",
        "{\"kind\":\"randint\",\"lo\":-70000,\"hi\":70000}",
        "{\"kind\":\"const\",\"value\":0.1}",
        "{\"kind\":\"choice\",\"values\":[0,42,-64,85.5,-127],\"p\":[0.7,0.075,0.075,0.075,0.075]}",
    };
    enum { M = N + 5 };
    static unsigned char fast[M * 8], slow[M * 8];
    char err[128];
    for (size_t k = 0; k < sizeof dists / sizeof *dists; k++) {
        cJSON *d = cJSON_Parse(dists[k]);
        for (int dt = 0; dt < UG_DT_COUNT; dt++) {
            size_t bytes = (size_t)M * (size_t)ug_dtype_size((ug_dtype)dt);
            memset(fast, 0xa5, bytes);
            memset(slow, 0x5a, bytes);
            CHECK(ug_dist_fill(d, 7, 3, (ug_dtype)dt, fast, M, err, sizeof err) == 0, "%s", err);
            CHECK(ug_dist_fill_scalar(d, 7, 3, (ug_dtype)dt, slow, M, err, sizeof err) == 0, "%s", err);
            size_t first = bytes;
            for (size_t b = 0; b < bytes && first == bytes; b++)
                if (fast[b] != slow[b]) first = b;
            CHECK(first == bytes, "%s path: %s as %s: byte %zu of %zu differs (element %zu)", path, dists[k],
                  ug_dtype_name((ug_dtype)dt), first, bytes, first / (size_t)ug_dtype_size((ug_dtype)dt));
        }
        cJSON_Delete(d);
    }
}

int main(void)
{
    uniform_pm1();
    randn_scaled();
    half_normal();
    randint_int8();
    choice();
    pinned_bits();
    static const char *paths[] = {"avx512", "avx2", "plain"};
    for (int k = 0; k < 3; k++) {
        setenv("ULPGYM_DRAW_PATH", paths[k], 1);
        if (strcmp(ug_dist_fill_path(), paths[k]) == 0)
            blocked_equals_scalar(paths[k]);
        else
            printf("draw path %s: not on this CPU (%s instead), skipped\n", paths[k], ug_dist_fill_path());
    }
    return check_done();
}
