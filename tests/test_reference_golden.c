/* test_reference_golden.c — the reference tests' own goldens that the `reference` standard
 * judges against (oracles/attention/reference_golden.c, page_attention.c's fp8 golden,
 * glm_reference_golden.c),
 * checked against naive evaluations written here from the tests' formulas: element by
 * element from the case's tensors, no grouping by (batch, head) block, no staging, no
 * vector loops, no gathering helpers; the same fp32 operations in the same order, so the two
 * must agree bit for bit. The cases have batch elements of different lengths, causal rows
 * (some seeing no key), two heads or kv heads, MTP rows and several key tiles. Then: the
 * golden is not the exact value under another name (the tests' casts move some elements by
 * an output ulp or more), and on a reference test's own shape the correct sim kernel fails
 * the reference rule against the exact value alone but passes it with the golden. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "indexer_golden_naive.h"
#include "op_check.h"
#include "oracles/oracle.h"
#include "oracles/verdict.h"
#include "run/exec.h"

#define NORMAL01(x) "\"" x "\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.1}"
#define FA_SPEC(op, params)                                                                                            \
    "{\"v\":1,\"op\":\"" op "\",\"dtype\":\"bf16\",\"seed\":11,\"params\":" params                                     \
    ",\"dist\":{" NORMAL01("q") "," NORMAL01("k") "," NORMAL01("v") "," NORMAL01("do") "}}"
#define FA_PARAMS "{\"seqlens\":\"5:9,12:7,3\",\"heads\":2,\"head_dim\":20,\"causal\":1}"
#define U1(x) "\"" x "\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}"
#define RANDI8(x) "\"" x "\":{\"kind\":\"randint\",\"lo\":-128,\"hi\":127}"
#define U448(x) "\"" x "\":{\"kind\":\"uniform\",\"lo\":-448,\"hi\":448}"
#define USCALE(x) "\"" x "\":{\"kind\":\"uniform\",\"lo\":0.00215,\"hi\":0.00224}"
#define PA_SPEC(p_tile)                                                                                                \
    "{\"v\":1,\"op\":\"page_attention\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{\"context_lens\":\"40,17\","         \
    "\"heads_kv\":2,\"group\":2,\"head_dim\":24,\"block_size\":8,\"q_per_step\":2,\"quant\":\"fp8\"" p_tile "},"       \
    "\"dist\":{" U448("q") "," USCALE("q_scale") "," U448("key_cache") "," USCALE("key_scale") "," U448(               \
        "value_cache") "," USCALE("value_scale") "}}"

static double in(const ug_case *c, const char *name, size_t i) { return ug_case_input(c, name)->values[i]; }
static float rnd(ug_dtype dt, float x) { return (float)ug_dtype_round(dt, x); }

/* ---- flash attention: the tests' softmax row, naively ---- */

typedef struct {
    long batch, heads, dim, cq[8], ck[8];
    int causal;
    float scale;
} fa_shape;

static void fa_shape_of(const ug_case *c, fa_shape *s)
{
    const ug_tensor *cq = ug_case_input(c, "cu_seqlens_q"), *ck = ug_case_input(c, "cu_seqlens_k");
    s->batch = (long)cq->numel - 1, s->heads = ug_case_input(c, "q")->shape[1],
    s->dim = ug_case_input(c, "q")->shape[2];
    for (long b = 0; b <= s->batch; b++) s->cq[b] = (long)cq->values[b], s->ck[b] = (long)ck->values[b];
    s->causal = (int)ug_p_int(&c->params, "causal");
    s->scale = (float)(1.0 / sqrt((double)s->dim)); /* the scale param's default, fp32 */
}

/* Query token t, head h: its batch element *b and keys [ck[b], ck[b] + n) it sees. */
static long fa_keys(const fa_shape *s, long t, long *b)
{
    for (*b = 0; s->cq[*b + 1] <= t; (*b)++) {}
    long lq = s->cq[*b + 1] - s->cq[*b], lk = s->ck[*b + 1] - s->ck[*b], i = t - s->cq[*b];
    long n = s->causal ? i + 1 + lk - lq : lk;
    return n < 0 ? 0 : n > lk ? lk : n;
}

/* The weights p_j / l of row (t, h) over its n keys, fp32 as torch.softmax; returns n. */
static long fa_softmax(const ug_case *c, const fa_shape *s, long t, long h, float *w)
{
    long b, n = fa_keys(s, t, &b), HD = s->heads * s->dim;
    float m = -INFINITY, l = 0.0f;
    for (long j = 0; j < n; j++) {
        float dot = 0.0f;
        for (long d = 0; d < s->dim; d++)
            dot += (float)in(c, "q", (size_t)(t * HD + h * s->dim + d)) *
                   (float)in(c, "k", (size_t)((s->ck[b] + j) * HD + h * s->dim + d));
        w[j] = dot * s->scale;
        m = fmaxf(m, w[j]);
    }
    for (long j = 0; j < n; j++) l += w[j] = expf(w[j] - m);
    for (long j = 0; j < n; j++) w[j] /= l;
    return n;
}

/* The exact values (r->g) and the op's golden of every element of the outputs whose rule
 * declares one (refg[k], else NULL), as the judge (run/exec.c) forms it where needed. */
static int golden_of(ug_case *c, ug_oracle_result *r, double **refg)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.naive = o.device_bound = 0;
    char err[256] = "";
    int rc = ug_oracle_run(c, &o, r, err, sizeof err);
    CHECK(rc == 0, "oracle: %s", err);
    for (int k = 0; !rc && k < r->sel.n_out; k++) {
        refg[k] = NULL;
        for (int i = 0; i < c->def->n_outputs; i++)
            if (c->def->outputs[i].reference_golden && !strcmp(c->def->outputs[i].name, ug_case_judged_name(c, k)))
                refg[k] = malloc((r->sel.n[k] + 1) * sizeof *refg[k]);
    }
    if (!rc) rc = c->def->reference_golden(c, &r->sel, refg, err, sizeof err);
    CHECK(rc == 0, "golden: %s", err);
    return rc;
}

static void goldens_free(ug_oracle_result *r, double **refg)
{
    for (int k = 0; k < r->sel.n_out; k++) free(refg[k]);
    ug_oracle_result_free(r);
}

/* Builds spec's case (no kernel run) and its exact values and goldens (golden_of). 0, or -1
 * after a failed CHECK (c then freed). */
static int built_with_goldens(const char *spec, ug_case *c, ug_oracle_result *r, double **refg)
{
    if (opc_build_case(spec, c)) return -1;
    if (golden_of(c, r, refg)) return ug_case_free(c), -1;
    return 0;
}

/* Runs spec with the sim kernel (every element kept in d), then the exact values and the
 * goldens over its outputs (golden_of). 0, or -1 after a failed CHECK (d then freed). */
static int sim_with_goldens(const char *spec, ug_exec_detail *d, ug_oracle_result *r, double **refg)
{
    ug_result res;
    if (opc_run(spec, "sim", &res, d) != 0) {
        CHECK(0, "the case runs: %s", spec);
        return -1;
    }
    if (golden_of(&d->c, r, refg)) return ug_exec_detail_free(d), -1;
    return 0;
}

static void forward(void)
{
    ug_case c;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (built_with_goldens(FA_SPEC("flash_attention_mha", FA_PARAMS), &c, &r, refg)) return;
    fa_shape s;
    fa_shape_of(&c, &s);
    size_t D = (size_t)s.dim, HD = (size_t)(s.heads * s.dim), differ = 0, nan = 0, moved = 0;
    float w[64];
    CHECK(refg[0] && !refg[1], "o has the test's golden, lse none");
    for (size_t i = 0; refg[0] && i < r.sel.n[0]; i++) {
        size_t idx = r.sel.idx[0][i];
        long t = (long)(idx / HD), h = (long)(idx / D % (size_t)s.heads), b, n = fa_softmax(&c, &s, t, h, w);
        fa_keys(&s, t, &b);
        float o = 0.0f;
        for (long j = 0; j < n; j++)
            o += rnd(UG_DT_BF16, w[j]) * (float)in(&c, "v", (size_t)(s.ck[b] + j) * HD + (size_t)h * D + idx % D);
        double want = n ? ug_dtype_round(UG_DT_BF16, o) : NAN, got = refg[0][i];
        differ += !(want == got || (isnan(want) && isnan(got)));
        nan += isnan(got);
        moved += want != r.g[0][i];
    }
    CHECK(r.sel.n[0] == c.out[0].numel && differ == 0, "forward golden: %zu of %zu elements differ from the naive one",
          differ, r.sel.n[0]);
    CHECK(nan == 5 * 2 * D, "rows that see no key have no golden (%zu NaN; 5 rows x 2 heads x D expected)", nan);
    CHECK(moved > 0, "the bf16 cast of P/l moves %zu elements off the exact value's rounding", moved);
    goldens_free(&r, refg);
    ug_case_free(&c);
}

static void backward(void)
{
    ug_case c;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (built_with_goldens(FA_SPEC("flash_attention_mha_grad", FA_PARAMS), &c, &r, refg)) return;
    fa_shape s;
    fa_shape_of(&c, &s);
    size_t D = (size_t)s.dim, HD = (size_t)(s.heads * s.dim), differ = 0, checked = 0;
    long tq = s.cq[s.batch];
    /* per (row, head): P and dS over the row's keys */
    float *P = malloc((size_t)(tq * s.heads) * 64 * sizeof *P), *dS = malloc((size_t)(tq * s.heads) * 64 * sizeof *dS);
    for (long t = 0; t < tq; t++)
        for (long h = 0; h < s.heads; h++) {
            float *p = P + (t * s.heads + h) * 64, *ds = dS + (t * s.heads + h) * 64, delta = 0.0f;
            long b, n = fa_softmax(&c, &s, t, h, p);
            fa_keys(&s, t, &b);
            for (size_t d = 0; d < D; d++)
                delta += (float)in(&c, "o", (size_t)t * HD + (size_t)h * D + d) *
                         (float)in(&c, "do", (size_t)t * HD + (size_t)h * D + d);
            for (long j = 0; j < n; j++) {
                float dp = 0.0f;
                for (size_t d = 0; d < D; d++)
                    dp += (float)in(&c, "do", (size_t)t * HD + (size_t)h * D + d) *
                          (float)in(&c, "v", (size_t)(s.ck[b] + j) * HD + (size_t)h * D + d);
                ds[j] = rnd(UG_DT_BF16, p[j] * (dp - delta));
                p[j] = rnd(UG_DT_BF16, p[j]);
            }
        }
    const char *names[3] = {"dq", "dk", "dv"};
    for (int o = 0; o < 3; o++) {
        int k = ug_case_judged_find(&c, names[o]);
        CHECK(k >= 0 && refg[k], "%s has the test's golden", names[o]);
        for (size_t i = 0; k >= 0 && refg[k] && i < r.sel.n[k]; i++) {
            size_t idx = r.sel.idx[k][i], d = idx % D;
            long tok = (long)(idx / HD), h = (long)(idx / D % (size_t)s.heads), b;
            float acc = 0.0f;
            if (o == 0) { /* dq: sum over the row's keys (15 of the 20 rows see one) */
                long n = fa_keys(&s, tok, &b);
                for (long j = 0; j < n; j++)
                    acc += dS[(tok * s.heads + h) * 64 + j] *
                           (float)in(&c, "k", (size_t)(s.ck[b] + j) * HD + (size_t)h * D + d);
                if (!n) continue; /* no golden there */
            } else {              /* dk, dv: sum over the rows that see key tok, in row order */
                for (b = 0; s.ck[b + 1] <= tok; b++) {}
                for (long t = s.cq[b]; t < s.cq[b + 1]; t++) {
                    long bb, n = fa_keys(&s, t, &bb);
                    if (tok - s.ck[b] >= n) continue;
                    const float *w = (o == 1 ? dS : P) + (t * s.heads + h) * 64;
                    acc += w[tok - s.ck[b]] * (float)in(&c, o == 1 ? "q" : "do", (size_t)t * HD + (size_t)h * D + d);
                }
            }
            double want = ug_dtype_round(UG_DT_BF16, o == 2 ? acc : acc * s.scale);
            differ += want != refg[k][i];
            checked++;
        }
    }
    CHECK(checked == 15 * 40 + 2 * 19 * 40 && differ == 0,
          "backward golden: %zu of %zu elements differ from the naive one", differ, checked);
    free(P), free(dS);
    goldens_free(&r, refg);
    ug_case_free(&c);
}

/* ---- page_attention quant fp8: pfa_flash_torch, naively ---- */

/* tile: tokens per P quantisation tile (the p_tile param; 8 = one block), spec the case. */
static void paged_fp8(const char *spec, long tile, size_t tiles_want)
{
    ug_case c;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (built_with_goldens(spec, &c, &r, refg)) return;
    const long lens[2] = {40, 17}, hkv = 2, group = 2, hq = 4, D = 24, bs = 8, sq = 2;
    const ug_tensor *bt = ug_case_input(&c, "block_tables");
    float scale = (float)(1.0 / sqrt((double)D));
    size_t differ = 0, tiles_max = 0;
    for (size_t i = 0; i < r.sel.n[0]; i++) {
        size_t idx = r.sel.idx[0][i];
        long row = (long)idx / D, d = (long)idx % D, h = row % hq, tok = row / hq, b = tok / sq, g = h / group;
        long n = lens[b] - sq + 1 + tok % sq; /* MTP: row i sees the tokens up to itself */
        float mu = -INFINITY, su = 0.0f, acc = 0.0f;
        for (long j0 = 0, ti = 0; j0 < n; j0 += tile, ti++) {
            long nt = n - j0 < tile ? n - j0 : tile;
            float s[16], mt = -INFINITY, sl = 0.0f, emax = 0.0f;
            size_t slot[16];
            for (long j = 0; j < nt; j++) {
                long t = j0 + j, blk = (long)bt->values[b * bt->shape[1] + t / bs];
                slot[j] = ((size_t)blk * (size_t)bs + (size_t)(t % bs)) * (size_t)hkv + (size_t)g;
                double dot = 0.0; /* the dequantised operands: code * scale, exact in double */
                for (long e = 0; e < D; e++)
                    dot += in(&c, "q", (size_t)row * D + e) * in(&c, "q_scale", (size_t)row) *
                           in(&c, "key_cache", slot[j] * D + e) * in(&c, "key_scale", slot[j]);
                s[j] = (float)dot * scale;
                mt = fmaxf(mt, s[j]);
            }
            for (long j = 0; j < nt; j++) sl += s[j] = expf(s[j] - mt), emax = fmaxf(emax, s[j]);
            float qs = 448.0f / emax, dq = 1.0f / qs;
            double pv = 0.0;
            for (long j = 0; j < nt; j++)
                pv += (double)(float)ug_dtype_round(UG_DT_E4M3, s[j] * qs) * in(&c, "value_cache", slot[j] * D + d) *
                      in(&c, "value_scale", ((size_t)b * hkv + g) * D + d);
            float mm = (float)pv * dq, mn = fmaxf(mu, mt);
            float t2 = j0 ? expf(mu - mn) : 0.0f, t4 = j0 ? expf(mt - mn) : 1.0f;
            su = t2 * su + t4 * sl;
            acc = j0 ? acc * t2 + mm * t4 : mm;
            mu = mn;
            tiles_max = (size_t)ti + 1 > tiles_max ? (size_t)ti + 1 : tiles_max;
        }
        differ += ug_dtype_round(UG_DT_BF16, acc / su) != refg[0][i];
    }
    CHECK(r.sel.n[0] == c.out[0].numel && differ == 0,
          "fp8 golden, %ld-token tiles: %zu of %zu elements differ from "
          "the naive one",
          tile, differ, r.sel.n[0]);
    CHECK(tiles_max == tiles_want, "rows span up to %zu key tiles (%zu expected: 40 tokens, %ld a tile)", tiles_max,
          tiles_want, tile);
    goldens_free(&r, refg);
    ug_case_free(&c);
}

/* ---- glm_attention_fusion o: attn_golden.py's ifa_flash_torch, naively ---- */

#define GLMF_SPEC                                                                                                                                                                                                                   \
    "{\"v\":1,\"op\":\"glm_attention_fusion\",\"dtype\":\"bf16\",\"seed\":4,\"params\":{\"actual_seqs\":"                                                                                                                           \
    "\"40,17,64\",\"hidden\":64,\"q_heads\":4,\"kv_heads\":2,\"head_dim\":16,\"rotary_dim\":8,\"block_size\":4},\"dist\":{" U1("x") "," U1("residual") "," U1("norm_weight") "," U1("norm_bias") "," U1("scale_reciprocal") "," U1( \
        "offset") ",\"qkv_weight\":{\"kind\":\"randint\",\"lo\":0,"                                                                                                                                                                 \
                  "\"hi\":127},\"quant_bias\":{\"kind\":\"randint\",\"lo\":0,\"hi\":127}," U1("deq_scale") "," U1("q_norm_weight") "," U1(                                                                                          \
                      "q_norm_bias") "," U1("k_norm_weight") "," U1("k_norm_bias") "," U1("cos") "," U1("sin") "," U1("key_cache") "," U1("value_cache") "}}"

static const ug_tensor *out_of(const ug_case *c, const char *name)
{
    return &c->out[ug_case_judged_tensor(c, ug_case_judged_find(c, name))];
}

typedef struct {
    const ug_tensor *q, *kc, *vc, *bt;
} glmf_view;

/* Element idx of o as the test's loop forms it, written out naively: key tiles of `tile`
 * tokens, rows of lens[t] keys of blocks of 4 tokens, 4 q heads over 2 kv heads of 16. */
static double glmf_naive(const glmf_view *v, const long *lens, size_t idx, long tile)
{
    const long hq = 4, group = 2, D = 16, bs = 4;
    long row = (long)idx / D, t = row / hq, g = row % hq / group, n = lens[t];
    float scale = (float)(1.0 / sqrt((double)D)), m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (long j0 = 0; j0 < n; j0 += tile) {
        long nt = n - j0 < tile ? n - j0 : tile;
        float s[64], mt = -INFINITY, sl = 0.0f;
        size_t slot[64];
        for (long j = 0; j < nt; j++) {
            long blk = (long)ug_tload(v->bt, (size_t)(t * v->bt->shape[1] + (j0 + j) / bs));
            slot[j] = ((size_t)(blk * bs + (j0 + j) % bs) * 2 + (size_t)g) * (size_t)D;
            double dot = 0.0;
            for (long e = 0; e < D; e++)
                dot += ug_tload(v->q, (size_t)(row * D + e)) * ug_tload(v->kc, slot[j] + (size_t)e);
            s[j] = (float)dot * scale;
            mt = fmaxf(mt, s[j]);
        }
        float mn = fmaxf(m, mt), u = j0 ? expf(m - mn) : 0.0f, pv = 0.0f;
        for (long j = 0; j < nt; j++) {
            float p = expf(s[j] - mn);
            sl += p;
            pv += rnd(UG_DT_BF16, p) * (float)ug_tload(v->vc, slot[j] + idx % (size_t)D);
        }
        l = l * u + sl;
        acc = j0 ? acc * u + pv : pv;
        m = mn;
    }
    return ug_dtype_round(UG_DT_BF16, acc / l);
}

/* The golden over the kernel's own q and written caches against the test's loop written out
 * element by element: 16-key tiles (4 blocks of 4), rows of 40, 17 and 64 keys (3, 2 and 4
 * tiles, the first two ending in a partial one). The check tells tilings apart: the same
 * loop over one block (the sim kernel's tiles) or the whole row differs from it. */
static void glm_fusion(void)
{
    ug_exec_detail d;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (sim_with_goldens(GLMF_SPEC, &d, &r, refg)) return;
    const long lens[3] = {40, 17, 64};
    glmf_view v = {out_of(&d.c, "q"), out_of(&d.c, "key_cache_out"), out_of(&d.c, "value_cache_out"),
                   ug_case_input(&d.c, "block_tables")};
    int k = ug_case_judged_find(&d.c, "o");
    size_t differ = 0, moved = 0, other_tile[2] = {0, 0};
    CHECK(k >= 0 && refg[k] && r.sel.n[k] == 3 * 4 * 16, "o has the test's golden on its 192 elements");
    for (size_t i = 0; k >= 0 && refg[k] && i < r.sel.n[k]; i++) {
        size_t idx = r.sel.idx[k][i];
        double want = glmf_naive(&v, lens, idx, 16);
        differ += want != refg[k][i];
        moved += want != r.g[k][i];
        other_tile[0] += glmf_naive(&v, lens, idx, 4) != refg[k][i];
        other_tile[1] += glmf_naive(&v, lens, idx, 64) != refg[k][i];
    }
    CHECK(differ == 0, "glm_attention_fusion golden: %zu of %zu elements differ from the naive one", differ,
          r.sel.n[k]);
    CHECK(moved > 0, "the bf16 cast of the unnormalised P moves %zu elements off the exact value's rounding", moved);
    CHECK(other_tile[0] > 0 && other_tile[1] > 0, "4-key and 64-key tiles give another golden (%zu, %zu elements)",
          other_tile[0], other_tile[1]);
    goldens_free(&r, refg);
    ug_exec_detail_free(&d);
}

/* ---- lightning_indexer_prolog_quant weights: _indexer_compute_weights, naively ---- */

#define LIPQ_SPEC                                                                                                                                                                                                           \
    "{\"v\":1,\"op\":\"lightning_indexer_prolog_quant\",\"dtype\":\"bf16\",\"seed\":3,\"params\":{\"tokens\":4,"                                                                                                            \
    "\"hidden\":512,\"q_lora\":64,\"heads\":8,\"d\":32,\"rope\":16,\"blocks\":2,\"block_size\":8,\"tables\":"                                                                                                               \
    "\"given\",\"hadamard\":\"given\"},\"dist\":{" U1("cos") "," U1("sin") "," U1("hadamard_q") "," U1("hadamard_k") ",\"ln_beta\":{\"kind\":\"const\",\"value\":0},\"ln_gamma\":{\"kind\":\"const\",\"value\":1}," RANDI8( \
        "q_norm") "," U1("q_norm_scale") "," U1("w_k") "," U1("w_proj") "," RANDI8("w_qb") "," U1("w_qb_scale") "," U1("x") "}}"

/* The test's weights of token t, head h: fp32 x.W_proj, bf16, times 8^-1/2 and 32^-1/2 in fp32, fp16. */
static double lipq_weight(const ug_case *c, size_t t, size_t h)
{
    double dot = 0.0;
    for (size_t j = 0; j < 512; j++) dot += in(c, "x", t * 512 + j) * in(c, "w_proj", j * 8 + h);
    float b = rnd(UG_DT_BF16, (float)dot);
    return ug_dtype_round(UG_DT_FP16, b * (float)(1 / sqrt(8.0)) * (float)(1 / sqrt(32.0)));
}

/* The golden against the naive one; then a kernel that makes the test's bf16 cast (the sim
 * kernel's weights replaced by the test's) passes `reference` with the golden, which the
 * exact value alone would fail on most elements. */
static void indexer_weights(void)
{
    ug_case c;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (built_with_goldens(LIPQ_SPEC, &c, &r, refg)) return;
    int k = ug_case_judged_find(&c, "weights");
    size_t differ = 0;
    CHECK(k >= 0 && refg[k] && r.sel.n[k] == 32, "weights has the test's golden on its 32 elements");
    for (size_t i = 0; k >= 0 && refg[k] && i < r.sel.n[k]; i++)
        differ += lipq_weight(&c, r.sel.idx[k][i] / 8, r.sel.idx[k][i] % 8) != refg[k][i];
    CHECK(differ == 0, "weights golden: %zu of 32 elements differ from the naive one", differ);
    goldens_free(&r, refg);
    ug_case_free(&c);

    ug_result res;
    ug_exec_detail d;
    if (opc_run(LIPQ_SPEC, "sim", &res, &d) != 0) {
        CHECK(0, "the indexer case runs");
        return;
    }
    ug_tensor *w = &d.c.out[ug_case_judged_tensor(&d.c, ug_case_judged_find(&d.c, "weights"))];
    for (size_t i = 0; i < w->numel; i++) ug_dtype_store(UG_DT_FP16, w->data, i, lipq_weight(&d.c, i / 8, i % 8));
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    ug_result again;
    CHECK(ug_exec_judge(&d.c, &o, &again, NULL) == 0, "judged again");
    int kw = ug_case_judged_find(&d.c, "weights");
    const char *thr = again.out[kw].thresholds[UG_STD_REFERENCE];
    const char *fe = strstr(thr, "\"failed_exact\":");
    CHECK(
        again.out[kw].verdict[UG_STD_REFERENCE] == UG_V_PASS && fe && atoi(fe + 15) > 16,
        "weights with the test's bf16 cast pass reference with its golden, most would fail against the exact value: %s",
        thr);
    ug_exec_detail_free(&d);
}

/* The scales' goldens against the naive ones (every q row; the 4 written k slots, the other
 * 12 none); then a kernel that makes the test's casts (the sim kernel's scales replaced by the
 * test's) passes `reference` on both with the goldens, where against the exact value alone
 * most would fail. */
static void indexer_scales(void)
{
    ug_exec_detail d;
    ug_oracle_result r;
    double *refg[UG_MAX_TENSORS] = {0};
    if (sim_with_goldens(LIPQ_SPEC, &d, &r, refg)) return;
    int kq = ug_case_judged_find(&d.c, "q_scale"), kk = ug_case_judged_find(&d.c, "k_scale");
    const ug_tensor *slots = ug_case_input(&d.c, "slot_mapping");
    ign_case g = {&d.c, 32, 16, 512, (float)1e-6, ug_case_input(&d.c, "q_norm"), ug_case_input(&d.c, "q_norm_scale")};
    size_t differ = 0, none = 0;
    CHECK(kq >= 0 && kk >= 0 && refg[kq] && refg[kk] && r.sel.n[kq] == 32 && r.sel.n[kk] == 16,
          "q_scale and k_scale have the test's goldens on all their elements");
    for (size_t i = 0; refg[kq] && i < r.sel.n[kq]; i++)
        differ += ign_q_scale(&g, r.sel.idx[kq][i] / 8, r.sel.idx[kq][i] % 8) != refg[kq][i];
    for (size_t i = 0; refg[kk] && i < r.sel.n[kk]; i++) {
        long t = -1;
        for (size_t u = 0; u < 4; u++)
            if ((size_t)ug_tload(slots, u) == r.sel.idx[kk][i]) t = (long)u;
        if (t < 0)
            none += isnan(refg[kk][i]);
        else
            differ += ign_k_scale(&g, (size_t)t) != refg[kk][i];
    }
    CHECK(differ == 0 && none == 12,
          "scale goldens: %zu of 36 differ from the naive ones; %zu of 12 unwritten slots "
          "have none",
          differ, none);
    goldens_free(&r, refg);

    ug_tensor *q = &d.c.out[ug_case_judged_tensor(&d.c, kq)], *k = &d.c.out[ug_case_judged_tensor(&d.c, kk)];
    for (size_t i = 0; i < 32; i++) ug_dtype_store(UG_DT_FP16, q->data, i, ign_q_scale(&g, i / 8, i % 8));
    for (size_t t = 0; t < 4; t++) ug_dtype_store(UG_DT_FP16, k->data, (size_t)ug_tload(slots, t), ign_k_scale(&g, t));
    ug_exec_opts o;
    ug_exec_opts_default(&o);
    o.oracle.sample = 0;
    ug_result again;
    CHECK(ug_exec_judge(&d.c, &o, &again, NULL) == 0, "judged again");
    for (int j = 0; j < 2; j++) {
        int kj = j ? kk : kq;
        const char *thr = again.out[kj].thresholds[UG_STD_REFERENCE], *fe = strstr(thr, "\"failed_exact\":");
        CHECK(again.out[kj].verdict[UG_STD_REFERENCE] == UG_V_PASS && fe && atoi(fe + 15) > (j ? 2 : 16),
              "%s with the test's casts passes reference with its golden, most fail against the exact value: %s",
              j ? "k_scale" : "q_scale", thr);
    }
    ug_exec_detail_free(&d);
}

/* On test_flash_attention_mha.py::test_05's shape, the correct sim kernel fails the reference
 * rule against the exact value alone (the bf16 cast of P/l in 32-key rows) and passes it with
 * the test's golden, as that test's kernel passes against it. */
static void why_the_golden(void)
{
    const char *spec = "{\"v\":1,\"op\":\"flash_attention_mha\",\"dtype\":\"bf16\",\"seed\":42,\"params\":{\"seqlens\":"
                       "\"32,32,32,32,32,32,32,32\",\"heads\":8,\"head_dim\":64},\"dist\":{\"q\":{\"kind\":\"normal\","
                       "\"mean\":0.5,\"std\":1},\"k\":{\"kind\":\"normal\",\"mean\":0.5,\"std\":1},\"v\":{\"kind\":"
                       "\"normal\",\"mean\":0.5,\"std\":1}}}";
    ug_result res;
    ug_exec_detail d;
    if (opc_run(spec, "sim", &res, &d) != 0) {
        CHECK(0, "test_05's case runs");
        return;
    }
    CHECK(res.verdict[UG_STD_REFERENCE] == UG_V_PASS, "sim passes test_05's rule against its golden: %s",
          res.out[0].thresholds[UG_STD_REFERENCE]);
    ug_metrics m;
    const ug_oracle_result *o = &d.oracle;
    ug_metrics_compute(UG_DT_BF16, o->sel.n[0], o->sel.idx[0], d.c.out[0].numel, d.a[0], o->gstar[0], NULL, &m);
    const ug_op_def *def = ug_op_def_get(UG_OP_FLASH_ATTENTION_MHA);
    ug_judged j = {"o",    UG_DT_BF16,  &def->outputs[0], 0,    o->sel.n[0], o->sel.idx[0],
                   d.a[0], o->gstar[0], o->g[0],          NULL, &m};
    char thr[UG_THR_LEN];
    CHECK(ug_standard_judge(UG_STD_REFERENCE, &j, thr, sizeof thr) == UG_V_FAIL,
          "against the exact value alone the same output fails test_05's rule: %s", thr);
    ug_exec_detail_free(&d);
}

int main(void)
{
    forward();
    backward();
    paged_fp8(PA_SPEC(""), 8, 5);
    paged_fp8(PA_SPEC(",\"p_tile\":16"), 16, 3);
    glm_fusion();
    indexer_weights();
    indexer_scales();
    why_the_golden();
    return check_done();
}
