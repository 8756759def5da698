/* test_op_page_attention.c — checks of page_attention beyond the generic plan test: the
 * block tables the builder writes are shuffled, distinct and padded with 0; the oracle
 * agrees with an independent naive double evaluation that walks the block table itself;
 * keys all zero give uniform weights, so o is the plain mean of the context's values (a
 * known value that any garbage slot past a context would spoil, for oracle and kernel);
 * with q_per_step 2 (MTP) a huge value at each sequence's last token reaches the last
 * query row but not row 0, which sees one token fewer; with quant fp8, a hand-computed
 * two-token case planted into e4m3 codes and per-token / per-channel scales (oracle exact,
 * sim kernel within its quantised P), and each fp8 mutant failing a small case with
 * spread scales that the correct kernel passes; and bad params are rejected with a
 * message naming them. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gl_attn_check.h"
#include "run/exec.h"

#define SPEC(dist, params)                                                                                             \
    "{\"v\":1,\"op\":\"page_attention\",\"dtype\":\"fp16\",\"seed\":5,\"params\":" params ",\"dist\":" dist "}"
#define NORMAL                                                                                                         \
    "{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"key_cache\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"      \
    "\"value_cache\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}"
#define PARAMS "{\"context_lens\":\"5,17,1,40\",\"heads_kv\":2,\"group\":4,\"head_dim\":16,\"block_size\":8}"

enum { B = 4, HKV = 2, G = 4, HQ = 8, D = 16, BS = 8 };
static const long ctx[B] = {5, 17, 1, 40};

/* Cache index of token t, kv head g, dim 0 for sequence b. */
static size_t slot_of(const ug_tensor *bt, long b, long t, long g)
{
    long mb = bt->shape[1], phys = (long)bt->values[b * mb + t / BS];
    return (size_t)(((phys * BS + t % BS) * HKV + g) * D);
}

static void check_tables(const ug_case *c)
{
    const ug_tensor *bt = ug_case_input(c, "block_tables"), *kc = ug_case_input(c, "key_cache");
    long nb = kc->shape[0];
    CHECK(bt->shape[1] == 5, "block table width %ld, expected ceil(40/8) = 5", (long)bt->shape[1]);
    long used = gl_check_block_table(bt, ctx, B, BS, nb, 0);
    CHECK(used == 10 && nb == 15, "%ld blocks used of %ld, expected 10 of 15 (half again as spare)", used, nb);
}

static void check_against_naive(void)
{
    ug_exec_detail d;
    if (!opc_sim_passes(SPEC(NORMAL, PARAMS), "ragged GQA case", NULL, &d)) return;
    check_tables(&d.c);
    const ug_tensor *bt = ug_case_input(&d.c, "block_tables");
    const double *q = ug_case_input(&d.c, "q")->values, *k = ug_case_input(&d.c, "key_cache")->values;
    const double *v = ug_case_input(&d.c, "value_cache")->values;
    double worst = 0, scale = (float)0.25;
    for (long b = 0; b < B; b++)
        for (long h = 0; h < HQ; h++) {
            double s[40], m = -INFINITY, l = 0, o[D] = {0};
            for (long t = 0; t < ctx[b]; t++) {
                double dot = 0;
                for (long e = 0; e < D; e++) dot += q[(b * HQ + h) * D + e] * k[slot_of(bt, b, t, h / G) + (size_t)e];
                s[t] = dot * scale;
                m = fmax(m, s[t]);
            }
            for (long t = 0; t < ctx[b]; t++) {
                double p = exp(s[t] - m);
                l += p;
                for (long e = 0; e < D; e++) o[e] += p * v[slot_of(bt, b, t, h / G) + (size_t)e];
            }
            for (long e = 0; e < D; e++)
                worst = fmax(worst, fabs(d.oracle.gstar[0][(b * HQ + h) * D + e] - o[e] / l) / (fabs(o[e] / l) + 1e-3));
        }
    CHECK(worst < 1e-12, "oracle differs from the naive double evaluation by %g", worst);
    ug_exec_detail_free(&d);
}

static void check_zero_keys(void)
{
    ug_exec_detail d;
    const char *spec =
        SPEC("{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"key_cache\":{\"kind\":\"const\",\"value\":0},"
             "\"value_cache\":{\"kind\":\"randint\",\"lo\":-4,\"hi\":4}}",
             PARAMS);
    if (!opc_sim_passes(spec, "zero-key case", NULL, &d)) return;
    const ug_tensor *bt = ug_case_input(&d.c, "block_tables");
    const double *v = ug_case_input(&d.c, "value_cache")->values;
    int bad = 0;
    for (long b = 0; b < B; b++)
        for (long h = 0; h < HQ; h++)
            for (long e = 0; e < D; e++) {
                double mean = 0;
                for (long t = 0; t < ctx[b]; t++) mean += v[slot_of(bt, b, t, h / G) + (size_t)e];
                mean /= (double)ctx[b];
                size_t i = (size_t)((b * HQ + h) * D + e);
                bad += fabs(d.oracle.gstar[0][i] - mean) > 1e-14;
                bad += fabs(d.a[0][i] - mean) > 1e-3 + 0x1p-7 * fabs(mean); /* the kernel too */
            }
    CHECK(bad == 0, "%d outputs differ from the mean of the context's values", bad);
    ug_exec_detail_free(&d);
}

/* Opens sim variant `kernel` into be and runs spec there with every element checked and the
 * case kept in d, to plant values in: 1, or 0 after a failed CHECK (be closed again). */
static int run_planted(ug_backend *be, const char *kernel, const char *spec, const char *what, ug_result *r,
                       ug_exec_detail *d)
{
    if (opc_open(be, kernel)) {
        CHECK(0, "no %s backend", kernel);
        return 0;
    }
    CHECK(opc_exec(be, spec, 0, r, d) == 0 && d->have_case, "%s did not run: %s", what, r->message);
    if (!d->have_case) ug_backend_close(be);
    return d->have_case;
}

/* Runs the kernel of be again on the planted case d->c and judges it, every element, into r
 * and j (free with free_planted). */
static void rerun_planted(const ug_backend *be, const char *kernel, ug_exec_detail *d, ug_result *r, ug_exec_detail *j)
{
    char err[256];
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    o.keep = 1;
    memset(j, 0, sizeof *j);
    CHECK(ug_backend_run(be, &d->c, err, sizeof err) == 0, "kernel %s: %s", kernel, err);
    CHECK(ug_exec_judge(&d->c, &o, r, j) == 0 && j->have_oracle, "judging the planted case: %s", r->message);
}

static void free_planted(ug_exec_detail *j, ug_exec_detail *d, ug_backend *be)
{
    if (j->have_oracle) ug_oracle_result_free(&j->oracle);
    for (int t = 0; t < UG_MAX_TENSORS; t++) free(j->a[t]);
    ug_exec_detail_free(d);
    ug_backend_close(be);
}

/* MTP, q_per_step 2: keys all zero (uniform weights), values 1 except a huge one planted at
 * each sequence's last token after the build. Row 1 of a sequence (the last) averages all
 * L_b tokens, so it holds (huge + L_b - 1) / L_b; row 0 sees the first L_b - 1 tokens only,
 * so it is exactly 1, for the oracle and the sim kernel alike; mut_mtp_no_offset lets the
 * huge value into row 0. */
static void check_mtp_offset(void)
{
    static const long len[B] = {5, 17, 2, 40};
    const char *spec = SPEC("{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"key_cache\":{\"kind\":\"const\","
                            "\"value\":0},\"value_cache\":{\"kind\":\"const\",\"value\":1}}",
                            "{\"context_lens\":\"5,17,2,40\",\"heads_kv\":2,\"group\":4,\"head_dim\":16,"
                            "\"block_size\":8,\"q_per_step\":2}");
    const char *kernels[] = {"sim", "mut_mtp_no_offset"};
    for (int v = 0; v < 2; v++) {
        ug_backend be;
        ug_result r;
        ug_exec_detail d, j;
        if (!run_planted(&be, kernels[v], spec, "MTP case", &r, &d)) return;
        CHECK(d.c.out[0].shape[0] == 2 * B, "o has %ld rows, expected batch*q_per_step = %d", (long)d.c.out[0].shape[0],
              2 * B);
        const ug_tensor *bt = ug_case_input(&d.c, "block_tables");
        ug_tensor *vc = ug_case_input_mut(&d.c, "value_cache");
        const double huge = 1024.0; /* exact in fp16 */
        for (long b = 0; b < B; b++)
            for (long g = 0; g < HKV; g++)
                for (long e = 0; e < D; e++) {
                    size_t at = slot_of(bt, b, len[b] - 1, g) + (size_t)e;
                    vc->values[at] = huge;
                    ug_dtype_store(vc->dtype, vc->data, at, huge);
                }
        rerun_planted(&be, kernels[v], &d, &r, &j);
        int bad_oracle = 0, bad_kernel = 0, leaked = 0;
        for (long b = 0; b < B && j.have_oracle; b++)
            for (long i = 0; i < 2; i++)
                for (long h = 0; h < HQ; h++)
                    for (long e = 0; e < D; e++) {
                        size_t k = (size_t)(((b * 2 + i) * HQ + h) * D + e);
                        double want = i == 0 ? 1.0 : (huge + (double)(len[b] - 1)) / (double)len[b];
                        bad_oracle += fabs(j.oracle.gstar[0][k] - want) > 1e-12 * want;
                        bad_kernel += fabs(j.a[0][k] - want) > 1e-3 + 0x1p-7 * want;
                        leaked += i == 0 && j.a[0][k] > 2.0;
                    }
        CHECK(bad_oracle == 0, "%d oracle outputs differ from the MTP known values", bad_oracle);
        if (v == 0) {
            CHECK(bad_kernel == 0 && leaked == 0 && r.outcome == UG_OUT_PASS,
                  "sim kernel: %d outputs off the known values, %d row-0 outputs hold the last token (%s)", bad_kernel,
                  leaked, ug_outcome_name(r.outcome));
        } else {
            CHECK(leaked == B * HQ * D && r.outcome == UG_OUT_FAIL,
                  "mut_mtp_no_offset: %d of %d row-0 outputs hold the last token, outcome %s", leaked, B * HQ * D,
                  ug_outcome_name(r.outcome));
        }
        free_planted(&j, &d, &be);
    }
}

#define FP8_SPEC(params)                                                                                               \
    "{\"v\":1,\"op\":\"page_attention\",\"dtype\":\"bf16\",\"seed\":9,\"params\":" params ",\"dist\":{"                \
    "\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":150},\"q_scale\":{\"kind\":\"uniform\",\"lo\":0.0005,\"hi\":0.01}," \
    "\"key_cache\":{\"kind\":\"normal\",\"mean\":0,\"std\":150},"                                                      \
    "\"key_scale\":{\"kind\":\"uniform\",\"lo\":0.0001,\"hi\":0.02},"                                                  \
    "\"value_cache\":{\"kind\":\"normal\",\"mean\":0,\"std\":150},"                                                    \
    "\"value_scale\":{\"kind\":\"uniform\",\"lo\":0.0005,\"hi\":0.05}}}"

/* Sets element i of input `name` of a kept case to x (exact in its dtype), value and bits. */
static void plant(ug_case *c, const char *name, size_t i, double x)
{
    ug_tensor *t = ug_case_input_mut(c, name);
    t->values[i] = x;
    ug_dtype_store(t->dtype, t->data, i, x);
}

/* quant fp8, one sequence of two tokens, one head, D = 2, scale 1: q codes (1, 2) with
 * q_scale 1/2 give q = (1/2, 1); key codes (2, 0) with key_scale 1/2 and (0, 4) with 1/4
 * give k0 = (1, 0), k1 = (0, 1), so s = (1/2, 1); value codes (4, -2) and (8, 6) with the
 * per-channel value_scale (1/4, 1/2) give v0 = (1, -1), v1 = (2, 3). By hand, with
 * r = e^(1/2): o = ((1 + 2r) / (1 + r), (-1 + 3r) / (1 + r)). A scale applied per tensor
 * or to the wrong channel changes both. The sim kernel quantises the tile's P to e4m3 with
 * the scale 448/max = 448: e^-1/2 * 448 = 271.7 becomes the code 256 (step 32 there), so
 * its P.V uses 4/7 for e^-1/2 while the sum keeps e^-1/2 (as the reference's kernel):
 * o = (4/7 v0 + v1) / (e^-1/2 + 1), 1.3 % off the exact value and inside its certified
 * bound (2^-4 per weight), so the case passes. */
static void check_fp8_known_value(void)
{
    const char *spec = FP8_SPEC("{\"context_lens\":\"2\",\"heads_kv\":1,\"group\":1,\"head_dim\":2,"
                                "\"block_size\":2,\"scale\":1,\"quant\":\"fp8\"}");
    ug_backend be;
    ug_result r;
    ug_exec_detail d, j;
    if (!run_planted(&be, "sim", spec, "fp8 case", &r, &d)) return;
    CHECK(ug_case_input(&d.c, "q")->dtype == UG_DT_E4M3 && ug_case_input(&d.c, "value_scale")->dtype == UG_DT_FP32,
          "quant fp8: q is %s, value_scale %s; expected e4m3 codes and fp32 scales",
          ug_dtype_name(ug_case_input(&d.c, "q")->dtype), ug_dtype_name(ug_case_input(&d.c, "value_scale")->dtype));
    long phys = (long)ug_case_input(&d.c, "block_tables")->values[0]; /* the sequence's one block */
    static const double kc[2][2] = {{2, 0}, {0, 4}}, ks[2] = {0.5, 0.25}, vc[2][2] = {{4, -2}, {8, 6}};
    plant(&d.c, "q", 0, 1), plant(&d.c, "q", 1, 2), plant(&d.c, "q_scale", 0, 0.5);
    for (int t = 0; t < 2; t++) {
        size_t slot = (size_t)(phys * 2 + t);
        plant(&d.c, "key_scale", slot, ks[t]);
        for (int e = 0; e < 2; e++) plant(&d.c, "key_cache", slot * 2 + (size_t)e, kc[t][e]);
        for (int e = 0; e < 2; e++) plant(&d.c, "value_cache", slot * 2 + (size_t)e, vc[t][e]);
    }
    plant(&d.c, "value_scale", 0, 0.25), plant(&d.c, "value_scale", 1, 0.5);
    rerun_planted(&be, "sim", &d, &r, &j);
    double rr = exp(0.5), want[2] = {(1 + 2 * rr) / (1 + rr), (-1 + 3 * rr) / (1 + rr)};
    double l = exp(-0.5) + 1, dev[2] = {(4.0 / 7 * 1 + 2) / l, (4.0 / 7 * -1 + 3) / l}; /* the quantised P by hand */
    for (int e = 0; e < 2 && j.have_oracle; e++) {
        CHECK(fabs(j.oracle.gstar[0][e] - want[e]) <= 1e-15 * fabs(want[e]), "oracle o[%d] = %.17g, by hand %.17g", e,
              j.oracle.gstar[0][e], want[e]);
        CHECK(fabs(j.a[0][e] - dev[e]) <= 0x1p-8 * fabs(dev[e]), "sim o[%d] = %.9g, by hand (e4m3 P) %.9g", e,
              j.a[0][e], dev[e]);
    }
    CHECK(r.outcome == UG_OUT_PASS, "sim kernel on the planted fp8 case: %s %s", ug_outcome_name(r.outcome), r.message);
    free_planted(&j, &d, &be);
}

/* quant fp8 with per-token key scales over 0.0001..0.02, three sequences: the correct
 * kernel passes, each planted fp8 bug fails. */
static void check_fp8_mutants(void)
{
    const char *spec = FP8_SPEC("{\"context_lens\":\"17,40,5\",\"heads_kv\":2,\"group\":2,\"head_dim\":32,"
                                "\"block_size\":8,\"quant\":\"fp8\"}");
    static const char *const variants[] = {"sim", "mut_fp8_kscale_per_tensor", "mut_fp8_codes_int8",
                                           "mut_fp8_qscale_on_o", "mut_fp8_vscale_seq0"};
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        ug_result r;
        ug_exec_detail d;
        int rc = opc_run(spec, variants[v], &r, &d);
        ug_outcome want = v == 0 ? UG_OUT_PASS : UG_OUT_FAIL;
        CHECK(rc == 0 && r.outcome == want, "%s on the fp8 case: %s (expected %s) %s", variants[v],
              ug_outcome_name(r.outcome), ug_outcome_name(want), r.message);
        if (rc == 0) ug_exec_detail_free(&d);
    }
}

static void check_bad_params(void)
{
    static const char *const bad[][2] = {
        {"{\"context_lens\":\"5,0\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"block_size\":8}", "context_lens"},
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":0,\"head_dim\":8,\"block_size\":8}", "group"},
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"block_size\":0}", "block_size"},
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"scale\":\"x\"}", "scale"},
        {"{\"context_lens\":\"5,1\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"q_per_step\":2}",
         "context_lens"}, /* a context shorter than the step's query tokens */
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"quant\":\"int8\"}", "quant"},
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"quant\":\"fp8\"}",
         "case dtype fp16"}, /* fp8 codes come with a bf16 o only */
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"block_size\":8,\"p_tile\":16}",
         "p_tile"}, /* a P quantisation tile without quant fp8 */
        {"{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"block_size\":8,\"p_tile\":-8}", "p_tile"},
    };
    OPC_EXPECT_REFUSED_EACH(SPEC(NORMAL, "%s"), bad);
    /* quant fp8 needs a distribution for each scale */
    opc_expect_refused("{\"v\":1,\"op\":\"page_attention\",\"dtype\":\"bf16\",\"seed\":5,\"params\":"
                       "{\"context_lens\":\"5\",\"heads_kv\":1,\"group\":1,\"head_dim\":8,\"quant\":\"fp8\"},"
                       "\"dist\":" NORMAL "}",
                       "q_scale");
}

int main(void)
{
    check_against_naive();
    check_zero_keys();
    check_mtp_offset();
    check_fp8_known_value();
    check_fp8_mutants();
    check_bad_params();
    return check_done();
}
