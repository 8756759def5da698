/* dtype.c — exact RNE conversions between double and the formats of dtype.h.
 *
 * One routine, round_binary(), serves every binary floating format: a value normal in the
 * format is rounded on the double's bits (its grid is its own binade's), a subnormal one
 * by one hardware addition of a constant whose ulp is the format's subnormal quantum,
 * under the default round-to-nearest-even mode. Tests check every 16-bit and 8-bit pattern
 * and random doubles (subnormals and ties included) against MPFR. */
#include "core/dtype.h"

#include <math.h>
#include <string.h>

static const ug_dtype_info infos[UG_DT_COUNT] = {
    [UG_DT_FP32] = {"fp32", 4, 1, 23, -126, 0x1.fffffep127},
    [UG_DT_FP16] = {"fp16", 2, 1, 10, -14, 65504.0},
    [UG_DT_BF16] = {"bf16", 2, 1, 7, -126, 0x1.fep127},
    [UG_DT_E4M3] = {"e4m3", 1, 1, 3, -6, 448.0},
    [UG_DT_E5M2] = {"e5m2", 1, 1, 2, -14, 57344.0},
    [UG_DT_E8M0] = {"e8m0", 1, 0, 0, -127, 0x1p127},
    [UG_DT_INT8] = {"int8", 1, 0, 0, 0, 127.0},
    [UG_DT_INT32] = {"int32", 4, 0, 0, 0, 2147483647.0},
};

const ug_dtype_info *ug_dtype_get_info(ug_dtype dt) { return &infos[dt]; }
const char *ug_dtype_name(ug_dtype dt) { return (unsigned)dt < UG_DT_COUNT ? infos[dt].name : "?"; }
int ug_dtype_size(ug_dtype dt) { return infos[dt].size; }

int ug_dtype_parse(const char *name)
{
    for (int i = 0; i < UG_DT_COUNT; i++)
        if (name && strcmp(name, infos[i].name) == 0) return i;
    return -1;
}

/* RNE of finite x onto the grid of a binary format; overflow handled by the caller.
 * Bit operations and one hardware addition only: no frexp/ldexp/nearbyint (the naive
 * oracle arithmetic rounds every product and partial sum through here). */
static double round_binary(double x, int mant, int emin)
{
    if (x == 0.0) return x;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    if ((int)((u >> 52) & 0x7ffu) - 1023 >= emin) {
        /* normal in the target: its grid is x's own binade */
        u = ug_dtype_round_normal_bits(u, mant); /* rounds: RNE */
        memcpy(&x, &u, sizeof x);
        return x;
    }
    /* subnormal in the target (|x| < 2^emin): its grid is the multiples of q = 2^(emin-mant).
     * c = 1.5 * 2^(emin-mant+52) is such a multiple, and c + x stays in c's binade (|x| <
     * 2^emin <= c/4), whose ulp is q: the hardware's RNE of c + x is x rounded to the grid
     * (c/q is even, so ties go to the even multiple), and subtracting c back is exact. */
    uint64_t cu = ((uint64_t)(1023 + emin - mant + 52) << 52) | ((uint64_t)1 << 51);
    double c;
    memcpy(&c, &cu, sizeof c);
    double r = (c + x) - c; /* rounds: RNE to the subnormal grid (first operation only) */
    return copysign(r, x);  /* a tiny negative x rounds to -0 */
}

double ug_dtype_round(ug_dtype dt, double x)
{
    const ug_dtype_info *in = &infos[dt];
    switch (dt) {
    case UG_DT_FP32: return (double)(float)x; /* rounds: hardware RNE to binary32, inf on overflow */
    case UG_DT_FP16:
    case UG_DT_BF16:
    case UG_DT_E5M2:
    case UG_DT_E4M3: {
        if (isnan(x)) return x;
        if (isinf(x)) return dt == UG_DT_E4M3 ? copysign(in->max_finite, x) : x;
        double r = round_binary(x, in->mant_bits, in->emin);
        if (fabs(r) > in->max_finite) return dt == UG_DT_E4M3 ? copysign(in->max_finite, x) : copysign(INFINITY, x);
        return r;
    }
    case UG_DT_E8M0: {
        if (!(x > 0.0) || isnan(x) || isinf(x)) return NAN; /* no zero, sign or infinity */
        int e;
        frexp(x, &e);
        int p = e - 1; /* floor(log2 x) */
        if (p < -127) p = -127;
        if (p > 127) p = 127;
        return ldexp(1.0, p);
    }
    case UG_DT_INT8:
    case UG_DT_INT32: {
        if (isnan(x)) return 0.0;
        double lo = dt == UG_DT_INT8 ? -128.0 : -2147483648.0;
        double r = nearbyint(x); /* rounds: RNE */
        return r < lo ? lo : r > in->max_finite ? in->max_finite : r;
    }
    default: return NAN;
    }
}

/* Encode an already-rounded value of a small IEEE-like format (fp16, bf16, e5m2, e4m3). */
static uint32_t encode_small_float(const ug_dtype_info *in, int ebits, double r)
{
    uint32_t sign = signbit(r) ? 1u : 0u;
    int mant = in->mant_bits;
    uint32_t s = sign << (ebits + mant);
    if (isnan(r)) return s | ((1u << (ebits + mant)) - 1u); /* all-ones exponent+mantissa */
    if (isinf(r)) return s | (((1u << ebits) - 1u) << mant);
    double a = fabs(r);
    if (a == 0.0) return s;
    int bias = 1 - in->emin;
    int e;
    frexp(a, &e);
    int E = e - 1;
    if (E < in->emin) /* subnormal: a = m * 2^(emin-mant) */
        return s | (uint32_t)ldexp(a, mant - in->emin);
    uint32_t m = (uint32_t)(ldexp(a, mant - E) - ldexp(1.0, mant));
    return s | ((uint32_t)(E + bias) << mant) | m;
}

uint32_t ug_dtype_encode(ug_dtype dt, double x)
{
    double r = ug_dtype_round(dt, x);
    switch (dt) {
    case UG_DT_FP32: {
        float f = (float)r;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    case UG_DT_FP16: return encode_small_float(&infos[dt], 5, r);
    case UG_DT_BF16: {
        float f = (float)r; /* exact: r is a bf16 value */
        uint32_t u;
        memcpy(&u, &f, 4);
        if (isnan(r)) return (u >> 16) | 0x40u; /* keep it a quiet NaN */
        return u >> 16;
    }
    case UG_DT_E5M2: return encode_small_float(&infos[dt], 5, r);
    case UG_DT_E4M3: return encode_small_float(&infos[dt], 4, r);
    case UG_DT_E8M0: {
        if (isnan(r)) return 0xFFu;
        int e;
        frexp(r, &e);
        return (uint32_t)(e - 1 + 127);
    }
    case UG_DT_INT8: return (uint32_t)(uint8_t)(int8_t)r;
    case UG_DT_INT32: return (uint32_t)(int32_t)r;
    default: return 0;
    }
}

static double decode_small_float(const ug_dtype_info *in, int ebits, uint32_t b, int e4m3)
{
    int mant = in->mant_bits;
    uint32_t m = b & ((1u << mant) - 1u);
    uint32_t E = (b >> mant) & ((1u << ebits) - 1u);
    double sign = (b >> (ebits + mant)) & 1u ? -1.0 : 1.0;
    uint32_t emax_field = (1u << ebits) - 1u;
    if (e4m3) {
        if (E == emax_field && m == (1u << mant) - 1u) return NAN;
    } else if (E == emax_field) {
        return m ? NAN : sign * INFINITY;
    }
    if (E == 0) return sign * ldexp((double)m, in->emin - mant);
    int bias = 1 - in->emin;
    return sign * ldexp((double)(m | (1u << mant)), (int)E - bias - mant);
}

double ug_dtype_decode(ug_dtype dt, uint32_t bits)
{
    switch (dt) {
    case UG_DT_FP32: {
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    case UG_DT_FP16: return decode_small_float(&infos[dt], 5, bits & 0xFFFFu, 0);
    case UG_DT_BF16: {
        uint32_t u = (bits & 0xFFFFu) << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case UG_DT_E5M2: return decode_small_float(&infos[dt], 5, bits & 0xFFu, 0);
    case UG_DT_E4M3: return decode_small_float(&infos[dt], 4, bits & 0xFFu, 1);
    case UG_DT_E8M0: return (bits & 0xFFu) == 0xFFu ? NAN : ldexp(1.0, (int)(bits & 0xFFu) - 127);
    case UG_DT_INT8: return (double)(int8_t)(bits & 0xFFu);
    case UG_DT_INT32: return (double)(int32_t)bits;
    default: return NAN;
    }
}

/* fp16 by its bits where it is normal (the same float as decode_small_float), else that. */
static void decode_fp16_block(const unsigned char *p, size_t n, double *out)
{
    for (size_t k = 0; k < n; k++) {
        uint16_t h;
        memcpy(&h, p + 2 * k, 2);
        uint32_t e = (h >> 10) & 31u, u = (uint32_t)(h >> 15) << 31 | (e + 112) << 23 | (h & 1023u) << 13;
        float f;
        memcpy(&f, &u, 4);
        out[k] = e == 0 || e == 31 ? decode_small_float(&infos[UG_DT_FP16], 5, h, 0) : f;
    }
}

/* fp32 and bf16 by ug_dtype_decode's own conversion inline, a loop the compiler vectorises;
 * one-byte formats (fp8 caches, int8) through a table of ug_dtype_decode's 256 values
 * (decoding an fp8 element was ~50 ns of scalbn); fp16 by its bits where normal. */
void ug_dtype_decode_block(ug_dtype dt, const void *src, size_t n, double *out)
{
    const unsigned char *p = src;
    if (infos[dt].size == 1) {
        double table[256];
        for (uint32_t b = 0; b < 256; b++) table[b] = ug_dtype_decode(dt, b);
        for (size_t k = 0; k < n; k++) out[k] = table[p[k]];
    } else if (dt == UG_DT_FP32)
        for (size_t k = 0; k < n; k++) {
            float f;
            memcpy(&f, p + 4 * k, 4);
            out[k] = f;
        }
    else if (dt == UG_DT_BF16)
        for (size_t k = 0; k < n; k++) {
            uint16_t h;
            memcpy(&h, p + 2 * k, 2);
            uint32_t u = (uint32_t)h << 16;
            float f;
            memcpy(&f, &u, 4);
            out[k] = f;
        }
    else if (dt == UG_DT_FP16)
        decode_fp16_block(p, n, out);
    else
        for (size_t k = 0; k < n; k++) out[k] = ug_dtype_load(dt, src, k);
}

/* The exponent and the power of two on the bits where x, and the result, are normal doubles
 * (frexp and ldexp were a tenth of the device bound's row passes); frexp and ldexp where not.
 * The same values: tests/test_dtype.c compares both ways. */
double ug_dtype_ulp(ug_dtype dt, double x)
{
    const ug_dtype_info *in = &infos[dt];
    if (!in->is_float) return 1.0;
    int e = in->emin;
    if (x != 0.0 && isfinite(x)) {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        int be = (int)((u >> 52) & 0x7ffu), fe1;
        if (be)
            fe1 = be - 1023; /* frexp's exponent less one */
        else
            frexp(x, &fe1), fe1--;
        if (fe1 > e) e = fe1;
    }
    int k = e - in->mant_bits;
    return k < -1022 || k > 1023 ? ldexp(1.0, k) : ug_pow2_normal(k);
}

double ug_dtype_load(ug_dtype dt, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * (size_t)infos[dt].size;
    uint32_t b = 0;
    switch (infos[dt].size) {
    case 1: b = p[0]; break;
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        b = v;
        break;
    }
    default: memcpy(&b, p, 4); break;
    }
    return ug_dtype_decode(dt, b);
}

void ug_dtype_store(ug_dtype dt, void *buf, size_t i, double x)
{
    unsigned char *p = (unsigned char *)buf + i * (size_t)infos[dt].size;
    uint32_t b = ug_dtype_encode(dt, x);
    switch (infos[dt].size) {
    case 1: p[0] = (unsigned char)b; break;
    case 2: {
        uint16_t v = (uint16_t)b;
        memcpy(p, &v, 2);
        break;
    }
    default: memcpy(p, &b, 4); break;
    }
}
