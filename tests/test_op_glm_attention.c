/* test_op_glm_attention.c — glm_attention beyond the generic plan test: the builder's
 * block tables (shuffled, distinct, -1 past each sequence's last block, as wide as asked);
 * a one-token context whose output is its value row exactly, and zero keys whose output
 * is the plain mean of the context's values (known values any garbage slot would spoil);
 * the oracle against an independent long-double evaluation that walks the table itself,
 * with the sim kernel passing and the tail and stride mutants failing on the same case;
 * and bad params refused with a message naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gl_attn_check.h"
#include "op_check.h"

#define SPEC(dist, params)                                                                                             \
    "{\"v\":1,\"op\":\"glm_attention\",\"dtype\":\"bf16\",\"seed\":7,\"params\":" params ",\"dist\":" dist "}"
#define UNIFORM                                                                                                        \
    "{\"q\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1},\"key_cache\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1},"        \
    "\"value_cache\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}}"
/* 12:1 heads, head 16, block 8: lengths one short of, exactly on and one past block edges,
 * a table 6 wide (48 tokens) where 3 blocks suffice */
#define PARAMS "{\"actual_seqs\":\"7,8,9,16,17\",\"head_dim\":16,\"block_size\":8,\"max_blocks_per_seq\":6}"

enum { B = 5, HQ = 12, D = 16, BS = 8, MB = 6 };
static const long lens[B] = {7, 8, 9, 16, 17};

static size_t slot_of(const ug_tensor *bt, long b, long t)
{
    long phys = (long)bt->values[b * MB + t / BS];
    return (size_t)((phys * BS + t % BS) * D);
}

static void check_tables(const ug_case *c)
{
    const ug_tensor *bt = ug_case_input(c, "block_tables"), *kc = ug_case_input(c, "key_cache");
    long nb = kc->shape[0];
    CHECK(bt->shape[1] == MB, "table width %ld, asked %d", (long)bt->shape[1], MB);
    long used = gl_check_block_table(bt, lens, B, BS, nb, -1);
    CHECK(used == 9 && nb == 14, "%ld blocks used of %ld, expected 9 of 14 (half again as spare)", used, nb);
}

/* The oracle against softmax(scale q.k) V in long double over the table's slots; the sim
 * kernel passes; the mutants that read past a context or mis-stride the table fail. */
static void check_differential(void)
{
    ug_result r;
    ug_exec_detail d;
    if (!opc_sim_passes(SPEC(UNIFORM, PARAMS), "sim", &r, &d)) return;
    check_tables(&d.c);
    const ug_tensor *bt = ug_case_input(&d.c, "block_tables");
    const double *q = ug_case_input(&d.c, "q")->values, *k = ug_case_input(&d.c, "key_cache")->values;
    const double *v = ug_case_input(&d.c, "value_cache")->values;
    double worst = 0, scale = (float)0.25; /* fp32(1/sqrt(16)) */
    for (long b = 0; b < B; b++)
        for (long h = 0; h < HQ; h++) {
            long double s[17];
            double vg[17 * D];
            for (long t = 0; t < lens[b]; t++) {
                long double dot = 0;
                for (long e = 0; e < D; e++)
                    dot += (long double)q[(b * HQ + h) * D + e] * k[slot_of(bt, b, t) + (size_t)e];
                s[t] = dot * scale;
                memcpy(vg + t * D, v + slot_of(bt, b, t), D * sizeof *vg);
            }
            for (long e = 0; e < D; e++) {
                double want = (double)gl_ref_softmax_pv(s, (size_t)lens[b], vg, D, (size_t)e);
                worst = fmax(worst, fabs(d.oracle.gstar[0][(b * HQ + h) * D + e] - want) / (fabs(want) + 1e-3));
            }
        }
    CHECK(worst < 1e-12, "oracle differs from the long-double evaluation by %g", worst);
    ug_exec_detail_free(&d);
    const char *bad[] = {"mut_full_last_block", "mut_table_stride", "mut_pv_bf16"};
    for (int i = 0; i < 3; i++) {
        CHECK(opc_run(SPEC(UNIFORM, PARAMS), bad[i], &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "%s: %s, want FAIL",
              bad[i], ug_outcome_name(r.outcome));
        ug_exec_detail_free(&d);
    }
}

/* Keys all zero: every weight is equal, so o is the mean of the context's values (randint
 * values, so the mean is exact in double); a one-token context gives its value row. Holds
 * for the oracle exactly and for the kernel within a bf16 rounding. */
static void check_known_values(void)
{
    const char *spec = SPEC("{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"key_cache\":{\"kind\":\"const\","
                            "\"value\":0},\"value_cache\":{\"kind\":\"randint\",\"lo\":-4,\"hi\":4}}",
                            "{\"actual_seqs\":\"1,7,8,9,16,17\",\"head_dim\":16,\"block_size\":8}");
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "zero keys", NULL, &d)) return;
    static const long n[6] = {1, 7, 8, 9, 16, 17};
    const ug_tensor *bt = ug_case_input(&d.c, "block_tables");
    const double *v = ug_case_input(&d.c, "value_cache")->values;
    long width = bt->shape[1];
    int bad = 0;
    for (long b = 0; b < 6; b++)
        for (long h = 0; h < HQ; h++)
            for (long e = 0; e < D; e++) {
                double mean = 0;
                for (long t = 0; t < n[b]; t++) {
                    long phys = (long)bt->values[b * width + t / BS];
                    mean += v[(phys * BS + t % BS) * D + e];
                }
                mean /= (double)n[b];
                size_t i = (size_t)((b * HQ + h) * D + e);
                bad += d.oracle.gstar[0][i] != mean && fabs(d.oracle.gstar[0][i] - mean) > 1e-15;
                bad += fabs(opc_out(&d, 0, i) - mean) > 0x1p-8 * fabs(mean); /* one bf16 rounding */
                if (b == 0) bad += opc_out(&d, 0, i) != mean;                /* one token: its value row, exactly */
            }
    CHECK(bad == 0, "%d outputs differ from the mean of the context's values", bad);
    ug_exec_detail_free(&d);
}

static void check_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"actual_seqs\":\"5\",\"heads_q\":12,\"heads_kv\":5}", "heads_q"},
        {"{\"actual_seqs\":\"300,20\",\"num_blocks\":3}", "num_blocks"},
        {"{\"actual_seqs\":\"300,20\",\"max_blocks_per_seq\":2}", "actual_seqs[0]"},
        {"{\"actual_seqs\":\"3,20\",\"q_per_step\":4}", "q_per_step"},
        {"{\"actual_seqs\":\"0\"}", "actual_seqs"},
        {"{\"actual_seqs\":\"5\",\"q_per_step\":33}", "q_per_step"},
    };
    GL_EXPECT_BAD_PARAMS(SPEC(UNIFORM, "%s"), "", bad);
}

int main(void)
{
    check_differential();
    check_known_values();
    check_bad_params();
    return check_done();
}
