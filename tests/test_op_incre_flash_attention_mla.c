/* test_op_incre_flash_attention_mla.c — checks of incre_flash_attention_mla beyond the
 * generic plan test:
 *  - the builder's paged cache: every live logical block maps to a distinct physical
 *    block in range, handed out shuffled from the first (live + 1) blocks, the cache holding
 *    batch*MB + 1 blocks (the declared num_blocks), unused entries -1;
 *  - the oracle agrees with an independent long-double evaluation that walks the block
 *    table itself (ragged lengths, partial last blocks, n_kv 2), at the production latent
 *    dim 512 (scale 576^-1/2) and at the reference suite's 128 (scale 192^-1/2);
 *  - the mutant that hard-codes the production scale passes at 512 and fails at 128;
 *  - constant cache values give o = that constant, in the oracle and the sim kernel;
 *  - the partial-block mutant is caught on a context that is not a block multiple;
 *  - bad params are refused with a message naming them. */
#include "gl_attn_check.h"

#define N01 "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"
#define SPEC(params, ckv)                                                                                               \
    "{\"v\":1,\"op\":\"incre_flash_attention_mla\",\"dtype\":\"bf16\",\"seed\":21,\"plan\":\"test\",\"params\":" params \
    ",\"dist\":{\"q_nope\":" N01 ",\"q_rope\":" N01 ",\"c_kv\":" ckv ",\"k_rope\":" N01 "}}"

static const char *SPEC_RAGGED =
    SPEC("{\"batch\":4,\"heads\":4,\"n_kv\":2,\"block_size\":8,\"ctx\":45,\"lens\":\"ragged\"}", N01);
static const char *SPEC_RAGGED_128 =
    SPEC("{\"batch\":4,\"heads\":4,\"n_kv\":2,\"block_size\":8,\"ctx\":45,\"lens\":\"ragged\",\"kv_lora\":128}", N01);

static void test_block_table(const ug_case *c)
{
    const ug_tensor *tt = ug_case_input(c, "block_table"), *lens = ug_case_input(c, "seq_lens");
    long nb = (long)ug_case_input(c, "c_kv")->shape[0], bs = 8, maxb = (long)tt->shape[1], live = 0, in_order = 1,
         top = -1;
    unsigned char used[64] = {0};
    CHECK(maxb == 6 && nb < 64, "table has %ld entries per sequence (want 6), %ld blocks", maxb, nb);
    for (long b = 0; b < 4; b++) {
        long len = (long)ug_tload(lens, (size_t)b);
        CHECK(len >= 1 && len <= 45, "seq_lens[%ld] = %ld", b, len);
        for (long i = 0; i < maxb; i++) {
            long blk = (long)ug_tload(tt, (size_t)(b * maxb + i));
            if (i * bs >= len) {
                CHECK(blk == -1, "unused entry [%ld][%ld] = %ld, want -1", b, i, blk);
                continue;
            }
            CHECK(blk >= 0 && blk < nb && !used[blk], "entry [%ld][%ld] = %ld reused or out of range", b, i, blk);
            top = blk > top ? blk : top;
            if (blk >= 0 && blk < nb) used[blk] = 1;
            in_order &= blk == live++;
        }
    }
    CHECK(nb == 4 * 6 + 1, "%ld physical blocks: want batch*MB + 1 = 25", nb);
    CHECK(top <= live && nb > live, "blocks in use reach %ld for %ld live ones: want them among the first live + 1",
          top, live);
    CHECK(!in_order, "blocks were handed out in order: the cache is not shuffled");
}

/* Independent reference: walks the block table for row (b,h) and evaluates in long double,
 * with latent dim lora (rope 64), scale (lora + 64)^-1/2. */
static double reference(const ug_case *c, size_t flat, size_t lora)
{
    const ug_tensor *qn = ug_case_input(c, "q_nope"), *qr = ug_case_input(c, "q_rope");
    const ug_tensor *ck = ug_case_input(c, "c_kv"), *kr = ug_case_input(c, "k_rope");
    const ug_tensor *tt = ug_case_input(c, "block_table"), *lens = ug_case_input(c, "seq_lens");
    size_t row = flat / lora, col = flat % lora, b = row / 4, h = row % 4, g = h / 2, maxb = (size_t)tt->shape[1];
    size_t n = (size_t)ug_tload(lens, b);
    static long double s[64];
    static double v[64 * 512];
    long double scale = 1.0L / sqrtl((long double)(lora + 64));
    for (size_t j = 0; j < n; j++) {
        size_t slot = ((size_t)ug_tload(tt, b * maxb + j / 8) * 8 + j % 8) * 2 + g;
        long double acc = 0;
        for (size_t e = 0; e < lora; e++) acc += (long double)qn->values[row * lora + e] * ck->values[slot * lora + e];
        for (size_t e = 0; e < 64; e++) acc += (long double)qr->values[row * 64 + e] * kr->values[slot * 64 + e];
        s[j] = acc * scale;
        for (size_t e = 0; e < lora; e++) v[j * lora + e] = ck->values[slot * lora + e];
    }
    return (double)gl_ref_softmax_pv(s, n, v, lora, col);
}

static void test_ragged_paged(const char *spec, size_t lora)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "ragged case (latent dim %zu) did not run: %s", lora, r.message);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "ragged case (latent dim %zu): %s %s", lora,
          ug_outcome_name(r.outcome), r.message);
    test_block_table(&d.c);
    double worst = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++)
        worst = fmax(worst, fabs(reference(&d.c, d.oracle.sel.idx[0][k], lora) - d.oracle.gstar[0][k]));
    CHECK(d.oracle.sel.n[0] == 4 * 4 * lora, "checked %zu elements", d.oracle.sel.n[0]);
    CHECK(worst < 1e-12, "latent dim %zu: oracle and the long-double paged reference differ by %g", lora, worst);
    ug_exec_detail_free(&d);
}

/* The scale follows the latent dim: a kernel that keeps the production 576^-1/2 passes at
 * kv_lora 512 and fails at 128 (where the scale is 192^-1/2, sqrt(3) times larger). */
static void test_scale_follows_latent_dim(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC_RAGGED, "mut_scale_576", &r, &d) == 0 && r.outcome == UG_OUT_PASS,
          "mut_scale_576 at the production latent dim: %s %s", ug_outcome_name(r.outcome), r.message);
    ug_exec_detail_free(&d);
    CHECK(opc_run(SPEC_RAGGED_128, "mut_scale_576", &r, &d) == 0 && r.outcome == UG_OUT_FAIL,
          "mut_scale_576 at latent dim 128 went unnoticed: %s", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

static void test_constant_cache(void)
{
    ug_result r;
    ug_exec_detail d;
    const char *spec = SPEC("{\"batch\":2,\"heads\":2,\"n_kv\":1,\"block_size\":16,\"ctx\":150}",
                            "{\"kind\":\"const\",\"value\":0.5}");
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "constant case did not run: %s", r.message);
    size_t off_oracle = 0, off_kernel = 0;
    for (size_t k = 0; k < d.oracle.sel.n[0]; k++) {
        off_oracle += d.oracle.g[0][k] != 0.5 || fabs(d.oracle.gstar[0][k] - 0.5) > 1e-12;
        off_kernel += d.a[0][k] != 0.5; /* fp32 scaling by 0.5 is exact: the kernel gets 0.5 too */
    }
    CHECK(off_oracle == 0 && off_kernel == 0, "constant values: %zu oracle, %zu kernel elements off 0.5", off_oracle,
          off_kernel);
    ug_exec_detail_free(&d);
}

static void test_partial_block_mutant(void)
{
    ug_result r;
    ug_exec_detail d;
    const char *spec = SPEC("{\"batch\":1,\"heads\":2,\"n_kv\":1,\"block_size\":16,\"ctx\":20}", N01);
    CHECK(opc_run(spec, "mut_drop_partial_block", &r, &d) == 0 && r.outcome == UG_OUT_FAIL,
          "dropping 4 of 20 keys went unnoticed: %s", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
    spec = SPEC("{\"batch\":1,\"heads\":2,\"n_kv\":1,\"block_size\":16,\"ctx\":32}", N01);
    CHECK(opc_run(spec, "mut_drop_partial_block", &r, &d) == 0 && r.outcome == UG_OUT_PASS,
          "a block-multiple context has no partial block, yet: %s", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"n_kv\":3,\"ctx\":4}", "n_kv"},
        {"{\"heads\":3,\"n_kv\":2,\"ctx\":4}", "heads"},
        {"{\"block_size\":0,\"ctx\":4}", "block_size"},
        {"{\"ctx\":\"long\"}", "ctx"},
        {"{\"ctx\":4,\"kv_lora\":0}", "kv_lora"},
        {"{\"ctx\":4,\"kv_lora\":2048}", "kv_lora"},
        {"{\"ctx\":4,\"rope\":32}", "rope"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("%s", N01), bad);
}

int main(void)
{
    test_ragged_paged(SPEC_RAGGED, 512);
    test_ragged_paged(SPEC_RAGGED_128, 128);
    test_scale_follows_latent_dim();
    test_constant_cache();
    test_partial_block_mutant();
    test_bad_params();
    return check_done();
}
