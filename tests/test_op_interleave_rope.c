/* test_op_interleave_rope.c — interleave_rope beyond the generic plan test: the cos/sin
 * table against libm, the de-interleave at position 0 (cos 1, sin 0: the output is the
 * exact split-half permutation of x), an independent naive double evaluation of every
 * element against the oracle and the kernel, the pair-norm invariant of a rotation, the
 * D=2 case where the mutant that leaves the layout interleaved cannot be told apart, given
 * cos/sin tables (the reference suite's [B,1,S|1,D] with independent halves: the naive
 * evaluation with its own broadcast indexing, and cos 1 / sin 0 on the first half only
 * zeroing the odd results), and specs with bad params. */
#include <math.h>

#include "check.h"
#include "op_check.h"

#define SPEC(dt, params, seed)                                                                                         \
    "{\"op\":\"interleave_rope\",\"dtype\":\"" dt "\",\"params\":{" params "},"                                        \
    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":" seed "}"

/* cos/sin table: theta[s,i] = (pos0+s) * base^(-2i/D), rounded once to the dtype. */
static void check_table(const ug_exec_detail *d, long pos0, size_t seq, size_t half, double base)
{
    ug_dtype dt = d->c.in[1].dtype;
    for (size_t s = 0; s < seq; s++)
        for (size_t i = 0; i < half; i++) {
            double th = (double)(pos0 + (long)s) * pow(base, -2.0 * (double)i / (double)(2 * half));
            double c = opc_in(d, "cos", s * half + i), sn = opc_in(d, "sin", s * half + i);
            CHECK(fabs(c - cos(th)) <= 0.5 * ug_dtype_ulp(dt, cos(th)) + 1e-12, "cos[%zu,%zu] %g vs %g", s, i, c,
                  cos(th));
            CHECK(fabs(sn - sin(th)) <= 0.5 * ug_dtype_ulp(dt, sin(th)) + 1e-12, "sin[%zu,%zu] %g vs %g", s, i, sn,
                  sin(th));
        }
}

/* Where the tables keep the cos/sin of pair i for the even (hi 0) or odd (hi 1) result of
 * row r: position tables [S, D/2]; given tables [B, 1, cs, D] (cs = S or 1 broadcast). */
typedef struct {
    size_t seq, heads, cs; /* cs 0: position tables */
} tables;

static size_t table_at(tables t, size_t r, size_t i, int hi, size_t dd)
{
    size_t s = r % t.seq, b = r / (t.heads * t.seq);
    if (!t.cs) return s * (dd / 2) + i;
    return (b * t.cs + (t.cs == 1 ? 0 : s)) * dd + (hi ? dd / 2 : 0) + i;
}

/* Naive double evaluation of every element vs the oracle's g* and the kernel. */
static void check_values(const ug_exec_detail *d, size_t rows, tables t, size_t dd)
{
    size_t half = dd / 2;
    ug_dtype dt = d->c.out[0].dtype;
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < half; i++) {
            double e = opc_in(d, "x", r * dd + 2 * i), o = opc_in(d, "x", r * dd + 2 * i + 1);
            double c = opc_in(d, "cos", table_at(t, r, i, 0, dd)), s = opc_in(d, "sin", table_at(t, r, i, 0, dd));
            double ch = opc_in(d, "cos", table_at(t, r, i, 1, dd)), sh = opc_in(d, "sin", table_at(t, r, i, 1, dd));
            double want[2] = {e * c - o * s, o * ch + e * sh}; /* products exact; one rounding each */
            size_t at[2] = {r * dd + i, r * dd + half + i};
            for (int k = 0; k < 2; k++) {
                double gs = d->oracle.gstar[0][at[k]], y = opc_out(d, 0, at[k]);
                CHECK(fabs(gs - want[k]) <= 1e-15 * (fabs(e * c) + fabs(o * s)) + 1e-300, "g*[%zu] %a vs %a", at[k], gs,
                      want[k]);
                CHECK(fabs(y - want[k]) <= ug_dtype_ulp(dt, want[k]), "kernel y[%zu] %a vs %a", at[k], y, want[k]);
            }
            if (t.cs) continue; /* given tables need not be a rotation */
            /* rotation invariant: |y pair|^2 = |x pair|^2 (c^2 + s^2) up to output rounding */
            double y0 = opc_out(d, 0, at[0]), y1 = opc_out(d, 0, at[1]);
            double lhs = y0 * y0 + y1 * y1, rhs = (e * e + o * o) * (c * c + s * s);
            CHECK(fabs(lhs - rhs) <= 0x1p-6 * rhs + 1e-30, "pair norm row %zu pair %zu: %g vs %g", r, i, lhs, rhs);
        }
}

static void test_position_zero_is_a_permutation(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("bf16", "\"b\":2,\"n\":1,\"s\":1,\"d\":8", "11"), "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "pos 0: %s", r.message);
    for (size_t row = 0; row < 2; row++)
        for (size_t i = 0; i < 4; i++) {
            CHECK(opc_out(&d, 0, row * 8 + i) == opc_in(&d, "x", row * 8 + 2 * i), "even %zu", i);
            CHECK(opc_out(&d, 0, row * 8 + 4 + i) == opc_in(&d, "x", row * 8 + 2 * i + 1), "odd %zu", i);
            CHECK(d.oracle.g[0][row * 8 + i] == opc_in(&d, "x", row * 8 + 2 * i), "oracle even %zu", i);
        }
    ug_exec_detail_free(&d);
}

static void test_values(const char *spec, long pos0, size_t rows, size_t seq, size_t dd, double base)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run %s", spec);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "%s: %s", spec, r.message);
    check_table(&d, pos0, seq, dd / 2, base);
    check_values(&d, rows, (tables){seq, rows / seq, 0}, dd);
    ug_exec_detail_free(&d);
}

#define GIVEN_SPEC(params, cos, sin)                                                                                   \
    "{\"op\":\"interleave_rope\",\"dtype\":\"bf16\",\"params\":{\"tables\":\"given\"," params "},"                     \
    "\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"cos\":" cos ",\"sin\":" sin "},\"seed\":7}"
#define UNIT "{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1}"

/* Given tables, per position and broadcast: kernel and oracle against the naive evaluation;
 * a kernel that reads only the first half of the tables fails. */
static void test_given_tables(void)
{
    static const struct {
        const char *spec;
        size_t b, n, s, cs;
    } cases[] = {{GIVEN_SPEC("\"b\":2,\"n\":3,\"s\":17", UNIT, UNIT), 2, 3, 17, 17},
                 {GIVEN_SPEC("\"b\":3,\"n\":2,\"s\":19,\"cs_s\":1", UNIT, UNIT), 3, 2, 19, 1}};
    for (int k = 0; k < 2; k++) {
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(cases[k].spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "given %d: %s", k, r.message);
        if (d.have_oracle)
            check_values(&d, cases[k].b * cases[k].n * cases[k].s, (tables){cases[k].s, cases[k].n, cases[k].cs}, 64);
        ug_exec_detail_free(&d);
        CHECK(opc_run(cases[k].spec, "mut_tables_lo_only", &r, &d) == 0 && r.outcome == UG_OUT_FAIL,
              "given %d: first-half-only tables must fail: %s", k, ug_outcome_name(r.outcome));
        ug_exec_detail_free(&d);
    }
    /* cos 1, sin 0 everywhere: y is the split-half permutation of x, as with positions */
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(GIVEN_SPEC("\"b\":1,\"n\":2,\"s\":5,\"d\":8", "{\"kind\":\"const\",\"value\":1}",
                             "{\"kind\":\"const\",\"value\":0}"),
                  "sim", &r, &d) == 0 &&
              r.outcome == UG_OUT_PASS,
          "given cos 1 sin 0: %s", r.message);
    for (size_t row = 0; d.have_oracle && row < 10; row++)
        for (size_t i = 0; i < 4; i++)
            CHECK(opc_out(&d, 0, row * 8 + i) == opc_in(&d, "x", row * 8 + 2 * i) &&
                      opc_out(&d, 0, row * 8 + 4 + i) == opc_in(&d, "x", row * 8 + 2 * i + 1),
                  "given identity row %zu pair %zu", row, i);
    ug_exec_detail_free(&d);
}

/* With D = 2 the split-half and interleaved layouts coincide: that mutant must pass. */
static void test_d2_layouts_coincide(void)
{
    ug_result r;
    ug_exec_detail d;
    const char *spec = SPEC("fp16", "\"b\":3,\"n\":2,\"s\":5,\"d\":2,\"pos0\":3", "5");
    CHECK(opc_run(spec, "mut_layout_interleaved", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "D=2 interleaved layout: %s", r.message);
    ug_exec_detail_free(&d);
    CHECK(opc_run(SPEC("fp16", "\"b\":3,\"n\":2,\"s\":5,\"d\":4,\"pos0\":3", "5"), "mut_layout_interleaved", &r, &d) ==
              0,
          "run");
    CHECK(r.outcome == UG_OUT_FAIL, "D=4 interleaved layout must fail: %s", ug_outcome_name(r.outcome));
    ug_exec_detail_free(&d);
}

int main(void)
{
    test_position_zero_is_a_permutation();
    test_values(SPEC("bf16", "\"b\":2,\"n\":3,\"s\":17,\"pos0\":5", "1"), 5, 2 * 3 * 17, 17, 64, 10000);
    test_values(SPEC("fp16", "\"b\":1,\"n\":2,\"s\":3,\"d\":6,\"pos0\":70000,\"base\":500", "2"), 70000, 6, 3, 6, 500);
    test_d2_layouts_coincide();
    test_given_tables();
    opc_expect_refused(GIVEN_SPEC("\"b\":1,\"n\":1,\"s\":4,\"cs_s\":2", UNIT, UNIT), "\"cs_s\"");
    opc_expect_refused(SPEC("bf16", "\"b\":1,\"n\":1,\"s\":4,\"tables\":\"table\"", "1"), "\"tables\"");
    opc_expect_refused(SPEC("bf16", "\"b\":1,\"n\":1,\"s\":4,\"d\":63", "1"), "\"d\"");
    opc_expect_refused(SPEC("bf16", "\"b\":0,\"n\":1,\"s\":4", "1"), "\"b\"");
    opc_expect_refused(SPEC("bf16", "\"b\":1,\"n\":1,\"s\":4,\"pos0\":-1", "1"), "\"pos0\"");
    opc_expect_refused(SPEC("bf16", "\"b\":1,\"n\":1,\"s\":4,\"base\":1", "1"), "\"base\"");
    opc_expect_refused(SPEC("fp32", "\"b\":1,\"n\":1,\"s\":4", "1"), "dtype");
    return check_done();
}
