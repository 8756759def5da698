/* test_op_mla_prolog.c — mla_prolog beyond the generic plan test: a hand-computed case on
 * constant inputs, a differential check of every element of all four outputs against an
 * independent naive double evaluation of the whole prolog in both RoPE layouts (its own
 * RMSNorm, head split, RoPE and slot scatter), the slot_mapping invariants of each layout, and bad
 * params.
 *
 * The naive evaluation shares only the decoded inputs with the oracle, so a wrong head
 * offset into W_uq, a transposed W_uk, a RoPE pairing or a cache row mix-up in either
 * shows here; it applies the spec's bf16 roundings of c_q, q and kv with ug_dtype_round. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

#define DIST_BODY(xk, wdkv)                                                                                            \
    "\"dist\":{\"x\":" xk ",\"w_dq\":{\"kind\":\"const\",\"value\":2},\"gamma_q\":{\"kind\":\"const\",\"value\":1},"   \
    "\"w_uq\":{\"kind\":\"const\",\"value\":0.5},\"w_uk\":{\"kind\":\"const\",\"value\":0.25},\"w_dkv\":" wdkv ","     \
    "\"gamma_kv\":{\"kind\":\"const\",\"value\":1},\"kv_cache_in\":{\"kind\":\"const\",\"value\":7},"                  \
    "\"kr_cache_in\":{\"kind\":\"const\",\"value\":-3}}"
#define NORMAL(s) "{\"kind\":\"normal\",\"mean\":0,\"std\":" s "}"
/* clang-format off */
#define DIST_RANDOM                                                                                                    \
    "\"dist\":{\"x\":" NORMAL("1") ",\"w_dq\":" NORMAL("0.1") ",\"gamma_q\":" NORMAL("1")                          \
    ",\"w_uq\":" NORMAL("0.2") ",\"w_uk\":" NORMAL("0.2") ",\"w_dkv\":" NORMAL("0.1") ",\"gamma_kv\":" NORMAL("1")  \
    ",\"kv_cache_in\":" NORMAL("1") ",\"kr_cache_in\":" NORMAL("1") "}"
/* clang-format on */

/* The differential case; its %s: ROPE_INTERLEAVED, or nothing for the default layout. */
#define DIFF_SPEC_FMT                                                                                                  \
    "{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":11,\"params\":{\"tokens\":7,\"h\":24,"                         \
    "\"q_lora\":20,\"heads\":3,\"kv_lora\":40,\"d_nope\":12,\"d_rope\":8,\"block_size\":4,"                            \
    "\"blocks\":3,\"slots\":\"padded\"%s}," DIST_RANDOM "}"
#define ROPE_INTERLEAVED ",\"rope_layout\":\"interleaved_to_half\""

/* x = 1, W_dq = 2: c_q = bf16(2/sqrt(4+eps)) = 1; q = 0.5 per column; q_nope_abs = 0.5*0.25
 * = 0.125 exactly. kv = 2 -> c_kv* = 2/sqrt(4+eps) = 0.99999988 (bf16 1). Slot 0 of 2
 * is written, slot 1 keeps the cache input 7 / -3. */
static void test_known_value(void)
{
    const char *spec =
        "{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"tokens\":1,\"h\":1,"
        "\"q_lora\":1,\"heads\":1,\"kv_lora\":1,\"d_nope\":1,\"d_rope\":2,\"block_size\":1,\"blocks\":2,"
        "\"slots\":\"append\"}," DIST_BODY("{\"kind\":\"const\",\"value\":1}", "{\"kind\":\"const\",\"value\":2}") "}";
    ug_exec_detail d;
    if (!opc_sim_passes(spec, "known-value case", NULL, &d)) return;
    double eps = (float)1e-6, ckv = 2.0 / sqrt(4.0 + eps);
    const double *slot = ug_case_input(&d.c, "slot_mapping")->values;
    size_t w = (size_t)slot[0], u = 1 - w;
    CHECK(d.oracle.gstar[0][0] == 0.125, "q_nope_abs* = %a, want 0x1p-3", d.oracle.gstar[0][0]);
    CHECK(fabs(d.oracle.gstar[2][w] - ckv) < 1e-15, "kv_cache*[%zu] = %.17g, want %.17g", w, d.oracle.gstar[2][w], ckv);
    CHECK(d.oracle.g[2][w] == 1.0, "kv_cache[%zu] rounds to %g, want 1", w, d.oracle.g[2][w]);
    CHECK(d.oracle.gstar[2][u] == 7.0 && d.oracle.gstar[3][2 * u] == -3.0 && d.oracle.gstar[3][2 * u + 1] == -3.0,
          "untouched slot %zu changed", u);
    ug_exec_detail_free(&d);
}

typedef struct {
    long T, h, Lq, N, Lkv, dn, dr, S;
    const ug_case *c;
    int inter; /* rope_layout interleaved_to_half */
} naive_case;

static const double *in(const naive_case *n, const char *name) { return ug_case_input(n->c, name)->values; }

/* RoPE element i of v[0..d) with table rows cs, sn: RoPE_half, or with inter
 * (rope_layout interleaved_to_half) the pair (v[2p], v[2p+1]) rotated onto (p, p + d/2). */
static double rope(const double *v, const double *cs, const double *sn, long d, long i, int inter)
{
    long half = d / 2, p = i % half;
    if (inter) return i < half ? v[2 * p] * cs[i] - v[2 * p + 1] * sn[i] : v[2 * p + 1] * cs[i] + v[2 * p] * sn[i];
    return i < half ? v[i] * cs[i] - v[i + half] * sn[i] : v[i] * cs[i] + v[i - half] * sn[i];
}

/* Naive double evaluation of the four outputs (flat, row-major) into want[0..3]. */
static void naive_prolog(const naive_case *n, double eps, double **want)
{
    const double *x = in(n, "x"), *wdq = in(n, "w_dq"), *gq = in(n, "gamma_q"), *wuq = in(n, "w_uq"),
                 *wuk = in(n, "w_uk"), *wdkv = in(n, "w_dkv"), *gkv = in(n, "gamma_kv"), *cs = in(n, "cos"),
                 *sn = in(n, "sin"), *slot = in(n, "slot_mapping");
    long dq = n->dn + n->dr, W = n->Lkv + n->dr;
    double cq[256], q[256], kv[640];
    memcpy(want[2], in(n, "kv_cache_in"), (size_t)(n->S * n->Lkv) * sizeof(double));
    memcpy(want[3], in(n, "kr_cache_in"), (size_t)(n->S * n->dr) * sizeof(double));
    for (long t = 0; t < n->T; t++) {
        double ss = 0.0;
        for (long j = 0; j < n->Lq; j++) {
            cq[j] = 0.0;
            for (long k = 0; k < n->h; k++) cq[j] += x[t * n->h + k] * wdq[k * n->Lq + j];
            cq[j] = ug_dtype_round(UG_DT_BF16, cq[j]); /* the spec's bf16 q_a_proj */
            ss += cq[j] * cq[j];
        }
        double rs = 1.0 / sqrt(ss / (double)n->Lq + eps);
        for (long j = 0; j < n->Lq; j++) cq[j] = ug_dtype_round(UG_DT_BF16, cq[j] * rs * gq[j]);
        for (long hd = 0; hd < n->N; hd++) {
            for (long c = 0; c < dq; c++) {
                double s = 0.0;
                for (long j = 0; j < n->Lq; j++) s += cq[j] * wuq[j * n->N * dq + hd * dq + c];
                q[c] = ug_dtype_round(UG_DT_BF16, s);
            }
            for (long l = 0; l < n->Lkv; l++) {
                double s = 0.0;
                for (long c = 0; c < n->dn; c++) s += q[c] * wuk[(hd * n->dn + c) * n->Lkv + l];
                want[0][(t * n->N + hd) * n->Lkv + l] = s;
            }
            for (long i = 0; i < n->dr; i++)
                want[1][(t * n->N + hd) * n->dr + i] =
                    rope(q + n->dn, cs + t * n->dr, sn + t * n->dr, n->dr, i, n->inter);
        }
        ss = 0.0;
        for (long j = 0; j < W; j++) {
            double s = 0.0;
            for (long k = 0; k < n->h; k++) s += x[t * n->h + k] * wdkv[k * W + j];
            kv[j] = ug_dtype_round(UG_DT_BF16, s);
            if (j < n->Lkv) ss += kv[j] * kv[j];
        }
        if (slot[t] < 0) continue;
        long s = (long)slot[t];
        rs = 1.0 / sqrt(ss / (double)n->Lkv + eps);
        for (long j = 0; j < n->Lkv; j++) want[2][s * n->Lkv + j] = kv[j] * rs * gkv[j];
        for (long i = 0; i < n->dr; i++)
            want[3][s * n->dr + i] = rope(kv + n->Lkv, cs + t * n->dr, sn + t * n->dr, n->dr, i, n->inter);
    }
}

/* Both RoPE layouts: the default half and the reference suite's interleaved_to_half. */
static void test_differential(int inter)
{
    ug_exec_detail d;
    if (!opc_sim_passes_fmt(DIFF_SPEC_FMT, inter ? ROPE_INTERLEAVED : "", "differential case", &d)) return;
    naive_case n = {7, 24, 20, 3, 40, 12, 8, 12, &d.c, inter};
    double *want[4];
    for (int o = 0; o < 4; o++) want[o] = calloc(d.c.out[o].numel, sizeof(double));
    naive_prolog(&n, (float)1e-6, want);
    for (int o = 0; o < 4; o++) {
        size_t bad = 0;
        CHECK(d.oracle.sel.n[o] == d.c.out[o].numel, "output %d: %zu of %zu checked", o, d.oracle.sel.n[o],
              d.c.out[o].numel);
        for (size_t k = 0; k < d.oracle.sel.n[o]; k++) {
            double w = want[o][d.oracle.sel.idx[o][k]], g = d.oracle.gstar[o][k];
            bad += fabs(g - w) > 1e-9 * (fabs(w) + 1e-3);
        }
        CHECK(bad == 0, "output %s (inter %d): %zu elements differ from the naive double evaluation", d.c.out[o].name,
              inter, bad);
        free(want[o]);
    }
    ug_exec_detail_free(&d);
}

/* slot_mapping: in range, distinct, append contiguous, padded -1 exactly at t % 4 == 3. */
static void test_slots(void)
{
    const char *modes[] = {"append", "random", "padded"};
    for (int m = 0; m < 3; m++) {
        char spec[2048];
        snprintf(spec, sizeof spec,
                 "{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":%d,\"params\":{\"tokens\":13,\"h\":4,\"q_lora\":4,"
                 "\"heads\":1,\"kv_lora\":4,\"d_nope\":4,\"d_rope\":4,\"block_size\":4,\"blocks\":5,\"slots\":\"%s\"}"
                 "," DIST_RANDOM "}",
                 m + 20, modes[m]);
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "slots=%s: %s", modes[m], r.message);
        if (!d.have_case) continue;
        const double *s = ug_case_input(&d.c, "slot_mapping")->values;
        int seen[20] = {0};
        for (int t = 0; t < 13; t++) {
            int pad = m == 2 && t % 4 == 3;
            CHECK(pad ? s[t] == -1 : (s[t] >= 0 && s[t] < 20 && !seen[(int)s[t]]), "slots=%s: slot[%d] = %g", modes[m],
                  t, s[t]);
            if (!pad && s[t] >= 0 && s[t] < 20) seen[(int)s[t]] = 1;
            if (m == 0 && t) CHECK(s[t] == s[t - 1] + 1, "append: slot[%d] = %g after %g", t, s[t], s[t - 1]);
        }
        ug_exec_detail_free(&d);
    }
}

static void test_bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":0", "tokens"},
        {"\"tokens\":2,\"d_rope\":7", "d_rope"},
        {"\"tokens\":2,\"slots\":\"sorted\"", "slots"},
        {"\"tokens\":40,\"block_size\":16,\"blocks\":2", "blocks"},
        {"\"tokens\":2,\"eps\":-1", "eps"},
        {"\"tokens\":2,\"heads\":\"many\"", "heads"},
    };
    OPC_EXPECT_REFUSED_EACH("{\"op\":\"mla_prolog\",\"dtype\":\"bf16\",\"seed\":1,\"params\":{%s}," DIST_RANDOM "}",
                            bad);
}

int main(void)
{
    test_known_value();
    for (int variant = 0; variant < 2; variant++) test_differential(variant);
    test_slots();
    test_bad_params();
    return check_done();
}
