/* test_oracle_fast.c — the ops' fast certified paths (oracles/mp/cert_inline.h) against
 * MPFR on every element of adversarial cases: exact values at a rounding tie of the output
 * dtype that double rounds onto the tie (only the bound can send them to MPFR), constant
 * inputs, zeros of both signs, huge, subnormal, NaN and infinite inputs. Each case must
 * give the correctly rounded exact value on every element (the fast path's own, or MPFR's
 * where its bound left the element undecided), and the tie cases must have been handed
 * to MPFR: with the fast path's bound forced to 0 this test fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen/case.h"
#include "oracles/oracle.h"

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The row and block paths an op takes on whole rows (every element selected) against its
 * element path: every other element alone (no whole row left) must get the same certified
 * value, bit for bit, and the same rounding as in the run on every element (all). */
static void scattered_matches_all(const char *what, const ug_case *c, const ug_oracle_opts *o,
                                  const ug_oracle_result *all)
{
    ug_selection sel = {.n_out = all->sel.n_out};
    for (int k = 0; k < sel.n_out; k++) {
        sel.idx[k] = malloc((all->sel.n[k] / 2 + 1) * sizeof(size_t));
        for (size_t i = 1; i < all->sel.n[k]; i += 2) sel.idx[k][sel.n[k]++] = all->sel.idx[k][i];
    }
    ug_oracle_result part;
    char err[512];
    CHECK(ug_oracle_run_sel(c, o, &sel, &part, err, sizeof err) == 0, "%s: scattered: %s", what, err);
    size_t differ = 0;
    for (int k = 0; k < sel.n_out; k++)
        for (size_t j = 0; j < part.sel.n[k]; j++) {
            size_t i = 2 * j + 1; /* its position in all */
            int same = same_bits(part.gstar[k][j], all->gstar[k][i]) && same_bits(part.g[k][j], all->g[k][i]);
            if (!same && differ < 5)
                fprintf(stderr, "%s: output %d element %zu: scattered %a / %a, all %a / %a\n", what, k, sel.idx[k][j],
                        part.gstar[k][j], part.g[k][j], all->gstar[k][i], all->g[k][i]);
            differ += !same;
        }
    CHECK(differ == 0, "%s: the element path differs from the whole-row path on %zu elements", what, differ);
    ug_oracle_result_free(&part);
    for (int k = 0; k < sel.n_out; k++) free(sel.idx[k]);
}

/* Runs spec's oracle in CERT (the fast path, MPFR for what it leaves) and in EXACT on every
 * element; every rounded value must agree, and at least min_mpfr elements must have gone
 * to MPFR. The CERT run on every other element must agree with it bit for bit
 * (scattered_matches_all). */
static void fast_matches_exact(const char *what, const char *spec, unsigned long min_mpfr)
{
    ug_spec s;
    ug_case c;
    char err[512];
    if (ug_spec_parse(spec, &s, err, sizeof err) || ug_case_build(&c, &s, err, sizeof err)) {
        CHECK(0, "%s: %s", what, err);
        return;
    }
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.naive = 0;
    o.device_bound = 0;
    ug_oracle_result fast, exact;
    CHECK(ug_oracle_run(&c, &o, &fast, err, sizeof err) == 0, "%s: cert: %s", what, err);
    scattered_matches_all(what, &c, &o, &fast);
    o.mode = UG_AR_EXACT;
    CHECK(ug_oracle_run(&c, &o, &exact, err, sizeof err) == 0, "%s: exact: %s", what, err);
    size_t differ = 0, n = 0;
    for (int k = 0; k < fast.sel.n_out; k++)
        for (size_t i = 0; i < fast.sel.n[k]; i++, n++) {
            double f = fast.g[k][i], x = exact.g[k][i];
            int same = f == x || (isnan(f) && isnan(x));
            if (!same && differ < 5)
                fprintf(stderr, "%s: output %d element %zu: fast %a, exact %a\n", what, k, fast.sel.idx[k][i], f, x);
            differ += !same;
        }
    CHECK(differ == 0 && n > 0, "%s: the fast path differs from MPFR on %zu of %zu elements", what, differ, n);
    CHECK(fast.n_fallback >= min_mpfr, "%s: %lu elements went to MPFR, at least %lu expected (the ties)", what,
          fast.n_fallback, min_mpfr);
    ug_oracle_result_free(&fast);
    ug_oracle_result_free(&exact);
    ug_case_free(&c);
}

/* Special values at the first elements of every input of an op named in inputs. */
#define SPECIALS(x)                                                                                                    \
    "{\"input\":\"" x "\",\"i\":0,\"v\":\"nan\"},{\"input\":\"" x "\",\"i\":1,\"v\":\"inf\"},"                         \
    "{\"input\":\"" x "\",\"i\":2,\"v\":\"-inf\"},{\"input\":\"" x "\",\"i\":3,\"v\":\"max\"},"                        \
    "{\"input\":\"" x "\",\"i\":4,\"v\":\"-max\"},{\"input\":\"" x "\",\"i\":5,\"v\":\"subnormal\"},"                  \
    "{\"input\":\"" x "\",\"i\":6,\"v\":\"zero\"},{\"input\":\"" x "\",\"i\":7,\"v\":\"-zero\"}"

/* m' = b1 m + (1 - b1) g with b1 = 1 - 2^-24, m = 1 + 2^-23, g = 2^-23 + 2^-46: exactly
 * 1 + 2^-24 + 2^-70, just above an fp32 tie; the double sum is the tie itself, which RNE
 * would round down. Elements 8.. of every input hold it (v' and w' are then ordinary). */
#define ADAMW_TIE                                                                                                      \
    "{\"input\":\"m\",\"i\":9,\"v\":1.0000001192092896},{\"input\":\"g\",\"i\":9,\"v\":1.1920930376163597e-07},"       \
    "{\"input\":\"m\",\"i\":10,\"v\":1.0000001192092896},{\"input\":\"g\",\"i\":10,\"v\":1.1920930376163597e-07}"

static void apply_adamw(void)
{
    const char *dist = "{\"w\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.5},\"g\":{\"kind\":\"normal\",\"mean\":0,"
                       "\"std\":0.1},\"m\":{\"kind\":\"normal\",\"mean\":0,\"std\":0.05},\"v\":{\"kind\":\"wide\","
                       "\"lo_exp\":-140,\"hi_exp\":10}}";
    const char *dts[2] = {"bf16", "fp32"};
    char spec[4096];
    for (int d = 0; d < 2; d++) {
        snprintf(spec, sizeof spec,
                 "{\"op\":\"apply_adamw\",\"dtype\":\"%s\",\"params\":{\"rows\":3,\"cols\":700,\"step\":3,"
                 "\"beta1\":0.9999999403953552,\"lr\":0.001},\"dist\":%s,\"seed\":11,\"inject\":[" SPECIALS(
                     "w") "," SPECIALS("g") "," SPECIALS("m") "," SPECIALS("v") "," ADAMW_TIE "]}",
                 dts[d], dist);
        char what[64];
        snprintf(what, sizeof what, "apply_adamw %s specials and ties", dts[d]);
        fast_matches_exact(what, spec, 2);
    }
    /* constant inputs: every element alike, exact products, a tie-free but exact sum */
    fast_matches_exact("apply_adamw constants",
                       "{\"op\":\"apply_adamw\",\"dtype\":\"bf16\",\"params\":{\"rows\":2,\"cols\":40,\"step\":1,"
                       "\"beta1\":0.5,\"beta2\":0.75,\"lr\":0.5,\"weight_decay\":0.25},\"dist\":{\"w\":{\"kind\":"
                       "\"const\",\"value\":1},\"g\":{\"kind\":\"const\",\"value\":0.5},\"m\":{\"kind\":\"const\","
                       "\"value\":-0.25},\"v\":{\"kind\":\"const\",\"value\":0}},\"seed\":1}",
                       0);
}

/* The specials case of op in bf16 and in fp16 (spec_fmt's one %s: the dtype), each as
 * fast_matches_exact(what, spec, 0) with what "op dtype specials". */
static void specials_match_in_bf16_fp16(const char *op, const char *spec_fmt)
{
    static const char *const dts[2] = {"bf16", "fp16"};
    char spec[4096], what[64];
    for (int d = 0; d < 2; d++) {
        snprintf(spec, sizeof spec, spec_fmt, dts[d]);
        snprintf(what, sizeof what, "%s %s specials", op, dts[d]);
        fast_matches_exact(what, spec, 0);
    }
}

/* One row of h = 5 whose sums x1 + x2 are (259, 1, 2, 187, 475)/256: their mean square is
 * exactly 1, so with eps = 2^-60 the double rstd is 1 and y = 259/256 (gamma 1) sits on the
 * bf16 tie between 1 + 2^-7 and 1 + 2^-6, while the exact y is just below it. */
#define RMSNORM_TIE                                                                                                    \
    "{\"input\":\"x1\",\"i\":0,\"v\":1},{\"input\":\"x2\",\"i\":0,\"v\":0.01171875},"                                  \
    "{\"input\":\"x1\",\"i\":1,\"v\":0.00390625},{\"input\":\"x1\",\"i\":2,\"v\":0.0078125},"                          \
    "{\"input\":\"x1\",\"i\":3,\"v\":0.73046875},{\"input\":\"x1\",\"i\":4,\"v\":1.8515625},"                          \
    "{\"input\":\"x2\",\"i\":4,\"v\":0.00390625}"

static void inplace_add_rmsnorm(void)
{
    fast_matches_exact("inplace_add_rmsnorm tie",
                       "{\"op\":\"inplace_add_rmsnorm\",\"dtype\":\"bf16\",\"params\":{\"rows\":1,\"h\":5,"
                       "\"eps\":8.673617379884035e-19},\"dist\":{\"x1\":{\"kind\":\"const\",\"value\":0},"
                       "\"x2\":{\"kind\":\"const\",\"value\":0},\"gamma\":{\"kind\":\"const\",\"value\":1}},"
                       "\"seed\":1,\"inject\":[" RMSNORM_TIE "]}",
                       1);
    specials_match_in_bf16_fp16(
        "inplace_add_rmsnorm", "{\"op\":\"inplace_add_rmsnorm\",\"dtype\":\"%s\",\"params\":{\"rows\":6,\"h\":300},"
                               "\"dist\":{\"x1\":{\"kind\":\"wide\",\"lo_exp\":-30,\"hi_exp\":10},\"x2\":{\"kind\":"
                               "\"normal\",\"mean\":0,\"std\":1},\"gamma\":{\"kind\":\"normal\",\"mean\":0,\"std\":2}},"
                               "\"seed\":5,\"inject\":[" SPECIALS("x1") "," SPECIALS("x2") "]}");
}

/* y[s=1, 0] = x[16] cos[16] - x[17] sin[16] = (87/64)(3/4) + 2^-60 = 261/256 + 2^-60: the
 * double sum is 261/256, the bf16 tie between 1 + 2/128 and 1 + 3/128, which RNE rounds
 * down; the exact value rounds up. (Given tables [B, 1, 4, 16]: row s = 1 starts at 16.)
 * The tiny term is 2^-60, not smaller: EXACT sums at its working precision (128 bits), so
 * a term more than ~128 bits below the tie would be lost there too. */
#define ROPE_TIE                                                                                                       \
    "{\"input\":\"x\",\"i\":16,\"v\":1.359375},{\"input\":\"x\",\"i\":17,\"v\":9.313225746154785e-10},"                \
    "{\"input\":\"cos\",\"i\":16,\"v\":0.75},{\"input\":\"sin\",\"i\":16,\"v\":-9.313225746154785e-10}"

static void interleave_rope(void)
{
    const char *dts[2] = {"bf16", "fp16"};
    char spec[4096], what[64];
    for (int d = 0; d < 2; d++) {
        snprintf(spec, sizeof spec,
                 "{\"op\":\"interleave_rope\",\"dtype\":\"%s\",\"params\":{\"b\":2,\"n\":1,\"s\":4,\"d\":16,"
                 "\"tables\":\"given\",\"cs_s\":4},\"dist\":{\"x\":{\"kind\":\"wide\",\"lo_exp\":-30,\"hi_exp\":10},"
                 "\"cos\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"sin\":{\"kind\":\"normal\",\"mean\":0,"
                 "\"std\":1}},\"seed\":3,\"inject\":[" SPECIALS("x") "," SPECIALS("cos") "," SPECIALS("sin") "%s]}",
                 dts[d], d == 0 ? "," ROPE_TIE : "");
        snprintf(what, sizeof what, "interleave_rope %s specials%s", dts[d], d == 0 ? " and a tie" : "");
        fast_matches_exact(what, spec, d == 0 ? 1 : 0);
    }
}

/* out[0] = h_post h_out + h_res x = (87/64)(3/4) + 2^-30 2^-30 = 261/256 + 2^-60 (the
 * other streams' h_res are 0): the double sum is the bf16 tie 261/256, as in ROPE_TIE. */
#define MHC_TIE                                                                                                        \
    "{\"input\":\"h_post\",\"i\":0,\"v\":1.359375},{\"input\":\"h_out\",\"i\":0,\"v\":0.75},"                          \
    "{\"input\":\"h_res\",\"i\":0,\"v\":9.313225746154785e-10},{\"input\":\"x\",\"i\":0,\"v\":9.313225746154785e-10}"

static void mhc_post(void)
{
    fast_matches_exact("mhc_post tie",
                       "{\"op\":\"mhc_post\",\"dtype\":\"bf16\",\"params\":{\"t\":2,\"n\":2,\"d\":8},\"dist\":{"
                       "\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"h_out\":{\"kind\":\"normal\",\"mean\":0,"
                       "\"std\":1},\"h_res\":{\"kind\":\"const\",\"value\":0},\"h_post\":{\"kind\":\"normal\","
                       "\"mean\":0,\"std\":1}},\"seed\":2,\"inject\":[" MHC_TIE "]}",
                       1);
    fast_matches_exact("mhc_post specials",
                       "{\"op\":\"mhc_post\",\"dtype\":\"bf16\",\"params\":{\"t\":3,\"n\":4,\"d\":40},\"dist\":{"
                       "\"x\":{\"kind\":\"wide\",\"lo_exp\":-30,\"hi_exp\":10},\"h_out\":{\"kind\":\"normal\","
                       "\"mean\":0,\"std\":1},\"h_res\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"h_post\":{"
                       "\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":4,\"inject\":[" SPECIALS("x") "," SPECIALS(
                           "h_out") "," SPECIALS("h_res") "," SPECIALS("h_post") "]}",
                       0);
}

/* One q row of d = 8: (7/4, 3/4, 1/2, 1/4, 1/4, 2, 0, 0) has mean square exactly 1, so with
 * eps = 2^-60 the double rstd is 1 while the exact one is just below. gamma_q[0] = 37/64 and
 * max_pos 1 (position 0: cos 1, sin 0): y[0] = 259/256 rstd, whose double is the bf16 tie
 * 259/256 (RNE: up, to 260/256) and whose exact value rounds down. */
#define RMS_ROPE_TIE                                                                                                   \
    "{\"input\":\"q\",\"i\":0,\"v\":1.75},{\"input\":\"q\",\"i\":1,\"v\":0.75},"                                       \
    "{\"input\":\"q\",\"i\":2,\"v\":0.5},{\"input\":\"q\",\"i\":3,\"v\":0.25},"                                        \
    "{\"input\":\"q\",\"i\":4,\"v\":0.25},{\"input\":\"q\",\"i\":5,\"v\":2},"                                          \
    "{\"input\":\"gamma_q\",\"i\":0,\"v\":0.578125}"

static void rms_norm_rope(void)
{
    fast_matches_exact(
        "rms_norm_rope tie",
        "{\"op\":\"rms_norm_rope\",\"dtype\":\"bf16\",\"params\":{\"t\":1,\"hq\":1,\"hk\":1,\"d\":8,"
        "\"max_pos\":1,\"eps\":8.673617379884035e-19},\"dist\":{\"q\":{\"kind\":\"const\",\"value\":0},\"k\":{"
        "\"kind\":\"normal\",\"mean\":0,\"std\":1},\"gamma_q\":{\"kind\":\"const\",\"value\":1},"
        "\"gamma_k\":{\"kind\":\"const\",\"value\":1}},\"seed\":1,\"inject\":[" RMS_ROPE_TIE "]}",
        1);
    specials_match_in_bf16_fp16(
        "rms_norm_rope",
        "{\"op\":\"rms_norm_rope\",\"dtype\":\"%s\",\"params\":{\"t\":3,\"hq\":2,\"hk\":1,\"d\":32},"
        "\"dist\":{\"q\":{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":10},\"k\":{\"kind\":\"normal\","
        "\"mean\":0,\"std\":1},\"gamma_q\":{\"kind\":\"normal\",\"mean\":0,\"std\":2},\"gamma_k\":{"
        "\"kind\":\"normal\",\"mean\":1,\"std\":0.5}},\"seed\":6,\"inject\":[" SPECIALS("q") "," SPECIALS("k") "]}");
}

/* Masked and capped rows with special, huge and tiny logits (exp of a nonzero value is never
 * a rounding tie, so no tie row: the bound is the engine's own, see arith.c). */
static void attn_softmax(void)
{
    const char *masks[3] = {"none", "causal", "padding"};
    char spec[4096], what[64];
    for (int m = 0; m < 3; m++) {
        snprintf(spec, sizeof spec,
                 "{\"op\":\"attn_softmax\",\"dtype\":\"%s\",\"params\":{\"rows\":6,\"cols\":40,\"scale\":0.125,"
                 "\"cap\":%s,\"mask\":\"%s\"},\"dist\":{\"x\":{\"kind\":\"wide\",\"lo_exp\":-30,\"hi_exp\":12}},"
                 "\"seed\":%d,\"inject\":[" SPECIALS("x") "]}",
                 m == 1 ? "bf16" : "fp32", m == 2 ? "30" : "0", masks[m], 7 + m);
        snprintf(what, sizeof what, "attn_softmax %s mask", masks[m]);
        fast_matches_exact(what, spec, 0);
    }
}

/* Decode attention rows (attn_rows.c): a row with every value finite takes its columns'
 * weighted sums in one pass (row_sums); a value inf or NaN in some key sends its row column
 * by column (column_special). Both against MPFR and the element path. */
static void gqa_decode_attn(void)
{
    fast_matches_exact(
        "gqa_decode_attn",
        "{\"op\":\"gqa_decode_attn\",\"dtype\":\"bf16\",\"params\":{\"batch\":2,\"ctx\":70,\"dim\":64,"
        "\"group\":2,\"heads_kv\":2},\"dist\":{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{"
        "\"kind\":\"normal\",\"mean\":0,\"std\":1},\"v\":{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":4}},"
        "\"seed\":9,\"inject\":[" SPECIALS("v") "]}",
        0);
}

int main(void)
{
    apply_adamw();
    inplace_add_rmsnorm();
    interleave_rope();
    mhc_post();
    rms_norm_rope();
    attn_softmax();
    gqa_decode_attn();
    return check_done();
}
