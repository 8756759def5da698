/* sparse_attention_antiquant.c — the declaration's C side for sparse_attention_antiquant
 * (DeepSeek-V3.2 sparse MLA attention, "store 8, compute 16"): the same attention as
 * sparse_flash_attention_quant over a cache whose position is one packed int8 row of
 * kv_lora + 2·rope + 4·groups = 656 bytes: 512 int8 codes, 64 bf16 rope keys (128 bytes),
 * 4 fp32 group scales (16 bytes), dequantised to bf16 before bf16 x bf16 -> fp32 matmuls.
 *
 * Facts from hicann/pypto-gym tests/ops/deepseek_v32_exp/test_sparse_attention_antiquant.py:
 * the row layout (codes, rope viewed as bytes, scales viewed as bytes), one fp32 scale per
 * 128 codes of a position (per token and group), the dequantised values cast to bf16,
 * block 128, the count rule, scale 576^-1/2, compare 1e-4 / 5e-3. Params, builder and
 * oracle loop are sparse_quant_attn.c's (shared with sparse_flash_attention_quant); this
 * file packs the drawn components into the cache row (build) and decodes a row back
 * (the oracle reads the bytes the kernel reads).
 * Primary standard certified, as sparse_flash_attention_quant's and for the
 * same reason: the pypto rule fails a kernel that casts P/l to bf16 before P.V as the
 * reference's kernel and test golden do (a kernel built to that golden on the reference
 * plan's light case 45ef48947cd8256f: 23386 of 524288 outside, 2621 allowed), which the
 * contract allows and certified's device bound covers. */
#include <stdint.h>
#include <string.h>

#include "oracles/attention/attn_rows.h"
#include "oracles/attention/sparse_quant_attn.h"
#include "oracles/oracle.h"

static int check(const ug_params *P, char *err, size_t errlen)
{
    return ug_sqa_check(P, "sparse_attention_antiquant", err, errlen);
}

/* The shared lists, then kv_cache: each slot's bytes are its codes, its rope keys' bf16
 * bytes and its scales' fp32 bytes, copied from the drawn components (little-endian). */
static int build(ug_case *c, char *err, size_t errlen)
{
    if (ug_sqa_build(c, err, errlen)) return -1;
    ug_sqa_params p;
    ug_sqa_read_params(&c->params, &p);
    const ug_tensor *nope = ug_case_input(c, "kv_nope"), *rope = ug_case_input(c, "kv_rope");
    const ug_tensor *sc = ug_case_input(c, "kv_scales");
    ug_tensor *kc = ug_case_input_mut(c, "kv_cache");
    size_t lora = (size_t)p.lora, rb = 2 * (size_t)p.rope, sb = 4 * (size_t)p.groups, w = lora + rb + sb;
    for (size_t s = 0; s < (size_t)(p.num_blocks * p.bs); s++) {
        unsigned char *row = (unsigned char *)kc->data + s * w;
        memcpy(row, (const unsigned char *)nope->data + s * lora, lora);
        memcpy(row + lora, (const unsigned char *)rope->data + s * rb, rb);
        memcpy(row + lora + rb, (const unsigned char *)sc->data + s * sb, sb);
    }
    return 0;
}

/* Little-endian unsigned integer of n bytes at b. */
static uint32_t le(const unsigned char *b, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

/* Slot `slot`'s key from its packed row: dequantised codes, then the rope keys. */
static void decode(const ug_case *c, const ug_sqa_params *p, size_t slot, double *row)
{
    size_t lora = (size_t)p->lora, rope = (size_t)p->rope, w = lora + 2 * rope + 4 * (size_t)p->groups;
    const unsigned char *b = (const unsigned char *)ug_case_input(c, "kv_cache")->data + slot * w;
    double sc[16];
    for (size_t g = 0; g < (size_t)p->groups; g++)
        sc[g] = ug_dtype_decode(UG_DT_FP32, le(b + lora + 2 * rope + 4 * g, 4));
    for (size_t d = 0; d < lora; d++) row[d] = ug_sqa_dequant((double)(int8_t)b[d], sc[d / (size_t)p->group]);
    for (size_t d = 0; d < rope; d++) row[lora + d] = ug_dtype_decode(UG_DT_BF16, le(b + lora + 2 * d, 2));
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel) { return ug_sqa_oracle(c, ar, sel, decode); }

static int reference_golden(const ug_case *c, const ug_selection *sel, double **out, char *err, size_t errlen)
{
    return ug_sqa_reference_golden(c, sel, out, decode, err, errlen);
}

/* The shared scratch; the packed cache is a declared tensor. */
static double scratch(const ug_params *P) { return ug_sqa_scratch(P, 0); }

const ug_op_def ug_opdef_sparse_attention_antiquant = {.decl.check = check,
                                                       .build = build,
                                                       .oracle = oracle,
                                                       .geometry = ug_gl_attn_geometry,
                                                       .scratch = scratch,
                                                       .reference_golden = reference_golden};
