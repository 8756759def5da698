/* test_op_sparse_flash_attention_quant.c — checks of sparse_flash_attention_quant beyond
 * the generic plan test (helpers shared with the antiquant op in sqa_check.h):
 *  - the oracle's fast dequantisation equals ug_dtype_round(bf16, ug_dtype_round(fp32,
 *    code·scale)) on codes x scales over every binade, subnormal, overflow and NaN;
 *  - known values: a zero-scale cache gives o = 0 exactly; top-k 1 gives the key's
 *    dequantised value row exactly (oracle and kernel);
 *  - the builder's lists (count rule, -1 padding, distinct, 0 past the count, table);
 *  - differential: oracle vs an independent long-double evaluation through the block table
 *    on a ragged MTP case with scattered padding and block-edge positions, kernel PASS;
 *  - mutants visible only where they should be; the kernel refuses an index outside the
 *    context and a table entry past the cache; bad params are refused naming them. */
#include <math.h>

#include "oracles/attention/sparse_quant_attn.h"
#include "sqa_check.h"

#define OP "sparse_flash_attention_quant"
#define U1 "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}"
#define CODES "{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}"
#define SC "{\"kind\":\"uniform\",\"lo\":0.004,\"hi\":0.02}"
#define SPEC_D(params, scale)                                                                                          \
    "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":11,\"plan\":\"test\",\"params\":" params                   \
    ",\"dist\":{\"q_nope\":" U1 ",\"q_rope\":" U1 ",\"kv_i8\":" CODES ",\"kv_scale\":" scale ",\"k_rope\":" U1 "}}"
#define SPEC(params) SPEC_D(params, SC)

/* The test's own decode of a slot: bf16(fp32(code*scale)) per 128-group, then rope. */
static void decode(const ug_case *c, size_t slot, double *row)
{
    const ug_tensor *k = ug_case_input(c, "kv_i8"), *s = ug_case_input(c, "kv_scale"), *r = ug_case_input(c, "k_rope");
    for (size_t d = 0; d < 512; d++)
        row[d] = ug_dtype_round(UG_DT_BF16,
                                ug_dtype_round(UG_DT_FP32, k->values[slot * 512 + d] * s->values[slot * 4 + d / 128]));
    for (size_t d = 0; d < 64; d++) row[512 + d] = r->values[slot * 64 + d];
}

static void test_dequant(void)
{
    size_t off = 0, n = 0;
    for (int code = -128; code <= 127; code++)
        for (int e = -150; e <= 128; e++)
            for (int m = 0; m < 16; m++) {
                double scale = ldexp(1.0 + m / 16.0 + (m % 3) * 0x1p-23, e); /* fp32 values, odd low bits too */
                scale = ug_dtype_round(UG_DT_FP32, scale);
                double want = ug_dtype_round(UG_DT_BF16, ug_dtype_round(UG_DT_FP32, code * scale));
                double got = ug_sqa_dequant(code, scale);
                off += !(got == want || (isnan(got) && isnan(want)));
                n++;
            }
    off += !isnan(ug_sqa_dequant(0, INFINITY)) + !isnan(ug_sqa_dequant(5, NAN)) +
           (ug_sqa_dequant(-3, INFINITY) != -INFINITY);
    CHECK(off == 0, "fast dequantisation differs from ug_dtype_round on %zu of %zu pairs", off, n);
}

static void test_zero_scale(void)
{
    ug_exec_detail d;
    opc_sim_passes(SPEC_D("{\"batch\":2,\"heads\":2,\"ctx\":100,\"topk\":40,\"pad\":\"scattered\"}",
                          "{\"kind\":\"const\",\"value\":0}"),
                   "zero scales", NULL, &d);
    size_t nonzero = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) nonzero += d.oracle.g[0][k] != 0 || d.a[0][k] != 0;
    CHECK(nonzero == 0, "zero scales: %zu nonzero elements", nonzero);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"ctx\":10,\"topk\":0}", "topk"},
        {"{\"ctx\":10,\"heads\":0}", "heads"},
        {"{\"batch\":2,\"ctx\":300,\"num_blocks\":5}", "num_blocks"},
        {"{\"batch\":2,\"ctx\":300,\"context_lens\":\"300,129\",\"num_blocks\":3}", "num_blocks"},
        {"{\"batch\":2,\"ctx\":100,\"context_lens\":\"100,101\"}", "context_lens"},
        {"{\"ctx\":3,\"q_per_step\":4}", "q_per_step"},
        {"{\"ctx\":10,\"block_size\":0}", "block_size"},
        {"{\"ctx\":10,\"kv_lora\":256}", "kv_lora"},
        {"{\"ctx\":10,\"scale\":0}", "scale"},
        {"{\"ctx\":10,\"scale\":5e-324}", "scale"}, /* positive in double, 0 in fp32 */
        {"{\"ctx\":10,\"pad\":\"head\"}", "pad"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("%s"), bad);
}

int main(void)
{
    test_dequant();
    test_zero_scale();
    sqa_single_key(SPEC("{\"batch\":3,\"q_per_step\":2,\"heads\":3,\"ctx\":50,\"block_size\":16,\"topk\":1}"), decode,
                   3, 2, 16);
    sqa_differential(SPEC("{\"batch\":3,\"q_per_step\":3,\"heads\":2,\"ctx\":300,\"lens\":\"ragged\",\"block_size\":"
                          "16,\"topk\":150,\"pad\":\"scattered\",\"pick\":\"edges\",\"scale\":0.1}"),
                     decode, 3, 2, 3, 150, 16, 3 * 19 + 1, (double)(float)0.1);
    {
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(SPEC("{\"batch\":4,\"heads\":1,\"ctx\":200,\"topk\":300,\"pad\":\"tail\"}"), "sim", &r, &d) == 0,
              "did not run");
        sqa_check_lists(&d.c, 4, 1, 300, 128, 4 * 2 + 1, 1);
        ug_exec_detail_free(&d);
    }
    const char *padded = SPEC("{\"batch\":2,\"heads\":2,\"ctx\":100,\"topk\":40,\"pad\":\"tail\"}");
    const char *unpadded = SPEC("{\"batch\":2,\"heads\":2,\"ctx\":100,\"topk\":40}");
    sqa_expect(padded, "mut_pad_as_zero", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_pad_as_zero", UG_OUT_PASS);
    sqa_expect(unpadded, "mut_local_max", UG_OUT_PASS); /* one 128-key tile: nothing to rescale */
    sqa_expect(SPEC("{\"batch\":2,\"heads\":2,\"ctx\":400,\"topk\":300}"), "mut_local_max", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_one_scale", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_rope_dequant", UG_OUT_FAIL);
    sqa_expect(unpadded, "mut_scale_512", UG_OUT_FAIL);
    /* row 0 of batch 2 x ctx 100 sees positions 0..99; table row 0 has one block (of 3) */
    sqa_tampered(unpadded, OP, "topk_indices", 5, 100);
    sqa_tampered(unpadded, OP, "topk_indices", 5, -2);
    sqa_tampered(unpadded, OP, "block_table", 0, 3);
    sqa_tampered(unpadded, OP, "seq_lens", 1, 129);
    test_bad_params();
    return check_done();
}
