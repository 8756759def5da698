/* prolog_legal.c — the legal variants' reduction orders and rsqrt of the prolog sim
 * kernels (prolog_legal.h). */
#include "kernels/sim/prolog/prolog_legal.h"

#include <math.h>

#include "kernels/sim/ktile.h"
#include "kernels/sim/simlib.h"

/* Tile partials of UG_PL_TILE64 held at once (the ops' reductions are at most 16384 long,
 * 256 tiles; a longer one folds its first 256 partials into one and goes on). */
#define PL_MAX_TILES 256

/* Tiles of 64 summed sequentially (fp32), the partials pairwise; b NULL: the sum of a. */
static float tile64(const float *a, const float *b, size_t n)
{
    float part[PL_MAX_TILES];
    size_t nt = 0;
    for (size_t t = 0; t < n; t += UG_PL_TILE) {
        size_t len = n - t < UG_PL_TILE ? n - t : UG_PL_TILE;
        float s = 0.0f;
        for (size_t k = 0; k < len; k++) s += b ? a[t + k] * b[t + k] : a[t + k]; /* rounds: fp32 mul, fp32 add */
        if (nt == PL_MAX_TILES) part[0] = ug_pairwise_sum_f32(part, nt), nt = 1;  /* rounds: fp32 (pairwise) */
        part[nt++] = s;
    }
    return ug_pairwise_sum_f32(part, nt); /* rounds: fp32 (pairwise) */
}

float ug_pl_dot(const float *a, const float *b, size_t n, ug_prolog_legal how)
{
    if (how == UG_PL_SEQ_FMA) return ug_fma_dot_f32(a, b, n); /* rounds: fp32, one per FMA */
    if (how == UG_PL_TILE64) return tile64(a, b, n);
    return ug_ktile_dot_f32(a, b, n);
}

float ug_pl_sum(const float *v, size_t n, ug_prolog_legal how)
{
    if (how == UG_PL_TILE64) return tile64(v, NULL, n);
    float s = 0.0f;
    for (size_t k = 0; k < n; k++) s += v[k]; /* rounds: fp32 */
    return s;
}

ug_prolog_legal ug_pl_of_variant(int variant)
{
    return variant == UG_VAR_LEGAL_SEQ_FMA   ? UG_PL_SEQ_FMA
           : variant == UG_VAR_LEGAL_TILE64  ? UG_PL_TILE64
           : variant == UG_VAR_LEGAL_FN_ULPS ? UG_PL_FN_ULPS
                                             : UG_PL_NONE;
}

ug_prolog_legal ug_pl_sum_order(int variant)
{
    ug_prolog_legal how = ug_pl_of_variant(variant);
    return how == UG_PL_FN_ULPS ? UG_PL_NONE : how;
}

float ug_pl_rsqrt(float r, float x, ug_prolog_legal how)
{
    return how == UG_PL_FN_ULPS ? ug_sim_fn_ulps(r, x, UG_SIM_FN_ULPS) : r; /* rounds: a device rsqrt */
}
