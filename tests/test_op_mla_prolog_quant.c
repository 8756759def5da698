/* test_op_mla_prolog_quant.c — mla_prolog_quant beyond the generic plan test: a
 * hand-computed case on constant inputs (codes 127, scales 1/127, q_nope_abs 0.125,
 * untouched slots keep their input), a differential check of every element of every output
 * against an independent naive double evaluation of the whole prolog (its own RMSNorm,
 * DynQuant, staged int8 GEMM from the kernel's codes and scale, head split, group
 * quantisation, RoPE and scatter) in both RoPE layouts, the kernel's codes and scales
 * against the naive ones, the slot_mapping layouts, and bad params.
 *
 * The naive evaluation shares only the decoded inputs (and, for the staged query path, the
 * kernel's exported q_norm / q_norm_scale) with the oracle, so a wrong head offset into
 * W_uq, a transposed W_uk, a group offset, a RoPE pairing or a cache row mix-up shows. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

enum { O_QN, O_QR, O_Q8, O_QS, O_KC, O_KS, O_KR, O_Q8V, O_KCV };

#define CONST(v) "{\"kind\":\"const\",\"value\":" v "}"
#define NORMAL(s) "{\"kind\":\"normal\",\"mean\":0,\"std\":" s "}"
#define RANDINT "{\"kind\":\"randint\",\"lo\":-127,\"hi\":127}"
/* clang-format off */
#define DIST_CONST                                                                                                     \
    "\"dist\":{\"x\":" CONST("1") ",\"w_dq\":" CONST("2") ",\"gamma_q\":" CONST("1") ",\"w_uq\":" CONST("1")          \
    ",\"w_uq_scale\":" CONST("0.5") ",\"w_uk\":" CONST("0.25") ",\"w_dkv\":" CONST("2") ",\"gamma_kv\":" CONST("1")   \
    ",\"kv_cache_in\":" CONST("7") ",\"kv_scale_in\":" CONST("0.5") ",\"kr_cache_in\":" CONST("-3") "}"
#define DIST_RANDOM                                                                                                    \
    "\"dist\":{\"x\":" NORMAL("1") ",\"w_dq\":" NORMAL("0.1") ",\"gamma_q\":" NORMAL("1") ",\"w_uq\":" RANDINT        \
    ",\"w_uq_scale\":{\"kind\":\"uniform\",\"lo\":0.0005,\"hi\":0.001},\"w_uk\":" NORMAL("0.2")                       \
    ",\"w_dkv\":" NORMAL("0.1") ",\"gamma_kv\":" NORMAL("1") ",\"kv_cache_in\":" RANDINT                              \
    ",\"kv_scale_in\":{\"kind\":\"uniform\",\"lo\":0.001,\"hi\":0.01},\"kr_cache_in\":" NORMAL("1") "}"
/* clang-format on */

/* The differential case; its %s: ROPE_INTERLEAVED, or nothing for the default layout. */
#define DIFF_SPEC_FMT                                                                                                  \
    "{\"op\":\"mla_prolog_quant\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{\"tokens\":7,\"h\":24,"                   \
    "\"q_lora\":20,\"heads\":3,\"kv_lora\":40,\"kv_group\":8,\"d_nope\":12,\"d_rope\":8,\"block_size\":4,"             \
    "\"blocks\":3,\"slots\":\"padded\"%s}," DIST_RANDOM "}"
#define ROPE_INTERLEAVED ",\"rope_layout\":\"interleaved_to_half\""

/* x = 1, W_dq = 2 (h = q_lora = 1): c_q = bf16(2/sqrt(4+eps)) = 1, code 127, scale* 1/127;
 * q = bf16(127*fp32(1/127)*1*0.5) = 0.5, q_nope_abs = 0.5*0.25 = 0.125 (exact from the
 * kernel's codes and scale). kv = 2 -> c_kv = 1 -> code 127. Slot 0 or 1 of 2 is written,
 * the other keeps 7 / 0.5 / -3. */
static void test_known_value(void)
{
    const char *spec = "{\"op\":\"mla_prolog_quant\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"tokens\":1,\"h\":1,"
                       "\"q_lora\":1,\"heads\":1,\"kv_lora\":1,\"kv_group\":1,\"d_nope\":1,\"d_rope\":2,"
                       "\"block_size\":1,\"blocks\":2,\"slots\":\"append\"}," DIST_CONST "}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "known-value case", NULL, &d)) return;
    const double *slot = ug_case_input(&d.c, "slot_mapping")->values;
    size_t w = (size_t)slot[0], u = 1 - w;
    CHECK(d.a[O_Q8][0] == 127 && d.oracle.g[O_Q8][0] == 127, "q_norm = %g (oracle %g), want 127", d.a[O_Q8][0],
          d.oracle.g[O_Q8][0]);
    CHECK(fabs(d.oracle.gstar[O_QS][0] - 1.0 / 127) < 1e-15, "q_norm_scale* = %.17g, want 1/127",
          d.oracle.gstar[O_QS][0]);
    CHECK(d.oracle.gstar[O_QN][0] == 0.125 && d.a[O_QN][0] == 0.125, "q_nope_abs = %g (oracle %g), want 0.125",
          d.a[O_QN][0], d.oracle.gstar[O_QN][0]);
    CHECK(d.oracle.g[O_KC][w] == 127 && d.a[O_KC][w] == 127, "kv_cache[%zu] = %g, want 127", w, d.a[O_KC][w]);
    CHECK(d.oracle.gstar[O_KC][u] == 7 && d.a[O_KC][u] == 7 && d.oracle.gstar[O_KS][u] == 0.5 && d.a[O_KS][u] == 0.5 &&
              d.oracle.gstar[O_KR][2 * u] == -3 && d.a[O_KR][2 * u + 1] == -3,
          "untouched slot %zu changed", u);
    ug_exec_detail_free(&d);
}

typedef struct {
    long T, h, Lq, N, Lkv, dn, dr, g, S;
    int inter;
    const ug_exec_detail *d;
} naive_case;

static const double *in(const naive_case *n, const char *name) { return ug_case_input(&n->d->c, name)->values; }

static double rope(const double *v, const double *cs, const double *sn, long d, long i, int inter)
{
    long half = d / 2, p = i % half;
    if (inter) return i < half ? v[2 * p] * cs[i] - v[2 * p + 1] * sn[i] : v[2 * p + 1] * cs[i] + v[2 * p] * sn[i];
    return i < half ? v[i] * cs[i] - v[i + half] * sn[i] : v[i] * cs[i] + v[i - half] * sn[i];
}

/* v[0..n) <- bf16(v*rstd*gamma), v first rounded to bf16 (the golden's casts). */
static void norm_bf16(double *v, long n, const double *gamma, double eps)
{
    double ss = 0.0;
    for (long j = 0; j < n; j++) v[j] = ug_dtype_round(UG_DT_BF16, v[j]), ss += v[j] * v[j];
    double rs = 1.0 / sqrt(ss / (double)n + eps);
    for (long j = 0; j < n; j++) v[j] = ug_dtype_round(UG_DT_BF16, v[j] * rs * gamma[j]);
}

static double amax_of(const double *v, long n)
{
    double m = 0.0;
    for (long j = 0; j < n; j++) m = fmax(m, fabs(v[j]));
    return m;
}

/* want[o] (flat) for the 7 outputs; codes as value/kernel scale (pre-rounding). */
static void naive_prolog(const naive_case *n, const double *const *k, double eps, double **want)
{
    const double *x = in(n, "x"), *wdq = in(n, "w_dq"), *gq = in(n, "gamma_q"), *wuq = in(n, "w_uq"),
                 *sw = in(n, "w_uq_scale"), *wuk = in(n, "w_uk"), *wdkv = in(n, "w_dkv"), *gkv = in(n, "gamma_kv"),
                 *cs = in(n, "cos"), *sn = in(n, "sin"), *slot = in(n, "slot_mapping");
    long dq = n->dn + n->dr, W = n->Lkv + n->dr, G = n->Lkv / n->g;
    double cq[256], q[256], kv[640];
    memcpy(want[O_KC], in(n, "kv_cache_in"), (size_t)(n->S * n->Lkv) * sizeof(double));
    memcpy(want[O_KS], in(n, "kv_scale_in"), (size_t)(n->S * G) * sizeof(double));
    memcpy(want[O_KR], in(n, "kr_cache_in"), (size_t)(n->S * n->dr) * sizeof(double));
    for (long t = 0; t < n->T; t++) {
        for (long j = 0; j < n->Lq; j++) {
            cq[j] = 0.0;
            for (long i = 0; i < n->h; i++) cq[j] += x[t * n->h + i] * wdq[i * n->Lq + j];
        }
        norm_bf16(cq, n->Lq, gq, eps);
        want[O_QS][t] = amax_of(cq, n->Lq) / 127;
        for (long j = 0; j < n->Lq; j++) want[O_Q8][t * n->Lq + j] = cq[j] / k[O_QS][t];
        for (long hd = 0; hd < n->N; hd++) {
            for (long c = 0; c < dq; c++) {
                double s = 0.0;
                for (long j = 0; j < n->Lq; j++) s += k[O_Q8][t * n->Lq + j] * wuq[j * n->N * dq + hd * dq + c];
                q[c] = ug_dtype_round(UG_DT_BF16, s * k[O_QS][t] * sw[hd * dq + c]);
            }
            for (long l = 0; l < n->Lkv; l++) {
                double s = 0.0;
                for (long c = 0; c < n->dn; c++) s += q[c] * wuk[(hd * n->dn + c) * n->Lkv + l];
                want[O_QN][(t * n->N + hd) * n->Lkv + l] = s;
            }
            for (long i = 0; i < n->dr; i++)
                want[O_QR][(t * n->N + hd) * n->dr + i] =
                    rope(q + n->dn, cs + t * n->dr, sn + t * n->dr, n->dr, i, n->inter);
        }
        for (long j = 0; j < W; j++) {
            double s = 0.0;
            for (long i = 0; i < n->h; i++) s += x[t * n->h + i] * wdkv[i * W + j];
            kv[j] = ug_dtype_round(UG_DT_BF16, s);
        }
        norm_bf16(kv, n->Lkv, gkv, eps);
        if (slot[t] < 0) continue;
        long s = (long)slot[t];
        for (long gi = 0; gi < G; gi++) {
            want[O_KS][s * G + gi] = amax_of(kv + gi * n->g, n->g) / 127;
            for (long j = gi * n->g; j < (gi + 1) * n->g; j++) want[O_KC][s * n->Lkv + j] = kv[j] / k[O_KS][s * G + gi];
        }
        for (long i = 0; i < n->dr; i++)
            want[O_KR][s * n->dr + i] = rope(kv + n->Lkv, cs + t * n->dr, sn + t * n->dr, n->dr, i, n->inter);
    }
}

/* Every output element against the naive evaluation; the kernel's codes within one code of
 * the naive codes, its scales within 2^-7 (a legal bf16 flip of the largest element). */
static void test_differential(int inter)
{
    ug_exec_detail d;
    if (!opc_sim_passes_fmt(DIFF_SPEC_FMT, inter ? ROPE_INTERLEAVED : "", "differential case", &d)) return;
    naive_case n = {7, 24, 20, 3, 40, 12, 8, 8, 12, inter, &d};
    double *want[7];
    for (int o = 0; o < 7; o++) want[o] = calloc(d.c.out[o].numel, sizeof(double));
    naive_prolog(&n, (const double *const *)d.a, (float)1e-5, want);
    for (int o = 0; o < 7; o++) {
        size_t bad = 0, kbad = 0;
        CHECK(d.oracle.sel.n[o] == d.c.out[o].numel, "output %d: %zu of %zu checked", o, d.oracle.sel.n[o],
              d.c.out[o].numel);
        for (size_t i = 0; i < d.oracle.sel.n[o]; i++) {
            double w = want[o][d.oracle.sel.idx[o][i]], g = d.oracle.gstar[o][i], a = d.a[o][i];
            bad += fabs(g - w) > 1e-9 * (fabs(w) + 1e-3);
            if (o == O_Q8 || o == O_KC) kbad += fabs(a - w) > 1.0;        /* within one code */
            if (o == O_QS || o == O_KS) kbad += fabs(a - w) > 0x1p-7 * w; /* one bf16 flip */
        }
        CHECK(bad == 0, "output %s (inter %d): %zu elements differ from the naive evaluation", d.c.out[o].name, inter,
              bad);
        CHECK(kbad == 0, "output %s (inter %d): %zu kernel values off the naive codes/scales", d.c.out[o].name, inter,
              kbad);
        free(want[o]);
    }
    ug_exec_detail_free(&d);
}

/* edges: contiguous from the last slot of a block; zero x: every scale 0, every code 0. */
static void test_edges_and_zeros(void)
{
    const char *spec =
        "{\"op\":\"mla_prolog_quant\",\"dtype\":\"bf16\",\"seed\":3,\"params\":{\"tokens\":6,\"h\":8,"
        "\"q_lora\":8,\"heads\":1,\"kv_lora\":16,\"kv_group\":8,\"d_nope\":4,\"d_rope\":4,"
        "\"block_size\":4,\"blocks\":4,\"slots\":\"edges\"},"
        "\"dist\":{\"x\":" CONST("0") ",\"w_dq\":" NORMAL("0.1") ",\"gamma_q\":" NORMAL(
            "1") ",\"w_uq\":" RANDINT
                 ",\"w_uq_scale\":" CONST("0.001") ",\"w_uk\":" NORMAL("0.2") ",\"w_dkv\":" NORMAL(
                     "0.1") ",\"gamma_kv\":" NORMAL("1") ",\"kv_cache_in\":" RANDINT
                                                         ",\"kv_scale_in\":" CONST("0.25") ",\"kr_cache_in\":" NORMAL(
                                                             "1") "}}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "edges/zeros case", NULL, &d)) return;
    const double *s = ug_case_input(&d.c, "slot_mapping")->values;
    CHECK((long)s[0] % 4 == 3, "edges: slot[0] = %g is not the last slot of a block", s[0]);
    for (int t = 1; t < 6; t++) CHECK(s[t] == s[t - 1] + 1, "edges: slot[%d] = %g after %g", t, s[t], s[t - 1]);
    for (int t = 0; t < 6; t++) CHECK(d.a[O_QS][t] == 0, "zero x: q_norm_scale[%d] = %g", t, d.a[O_QS][t]);
    for (size_t i = 0; i < d.oracle.sel.n[O_Q8]; i++)
        CHECK(d.a[O_Q8][i] == 0, "zero x: q_norm[%zu] = %g", i, d.a[O_Q8][i]);
    for (int t = 0; t < 6; t++)
        for (int g = 0; g < 2; g++)
            CHECK(d.a[O_KS][(size_t)s[t] * 2 + g] == 0, "zero x: kv_scale of slot %g = %g", s[t],
                  d.a[O_KS][(size_t)s[t] * 2 + g]);
    ug_exec_detail_free(&d);
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0", "tokens"},
        {"\"heads\":129", "heads"},
        {"\"d_rope\":7", "d_rope"},
        {"\"kv_lora\":100,\"kv_group\":128", "kv_group"},
        {"\"tokens\":40,\"block_size\":16,\"blocks\":2", "blocks"},
        {"\"block_size\":300", "block_size"},
        {"\"slots\":\"sorted\"", "slots"},
        {"\"eps\":-1", "eps"},
    };
    OPC_EXPECT_REFUSED_EACH(
        "{\"op\":\"mla_prolog_quant\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s}," DIST_RANDOM "}", bad);
}

int main(void)
{
    test_known_value();
    for (int variant = 0; variant < 2; variant++) test_differential(variant);
    test_edges_and_zeros();
    test_bad_params();
    return check_done();
}
