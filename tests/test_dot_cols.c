/* test_dot_cols.c — the row-order kernels the sampled oracles use for their set-up give
 * the numbers of the column-by-column ones, bit for bit.
 *
 * ug_dot_d_cols (oracles/mp/arith.h) must equal ug_dot_d column by column (value and error
 * term, or the MPFR value) in CERT, NAIVE (bf16, fp16), DEVICE, F64, EXACT and MPFR_SEQ:
 * sums of 37 and 64 terms (CERT tracks their exactness, column by column) and of 65 and
 * 300 (CERT's plain bound, the row-order chunk), column counts across its 64-column chunks
 * (the vectorised 64-wide loop and the scalar rest), bf16 values whose products sum
 * exactly, values that underflow the naive dtype, and a column holding inf and NaN.
 * ug_dot_d_rows must equal ug_dot_d on every row and column, its term chunks and 64-column
 * chunks crossed, naive lanes that leave the bits' range (fp16 overflow and subnormals)
 * redone, and an inf and a NaN.
 * ug_dot_nd_cols in CERT on exact weights (its exactness-tracked chunk) must equal
 * ug_dot_nd, with columns proved exact among them.
 * ug_int8_col_dots and ug_int8_dot (oracles/mp/int8_dot.h) must equal the int64 sum of
 * products, with the extreme codes -128 and 127 (whose products are the largest the
 * 16-bit multiply must hold) and lengths past the 2^16-term int32 chunk.
 * ug_i8_gemm (core/int8_gemm.h), its SIMD and plain paths, must equal the int64 sums on
 * row, length and column counts around its 4-row groups, 16-column strips and odd pairs,
 * write nothing past a row's n columns, and hold the all -128 sum of its longest dot.
 * ug_emit_values (a cache slot's copied inputs) must write the sinks ug_ar_emit of each
 * ug_c writes, in every arithmetic, across its 256-element blocks: fp32 values the naive
 * bf16 rounds, NaN (CERT's unsure), infinities, -0 and subnormals. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ar_check.h"
#include "check.h"
#include "core/int8_gemm.h"
#include "core/philox.h"
#include "oracles/mp/arith.h"
#include "oracles/mp/int8_dot.h"

/* A bf16 value of about unit size with a random sign, or (one in eight) a tiny one the
 * naive dtypes round to a subnormal or zero, or (one in sixteen) zero. */
static double draw(uint32_t seed, uint32_t i)
{
    uint32_t w[4];
    ug_rng_words(seed, 11, i, 0, w);
    double m = ug_dtype_round(UG_DT_BF16, ug_rng_unit(w[0], w[1]) * (w[2] & 1u ? -1.0 : 1.0));
    if ((w[3] & 15u) == 0) return 0.0;
    if ((w[3] & 7u) == 1) return ldexp(m, -20 - (int)(w[2] % 12u));
    return m;
}

/* ug_dot_d_cols against ug_dot_d on every column of an [n, ldb] weight, in one arithmetic;
 * specials: column 1 holds an inf and a NaN. */
static void check_cols(ug_ar_mode mode, ug_dtype naive_dt, size_t n, size_t ncols, size_t ldb, int specials)
{
    ug_ar *ar = ug_ar_new(mode, 128, naive_dt);
    double *a = malloc((n + 1) * sizeof *a), *B = malloc((n * ldb + 1) * sizeof *B);
    ug_num *out = malloc(ncols * sizeof *out);
    for (size_t i = 0; i < n * ldb; i++) B[i] = draw(1, (uint32_t)i);
    for (size_t i = 0; i < n; i++) a[i] = draw(2, (uint32_t)i);
    if (specials && n > 2 && ncols > 1) B[1] = INFINITY, B[2 * ldb + 1] = NAN;
    ug_dot_d_cols(ar, a, B, ldb, n, ncols, out);
    size_t differ = 0;
    for (size_t c = 0; c < ncols; c++) {
        size_t mark = ug_ar_mark(ar);
        differ += !same_num(mode, out[c], ug_dot_d(ar, a, 1, B + c, ldb, n));
        ug_ar_release(ar, mark);
    }
    CHECK(differ == 0, "mode %d naive %s, n %zu, %zu columns (ldb %zu)%s: %zu columns differ from ug_dot_d", (int)mode,
          ug_dtype_name(naive_dt), n, ncols, ldb, specials ? ", inf/NaN" : "", differ);
    free(a), free(B), free(out);
    ug_ar_free(ar);
}

static void check_dot_d_cols(void)
{
    static const ug_ar_mode modes[] = {UG_AR_CERT, UG_AR_NAIVE, UG_AR_DEVICE, UG_AR_F64, UG_AR_EXACT, UG_AR_MPFR_SEQ};
    static const size_t lens[] = {37, 64, 65, 300};
    static const size_t cols[][2] = {{1, 3}, {63, 70}, {64, 64}, {65, 200}, {130, 130}};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
            for (size_t k = 0; k < sizeof cols / sizeof *cols; k++)
                for (int sp = 0; sp < 2; sp++) {
                    check_cols(modes[m], UG_DT_BF16, lens[l], cols[k][0], cols[k][1], sp);
                    if (modes[m] == UG_AR_NAIVE) check_cols(modes[m], UG_DT_FP16, lens[l], cols[k][0], cols[k][1], sp);
                }
    check_cols(UG_AR_CERT, UG_DT_BF16, 0, 5, 5, 0); /* no terms */
    check_cols(UG_AR_DEVICE, UG_DT_BF16, 0, 70, 70, 0);
}

/* ug_dot_d_rows over m rows (ldx padded) against ug_dot_d element by element, in one
 * arithmetic; specials 1: row 1 holds an inf and column 1 a NaN; 2, 3: x scaled so that
 * fp16's naive sums overflow or go subnormal. */
static void check_rows(ug_ar_mode mode, ug_dtype naive_dt, size_t m, size_t n, size_t ncols, int specials)
{
    ug_ar *ar = ug_ar_new(mode, 128, naive_dt);
    size_t ldx = n + 3, ldb = ncols + 2, ldo = ncols + 1;
    double *X = malloc((m * ldx + 1) * sizeof *X), *B = malloc((n * ldb + 1) * sizeof *B);
    ug_num *out = malloc(m * ldo * sizeof *out);
    for (size_t i = 0; i < n * ldb; i++) B[i] = draw(5, (uint32_t)i);
    for (size_t i = 0; i < m * ldx; i++) X[i] = draw(6, (uint32_t)i);
    if (specials == 1 && m > 1 && n > 2 && ncols > 1) X[ldx + 2] = INFINITY, B[ldb + 1] = NAN;
    for (size_t i = 0; specials > 1 && i < m * ldx; i++) /* 2: sums past fp16's max; 3: in its subnormals */
        X[i] = ldexp(X[i], specials == 2 ? 9 : -14);
    ug_dot_d_rows(ar, X, ldx, m, B, ldb, n, ncols, out, ldo);
    size_t differ = dot_d_differ(ar, mode, out, ldo, m, ncols, X, ldx, B, ldb, n);
    static const char *what[] = {"", ", inf/NaN", ", past fp16 max", ", fp16 subnormal"};
    CHECK(differ == 0, "ug_dot_d_rows mode %d naive %s, %zu rows, n %zu, %zu columns%s: %zu differ from ug_dot_d",
          (int)mode, ug_dtype_name(naive_dt), m, n, ncols, what[specials], differ);
    free(X), free(B), free(out);
    ug_ar_free(ar);
}

static void check_dot_d_rows(void)
{
    static const ug_ar_mode modes[] = {UG_AR_CERT, UG_AR_NAIVE, UG_AR_DEVICE, UG_AR_F64, UG_AR_EXACT};
    static const size_t rows[] = {1, 3}, lens[] = {37, 65, 300}, cols[] = {5, 64, 130};
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++)
        for (size_t r = 0; r < 2; r++)
            for (size_t l = 0; l < 3; l++)
                for (size_t c = 0; c < 3; c++)
                    for (int sp = 0; sp < 4; sp++) {
                        check_rows(modes[k], UG_DT_BF16, rows[r], lens[l], cols[c], sp);
                        if (modes[k] == UG_AR_NAIVE) {
                            check_rows(modes[k], UG_DT_FP16, rows[r], lens[l], cols[c], sp);
                            check_rows(modes[k], UG_DT_FP32, rows[r], lens[l], cols[c], sp);
                        }
                    }
}

/* ug_dot_nd_cols in CERT on exact bf16 weights x (its exactness-tracked chunk) against
 * ug_dot_nd: many columns' sums of bf16 products are exact (bound 0), the others not. */
static void check_nd_tracked(size_t n, size_t ncols, size_t ldv, int specials)
{
    ug_ar *ar = ug_ar_new(UG_AR_CERT, 128, UG_DT_BF16);
    ug_num *x = malloc((n + 1) * sizeof *x), *out = malloc(ncols * sizeof *out);
    double *V = malloc((n * ldv + 1) * sizeof *V);
    for (size_t i = 0; i < n * ldv; i++) V[i] = ldexp(draw(3, (uint32_t)i), (int)(i % 7)); /* bf16, varied scales */
    for (size_t i = 0; i < n; i++) x[i] = ug_c(ar, draw(4, (uint32_t)i));
    if (specials && n > 2 && ncols > 1) V[1] = INFINITY, V[2 * ldv + 1] = NAN, V[ldv] = 0x1p-1000;
    ug_dot_nd_cols(ar, x, V, ldv, n, ncols, out);
    size_t differ = 0, exact = 0;
    for (size_t c = 0; c < ncols; c++) {
        size_t mark = ug_ar_mark(ar);
        differ += !same_num(UG_AR_CERT, out[c], ug_dot_nd(ar, x, V + c, ldv, n));
        exact += out[c].e == 0.0;
        ug_ar_release(ar, mark);
    }
    CHECK(differ == 0, "CERT tracked, n %zu, %zu columns%s: %zu columns differ from ug_dot_nd (%zu exact)", n, ncols,
          specials ? ", specials" : "", differ, exact);
    if (n <= 8 && ncols >= 64) CHECK(exact > 0, "CERT tracked, n %zu: no column proved exact", n);
    free(x), free(out), free(V);
    ug_ar_free(ar);
}

static void check_dot_nd_tracked(void)
{
    static const size_t lens[] = {3, 8, 37, 300};
    static const size_t cols[][2] = {{1, 3}, {64, 64}, {65, 70}, {130, 130}};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++)
            for (int sp = 0; sp < 2; sp++) check_nd_tracked(lens[l], cols[k][0], cols[k][1], sp);
}

/* An int8 code: mostly random, one in eight -128, one in eight 127. */
static int8_t code(uint32_t seed, uint32_t i)
{
    uint32_t w[4];
    ug_rng_words(seed, 12, i, 0, w);
    return (w[1] & 7u) == 0 ? -128 : (w[1] & 7u) == 1 ? 127 : (int8_t)(w[0] & 0xFFu);
}

/* ug_int8_col_dots over ng groups of w columns of an [L, ldb] int8 weight, against int64. */
static void check_col_dots(size_t L, size_t ldb, size_t w, const size_t *col0, size_t ng, int worst)
{
    int8_t *B = malloc(L * ldb);
    double *a = malloc(L * sizeof *a);
    int32_t *acc = malloc(ng * w * sizeof *acc);
    int64_t *dot = malloc(ng * w * sizeof *dot);
    for (size_t i = 0; i < L * ldb; i++) B[i] = worst ? -128 : code(3, (uint32_t)i);
    for (size_t j = 0; j < L; j++) a[j] = worst ? -128 : code(4, (uint32_t)j);
    ug_int8_col_dots(a, B, ldb, L, col0, ng, w, acc, dot);
    size_t differ = 0;
    for (size_t g = 0; g < ng; g++)
        for (size_t i = 0; i < w; i++) {
            int64_t want = 0;
            for (size_t j = 0; j < L; j++) want += (int64_t)a[j] * B[j * ldb + col0[g] + i];
            differ += dot[g * w + i] != want;
        }
    CHECK(differ == 0, "ug_int8_col_dots L %zu, %zu groups of %zu%s: %zu dots differ", L, ng, w,
          worst ? " (all -128)" : "", differ);
    free(B), free(a), free(acc), free(dot);
}

static void check_int8(void)
{
    static const size_t heads[] = {3, 0, 5};
    static const size_t cols[] = {0, 100};
    check_col_dots(300, 7 * 64, 64, heads, 3, 0); /* 32-column chunks */
    check_col_dots(50, 6 * 13, 13, heads, 3, 0);  /* a scalar rest only */
    check_col_dots(40, 150, 45, cols, 2, 0);      /* one chunk and a rest */
    check_col_dots(70000, 32, 32, cols, 1, 1);    /* past the int32 chunk: 70000 * 2^14 > 2^31 */
    size_t n = 70000, differ = 0;
    int8_t *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++) a[i] = code(5, (uint32_t)i), b[i] = code(6, (uint32_t)i);
    for (size_t len = 0; len <= n; len += len < 100 ? 1 : 9973) {
        int64_t want = 0;
        for (size_t i = 0; i < len; i++) want += (int64_t)a[i] * b[i];
        differ += ug_int8_dot(a, b, len) != want;
    }
    CHECK(differ == 0, "ug_int8_dot: %zu lengths differ from the int64 sum", differ);
    memset(a, 0x80, n), memset(b, 0x80, n); /* every product 2^14: the sum 70000 * 2^14 */
    CHECK(ug_int8_dot(a, b, n) == (int64_t)n << 14, "ug_int8_dot of -128s: %lld", (long long)ug_int8_dot(a, b, n));
    free(a), free(b);
}

/* ug_i8_gemm (both paths) over an [m, L] by [L, n] product with padded strides, against the
 * int64 sum; worst: every code -128 (each product 2^14, the largest sum int32 must hold). */
static void check_gemm(size_t m, size_t L, size_t n, int worst)
{
    size_t lda = L + 3, ldb = n + 5, ldc = n + 2;
    int8_t *A = malloc(m * lda), *B = malloc(L * ldb);
    int32_t *C = malloc(2 * m * ldc * sizeof *C), *scratch = malloc((m * (L / 2 + 1)) * sizeof *scratch);
    for (size_t i = 0; i < m * lda; i++) A[i] = worst ? -128 : code(7, (uint32_t)i);
    for (size_t i = 0; i < L * ldb; i++) B[i] = worst ? -128 : code(8, (uint32_t)i);
    ug_i8_packed pk;
    CHECK(ug_i8_pack(B, ldb, L, n, &pk) == 0, "ug_i8_pack %zu x %zu", L, n);
    for (size_t i = 0; i < 2 * m * ldc; i++) C[i] = 0x5a5a5a5a; /* the gaps between rows must stay untouched */
    ug_i8_gemm(A, lda, m, &pk, C, ldc, scratch);
    ug_i8_gemm_plain(A, lda, m, &pk, C + m * ldc, ldc, scratch);
    size_t differ[2] = {0, 0}, touched = 0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            int64_t want = 0;
            for (size_t k = 0; k < L; k++) want += (int64_t)A[i * lda + k] * B[k * ldb + j];
            for (int p = 0; p < 2; p++) differ[p] += C[p * m * ldc + i * ldc + j] != want;
        }
        for (int p = 0; p < 2; p++)
            for (size_t j = n; j < ldc; j++) touched += C[p * m * ldc + i * ldc + j] != 0x5a5a5a5a;
    }
    CHECK(differ[0] == 0 && differ[1] == 0 && touched == 0,
          "ug_i8_gemm %zu x %zu x %zu%s: %zu (SIMD) and %zu (plain) sums differ, %zu gap entries written", m, L, n,
          worst ? " (all -128)" : "", differ[0], differ[1], touched);
    ug_i8_packed_free(&pk);
    free(A), free(B), free(C), free(scratch);
}

static void check_i8_gemm(void)
{
    static const size_t ms[] = {1, 3, 4, 5, 9}, Ls[] = {1, 2, 7, 300}, ns[] = {1, 15, 16, 17, 40};
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t c = 0; c < 5; c++) check_gemm(ms[a], Ls[b], ns[c], 0);
    check_gemm(2, UG_I8_GEMM_MAX_L, 17, 1); /* 131071 * 2^14 = 2^31 - 2^14: int32 holds it */
    ug_i8_packed pk;
    int8_t one = 1;
    CHECK(ug_i8_pack(&one, 1, UG_I8_GEMM_MAX_L + 1, 1, &pk) == -1 && !pk.p,
          "ug_i8_pack accepts L past the int32 bound");
}

/* The sinks of one output of n elements (bound: DEVICE's), filled with a marker first. */
typedef struct {
    double gstar[300], g[300], bound[300];
    unsigned char unsure[300];
} emit_sinks;

static void emit_into(ug_ar_mode mode, const double *x, size_t n, int block, emit_sinks *t)
{
    for (size_t i = 0; i < n; i++) t->gstar[i] = t->g[i] = t->bound[i] = -12345.0, t->unsure[i] = 7;
    ug_ar *ar = ug_ar_new(mode, 128, UG_DT_BF16);
    ug_ar_sink sink = {UG_DT_FP32, t->gstar, t->g, mode == UG_AR_CERT ? t->unsure : NULL,
                       mode == UG_AR_DEVICE ? t->bound : NULL};
    ug_ar_set_sink(ar, &sink, 1);
    if (block) { /* two calls: a block and a rest, at an offset */
        ug_emit_values(ar, 0, 0, x, 5);
        ug_emit_values(ar, 0, 5, x + 5, n - 5);
    } else {
        for (size_t i = 0; i < n; i++) ug_ar_emit(ar, 0, i, ug_c(ar, x[i]));
    }
    unsigned long emitted, unsure;
    ug_ar_counts(ar, &emitted, &unsure);
    CHECK(emitted == n, "mode %d: %lu emitted of %zu", (int)mode, emitted, n);
    ug_ar_free(ar);
}

static void check_emit_values(void)
{
    static const ug_ar_mode modes[] = {UG_AR_CERT, UG_AR_NAIVE, UG_AR_DEVICE, UG_AR_F64, UG_AR_EXACT, UG_AR_MPFR_SEQ};
    double x[300];
    for (size_t i = 0; i < 300; i++) x[i] = (double)(float)(draw(3, (uint32_t)i) * (1.0 + 0x1p-12)); /* off bf16 */
    x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY, x[4] = -0.0, x[290] = 0x1p-140, x[299] = NAN;
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        static emit_sinks one, block;
        emit_into(modes[m], x, 300, 0, &one);
        emit_into(modes[m], x, 300, 1, &block);
        size_t differ = 0;
        for (size_t i = 0; i < 300; i++)
            differ += !same_bits(one.gstar[i], block.gstar[i]) || !same_bits(one.g[i], block.g[i]) ||
                      !same_bits(one.bound[i], block.bound[i]) || one.unsure[i] != block.unsure[i];
        CHECK(differ == 0, "mode %d: ug_emit_values differs from ug_ar_emit of ug_c at %zu of 300 elements",
              (int)modes[m], differ);
        if (modes[m] == UG_AR_NAIVE) /* the naive copy is the value rounded to the naive bf16 */
            CHECK(block.g[0] == ug_dtype_round(UG_DT_BF16, x[0]) && block.g[0] != x[0], "naive g[0] %.17g of %.17g",
                  block.g[0], x[0]);
        if (modes[m] == UG_AR_CERT) CHECK(block.unsure[1] == 1 && block.unsure[0] == 0, "CERT's NaN is unsure");
    }
}

int main(void)
{
    check_emit_values();
    check_dot_d_cols();
    check_dot_d_rows();
    check_dot_nd_tracked();
    check_int8();
    check_i8_gemm();
    return check_done();
}
