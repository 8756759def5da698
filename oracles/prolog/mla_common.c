/* mla_common.c — builder and exact pieces shared by the DeepSeek MLA prologs (see
 * mla_common.h): slot_mapping, the cos/sin tables, the RMSNorm statistic and RoPE. */
#include "oracles/prolog/mla_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"

#define MLA_RNG_SLOTS 0x736c6f74u /* "slot" */
#define MLA_RNG_POS 0x706f7321u   /* "pos!" */
#define MLA_ROPE_BASE 10000.0
#define MLA_MAX_POS 8192u

static void store_run(ug_tensor *slot, long T, long start)
{
    for (long t = 0; t < T; t++) ug_dtype_store(UG_DT_INT32, slot->data, (size_t)t, (double)(start + t));
}

/* "edges": start on the last slot of a seeded block k (1 <= k, k*bs - 1 + T <= S), else 0. */
static long edge_start(long T, long S, long bs, uint32_t w)
{
    long kmax = (S - T + 1) / bs; /* k*bs - 1 <= S - T */
    return kmax >= 1 ? (1 + (long)(w % (uint32_t)kmax)) * bs - 1 : 0;
}

int ug_mla_fill_slots(uint64_t seed, long T, long S, long bs, const char *mode, ug_tensor *slot)
{
    uint32_t w[4];
    ug_rng_words(seed, MLA_RNG_SLOTS, 0, 1, w);
    if (!strcmp(mode, "append")) {
        store_run(slot, T, (long)(w[0] % (uint32_t)(S - T + 1)));
        return 0;
    }
    if (!strcmp(mode, "edges")) {
        store_run(slot, T, edge_start(T, S, bs, w[0]));
        return 0;
    }
    long *perm = malloc((size_t)S * sizeof *perm);
    if (!perm) return -1;
    for (long i = 0; i < S; i++) perm[i] = i;
    for (long t = 0; t < T; t++) { /* partial Fisher-Yates */
        ug_rng_words(seed, MLA_RNG_SLOTS, (uint64_t)t, 0, w);
        long k = t + (long)(w[0] % (uint32_t)(S - t)), tmp = perm[t];
        perm[t] = perm[k];
        perm[k] = tmp;
        int pad = !strcmp(mode, "padded") && t % 4 == 3;
        ug_dtype_store(UG_DT_INT32, slot->data, (size_t)t, pad ? -1.0 : (double)perm[t]);
    }
    free(perm);
    return 0;
}

void ug_mla_fill_rope(uint64_t seed, long T, long dr, ug_tensor *cs, ug_tensor *sn)
{
    long half = dr / 2;
    for (long t = 0; t < T; t++) {
        uint32_t w[4];
        ug_rng_words(seed, MLA_RNG_POS, (uint64_t)t, 0, w);
        double pos = (double)(w[0] % MLA_MAX_POS);
        for (long i = 0; i < dr; i++) {
            double th = pos * pow(MLA_ROPE_BASE, -2.0 * (double)(i % half) / (double)dr);
            ug_dtype_store(UG_DT_BF16, cs->data, (size_t)(t * dr + i), cos(th)); /* rounds: bf16 input */
            ug_dtype_store(UG_DT_BF16, sn->data, (size_t)(t * dr + i), sin(th)); /* rounds: bf16 input */
        }
    }
}

ug_num ug_mla_rstd(ug_ar *ar, const ug_num *v, size_t n, double eps, ug_num *sq)
{
    for (size_t i = 0; i < n; i++) sq[i] = ug_mul(ar, v[i], v[i]);
    ug_num ms = ug_div(ar, ug_sum(ar, sq, n), ug_c(ar, (double)n));
    return ug_rsqrt(ar, ug_add(ar, ms, ug_c(ar, eps)));
}

ug_num ug_mla_rope_at(ug_ar *ar, const ug_num *v, const double *cs, const double *sn, size_t d, size_t i, int inter)
{
    size_t half = d / 2, p = i % half, x0 = inter ? 2 * p : p, x1 = inter ? 2 * p + 1 : p + half;
    size_t own = i < half ? x0 : x1, other = i < half ? x1 : x0;
    ug_num a = ug_mul(ar, v[own], ug_c(ar, cs[i])), b = ug_mul(ar, v[other], ug_c(ar, sn[i]));
    return i < half ? ug_sub(ar, a, b) : ug_add(ar, a, b);
}
