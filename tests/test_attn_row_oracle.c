/* test_attn_row_oracle.c — the attention oracles' whole-row path gives the numbers their
 * element-by-element path gives, bit for bit, in every arithmetic.
 *
 * ug_dot_nd_cols (oracles/mp/arith.h) must equal ug_dot_nd column by column (value and
 * error term) in CERT, NAIVE (bf16, fp16), DEVICE, F64, EXACT and MPFR_SEQ, on weights with
 * and without error terms, column counts across its 64-column chunks, and values that
 * underflow the naive dtype. Then flash_attention_mha's and flash_attention_mha_grad's
 * oracles, which take the row path where most of a row is selected: every element checked
 * (sample all: the row path) must equal the same elements checked one column at a time (one
 * element per row: the element path), in the certified run (CERT with its MPFR fallback,
 * the naive benchmark, the device bound) and in EXACT, on cases with causal rows that see
 * no key, -inf keys (dead weights) and non-finite values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ar_check.h"
#include "check.h"
#include "core/philox.h"
#include "core/spec.h"
#include "gen/case.h"
#include "oracles/attention/flash_attention_common.h"
#include "oracles/mp/arith.h"
#include "oracles/mp/naive_f32.h"
#include "op_check.h"
#include "oracles/oracle.h"

/* A value of about unit size with a random sign, or (one in eight) a tiny one that the
 * naive dtypes round to a subnormal or zero, or (one in sixteen) zero. */
static double draw(uint32_t seed, uint32_t i)
{
    uint32_t w[4];
    ug_rng_words(seed, 7, i, 0, w);
    double m = ug_rng_unit(w[0], w[1]) * (w[2] & 1u ? -1.0 : 1.0);
    if ((w[3] & 15u) == 0) return 0.0;
    if ((w[3] & 7u) == 1) return ldexp(m, -20 - (int)(w[2] % 12u));
    return m;
}

/* ug_dot_nd_cols against ug_dot_nd on every column, in one arithmetic. exact_x: weights
 * without error terms (the CERT path that may prove a sum exact). */
static void check_cols(ug_ar_mode mode, ug_dtype naive_dt, size_t n, size_t ncols, size_t ldv, int exact_x)
{
    ug_ar *ar = ug_ar_new(mode, 128, naive_dt);
    ug_num *x = malloc(n * sizeof *x), *rows = malloc(ncols * sizeof *rows);
    double *V = malloc(n * ldv * sizeof *V);
    for (size_t i = 0; i < n * ldv; i++) V[i] = draw(1, (uint32_t)i);
    for (size_t i = 0; i < n; i++) { /* exp of a difference: weights in (0, 1] with an error term */
        double s = draw(2, (uint32_t)i);
        x[i] = exact_x ? ug_c(ar, s) : ug_exp(ar, ug_sub(ar, ug_c(ar, s), ug_c(ar, 1.0)));
    }
    ug_dot_nd_cols(ar, x, V, ldv, n, ncols, rows);
    size_t differ = 0;
    for (size_t c = 0; c < ncols; c++) {
        size_t mark = ug_ar_mark(ar);
        differ += !same_num(mode, rows[c], ug_dot_nd(ar, x, V + c, ldv, n));
        ug_ar_release(ar, mark);
    }
    CHECK(differ == 0, "mode %d naive %s, n %zu, %zu columns (ldv %zu)%s: %zu columns differ from ug_dot_nd", (int)mode,
          ug_dtype_name(naive_dt), n, ncols, ldv, exact_x ? ", exact weights" : "", differ);
    free(x), free(rows), free(V);
    ug_ar_free(ar);
}

static void check_dot_nd_cols(void)
{
    static const ug_ar_mode modes[] = {UG_AR_CERT, UG_AR_NAIVE, UG_AR_DEVICE, UG_AR_F64, UG_AR_EXACT, UG_AR_MPFR_SEQ};
    static const size_t cols[][2] = {{1, 3}, {8, 8}, {63, 70}, {64, 64}, {65, 200}, {130, 130}};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++)
            for (int exact_x = 0; exact_x < 2; exact_x++) {
                check_cols(modes[m], UG_DT_BF16, 37, cols[k][0], cols[k][1], exact_x);
                if (modes[m] == UG_AR_NAIVE) check_cols(modes[m], UG_DT_FP16, 37, cols[k][0], cols[k][1], exact_x);
            }
    check_cols(UG_AR_CERT, UG_DT_BF16, 0, 5, 5, 0); /* no terms: an exact zero per column */
    check_cols(UG_AR_NAIVE, UG_DT_BF16, 0, 5, 5, 0);
}

/* ug_dot_d_tile against ug_dot_d on every (row, key) in one arithmetic: m rows of D values
 * against n keys held transposed (ldk >= n), keys across the 128-key chunks and the 8-key
 * vector blocks. narrow: bf16 values (CERT's exactness tracking can prove sums exact), 2:
 * values of the naive dtype (NAIVE's fp32 lanes at m >= 4, naive_f32.h; with a few of
 * magnitude 300, whose fp16 products overflow), or wide doubles; with zeros, tiny values
 * and (special) infinities and NaNs among them. */
static void check_scores(ug_ar_mode mode, ug_dtype naive_dt, size_t m, size_t D, size_t n, int narrow, int special)
{
    int plain = special < 0; /* no zeros or tiny values: the naive vector blocks stay on the bits */
    ug_ar *ar = ug_ar_new(mode, 128, naive_dt);
    size_t ldk = n + 3;
    double *Q = malloc(m * D * sizeof *Q), *Kt = malloc(D * ldk * sizeof *Kt);
    ug_num *out = malloc(m * n * sizeof *out);
    for (size_t i = 0; i < m * D; i++) Q[i] = draw(3, (uint32_t)i);
    for (size_t i = 0; i < D * ldk; i++) Kt[i] = draw(4, (uint32_t)i);
    for (size_t i = 0; plain && i < m * D; i++) Q[i] = fabs(Q[i]) < 0x1p-10 ? 0.75 : Q[i];
    for (size_t i = 0; plain && i < D * ldk; i++) Kt[i] = fabs(Kt[i]) < 0x1p-10 ? -0.625 : Kt[i];
    if (narrow == 2 && n > 40) Q[D + 2] = 300.0, Kt[2 * ldk + 33] = -300.0, Kt[2 * ldk + 40] = 300.0;
    if (narrow == 2 && n > 50 && D > 5) /* 1.5 x 43680 = 65520: fp16's top binade, a tie that rounds to inf */
        Q[D + 5] = 1.5, Kt[5 * ldk + 50] = 43680.0;
    ug_dtype nd = narrow == 2 ? naive_dt : UG_DT_BF16;
    for (size_t i = 0; narrow && i < m * D; i++) Q[i] = ug_dtype_round(nd, Q[i]);
    for (size_t i = 0; narrow && i < D * ldk; i++) Kt[i] = ug_dtype_round(nd, Kt[i]);
    if (special > 0 && n > 9) Kt[2 * ldk + 5] = INFINITY, Kt[ldk + 9] = NAN, Q[1] = 0x1p600, Kt[ldk + 3] = 0x1p600;
    if (narrow && !plain && n > 17) Kt[17] = 0x1p-60; /* a product far below the others: that sum is inexact */
    ug_dot_d_tile(ar, Q, D, m, Kt, ldk, D, n, out, n);
    size_t differ = dot_d_differ(ar, mode, out, n, m, n, Q, D, Kt, ldk, D);
    CHECK(differ == 0, "mode %d naive %s, %zu rows x %zu keys, D %zu%s%s: %zu scores differ from ug_dot_d", (int)mode,
          ug_dtype_name(naive_dt), m, n, D,
          narrow == 2 ? ", dtype inputs"
          : narrow    ? ", bf16 inputs"
                      : "",
          special > 0 ? ", specials"
          : plain     ? ", no zeros"
                      : "",
          differ);
    free(Q), free(Kt), free(out);
    ug_ar_free(ar);
}

/* ug_dot_nd_cols_tile against ug_dot_nd per row and column: rows with their own term counts
 * (0, short, across the 128-row chunks), one row of exact weights among them; narrow:
 * every weight and value one of the naive dtype's (NAIVE's fp32 lanes, naive_f32.h), a few
 * of magnitude 300 (fp16 products that overflow). */
static void check_cols_tile(ug_ar_mode mode, ug_dtype naive_dt, size_t ncols, int plain, int narrow)
{
    enum { M = 5 };
    static const size_t n[M] = {300, 0, 7, 129, 256};
    size_t ldv = ncols + 2, ldx = 300;
    ug_ar *ar = ug_ar_new(mode, 128, naive_dt);
    ug_num *X = malloc(M * ldx * sizeof *X), *out = malloc(M * ncols * sizeof *out);
    double *V = malloc(ldx * ldv * sizeof *V);
    for (size_t i = 0; i < ldx * ldv; i++) V[i] = draw(5, (uint32_t)i);
    for (size_t i = 0; plain && i < ldx * ldv; i++) V[i] = fabs(V[i]) < 0x1p-10 ? 0.875 : V[i]; /* on the bits */
    for (size_t i = 0; i < M * ldx; i++) {
        double s = draw(6, (uint32_t)i);
        s = plain && fabs(s) < 0x1p-10 ? 0.5 : s;
        X[i] = i / ldx == 2 ? ug_c(ar, s) : ug_exp(ar, ug_sub(ar, ug_c(ar, s), ug_c(ar, 1.0)));
        if (narrow) X[i] = ug_c(ar, ug_dtype_round(naive_dt, i % 97 == 5 ? 300.0 : fabs(s)));
    }
    for (size_t i = 0; narrow && i < ldx * ldv; i++) V[i] = ug_dtype_round(naive_dt, i % 89 == 7 ? -300.0 : V[i]);
    if (narrow && ncols > 3) /* 1.5 x 43680 = 65520: fp16's top binade, a tie that rounds to inf */
        X[10] = ug_c(ar, 1.5), V[10 * ldv + 3] = 43680.0;
    ug_dot_nd_cols_tile(ar, X, ldx, n, M, V, ldv, ncols, out, ncols);
    size_t differ = 0;
    for (size_t r = 0; r < M; r++)
        for (size_t c = 0; c < ncols; c++) {
            size_t mark = ug_ar_mark(ar);
            differ += !same_num(mode, out[r * ncols + c], ug_dot_nd(ar, X + r * ldx, V + c, ldv, n[r]));
            ug_ar_release(ar, mark);
        }
    CHECK(differ == 0, "mode %d naive %s, %zu columns%s%s: %zu tile sums differ from ug_dot_nd", (int)mode,
          ug_dtype_name(naive_dt), ncols, plain ? ", no zeros" : "", narrow ? ", dtype values" : "", differ);
    free(X), free(out), free(V);
    ug_ar_free(ar);
}

static void check_tiles(void)
{
    static const ug_ar_mode modes[] = {UG_AR_CERT, UG_AR_NAIVE, UG_AR_DEVICE, UG_AR_F64, UG_AR_EXACT, UG_AR_MPFR_SEQ};
    static const size_t dims[][2] = {{3, 5}, {64, 200}, {65, 131}, {128, 37}, {8, 300}};
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
        ug_dtype dts[2] = {UG_DT_BF16, UG_DT_FP16};
        for (int t = 0; t < (modes[k] == UG_AR_NAIVE ? 2 : 1); t++) {
            for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
                for (int narrow = 0; narrow < 2; narrow++)
                    check_scores(modes[k], dts[t], 3, dims[d][0], dims[d][1], narrow, 0);
            check_scores(modes[k], dts[t], 2, 16, 40, 0, 1);
            check_scores(modes[k], dts[t], 2, 16, 40, 1, 1);
            check_scores(modes[k], dts[t], 3, 64, 45, 1, -1);
            check_scores(modes[k], dts[t], 3, 128, 150, 0, -1);
            for (int special = -1; special <= 1; special++) { /* 6 rows of the dtype's values */
                check_scores(modes[k], dts[t], 6, 128, 300, 2, special);
                check_scores(modes[k], dts[t], 5, 16, 45, 2, special);
            }
            for (int plain = 0; plain < 2; plain++)
                for (int narrow = 0; narrow < 2; narrow++) {
                    check_cols_tile(modes[k], dts[t], 130, plain, narrow);
                    check_cols_tile(modes[k], dts[t], 5, plain, narrow);
                    check_cols_tile(modes[k], dts[t], 64, plain, narrow);
                }
        }
    }
}

static int run_sel(const ug_case *c, const ug_oracle_opts *o, const ug_selection *sel, ug_oracle_result *r)
{
    char err[256] = "";
    int rc = ug_oracle_run_sel(c, o, sel, r, err, sizeof err);
    CHECK(rc == 0, "oracle: %s", err);
    return rc == 0;
}

/* Every selected element of the full run equals the same element evaluated in a run that
 * selects only its column (one element per row of ncols[o] columns). */
static void compare_paths(const ug_case *c, const ug_oracle_opts *o, const size_t *ncols, const char *what)
{
    ug_selection all;
    ug_oracle_result full;
    if (ug_selection_build(c, 0, &all)) return;
    if (!run_sel(c, o, &all, &full)) {
        ug_selection_free(&all);
        return;
    }
    size_t differ = 0, compared = 0, maxc = 1;
    for (int k = 0; k < all.n_out; k++) maxc = ncols[k] > maxc ? ncols[k] : maxc; /* ncols: one per output */
    for (size_t col = 0; col < maxc; col++) {
        ug_selection one = {.n_out = all.n_out};
        for (int k = 0; k < all.n_out; k++) {
            one.idx[k] = malloc((all.n[k] ? all.n[k] : 1) * sizeof(size_t));
            for (size_t i = 0; i < all.n[k]; i++)
                if (all.idx[k][i] % ncols[k] == col) one.idx[k][one.n[k]++] = all.idx[k][i];
        }
        ug_oracle_result part;
        if (run_sel(c, o, &one, &part)) {
            for (int k = 0; k < one.n_out; k++)
                for (size_t i = 0; i < one.n[k]; i++) {
                    size_t at = (size_t)ug_selection_find(&all, k, one.idx[k][i]);
                    int same = same_bits(full.gstar[k][at], part.gstar[k][i]) && same_bits(full.g[k][at], part.g[k][i]);
                    if (o->naive) same = same && same_bits(full.bench[k][at], part.bench[k][i]);
                    if (o->device_bound) same = same && same_bits(full.bound[k][at], part.bound[k][i]);
                    if (!same && differ++ < 3)
                        fprintf(stderr, "%s: output %d element %zu: row path %a %a, element path %a %a\n", what, k,
                                one.idx[k][i], full.gstar[k][at], full.g[k][at], part.gstar[k][i], part.g[k][i]);
                    compared++;
                }
            ug_oracle_result_free(&part);
        }
        ug_selection_free(&one);
    }
    size_t total = 0;
    for (int k = 0; k < all.n_out; k++) total += all.n[k];
    CHECK(compared == total, "%s: %zu of %zu elements compared", what, compared, total);
    CHECK(differ == 0, "%s: %zu of %zu elements differ between the row and element paths", what, differ, compared);
    ug_oracle_result_free(&full);
    ug_selection_free(&all);
}

/* The tile path (ug_fa_tiles = 1) against the row path (0) on every element of selection
 * sel, every array the judge sees: exact values, their rounding, naive values, device bounds. */
static void compare_tiles(const ug_case *c, const ug_selection *sel, const char *what)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.naive = o.device_bound = 1;
    ug_oracle_result r[2];
    int ok = 1;
    for (int t = 0; t < 2; t++) {
        ug_fa_tiles = 1 - t;
        ok &= run_sel(c, &o, sel, &r[t]);
    }
    ug_fa_tiles = 1;
    if (!ok) return;
    size_t differ = 0, compared = 0;
    for (int k = 0; k < sel->n_out; k++)
        for (size_t i = 0; i < sel->n[k]; i++, compared++) {
            int same = same_bits(r[0].gstar[k][i], r[1].gstar[k][i]) && same_bits(r[0].g[k][i], r[1].g[k][i]) &&
                       same_bits(r[0].bench[k][i], r[1].bench[k][i]) && same_bits(r[0].bound[k][i], r[1].bound[k][i]);
            if (!same && differ++ < 3)
                fprintf(stderr, "%s: output %d element %zu: tiles %a %a %a %a, rows %a %a %a %a\n", what, k,
                        sel->idx[k][i], r[0].gstar[k][i], r[0].g[k][i], r[0].bench[k][i], r[0].bound[k][i],
                        r[1].gstar[k][i], r[1].g[k][i], r[1].bench[k][i], r[1].bound[k][i]);
        }
    CHECK(differ == 0 && compared > 0, "%s: %zu of %zu elements differ between the tile and row paths", what, differ,
          compared);
    ug_oracle_result_free(&r[0]);
    ug_oracle_result_free(&r[1]);
}

/* Keeps every step-th selected element of each output: a sparse selection, whose few dk
 * keys make the gradient's tile path take dP only where it is read (tile_dp). */
static void thin_selection(ug_selection *sel, size_t step)
{
    for (int k = 0; k < sel->n_out; k++) {
        size_t m = 0;
        for (size_t i = 0; i < sel->n[k]; i += step) sel->idx[k][m++] = sel->idx[k][i];
        sel->n[k] = m;
    }
}

/* compare_tiles on every element, on the default sample (rows partly selected) and on a
 * sparse one (every 8th of the sample). */
static void check_tiles_case(const char *spec_text)
{
    ug_case c;
    if (opc_build_case(spec_text, &c)) return;
    for (int pass = 0; pass < 3; pass++) {
        ug_selection sel;
        if (ug_selection_build(&c, pass ? UG_SAMPLE_DEFAULT : 0, &sel)) continue;
        if (pass == 2) thin_selection(&sel, 8);
        compare_tiles(&c, &sel, spec_text);
        ug_selection_free(&sel);
    }
    ug_case_free(&c);
}

static void check_op_case(const char *spec_text, const size_t *ncols)
{
    ug_case c;
    if (opc_build_case(spec_text, &c)) return;
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.naive = o.device_bound = 1; /* the certified run: CERT (and its MPFR fallback), naive, device bound */
    compare_paths(&c, &o, ncols, spec_text);
    ug_oracle_opts_default(&o);
    o.mode = UG_AR_EXACT;
    compare_paths(&c, &o, ncols, spec_text);
    ug_case_free(&c);
}

#define N1 "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"
#define FWD(dtype, params, k, v)                                                                                       \
    "{\"v\":1,\"op\":\"flash_attention_mha\",\"dtype\":\"" dtype "\",\"seed\":3,\"params\":" params                    \
    ",\"dist\":{\"q\":" N1 ",\"k\":" k ",\"v\":" v "}}"
#define GRAD(dtype, params, k, v)                                                                                      \
    "{\"v\":1,\"op\":\"flash_attention_mha_grad\",\"dtype\":\"" dtype "\",\"seed\":4,\"params\":" params               \
    ",\"dist\":{\"q\":" N1 ",\"k\":" k ",\"v\":" v ",\"do\":" N1 "}}"

static void check_ops(void)
{
    /* columns per row of each output: o [.., D], then the row outputs lse, softmax_max, softmax_sum */
    static const size_t fwd_cols[] = {8, 1, 1, 1}, grad_cols[] = {8, 8, 8}, fwd_cols3[] = {3, 1, 1, 1};
    /* ragged causal batch: rows that see no key, one key, all keys; fp16 */
    check_op_case(FWD("fp16", "{\"seqlens\":\"5:9,7:3,5:2\",\"heads\":2,\"head_dim\":8,\"causal\":1}", N1, N1),
                  fwd_cols);
    check_op_case(GRAD("fp16", "{\"seqlens\":\"5:9,7:3,5:2\",\"heads\":2,\"head_dim\":8,\"causal\":1}", N1, N1),
                  grad_cols);
    /* bf16, three columns (two of them selected is most of a row) */
    check_op_case(FWD("bf16", "{\"seqlens\":\"6:11\",\"heads\":2,\"head_dim\":3}", N1, N1), fwd_cols3);
    /* keys overflowing to +-inf (NaN rows and dead keys) and values with infinities */
    check_op_case(FWD("bf16", "{\"seqlens\":\"4:6,3:5\",\"heads\":2,\"head_dim\":8}",
                      "{\"kind\":\"wide\",\"lo_exp\":120,\"hi_exp\":135}",
                      "{\"kind\":\"wide\",\"lo_exp\":120,\"hi_exp\":135}"),
                  fwd_cols);
    check_op_case(GRAD("bf16", "{\"seqlens\":\"4:6,3:5\",\"heads\":2,\"head_dim\":8}", N1,
                       "{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":20}"),
                  grad_cols);
}

/* Tiles of 16 rows with tails, key chunks of 128 with tails, causal rows that see no key, D
 * 64 (CERT's exactness tracking) and 128, both dtypes, a group with a non-finite key (row
 * path) beside finite ones. */
static void check_tile_ops(void)
{
    check_tiles_case(FWD("bf16", "{\"seqlens\":\"40:150,37:20\",\"heads\":2,\"head_dim\":64,\"causal\":1}", N1, N1));
    check_tiles_case(FWD("fp16", "{\"seqlens\":\"33:140\",\"heads\":1,\"head_dim\":128}", N1, N1));
    check_tiles_case(FWD("bf16", "{\"seqlens\":\"20:30,18:17\",\"heads\":2,\"head_dim\":16}",
                         "{\"kind\":\"wide\",\"lo_exp\":120,\"hi_exp\":135}", N1));
    check_tiles_case(GRAD("bf16", "{\"seqlens\":\"40:150,37:20\",\"heads\":2,\"head_dim\":64,\"causal\":1}", N1, N1));
    check_tiles_case(GRAD("fp16", "{\"seqlens\":\"33:140\",\"heads\":1,\"head_dim\":128}", N1, N1));
    check_tiles_case(GRAD("bf16", "{\"seqlens\":\"20:30,18:17\",\"heads\":2,\"head_dim\":16}", N1,
                          "{\"kind\":\"wide\",\"lo_exp\":-20,\"hi_exp\":20}"));
    /* 600 keys: the sparse selection's dk elements read fewer than an eighth of them */
    check_tiles_case(GRAD("bf16", "{\"seqlens\":\"40:600\",\"heads\":1,\"head_dim\":64}", N1, N1));
    check_tiles_case(GRAD("fp16", "{\"seqlens\":\"37:600,5:3\",\"heads\":2,\"head_dim\":128,\"causal\":1}", N1, N1));
}

int main(void)
{
    check_dot_nd_cols();
    check_tiles();
    check_ops();
    check_tile_ops();
    ug_nf_wide = 0; /* the naive fp32 lanes 8 a register (on an AVX-512 CPU the above took 16) */
    check_tiles();
    check_tile_ops();
    return check_done();
}
