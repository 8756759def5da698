/* test_op_rms_norm_rope.c — rms_norm_rope beyond the generic plan test: a hand-computed
 * value (q = k = 2, gamma = 1, eps = 0: the normed row is exactly 1, so every output is
 * cos -/+ sin of its token), an independent naive double evaluation of every element
 * against the oracle and the kernel, the norm invariant (gamma = 1: the rotated row keeps
 * mean square 1), and specs with bad params. */
#include <math.h>

#include "check.h"
#include "op_check.h"

#define DIST_NORMAL                                                                                                    \
    "{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},\"k\":{\"kind\":\"uniform\",\"lo\":-3,\"hi\":3},"               \
    "\"gamma_q\":{\"kind\":\"normal\",\"mean\":1,\"std\":0.2},\"gamma_k\":{\"kind\":\"uniform\",\"lo\":0.5,\"hi\":2}}"
#define DIST_CONST                                                                                                     \
    "{\"q\":{\"kind\":\"const\",\"value\":2},\"k\":{\"kind\":\"const\",\"value\":-2},"                                 \
    "\"gamma_q\":{\"kind\":\"const\",\"value\":1},\"gamma_k\":{\"kind\":\"const\",\"value\":1}}"
#define SPEC(dt, params, dist)                                                                                         \
    "{\"op\":\"rms_norm_rope\",\"dtype\":\"" dt "\",\"params\":{" params "},\"dist\":" dist ",\"seed\":3}"

static const char *XN[2] = {"q", "k"}, *GN[2] = {"gamma_q", "gamma_k"};

/* Naive double reference of every element of both outputs vs g* and the kernel. */
static void check_values(const ug_exec_detail *d, double eps)
{
    for (int o = 0; o < 2; o++) {
        const ug_tensor *y = &d->c.out[o];
        size_t heads = (size_t)y->shape[1], dd = (size_t)y->shape[2], half = dd / 2, rows = y->numel / dd;
        for (size_t r = 0; r < rows; r++) {
            double ss = 0;
            for (size_t i = 0; i < dd; i++) ss += opc_in(d, XN[o], r * dd + i) * opc_in(d, XN[o], r * dd + i);
            double rstd = 1.0 / sqrt(ss / (double)dd + eps);
            for (size_t j = 0; j < dd; j++) {
                size_t i = j % half, tok = r / heads;
                double na = opc_in(d, XN[o], r * dd + i) * opc_in(d, GN[o], i) * rstd;
                double nb = opc_in(d, XN[o], r * dd + half + i) * opc_in(d, GN[o], half + i) * rstd;
                double c = opc_in(d, "cos", tok * half + i), s = opc_in(d, "sin", tok * half + i);
                double want = j < half ? na * c - nb * s : nb * c + na * s, scale = fabs(na) + fabs(nb);
                double gs = d->oracle.gstar[o][r * dd + j], a = opc_out(d, o, r * dd + j);
                CHECK(fabs(gs - want) <= 1e-13 * scale + 1e-300, "%s g*[%zu] %a vs %a", y->name, r * dd + j, gs, want);
                CHECK(fabs(a - want) <= ug_dtype_ulp(y->dtype, want) + 1e-6 * scale, "%s kernel [%zu] %a vs %a",
                      y->name, r * dd + j, a, want);
            }
        }
    }
}

static void test_naive(const char *spec, double eps)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run %s", spec);
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "%s: %s", spec, r.message);
    check_values(&d, eps);
    ug_exec_detail_free(&d);
}

/* q = 2, k = -2, gamma = 1, eps = 0: n = +-1 exactly, y = +-(cos -/+ sin). */
static void test_known_value(const char *dt_spec)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(dt_spec, "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "const rows: %s", r.message);
    for (int o = 0; o < 2; o++) {
        const ug_tensor *y = &d.c.out[o];
        size_t heads = (size_t)y->shape[1], dd = (size_t)y->shape[2], half = dd / 2;
        double sign = o ? -1.0 : 1.0;
        for (size_t e = 0; e < y->numel; e++) {
            size_t j = e % dd, i = j % half, tok = e / dd / heads;
            double c = opc_in(&d, "cos", tok * half + i), s = opc_in(&d, "sin", tok * half + i);
            double want = ug_dtype_round(y->dtype, sign * (j < half ? c - s : c + s));
            CHECK(opc_out(&d, o, e) == want, "%s[%zu] = %a, want %a", y->name, e, opc_out(&d, o, e), want);
            CHECK(d.oracle.g[o][e] == want, "oracle %s[%zu] = %a, want %a", y->name, e, d.oracle.g[o][e], want);
        }
    }
    ug_exec_detail_free(&d);
}

/* gamma = 1: the rotation keeps each row's mean square at ms/(ms+eps) ~ 1. */
static void test_norm_invariant(void)
{
    const char *spec =
        SPEC("fp16", "\"t\":5,\"hq\":3,\"hk\":2,\"max_pos\":100000",
             "{\"q\":{\"kind\":\"normal\",\"mean\":0,\"std\":7},\"k\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1},"
             "\"gamma_q\":{\"kind\":\"const\",\"value\":1},\"gamma_k\":{\"kind\":\"const\",\"value\":1}}");
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
    for (int o = 0; o < 2; o++) {
        const ug_tensor *y = &d.c.out[o];
        size_t dd = (size_t)y->shape[2];
        for (size_t row = 0; row < y->numel / dd; row++) {
            double ms = 0;
            for (size_t j = 0; j < dd; j++) ms += opc_out(&d, o, row * dd + j) * opc_out(&d, o, row * dd + j);
            ms /= (double)dd;
            CHECK(fabs(ms - 1.0) < 0x1p-8, "%s row %zu mean square %.6f", y->name, row, ms);
        }
    }
    ug_exec_detail_free(&d);
}

/* Params the op must refuse in a bf16 case, each with what the message names. */
static const char *const BAD_PARAMS[][2] = {
    {"\"t\":1,\"hq\":1,\"hk\":1,\"d\":127", "\"d\""},
    {"\"t\":1,\"hq\":1,\"hk\":0", "\"hk\""},
    {"\"t\":1,\"hq\":1,\"hk\":1,\"eps\":-1", "\"eps\""},
    {"\"t\":1,\"hq\":1,\"hk\":1,\"max_pos\":0", "\"max_pos\""},
};

int main(void)
{
    test_known_value(SPEC("bf16", "\"t\":3,\"hq\":2,\"hk\":1,\"d\":16,\"eps\":0", DIST_CONST));
    test_known_value(SPEC("fp16", "\"t\":2,\"hq\":1,\"hk\":2,\"eps\":0,\"max_pos\":50000", DIST_CONST));
    test_naive(SPEC("bf16", "\"t\":4,\"hq\":3,\"hk\":2", DIST_NORMAL), (float)1e-6);
    test_naive(SPEC("fp16", "\"t\":3,\"hq\":2,\"hk\":1,\"d\":66,\"eps\":1e-5", DIST_NORMAL), (float)1e-5);
    test_norm_invariant();
    OPC_EXPECT_REFUSED_EACH(SPEC("bf16", "%s", DIST_NORMAL), BAD_PARAMS);
    opc_expect_refused(SPEC("fp32", "\"t\":1,\"hq\":1,\"hk\":1", DIST_NORMAL), "dtype");
    return check_done();
}
