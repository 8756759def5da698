/* test_op_glm_attention_fusion.c — glm_attention_fusion beyond the generic plan test:
 * the scatter (every slot of both output caches against an independent walk: the token's
 * own k/v at the slot of its last position, found through the block table, the input bits
 * everywhere else; explicit slots likewise), the attention output against an independent
 * long-double evaluation over the kernel's q and the caches it wrote (the new token
 * included), known values (a one-token context returns its own v exactly), every mutant
 * failing on a case the sim kernel passes, and bad params refused naming the param. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gl_attn_check.h"
#include "op_check.h"

#define SPEC(dist, params)                                                                                             \
    "{\"v\":1,\"op\":\"glm_attention_fusion\",\"dtype\":\"bf16\",\"seed\":11,\"params\":" params ",\"dist\":" dist "}"
#define NRM(m, s) "{\"kind\":\"normal\",\"mean\":" #m ",\"std\":" #s "}"
#define UNI(lo, hi) "{\"kind\":\"uniform\",\"lo\":" #lo ",\"hi\":" #hi "}"
#define DIST                                                                                                                                                                \
    "{\"x\":" NRM(0, 1) ",\"residual\":" NRM(0, 1) ",\"norm_weight\":" UNI(0.5, 1.5) ",\"norm_bias\":" NRM(0, 0.1) ",\"scale_reciprocal\":" UNI(16, 48) ",\"offset\":" UNI( \
        -2,                                                                                                                                                                 \
        2) ",\"qkv_weight\":{\"kind\":\"randint\",\"lo\":-128,\"hi\":127},\"quant_bias\":{\"kind\":\"randint\",\"lo\":-2000,"                                               \
           "\"hi\":2000},\"deq_scale\":" UNI(1e-05, 3e-05) ",\"q_norm_weight\":" UNI(0.5, 1.5) ",\"q_norm_bias\":" NRM(0, 0.1) ",\"k_norm_weight\":" UNI(                   \
               0.5,                                                                                                                                                         \
               1.5) ",\"k_norm_bias\":" NRM(0,                                                                                                                              \
                                            0.1) ",\"cos\":" UNI(-1,                                                                                                        \
                                                                 1) ",\"sin\":" UNI(-1,                                                                                     \
                                                                                    1) ",\"key_cache\":" NRM(0,                                                             \
                                                                                                             1) ",\"value_cache\":" NRM(0,                                  \
                                                                                                                                        1) "}"
/* 4:2 heads of 16 (rotary 8), block 8: lengths one short of, on and one past block edges,
 * a one-token context; a table 4 wide */
#define PARAMS                                                                                                         \
    "{\"actual_seqs\":\"1,7,8,9,17\",\"hidden\":32,\"q_heads\":4,\"kv_heads\":2,\"head_dim\":16,\"rotary_dim\":8,"     \
    "\"block_size\":8,\"max_blocks_per_seq\":4"

enum { B = 5, HQ = 4, HKV = 2, D = 16, BS = 8, MB = 4, KV = HKV * D };
enum { O_Q, O_K, O_V, O_KC = 8, O_VC, O_O };
static const long lens[B] = {1, 7, 8, 9, 17};

static double out_at(const ug_exec_detail *d, int o, size_t i) { return opc_out(d, o, i); }

/* Every element of both caches: token t's own k/v where it writes, the input elsewhere.
 * want[t] is the slot token t must write (-1: its own last position through the table). */
static void check_caches(const ug_exec_detail *d, const long *want)
{
    const ug_tensor *bt = ug_case_input(&d->c, "block_tables"), *kc = ug_case_input(&d->c, "key_cache");
    const ug_tensor *vc = ug_case_input(&d->c, "value_cache");
    size_t pool = (size_t)(kc->shape[0] * kc->shape[1]);
    long slot[B];
    for (long t = 0; t < B; t++)
        slot[t] = want[t] >= 0 ? want[t] : (long)bt->values[t * MB + (lens[t] - 1) / BS] * BS + (lens[t] - 1) % BS;
    int bad = 0;
    for (size_t s = 0; s < pool; s++) {
        long t = -1;
        for (long u = 0; u < B; u++) t = slot[u] == (long)s ? u : t;
        for (size_t j = 0; j < KV; j++) {
            double wk = t >= 0 ? out_at(d, O_K, (size_t)t * KV + j) : kc->values[s * KV + j];
            double wv = t >= 0 ? out_at(d, O_V, (size_t)t * KV + j) : vc->values[s * KV + j];
            bad += out_at(d, O_KC, s * KV + j) != wk || out_at(d, O_VC, s * KV + j) != wv;
        }
    }
    CHECK(bad == 0, "%d cache elements differ from the independent scatter", bad);
}

/* o against softmax(scale q.K)V in long double over the kernel's q and written caches. */
static void check_attention(const ug_exec_detail *d)
{
    const ug_tensor *bt = ug_case_input(&d->c, "block_tables");
    double worst = 0, worst_k = 0, scale = (float)0.25; /* fp32(1/sqrt(16)) */
    for (long b = 0; b < B; b++)
        for (long h = 0; h < HQ; h++) {
            long g = h / (HQ / HKV);
            long double s[17];
            double vg[17 * D];
            for (long t = 0; t < lens[b]; t++) {
                size_t at = (size_t)(((long)bt->values[b * MB + t / BS] * BS + t % BS) * KV + g * D);
                long double dot = 0;
                for (long e = 0; e < D; e++)
                    dot += (long double)out_at(d, O_Q, (size_t)(b * HQ + h) * D + e) * out_at(d, O_KC, at + e);
                s[t] = dot * scale;
                for (long e = 0; e < D; e++) vg[t * D + e] = out_at(d, O_VC, at + e);
            }
            for (long e = 0; e < D; e++) {
                double want = (double)gl_ref_softmax_pv(s, (size_t)lens[b], vg, D, (size_t)e);
                size_t i = (size_t)((b * HQ + h) * D + e);
                worst = fmax(worst, fabs(d->oracle.gstar[O_O][i] - want) / (fabs(want) + 1e-3));
                worst_k = fmax(worst_k, fabs(out_at(d, O_O, i) - want) / (0x1p-7 * fabs(want) + 0x1p-7));
            }
        }
    CHECK(worst < 1e-12, "oracle o differs from the long-double evaluation by %g", worst);
    /* the kernel: a bf16 output rounding and bf16 P (|v| ~ 1: a few 2^-9 absolute) */
    CHECK(worst_k <= 1, "kernel o differs from the long-double evaluation by %g x (2^-7 |o| + 2^-7)", worst_k);
}

/* Known values: sequence 0 has one token, its own: o = its v, exactly, every head. */
static void check_one_token(const ug_exec_detail *d)
{
    int bad = 0;
    for (long h = 0; h < HQ; h++)
        for (long e = 0; e < D; e++)
            bad += out_at(d, O_O, (size_t)(h * D + e)) != out_at(d, O_V, (size_t)((h / (HQ / HKV)) * D + e));
    CHECK(bad == 0, "%d elements of a one-token context's o differ from its own v", bad);
}

static void check_default_slots(void)
{
    ug_result r;
    ug_exec_detail d;
    static const long own[B] = {-1, -1, -1, -1, -1};
    if (!opc_sim_passes(SPEC(DIST, PARAMS "}"), "sim", &r, &d)) return;
    check_caches(&d, own);
    check_attention(&d);
    check_one_token(&d);
    ug_exec_detail_free(&d);
    const char *bad[] = {"mut_slot_plus_one", "mut_k_before_rope", "mut_v_trunc",
                         "mut_kv_head0",      "mut_stale_cache",   "mut_len_excl_new"};
    for (int i = 0; i < 6; i++) {
        CHECK(opc_run(SPEC(DIST, PARAMS "}"), bad[i], &r, &d) == 0 && r.outcome == UG_OUT_FAIL, "%s: %s, want FAIL",
              bad[i], ug_outcome_name(r.outcome));
        ug_exec_detail_free(&d);
    }
}

/* Explicit slots (the reference test's random ones): into another sequence's context, a
 * slots in spare blocks; the pool here is 12 blocks (8 needed + 4 spare, slots 0..95). */
static void check_explicit_slots(void)
{
    static const long want[B] = {3, 95, 40, 0, 20};
    ug_exec_detail d;
    opc_sim_passes(SPEC(DIST, PARAMS ",\"slot_mapping\":\"3,95,40,0,20\"}"), "explicit slots", NULL, &d);
    if (!d.have_oracle) return;
    CHECK(ug_case_input(&d.c, "key_cache")->shape[0] == 12, "pool of %ld blocks, expected 12",
          (long)ug_case_input(&d.c, "key_cache")->shape[0]);
    check_caches(&d, want);
    check_attention(&d);
    ug_exec_detail_free(&d);
}

static void check_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"actual_seqs\":\"5\",\"q_heads\":12,\"kv_heads\":5,\"hidden\":16}", "q_heads"},
        {"{\"actual_seqs\":\"300,20\",\"num_blocks\":3,\"hidden\":16}", "num_blocks"},
        {"{\"actual_seqs\":\"300,20\",\"max_blocks_per_seq\":2,\"hidden\":16}", "actual_seqs[0]"},
        {"{\"actual_seqs\":\"5,6\",\"slot_mapping\":\"0,384\",\"hidden\":16}", "slot_mapping[1]"},
        {"{\"actual_seqs\":\"5,6\",\"slot_mapping\":\"7,7\",\"hidden\":16}", "slot_mapping[1]"},
        {"{\"actual_seqs\":\"5,6\",\"slot_mapping\":\"7\",\"hidden\":16}", "slot_mapping"},
        {"{\"actual_seqs\":\"5,6\",\"slot_mapping\":\"7,-1\",\"hidden\":16}", "slot_mapping[1]"},
        {"{\"actual_seqs\":\"5\",\"rotary_dim\":63,\"hidden\":16}", "rotary_dim"},
        {"{\"actual_seqs\":\"0\",\"hidden\":16}", "actual_seqs"},
    };
    GL_EXPECT_BAD_PARAMS(SPEC(DIST, "%s"), "\"hidden\":16,", bad);
}

int main(void)
{
    check_default_slots();
    check_explicit_slots();
    check_bad_params();
    return check_done();
}
