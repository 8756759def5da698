/* test_oracle_ziv.c — the exact fallback's raised precision (Ziv's strategy, oracle.c):
 * elements whose exact value lies within 2^-128 (relative) of a rounding boundary are
 * misrounded by MPFR at the fixed 128 bits; the fallback must notice (the roundings at
 * prec and 2*prec differ), raise the precision until they agree, count them, and count
 * (not silently take) one it cannot settle by UG_ORACLE_PREC_MAX.
 *
 * The op is built here (a one-output fp32 case with its own oracle), so every element is
 * a known construction on bit(e) = (2^e + 1) - 2^e: 1 at a precision above e bits, 0 at
 * e bits or fewer. Expected values come from the same oracle in EXACT at 16384 bits and
 * from the closed form. With the old fixed-precision fallback (one evaluation at 128
 * bits) elements 0, 1, 3 and 4 come out wrong: the "matches MPFR at 16384 bits" checks
 * fail. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "oracles/oracle.h"

enum { N_ELEM = 6 };

/* (2^e + 1) - 2^e, e > 0; 2^e as a product of powers of two a double holds (in CERT a
 * power past 2^1023 overflows, and the element is unsure). */
static ug_num bit(ug_ar *ar, int e)
{
    ug_num x = ug_c(ar, 1.0);
    for (int k = e; k > 0; k -= 1000) x = ug_mul(ar, x, ug_c(ar, ldexp(1.0, k > 1000 ? 1000 : k)));
    return ug_sub(ar, ug_add(ar, x, ug_c(ar, 1.0)), x);
}

static ug_num scaled_bit(ug_ar *ar, int e, double scale) { return ug_mul(ar, bit(ar, e), ug_c(ar, scale)); }

/* tie + 2^-200 * (bit(200) - 2 bit(400) + 2 bit(1000) - 2 bit(2000) + 2 bit(3000)): at
 * each doubling from 128 to 4096 bits the sum crosses the tie (1, up, 1, up, 1, up). */
static ug_num flipping(ug_ar *ar, ug_num tie)
{
    static const int e[5] = {200, 400, 1000, 2000, 3000};
    static const double w[5] = {0x1p-200, -0x1p-199, 0x1p-199, -0x1p-199, 0x1p-199};
    ug_num x = tie;
    for (int j = 0; j < 5; j++) x = ug_add(ar, x, scaled_bit(ar, e[j], w[j]));
    return x;
}

/* Element values; the fp32 tie between 1 and 1 + 2^-23 is 1 + 2^-24:
 *  0: tie + 2^-200 bit(200)   rounds up; 128 bits see the tie (RNE: 1); 256 and 512 agree
 *  1: bit(200)                1; 128 bits give 0 (g and g* both differ)
 *  2: tie + 2^-60 bit(60)     rounds up at 128 bits already: unsure in CERT, not raised
 *  3: flipping()              rounds up; its rounding changes at every doubling up to 4096
 *                             bits: not settled at the maximum (its 4096-bit value is right)
 *  4: 0.5 + 2^-40 bit(200) + 2^-20 (a - a), a = bit(100): g = 0.5 at every precision, g*
 *     = 0.5 + 2^-40 but 0.5 at 128 bits (a - a is 0 in MPFR, 0 +- 2^-19 in CERT: unsure)
 *  5: 0.5                     settled by the certified fast path */
static ug_num element(ug_ar *ar, size_t i)
{
    ug_num tie = ug_c(ar, 1.0 + 0x1p-24), half = ug_c(ar, 0.5), a;
    switch (i) {
    case 0: return ug_add(ar, tie, scaled_bit(ar, 200, 0x1p-200));
    case 1: return bit(ar, 200);
    case 2: return ug_add(ar, tie, scaled_bit(ar, 60, 0x1p-60));
    case 3: return flipping(ar, tie);
    case 4:
        a = bit(ar, 100);
        return ug_add(ar, ug_add(ar, half, scaled_bit(ar, 200, 0x1p-40)), ug_mul(ar, ug_sub(ar, a, a), ug_c(ar, 0x1p-20)));
    default: return half;
    }
}

static int ziv_oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    (void)c;
    for (size_t k = 0; k < sel->n[0]; k++) {
        size_t m = ug_ar_mark(ar);
        ug_ar_emit(ar, 0, k, element(ar, sel->idx[0][k]));
        ug_ar_release(ar, m);
    }
    return 0;
}

static const ug_op_def ziv_def = {.oracle = ziv_oracle};

static void make_case(ug_case *c)
{
    memset(c, 0, sizeof *c);
    c->def = &ziv_def;
    c->spec.dtype = UG_DT_FP32;
    c->n_out = 1;
    ug_tensor *y = &c->out[0];
    strcpy(y->name, "y");
    y->dtype = UG_DT_FP32;
    y->ndim = 1;
    y->shape[0] = N_ELEM;
    y->numel = N_ELEM;
}

static int run(const ug_case *c, ug_ar_mode mode, mpfr_prec_t prec, ug_oracle_result *r)
{
    ug_oracle_opts o;
    ug_oracle_opts_default(&o);
    o.sample = 0;
    o.mode = mode;
    o.prec = prec;
    o.naive = 0;
    o.device_bound = 0;
    char err[256] = "";
    int rc = ug_oracle_run(c, &o, r, err, sizeof err);
    CHECK(rc == 0, "oracle run (mode %d, %ld bits): %s", (int)mode, (long)prec, err);
    return rc;
}

int main(void)
{
    ug_case c;
    make_case(&c);
    ug_oracle_result ref, fast, fixed;
    if (run(&c, UG_AR_EXACT, 16384, &ref) || run(&c, UG_AR_CERT, UG_ORACLE_PREC, &fast) ||
        run(&c, UG_AR_EXACT, UG_ORACLE_PREC, &fixed))
        return check_done();
    /* the closed forms: the reference at 16384 bits is right */
    const double up = 1.0 + 0x1p-23, tie = 1.0 + 0x1p-24;
    const double want_g[N_ELEM] = {up, 1.0, up, up, 0.5, 0.5}, want_gs[N_ELEM] = {tie, 1.0, tie, tie, 0.5 + 0x1p-40, 0.5};
    for (size_t i = 0; i < N_ELEM; i++)
        CHECK(ref.g[0][i] == want_g[i] && ref.gstar[0][i] == want_gs[i], "element %zu at 16384 bits: g %a g* %a", i,
              ref.g[0][i], ref.gstar[0][i]);
    /* 128 bits alone misround elements 0, 1, 3 (g) and 4 (g*): the construction bites */
    CHECK(fixed.g[0][0] == 1.0 && fixed.g[0][1] == 0.0 && fixed.g[0][3] == 1.0 && fixed.gstar[0][4] == 0.5,
          "128 bits should misround: g %a %a %a, g* %a", fixed.g[0][0], fixed.g[0][1], fixed.g[0][3], fixed.gstar[0][4]);
    /* the engine (CERT, exact fallback at 128 bits, raised) gets every element right */
    for (size_t i = 0; i < N_ELEM; i++)
        CHECK(fast.g[0][i] == ref.g[0][i] && fast.gstar[0][i] == ref.gstar[0][i],
              "element %zu matches MPFR at 16384 bits: g %a (want %a), g* %a (want %a)", i, fast.g[0][i], ref.g[0][i],
              fast.gstar[0][i], ref.gstar[0][i]);
    CHECK(fast.n_fallback == 5, "%lu elements settled by MPFR, 5 expected (all but 0.5)", fast.n_fallback);
    CHECK(fast.n_raised == 4, "%lu elements raised past 256 bits, 4 expected (0, 1, 3, 4)", fast.n_raised);
    CHECK(fast.n_unsettled == 1, "%lu elements not settled at %d bits, 1 expected (element 3)", fast.n_unsettled,
          UG_ORACLE_PREC_MAX);
    /* a working precision that sees 2^-3000 settles everything without raising */
    ug_oracle_result wide;
    if (!run(&c, UG_AR_CERT, 4096, &wide)) {
        CHECK(wide.n_fallback == 5 && wide.n_raised == 0 && wide.n_unsettled == 0,
              "at 4096 bits: %lu by MPFR, %lu raised, %lu unsettled (5, 0, 0 expected)", wide.n_fallback, wide.n_raised,
              wide.n_unsettled);
        for (size_t i = 0; i < N_ELEM; i++)
            CHECK(wide.g[0][i] == ref.g[0][i] && wide.gstar[0][i] == ref.gstar[0][i], "element %zu at 4096 bits", i);
        ug_oracle_result_free(&wide);
    }
    ug_oracle_result_free(&ref);
    ug_oracle_result_free(&fast);
    ug_oracle_result_free(&fixed);
    return check_done();
}
