/* dtype.h — the number formats ulpgym knows and exact conversions between them and double.
 *
 * Every value that crosses a format boundary goes through ug_dtype_round(): one
 * round-to-nearest-even routine parameterised by the format's mantissa width, minimum
 * normal exponent and maximum finite value, so fp16, bf16, fp32 and the OCP fp8 formats
 * all share one tested code path. Rules per format (also in docs/ARCHITECTURE.md):
 *   fp32, fp16, bf16, e5m2: IEEE-like; subnormals kept; overflow rounds to ±inf;
 *                           NaN stays NaN (canonical quiet NaN on encode).
 *   e4m3 (OCP E4M3FN):      no inf; one NaN pattern per sign (S.1111.111); max ±448.
 *                           Conversion saturates: finite values beyond ±448 become ±448
 *                           ("satfinite", as the OCP MX spec prescribes for MX
 *                           element conversion); ±inf saturates too; NaN -> NaN.
 *   e8m0:                   unsigned power of two 2^(b-127), b in 0..254; 0xFF is NaN.
 *                           Encoding takes the power of two at or below x (floor of
 *                           log2, the way MX derives scales), clamped to 2^-127..2^127;
 *                           zero, negative, infinite and NaN inputs encode as NaN.
 *   int8, int32:            round to nearest even, saturate to the type's range; NaN -> 0.
 * Encoded values ("bits") are returned in a uint32_t; the element size in bytes is
 * ug_dtype_size(). */
#ifndef UG_DTYPE_H
#define UG_DTYPE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Numbering is part of the plugin ABI (kernel_abi.h repeats it): never reorder. */
typedef enum {
    UG_DT_FP32 = 0,
    UG_DT_FP16 = 1,
    UG_DT_BF16 = 2,
    UG_DT_E4M3 = 3,
    UG_DT_E5M2 = 4,
    UG_DT_E8M0 = 5,
    UG_DT_INT8 = 6,
    UG_DT_INT32 = 7,
    UG_DT_COUNT
} ug_dtype;

typedef struct {
    const char *name;  /* "bf16" */
    int size;          /* bytes per element */
    int is_float;      /* 1 for the binary floating formats (not e8m0) */
    int mant_bits;     /* stored mantissa bits (fp16 10, bf16 7, fp32 23, e4m3 3, e5m2 2) */
    int emin;          /* minimum normal exponent */
    double max_finite; /* largest finite value */
} ug_dtype_info;

const ug_dtype_info *ug_dtype_get_info(ug_dtype dt);
const char *ug_dtype_name(ug_dtype dt);
int ug_dtype_size(ug_dtype dt);
/* Parses "fp32", "bf16", ...; returns -1 if unknown. */
int ug_dtype_parse(const char *name);

/* Correctly rounded (RNE) value of x in format dt, returned as a double (every value of
 * every format here is a double). Follows the overflow/NaN rules above. */
double ug_dtype_round(ug_dtype dt, double x);

/* RNE of the double with bits u onto a grid of `mant` stored mantissa bits in u's own
 * binade (u a finite non-zero value normal in the target format): add half an ulp minus
 * one plus the kept lsb (ties to even), then truncate; a carry into the exponent is exactly
 * the round-up to the next binade. ug_dtype_round's normal case and the inline below. */
static inline uint64_t ug_dtype_round_normal_bits(uint64_t u, int mant)
{
    int shift = 52 - mant;
    uint64_t lsb = (u >> shift) & 1u;
    u += ((uint64_t)1 << (shift - 1)) - 1u + lsb; /* rounds: RNE */
    return u & ~(((uint64_t)1 << shift) - 1u);
}

/* 2^k, k in a normal double's exponent range [-1022, 1023], built on the bits. */
static inline double ug_pow2_normal(int k)
{
    uint64_t p = (uint64_t)(k + 1023) << 52;
    double r;
    memcpy(&r, &p, sizeof r);
    return r;
}

/* ug_dtype_round for the hot loops of the oracles, bit for bit the same: fp32 by the
 * hardware; bf16 and fp16 on the bits when x is normal in the format and below its top
 * binade (so no overflow can follow); everything else through ug_dtype_round. */
static inline double ug_dtype_round_fast(ug_dtype dt, double x)
{
    if (dt == UG_DT_FP32) return (double)(float)x; /* rounds: hardware RNE to binary32 */
    if (dt == UG_DT_BF16 || dt == UG_DT_FP16) {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        int e = (int)((u >> 52) & 0x7ffu) - 1023;
        int bf = dt == UG_DT_BF16;
        if (e >= (bf ? -126 : -14) && e < (bf ? 127 : 15)) {
            u = ug_dtype_round_normal_bits(u, bf ? 7 : 10); /* rounds: RNE */
            memcpy(&x, &u, sizeof x);
            return x;
        }
    }
    return ug_dtype_round(dt, x);
}
/* Encode x (rounded first) to dt's bit pattern / decode bits to the exact value. */
uint32_t ug_dtype_encode(ug_dtype dt, double x);
double ug_dtype_decode(ug_dtype dt, uint32_t bits);
/* out[k] = the exact value of element k of src (n elements of dt): ug_dtype_load of each,
 * a block at a time (a case decodes its inputs once, tens of millions of elements). */
void ug_dtype_decode_block(ug_dtype dt, const void *src, size_t n, double *out);

/* Unit in the last place of value x in format dt: 2^(max(floor(log2|x|), emin) - mant). */
double ug_dtype_ulp(ug_dtype dt, double x);

/* Raw element access on a buffer of dt elements. */
double ug_dtype_load(ug_dtype dt, const void *buf, size_t i);
void ug_dtype_store(ug_dtype dt, void *buf, size_t i, double x); /* rounds to dt */

#endif
