/* test_op_lightning_indexer_quant.c — lightning_indexer_quant beyond the generic plan test:
 *  - the set rule and the padding: with every score 0 (all-zero queries) any n distinct
 *    causal positions are a legal top-n, in any order; a duplicate, a position past the
 *    row's causal end, a -1 inside the first n or an id in the padding fail;
 *  - a context shorter than k: every causal position once, then -1 (exact);
 *  - differential: the oracle's emitted rows against a naive long-double evaluation that
 *    walks the block table itself (every emitted id within the naive top-n up to the
 *    tie bound), and the kernel's row passes;
 *  - a far swap (the worst position for one of the best) fails;
 *  - the MTP mutant fails a two-token step, the sim passes it;
 *  - bad params refused with a message naming the param. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_check.h"

#define SPEC(seed, params, dist)                                                                                       \
    "{\"v\":1,\"op\":\"lightning_indexer_quant\",\"dtype\":\"fp16\",\"seed\":" seed ",\"params\":" params              \
    ",\"dist\":" dist "}"
#define DIST(qlo, qhi)                                                                                                 \
    "{\"query\":{\"kind\":\"randint\",\"lo\":" qlo ",\"hi\":" qhi "},\"q_scale\":{\"kind\":\"uniform\",\"lo\":0.005,"  \
    "\"hi\":0.05},\"key_cache\":{\"kind\":\"randint\",\"lo\":-127,\"hi\":127},\"k_scale\":{\"kind\":\"uniform\","      \
    "\"lo\":0.005,\"hi\":0.05},\"weights\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"
#define REF DIST("-127", "127")
#define ZEROQ DIST("0", "0")

static int get_id(const ug_case *c, size_t i) { return (int)ug_dtype_load(UG_DT_INT32, c->out[0].data, i); }
static void set_id(ug_case *c, size_t i, int id) { ug_dtype_store(UG_DT_INT32, c->out[0].data, i, (double)id); }

/* One sequence of 40 tokens, top-8, all-zero queries: every score is 0. */
static void test_set_rule(void)
{
    const char *spec =
        SPEC("1", "{\"actual_seqs\":\"40\",\"heads\":2,\"head_dim\":8,\"topk\":8,\"block_size\":16}", ZEROQ);
    ug_exec_detail d;
    opc_sim_passes(spec, "all-tied", NULL, &d);
    if (!d.have_case) return;
    for (int j = 0; j < 8; j++)
        CHECK(get_id(&d.c, (size_t)j) == j, "tie order: id %d at %d", get_id(&d.c, (size_t)j), j);
    for (int j = 0; j < 8; j++) set_id(&d.c, (size_t)j, 39 - 3 * j); /* other positions, another order */
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "another all-tied set failed");
    set_id(&d.c, 1, 39);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a duplicate id passed");
    set_id(&d.c, 1, 40);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a position past the context passed");
    set_id(&d.c, 1, -1);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "a -1 inside the first n passed");
    ug_exec_detail_free(&d);
}

/* Context 3 < top-5: positions {0,1,2} in any order, then -1, -1. */
static void test_short_context(void)
{
    const char *spec = SPEC("2", "{\"actual_seqs\":\"3\",\"heads\":4,\"head_dim\":16,\"topk\":5}", REF);
    ug_exec_detail d;
    opc_sim_passes(spec, "short context", NULL, &d);
    if (!d.have_case) return;
    int seen = 0;
    for (int j = 0; j < 3; j++) seen |= 1 << get_id(&d.c, (size_t)j);
    CHECK(seen == 7 && get_id(&d.c, 3) == -1 && get_id(&d.c, 4) == -1, "row %d %d %d %d %d", get_id(&d.c, 0),
          get_id(&d.c, 1), get_id(&d.c, 2), get_id(&d.c, 3), get_id(&d.c, 4));
    set_id(&d.c, 0, 2), set_id(&d.c, 1, 0), set_id(&d.c, 2, 1);
    CHECK(opc_rejudge(&d) == UG_OUT_PASS, "the short row in another order failed");
    set_id(&d.c, 3, 1);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "an id in the padding passed");
    set_id(&d.c, 3, -1), set_id(&d.c, 2, -1), set_id(&d.c, 4, 1);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "padding moved inside the row passed");
    ug_exec_detail_free(&d);
}

/* Naive scores of row r (sequence b, causal end E) in long double, through the table. */
static void naive_row(const ug_exec_detail *d, long r, long b, long E, long H, long Dh, long bs, long mb,
                      long double *s)
{
    for (long p = 0; p < E; p++) {
        long blk = (long)opc_in(d, "block_tables", (size_t)(b * mb + p / bs)), slot = blk * bs + p % bs;
        long double acc = 0;
        for (long h = 0; h < H; h++) {
            long dot = 0;
            for (long k = 0; k < Dh; k++)
                dot += (long)opc_in(d, "query", (size_t)((r * H + h) * Dh + k)) *
                       (long)opc_in(d, "key_cache", (size_t)(slot * Dh + k));
            acc += (long double)opc_in(d, "weights", (size_t)(r * H + h)) * opc_in(d, "q_scale", (size_t)(r * H + h)) *
                   (dot > 0 ? dot : 0);
        }
        s[p] = acc * opc_in(d, "k_scale", (size_t)slot);
    }
}

/* Two sequences (40, 70 tokens), two-token steps, 3 heads of 8, top-16, block 16. */
static void test_differential(void)
{
    const char *spec = SPEC("3",
                            "{\"actual_seqs\":\"40,70\",\"q_per_step\":2,\"heads\":3,\"head_dim\":8,\"topk\":16,"
                            "\"block_size\":16}",
                            REF);
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential", NULL, &d)) return;
    long lens[2] = {40, 70}, mb = 5, bad = 0;
    long double s[70];
    for (long row = 0; row < 4; row++) {
        long b = row / 2, E = lens[b] - 2 + 1 + row % 2;
        naive_row(&d, row, b, E, 3, 8, 16, mb, s);
        long double sorted[70];
        memcpy(sorted, s, sizeof sorted);
        for (long i = 0; i < E; i++) /* descending insertion sort */
            for (long j = i; j > 0 && sorted[j] > sorted[j - 1]; j--) {
                long double t = sorted[j];
                sorted[j] = sorted[j - 1], sorted[j - 1] = t;
            }
        long double kth = sorted[15], tol = 1e-2L * (fabsl(sorted[0]) + 1e-3L); /* far above the double error */
        for (long j = 0; j < 16; j++) {
            int id = (int)d.oracle.g[0][row * 16 + j];
            bad += id < 0 || id >= E || s[id] < kth - tol;
        }
    }
    CHECK(bad == 0, "%ld emitted ids outside the naive top-16", bad);
    /* a far swap: the kernel's best position of row 3 replaced by its worst causal position */
    long worst = 0, E = 70;
    naive_row(&d, 3, 1, E, 3, 8, 16, mb, s);
    for (long p = 1; p < E; p++) worst = s[p] < s[worst] ? p : worst;
    set_id(&d.c, 3 * 16, (int)worst);
    CHECK(opc_rejudge(&d) == UG_OUT_FAIL, "the worst position in place of the best passed");
    ug_exec_detail_free(&d);
}

static void test_mtp_mutant(void)
{
    const char *spec =
        SPEC("4", "{\"actual_seqs\":\"10\",\"q_per_step\":2,\"heads\":2,\"head_dim\":8,\"topk\":16}", REF);
    ug_exec_detail d;
    opc_sim_passes(spec, "mtp sim", NULL, &d);
    if (d.have_case)
        CHECK(get_id(&d.c, 8) != -1 && get_id(&d.c, 9) == -1 && get_id(&d.c, 16 + 9) != -1 &&
                  get_id(&d.c, 16 + 10) == -1,
              "row 0 must list 9 positions, row 1 ten");
    ug_exec_detail_free(&d);
    opc_expect_mutants_fail(spec, (const char *const[]){"mut_mtp_causal", NULL});
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"actual_seqs\":\"300,200\",\"num_blocks\":3}", "num_blocks"},
        {"{\"actual_seqs\":\"300\",\"max_blocks_per_seq\":2}", "actual_seqs"},
        {"{\"actual_seqs\":\"3,1\",\"q_per_step\":2}", "actual_seqs"},
        {"{\"actual_seqs\":\"16\",\"topk\":0}", "topk"},
        {"{\"actual_seqs\":\"16\",\"heads\":0}", "heads"},
        {"{\"actual_seqs\":\"16\",\"heads\":129}", "heads"},
        {"{\"actual_seqs\":\"16\",\"head_dim\":1025}", "head_dim"},
        {"{\"actual_seqs\":\"131073\"}", "actual_seqs"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC("1", "%s", REF), bad);
}

int main(void)
{
    test_set_rule();
    test_short_context();
    test_differential();
    test_mtp_mutant();
    test_bad_params();
    return check_done();
}
