/* test_op_sparse_attention_antiquant.c — checks of sparse_attention_antiquant beyond the
 * generic plan test (helpers shared with sparse_flash_attention_quant in sqa_check.h):
 *  - the packed cache: every row's bytes are its codes, its rope keys' bf16 bytes and its
 *    scales' fp32 bytes, little-endian, 656 per position;
 *  - known values: top-k 1 gives the key's dequantised value row exactly, decoded by the
 *    test from the drawn components (not from the packed bytes the oracle reads);
 *  - differential: oracle vs an independent long-double evaluation through the block table
 *    on a ragged MTP case with scattered padding, kernel PASS;
 *  - mutants visible only where they should be; the kernel refuses an index outside the
 *    context and a table entry past the cache; bad params are refused naming them. */
#include <math.h>

#include "sqa_check.h"

#define OP "sparse_attention_antiquant"
#define U1 "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}"
#define CODES "{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}"
#define SC "{\"kind\":\"uniform\",\"lo\":0.004,\"hi\":0.02}"
#define SPEC(params)                                                                                                   \
    "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":12,\"plan\":\"test\",\"params\":" params                   \
    ",\"dist\":{\"q_nope\":" U1 ",\"q_rope\":" U1 ",\"kv_nope\":" CODES ",\"kv_scales\":" SC ",\"kv_rope\":" U1 "}}"

/* The test's decode of a slot from the drawn components: bf16(fp32(code*scale)), rope. */
static void decode(const ug_case *c, size_t slot, double *row)
{
    const ug_tensor *k = ug_case_input(c, "kv_nope"), *s = ug_case_input(c, "kv_scales");
    const ug_tensor *r = ug_case_input(c, "kv_rope");
    for (size_t d = 0; d < 512; d++)
        row[d] = ug_dtype_round(UG_DT_BF16,
                                ug_dtype_round(UG_DT_FP32, k->values[slot * 512 + d] * s->values[slot * 4 + d / 128]));
    for (size_t d = 0; d < 64; d++) row[512 + d] = r->values[slot * 64 + d];
}

static void test_packing(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("{\"batch\":2,\"heads\":1,\"ctx\":40,\"block_size\":16,\"topk\":8}"), "sim", &r, &d) == 0,
          "did not run: %s", r.message);
    const ug_tensor *kc = ug_case_input(&d.c, "kv_cache"), *k = ug_case_input(&d.c, "kv_nope");
    const ug_tensor *s = ug_case_input(&d.c, "kv_scales"), *ro = ug_case_input(&d.c, "kv_rope");
    size_t slots = (size_t)(kc->shape[0] * kc->shape[1]), off = 0;
    CHECK(kc->shape[2] == 656, "kv_cache rows are %lld bytes", (long long)kc->shape[2]);
    for (size_t i = 0; i < slots; i++) {
        const unsigned char *b = (const unsigned char *)kc->data + i * 656;
        for (size_t e = 0; e < 512; e++) off += (double)(signed char)b[e] != k->values[i * 512 + e];
        for (size_t e = 0; e < 64; e++)
            off += ug_dtype_decode(UG_DT_BF16, (uint32_t)b[512 + 2 * e] | (uint32_t)b[513 + 2 * e] << 8) !=
                   ro->values[i * 64 + e];
        for (size_t g = 0; g < 4; g++) {
            const unsigned char *p = b + 640 + 4 * g;
            uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            off += ug_dtype_decode(UG_DT_FP32, bits) != s->values[i * 4 + g];
        }
    }
    CHECK(r.outcome == UG_OUT_PASS && off == 0, "packed rows: %zu bytes groups differ from the components (%s)", off,
          ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"ctx\":10,\"topk\":0}", "topk"},
        {"{\"batch\":2,\"ctx\":300,\"num_blocks\":5}", "num_blocks"},
        {"{\"batch\":2,\"ctx\":100,\"context_lens\":\"100,101\"}", "context_lens"},
        {"{\"ctx\":10,\"rope\":128}", "rope"},
        {"{\"ctx\":10,\"scale\":-1}", "scale"},
        {"{\"ctx\":10,\"scale\":5e-324}", "scale"}, /* positive in double, 0 in fp32 */
        {"{\"ctx\":10,\"scale\":1e-46}", "scale"},  /* below 2^-149 */
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("%s"), bad);
}

int main(void)
{
    test_packing();
    sqa_single_key(SPEC("{\"batch\":3,\"q_per_step\":2,\"heads\":3,\"ctx\":50,\"block_size\":16,\"topk\":1}"), decode,
                   3, 2, 16);
    sqa_differential(SPEC("{\"batch\":3,\"q_per_step\":2,\"heads\":2,\"ctx\":300,\"lens\":\"ragged\",\"block_size\":"
                          "64,\"topk\":140,\"pad\":\"scattered\",\"pick\":\"edges\"}"),
                     decode, 3, 2, 2, 140, 64, 3 * 5 + 1, (double)(float)(1.0 / 24)); /* the fp32 default */
    const char *padded = SPEC("{\"batch\":2,\"heads\":2,\"ctx\":100,\"topk\":40,\"pad\":\"tail\"}");
    const char *unpadded = SPEC("{\"batch\":2,\"heads\":2,\"ctx\":100,\"topk\":40}");
    sqa_expect(padded, "mut_pad_as_zero", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_pad_as_zero", UG_OUT_PASS);
    sqa_expect(unpadded, "mut_local_max", UG_OUT_PASS);
    sqa_expect(SPEC("{\"batch\":2,\"heads\":2,\"ctx\":400,\"topk\":300}"), "mut_local_max", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_scale_offset", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_scale_512", UG_OUT_FAIL);
    sqa_tampered(unpadded, OP, "topk_indices", 5, 100);
    sqa_tampered(unpadded, OP, "block_table", 0, 3);
    test_bad_params();
    return check_done();
}
