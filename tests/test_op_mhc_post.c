/* test_op_mhc_post.c — mhc_post beyond the generic plan test: hand-computed values with
 * constant inputs (out = 0.5*2 + 4*0.25*1 = 2; and an exact cancellation to 0), an
 * independent naive double evaluation of every element against the oracle and the
 * kernel (also with 3 streams and a D tail), the stream-index convention h_res[k,n]
 * checked on one token by hand, and specs with bad params. */
#include <math.h>

#include "check.h"
#include "op_check.h"

#define SPEC(params, dist)                                                                                             \
    "{\"op\":\"mhc_post\",\"dtype\":\"bf16\",\"params\":{" params "},\"dist\":" dist ",\"seed\":9}"
#define CONST4(x, ho, hr, hp)                                                                                          \
    "{\"x\":{\"kind\":\"const\",\"value\":" x "},\"h_out\":{\"kind\":\"const\",\"value\":" ho "},"                     \
    "\"h_res\":{\"kind\":\"const\",\"value\":" hr "},\"h_post\":{\"kind\":\"const\",\"value\":" hp "}}"
#define DIST_SIGNED                                                                                                    \
    "{\"x\":{\"kind\":\"uniform\",\"lo\":-3,\"hi\":3},\"h_out\":{\"kind\":\"normal\",\"mean\":0,\"std\":1},"           \
    "\"h_res\":{\"kind\":\"uniform\",\"lo\":-1,\"hi\":1},\"h_post\":{\"kind\":\"uniform\",\"lo\":-2,\"hi\":2}}"

static void test_const(const char *spec, double want)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS, "%s: %s", spec, r.message);
    for (size_t e = 0; e < d.c.out[0].numel; e++) {
        CHECK(opc_out(&d, 0, e) == want, "kernel out[%zu] = %g, want %g", e, opc_out(&d, 0, e), want);
        CHECK(d.oracle.g[0][e] == want, "oracle out[%zu] = %g, want %g", e, d.oracle.g[0][e], want);
    }
    ug_exec_detail_free(&d);
}

/* Naive double reference, written from the formula, against g* and the kernel. */
static void test_naive(const char *spec)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0, "run");
    CHECK(r.outcome == UG_OUT_PASS && r.n_selfcheck_mismatch == 0, "%s: %s", spec, r.message);
    const ug_tensor *o = &d.c.out[0];
    size_t tok = (size_t)o->shape[0], ns = (size_t)o->shape[1], dd = (size_t)o->shape[2];
    for (size_t t = 0; t < tok; t++)
        for (size_t n = 0; n < ns; n++)
            for (size_t j = 0; j < dd; j++) {
                double want = opc_in(&d, "h_post", t * ns + n) * opc_in(&d, "h_out", t * dd + j);
                double mag = fabs(want);
                for (size_t k = 0; k < ns; k++) {
                    double term = opc_in(&d, "h_res", (t * ns + k) * ns + n) * opc_in(&d, "x", (t * ns + k) * dd + j);
                    want += term;
                    mag += fabs(term);
                }
                size_t e = (t * ns + n) * dd + j;
                CHECK(fabs(d.oracle.gstar[0][e] - want) <= 1e-14 * mag, "g*[%zu] %a vs %a", e, d.oracle.gstar[0][e],
                      want);
                CHECK(fabs(opc_out(&d, 0, e) - want) <= ug_dtype_ulp(UG_DT_BF16, want) + 1e-6 * mag,
                      "kernel out[%zu] %a vs %a", e, opc_out(&d, 0, e), want);
            }
    ug_exec_detail_free(&d);
}

/* Stream convention on token 0, stream 1: out = h_post[1]*h_out + sum_k h_res[k][1]*x[k],
 * written out term by term for N = 2. */
static void test_stream_convention(void)
{
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(SPEC("\"t\":1,\"n\":2,\"d\":3", DIST_SIGNED), "sim", &r, &d) == 0, "run");
    for (size_t j = 0; j < 3; j++) {
        double want = opc_in(&d, "h_post", 1) * opc_in(&d, "h_out", j) + opc_in(&d, "h_res", 1) * opc_in(&d, "x", j) +
                      opc_in(&d, "h_res", 3) * opc_in(&d, "x", 3 + j); /* h_res[0][1], h_res[1][1] */
        CHECK(fabs(d.oracle.gstar[0][3 + j] - want) <= 1e-12, "stream 1 lane %zu: %g vs %g", j,
              d.oracle.gstar[0][3 + j], want);
    }
    ug_exec_detail_free(&d);
}

int main(void)
{
    test_const(SPEC("\"t\":2,\"n\":4,\"d\":300", CONST4("1", "2", "0.25", "0.5")), 2.0);
    test_const(SPEC("\"t\":1,\"n\":4,\"d\":17", CONST4("3", "-1", "0.125", "1.5")), 0.0);
    test_naive(SPEC("\"t\":3,\"n\":4,\"d\":257", DIST_SIGNED));
    test_naive(SPEC("\"t\":2,\"n\":3,\"d\":100", DIST_SIGNED));
    test_stream_convention();
    opc_expect_refused(SPEC("\"t\":1,\"n\":0,\"d\":8", DIST_SIGNED), "\"n\"");
    opc_expect_refused(SPEC("\"t\":1,\"n\":17,\"d\":8", DIST_SIGNED), "\"n\"");
    opc_expect_refused(SPEC("\"t\":1,\"n\":4,\"d\":0", DIST_SIGNED), "\"d\"");
    opc_expect_refused(SPEC("\"t\":0,\"n\":4,\"d\":8", DIST_SIGNED), "\"t\"");
    opc_expect_refused("{\"op\":\"mhc_post\",\"dtype\":\"fp16\",\"params\":{\"t\":1,\"d\":8},\"dist\":" DIST_SIGNED
                       ",\"seed\":1}",
                       "dtype");
    return check_done();
}
