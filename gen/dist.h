/* dist.h — named input distributions, evaluated element by element from Philox.
 *
 * A distribution is a JSON object with "kind" and parameters:
 *   {"kind":"uniform","lo":a,"hi":b}        uniform on [a,b)
 *   {"kind":"normal","mean":m,"std":s}      Box-Muller on two Philox words (torch.randn * s)
 *   {"kind":"half_normal","mean":m,"std":s} m + s*|N(0,1)|, the same normal draw folded
 *                                           (torch.randn(...).abs() * s); s >= 0
 *   {"kind":"wide","lo_exp":a,"hi_exp":b}   random sign, exponent uniform in [a,b), mantissa
 *                                           uniform in [1,2): stresses dynamic range
 *   {"kind":"outliers","std":s,"p":p,"scale":k}  normal(0,s), a share p of elements times k
 *   {"kind":"randint","lo":a,"hi":b}        integers uniform in [a,b] (torch.randint(a, b+1); int8:
 *                                           lo -128, hi 127)
 *   {"kind":"const","value":v}
 *   {"kind":"choice","values":[v...],"p":[w...]}  one of up to 16 values, value k with
 *                                           probability w_k / sum(w) (p optional: equal);
 *                                           e.g. the reference's few-valued int8 codes
 * Element i of input t is a pure function of (seed, t, i); the double drawn is rounded
 * once (RNE) to the tensor's dtype. */
#ifndef UG_DIST_H
#define UG_DIST_H
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/dtype.h"

/* The drawing code's version: bump it when any drawn bit changes (test_core's pinned input
 * bits and tests/fixtures/kernel_digests.txt show such a change). The input cache keys its
 * files by it, gen/input_cache.h. */
#define UG_DIST_VERSION 1

/* Checks a distribution object; -2 with a message naming the bad field. */
int ug_dist_validate(const cJSON *dist, char *err, size_t errlen);
/* The value (before rounding to a dtype) of element i of input tensor t. */
double ug_dist_value(const cJSON *dist, uint64_t seed, uint32_t tensor, uint64_t i);
/* Fills n elements of data (dtype dt) with elements 0..n-1, a block of elements at a time,
 * vectorised by the widest path the CPU has (ug_dist_fill_path). */
int ug_dist_fill(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                 size_t errlen);
/* "avx512", "avx2" or "plain": the path ug_dist_fill takes on this CPU, at most the one
 * $ULPGYM_DRAW_PATH names ("avx2", "plain"; the tests run each). Every path gives the same bits. */
const char *ug_dist_fill_path(void);
/* The same bits element by element (ug_dist_value rounded by ug_dtype_store): the
 * definition the blocked fill is tested and timed against. */
int ug_dist_fill_scalar(const cJSON *dist, uint64_t seed, uint32_t tensor, ug_dtype dt, void *data, size_t n, char *err,
                        size_t errlen);

#endif
