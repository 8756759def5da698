/* test_op_mla_indexer_prolog_quant.c — the fused MLA + indexer prolog beyond the generic
 * plan test: the MLA half bit-identical to mla_prolog_quant on the same seed (its inputs are
 * drawn first, in its order, so the fusion must not perturb it), the indexer half against
 * an independent naive double evaluation that starts from the kernel's exported q_norm
 * codes and q_norm_scale (the staged fusion point: RoPE_half on the shared tables,
 * Walsh-Hadamard, LayerNorm with idx_eps, DynQuant, the shared slot_mapping, fp16 weights),
 * k_scale's reference golden with the test's dense Hadamards, and bad params. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "indexer_golden_naive.h"
#include "op_check.h"
#include "run/exec.h"

enum { N_MLA = 7, O_QN8 = 2, O_QNS = 3, O_Q8 = 7, O_QS, O_KC, O_KS, O_W };

#define NORMAL(s) "{\"kind\":\"normal\",\"mean\":0,\"std\":" s "}"
#define UNIF(a, b) "{\"kind\":\"uniform\",\"lo\":" a ",\"hi\":" b "}"
#define RANDINT "{\"kind\":\"randint\",\"lo\":-127,\"hi\":127}"
/* clang-format off */
#define DIST_MLA                                                                                                       \
    "\"x\":" NORMAL("1") ",\"w_dq\":" NORMAL("0.1") ",\"gamma_q\":" NORMAL("1") ",\"w_uq\":" RANDINT                  \
    ",\"w_uq_scale\":" UNIF("0.0005", "0.001") ",\"w_uk\":" NORMAL("0.2") ",\"w_dkv\":" NORMAL("0.1")                  \
    ",\"gamma_kv\":" NORMAL("1") ",\"kv_cache_in\":" RANDINT ",\"kv_scale_in\":" UNIF("0.001", "0.01")                 \
    ",\"kr_cache_in\":" NORMAL("1")
#define DIST_IDX                                                                                                       \
    ",\"w_qb\":" RANDINT ",\"w_qb_scale\":" UNIF("0.0006", "0.0009") ",\"w_k\":" NORMAL("0.1")                         \
    ",\"ln_gamma\":" UNIF("0.5", "1.5") ",\"ln_beta\":" NORMAL("0.1") ",\"w_proj\":" NORMAL("0.1")
#define P_MLA "\"tokens\":7,\"h\":24,\"q_lora\":20,\"heads\":3,\"kv_lora\":40,\"kv_group\":8,\"d_nope\":12,"         \
              "\"d_rope\":8,\"block_size\":4,\"blocks\":3,\"slots\":\"padded\""
/* clang-format on */
#define T 7
#define HID 24
#define LQ 20
#define H 2
#define D 32
#define DR 8

static const double *in(const ug_exec_detail *d, const char *name) { return ug_case_input(&d->c, name)->values; }

/* The MLA outputs of the fused op equal mla_prolog_quant's on the same seed, bit for bit. */
static void test_mla_half_unchanged(const ug_exec_detail *f)
{
    const char *spec =
        "{\"op\":\"mla_prolog_quant\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{" P_MLA "},\"dist\":{" DIST_MLA "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "mla_prolog_quant twin", NULL, &d)) return;
    for (int o = 0; o < N_MLA; o++) {
        size_t diff = 0;
        CHECK(d.oracle.sel.n[o] == f->oracle.sel.n[o], "output %d: sizes differ", o);
        for (size_t i = 0; i < d.oracle.sel.n[o] && i < f->oracle.sel.n[o]; i++)
            diff += memcmp(&d.a[o][i], &f->a[o][i], sizeof(double)) != 0 && !(isnan(d.a[o][i]) && isnan(f->a[o][i]));
        CHECK(diff == 0, "MLA output %s: %zu kernel values differ from mla_prolog_quant's", d.c.out[o].name, diff);
    }
    ug_exec_detail_free(&d);
}

/* Naive DynQuant of v[D]: codes and amax/127. */
static double quant(const double *v, double *codes)
{
    double amax = 0;
    for (int i = 0; i < D; i++) amax = fmax(amax, fabs(v[i]));
    for (int i = 0; i < D; i++) codes[i] = amax > 0 ? nearbyint(v[i] * 127 / amax) : 0;
    return amax / 127;
}

/* RoPE_half on the shared table row (half pairing), then the normalised Walsh-Hadamard. */
static void rope_hadamard(double *v, const double *cs, const double *sn)
{
    for (int i = 0; i < DR / 2; i++) {
        double a = v[i], c = v[i + DR / 2];
        v[i] = a * cs[i] - c * sn[i];
        v[i + DR / 2] = c * cs[i + DR / 2] + a * sn[i + DR / 2];
    }
    for (int len = 1; len < D; len <<= 1)
        for (int i = 0; i < D; i += 2 * len)
            for (int j = i; j < i + len; j++) {
                double a = v[j], c = v[j + len];
                v[j] = a + c, v[j + len] = a - c;
            }
    for (int i = 0; i < D; i++) v[i] /= sqrt((double)D);
}

/* Kernel codes within one code of the naive ones, scales within 2^-9 (fp16 and fp32 noise). */
static void near(const ug_exec_detail *d, int o, size_t i, double want, double tol, const char *what)
{
    double a = d->a[o][i];
    CHECK(fabs(a - want) <= tol, "%s[%zu] = %g, naive %g", what, i, a, want);
}

static void naive_q(const ug_exec_detail *d, size_t t)
{
    const double *wqb = in(d, "w_qb"), *wqs = in(d, "w_qb_scale"), *cs = in(d, "cos") + t * DR,
                 *sn = in(d, "sin") + t * DR;
    double sq = d->a[O_QNS][t], v[D], codes[D]; /* staged: the kernel's exported scale and codes */
    for (int h = 0; h < H; h++) {
        for (int i = 0; i < D; i++) {
            double dot = 0;
            for (int k = 0; k < LQ; k++) dot += d->a[O_QN8][t * LQ + k] * wqb[k * H * D + h * D + i];
            v[i] = dot * sq * wqs[h * D + i];
        }
        rope_hadamard(v, cs, sn);
        double s = quant(v, codes);
        near(d, O_QS, t * H + h, s, 0x1p-9 * s, "q_scale");
        for (int i = 0; i < D; i++) near(d, O_Q8, (t * H + h) * D + i, codes[i], 1, "q_i8");
    }
}

static void naive_k_w(const ug_exec_detail *d, size_t t, long slot)
{
    const double *x = in(d, "x") + t * HID, *wk = in(d, "w_k"), *g = in(d, "ln_gamma"), *be = in(d, "ln_beta"),
                 *wp = in(d, "w_proj");
    for (int h = 0; h < H; h++) {
        double w = 0;
        for (int k = 0; k < HID; k++) w += x[k] * wp[k * H + h];
        w /= sqrt((double)(H * D));
        near(d, O_W, t * H + h, w, 0x1p-9 * fabs(w) + 1e-7, "weights");
    }
    if (slot < 0) return;
    double v[D], codes[D], mean = 0, var = 0;
    for (int i = 0; i < D; i++) {
        v[i] = 0;
        for (int k = 0; k < HID; k++) v[i] += x[k] * wk[k * D + i];
        mean += v[i] / D;
    }
    for (int i = 0; i < D; i++) var += (v[i] - mean) * (v[i] - mean) / D;
    for (int i = 0; i < D; i++) v[i] = (v[i] - mean) / sqrt(var + (double)1e-6f) * g[i] + be[i];
    rope_hadamard(v, in(d, "cos") + t * DR, in(d, "sin") + t * DR);
    double s = quant(v, codes);
    near(d, O_KS, (size_t)slot, s, 0x1p-9 * s, "k_scale");
    for (int i = 0; i < D; i++) near(d, O_KC, (size_t)slot * D + i, codes[i], 1, "k_cache");
}

/* The reference golden of weights (its test casts x.W_proj to bf16 before the scales) on
 * every element, against the test's formula evaluated here. */
static void test_weights_golden(ug_exec_detail *d)
{
    int k = ug_case_judged_find(&d->c, "weights");
    double *out[UG_MAX_TENSORS] = {0};
    char err[128] = "";
    if (k < 0 || !(out[k] = malloc(d->oracle.sel.n[k] * sizeof *out[k]))) return;
    CHECK(d->c.def->reference_golden(&d->c, &d->oracle.sel, out, err, sizeof err) == 0, "golden: %s", err);
    size_t differ = 0;
    for (size_t i = 0; i < d->oracle.sel.n[k]; i++) {
        size_t t = d->oracle.sel.idx[k][i] / H, h = d->oracle.sel.idx[k][i] % H;
        double dot = 0;
        for (size_t j = 0; j < HID; j++) dot += in(d, "x")[t * HID + j] * in(d, "w_proj")[j * H + h];
        float b = (float)ug_dtype_round(UG_DT_BF16, (float)dot);
        differ +=
            ug_dtype_round(UG_DT_FP16, b * (float)(1 / sqrt((double)H)) * (float)(1 / sqrt((double)D))) != out[k][i];
    }
    CHECK(d->oracle.sel.n[k] == T * H && differ == 0, "weights golden: %zu of %zu differ", differ, d->oracle.sel.n[k]);
    free(out[k]);
}

/* The indexer half from the kernel's exported q_norm, and the MLA half against its twin. */
static void test_differential(void)
{
    const char *spec = "{\"op\":\"mla_indexer_prolog_quant\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{" P_MLA
                       ",\"idx_heads\":2,\"idx_d\":32},\"dist\":{" DIST_MLA DIST_IDX "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "differential case", NULL, &d)) return;
    const double *slots = in(&d, "slot_mapping");
    unsigned char written[12] = {0};
    for (size_t t = 0; t < T; t++) {
        naive_q(&d, t);
        naive_k_w(&d, t, (long)slots[t]);
        if (slots[t] >= 0) written[(size_t)slots[t]] = 1;
    }
    for (size_t s = 0; s < 12; s++) /* the indexer cache has no input: unwritten slots hold 0 */
        CHECK(written[s] || (d.a[O_KS][s] == 0 && d.a[O_KC][s * D] == 0), "unwritten slot %zu not 0", s);
    test_mla_half_unchanged(&d);
    test_weights_golden(&d);
    ug_exec_detail_free(&d);
}

/* k_scale's reference golden (its test's _indexer_k_path, bf16 between the stages) with the
 * test's dense Hadamards: against the naive evaluation (indexer_golden_naive.h) on every
 * written slot, none on the others; then a kernel making the test's casts (the sim's
 * k_scale replaced by the test's) passes `reference` there, where the exact value alone
 * fails it. */
static void test_k_scale_golden(void)
{
    const char *spec = "{\"op\":\"mla_indexer_prolog_quant\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{" P_MLA
                       ",\"idx_heads\":2,\"idx_d\":32,\"hadamard\":\"given\"},\"dist\":{" DIST_MLA DIST_IDX
                       ",\"hadamard_q\":" UNIF("-1", "1") ",\"hadamard_k\":" UNIF("-1", "1") "}}";
    ug_result r;
    ug_exec_detail d;
    if (opc_run(spec, "sim", &r, &d) != 0 || !d.have_oracle) {
        CHECK(0, "hadamard given case runs: %s", r.message);
        return;
    }
    int k = ug_case_judged_find(&d.c, "k_scale");
    double *out[UG_MAX_TENSORS] = {0};
    char err[128] = "";
    size_t n = d.oracle.sel.n[k], differ = 0, none = 0, written = 0;
    if (!(out[k] = malloc(n * sizeof *out[k]))) return ug_exec_detail_free(&d);
    CHECK(d.c.def->reference_golden(&d.c, &d.oracle.sel, out, err, sizeof err) == 0, "golden: %s", err);
    ign_case g = {&d.c, D, DR, HID, (float)1e-6, &d.c.out[O_QN8], &d.c.out[O_QNS]};
    const double *slots = in(&d, "slot_mapping");
    ug_tensor *ks = &d.c.out[ug_case_judged_tensor(&d.c, k)];
    for (size_t i = 0; i < n; i++) {
        long t = -1;
        for (size_t u = 0; u < T; u++)
            if (slots[u] == (double)d.oracle.sel.idx[k][i]) t = (long)u;
        if (t < 0) {
            none += isnan(out[k][i]);
            continue;
        }
        double want = ign_k_scale(&g, (size_t)t);
        differ += want != out[k][i], written++;
        ug_dtype_store(UG_DT_FP16, ks->data, d.oracle.sel.idx[k][i], want); /* the test's cast kernel */
    }
    CHECK(n == 12 && written > 0 && differ == 0 && none == n - written,
          "k_scale golden: %zu of %zu written slots differ from the naive one, %zu of %zu unwritten have none", differ,
          written, none, n - written);
    free(out[k]);
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    ug_result again;
    CHECK(ug_exec_judge(&d.c, &o, &again, NULL) == 0, "judged again");
    const char *thr = again.out[k].thresholds[UG_STD_REFERENCE], *fe = strstr(thr, "\"failed_exact\":");
    CHECK(again.out[k].verdict[UG_STD_REFERENCE] == UG_V_PASS && fe && atoi(fe + 15) > 0,
          "k_scale with the test's casts passes reference with its golden, not against the exact value alone: %s", thr);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"idx_d\":48", "idx_d"},
        {"\"idx_d\":32,\"d_rope\":64", "d_rope"},
        {"\"idx_heads\":0", "idx_heads"},
        {"\"idx_heads\":129", "idx_heads"},
        {"\"idx_eps\":-1", "idx_eps"},
        {"\"hadamard\":\"dense\"", "hadamard"},
        {"\"kv_lora\":100,\"kv_group\":128", "kv_group"},
        {"\"tokens\":40,\"block_size\":16,\"blocks\":2", "blocks"},
        {"\"d_rope\":7", "d_rope"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"mla_indexer_prolog_quant\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s},"
                            "\"dist\":{" DIST_MLA DIST_IDX "}}",
                            bad);
}

int main(void)
{
    test_differential();
    test_k_scale_golden();
    test_bad_params();
    return check_done();
}
