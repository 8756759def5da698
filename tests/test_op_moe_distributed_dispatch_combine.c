/* test_op_moe_distributed_dispatch_combine.c — checks of moe_distributed_dispatch_combine
 * beyond the generic plan test: a hand-computed combine, the layout invariants (counts
 * sum to T*k, offsets are the exclusive prefix sum, the last rank owns the remainder
 * experts, hot routing leaves the high experts empty, ids distinct per token), the int8
 * wire against an independent double DynQuant, special values as the semantics text states
 * them (an int8-wire row with NaN/inf arrives as NaN), and bad params. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "op_check.h"
#include "run/exec.h"

#define OP "moe_distributed_dispatch_combine"

static void make_spec(char *buf, size_t len, const char *params, const char *xdist)
{
    snprintf(buf, len,
             "{\"v\":1,\"op\":\"" OP "\",\"dtype\":\"bf16\",\"seed\":5,\"params\":{%s},"
             "\"dist\":{\"x\":%s,\"weights\":{\"kind\":\"const\",\"value\":0.5},"
             "\"expert_scale\":{\"kind\":\"const\",\"value\":3}}}",
             params, xdist);
}

/* opc_sim_passes on the case of params and x's dist (make_spec), r not kept. */
static int sim_passes(const char *params, const char *xdist, const char *what, ug_exec_detail *d)
{
    char spec[1024];
    make_spec(spec, sizeof spec, params, xdist);
    return opc_sim_passes(spec, what, NULL, d);
}

/* x = 2, w = 0.5, scale 3, k = 2: out = 2 * (0.5 * 3 * 2) = 6 on both wires. */
static void known_value(void)
{
    for (int wire = 0; wire < 2; wire++) {
        char spec[1024];
        make_spec(spec, sizeof spec,
                  wire ? "\"tokens\":3,\"hidden\":5,\"experts\":4,\"topk\":2,\"world\":2,\"wire\":\"int8\""
                       : "\"tokens\":3,\"hidden\":5,\"experts\":4,\"topk\":2,\"world\":2",
                  "{\"kind\":\"const\",\"value\":2}");
        ug_result r;
        ug_exec_detail d;
        CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "known value wire %d: %s", wire,
              r.message);
        for (size_t i = 0; d.have_oracle && i < 15; i++)
            CHECK(d.oracle.g[0][i] == 6.0 && d.a[0][i] == 6.0, "out[%zu] oracle %g kernel %g, want 6", i,
                  d.oracle.g[0][i], d.a[0][i]);
        ug_exec_detail_free(&d);
    }
}

/* E = 7 over W = 2: rank 0 owns experts 0..2, rank 1 (the last) owns 3..6. */
static void layout_invariants(const char *routing)
{
    char spec[1024], params[256];
    snprintf(params, sizeof params, "\"tokens\":9,\"hidden\":4,\"experts\":7,\"topk\":3,\"world\":2,\"routing\":\"%s\"",
             routing);
    make_spec(spec, sizeof spec, params, "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
    ug_result r;
    ug_exec_detail d;
    CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "layout %s: %s", routing, r.message);
    if (!d.have_oracle) return;
    const ug_tensor *ids = ug_case_input(&d.c, "expert_ids");
    long rank[2] = {0, 0}, exp_[7] = {0};
    for (size_t t = 0; t < 9; t++)
        for (size_t s = 0; s < 3; s++) {
            long e = (long)ug_tload(ids, t * 3 + s);
            CHECK(e >= 0 && e < 7, "id %ld out of range", e);
            if (e < 0 || e >= 7) continue;
            rank[e >= 3]++;
            exp_[e]++;
            for (size_t u = 0; u < s; u++) CHECK(ug_tload(ids, t * 3 + u) != e, "token %zu routes twice to %ld", t, e);
        }
    CHECK(rank[0] + rank[1] == 27, "copies %ld + %ld != 27", rank[0], rank[1]);
    CHECK(d.oracle.g[1][0] == rank[0] && d.oracle.g[1][1] == rank[1], "rank_counts %g %g want %ld %ld",
          d.oracle.g[1][0], d.oracle.g[1][1], rank[0], rank[1]);
    CHECK(d.oracle.g[2][0] == 0 && d.oracle.g[2][1] == rank[0], "rank_offsets %g %g", d.oracle.g[2][0],
          d.oracle.g[2][1]);
    for (int e = 0; e < 7; e++)
        CHECK(d.oracle.g[3][e] == exp_[e], "expert_counts[%d] %g want %ld", e, d.oracle.g[3][e], exp_[e]);
    if (strcmp(routing, "hot") == 0) /* ids from the first max(k, E/4) = 3 experts: rank 1 gets nothing */
        CHECK(rank[1] == 0 && exp_[6] == 0, "hot routing reached rank 1 (%ld copies)", rank[1]);
    ug_exec_detail_free(&d);
    /* the count mutant loses expert 6 (E/W = 3 per rank): caught exactly when it is hit */
    ug_result m;
    CHECK(opc_run(spec, "mut_last_rank_count", &m, NULL) == 0, "mutant run");
    CHECK((m.outcome == UG_OUT_FAIL) == (exp_[6] > 0), "count mutant outcome %s with %ld copies to expert 6",
          ug_outcome_name(m.outcome), exp_[6]);
}

/* int8 wire: oracle against a double DynQuant (s = amax/127, q = rne(127x/amax)). */
static void int8_differential(void)
{
    ug_exec_detail d;
    if (!sim_passes("\"tokens\":4,\"hidden\":50,\"experts\":8,\"topk\":1,\"world\":4,\"wire\":\"int8\"",
                    "{\"kind\":\"normal\",\"mean\":0,\"std\":1}", "int8", &d))
        return;
    for (size_t t = 0; t < 4; t++) {
        double amax = 0;
        for (size_t j = 0; j < 50; j++) amax = fmax(amax, fabs(opc_in(&d, "x", t * 50 + j)));
        for (size_t j = 0; j < 50; j++) {
            double q = rint(127.0 * opc_in(&d, "x", t * 50 + j) / amax);
            double want = ug_dtype_round(UG_DT_BF16, 1.5 * q * amax / 127.0);
            double g = d.oracle.g[0][t * 50 + j];
            CHECK(fabs(g - want) <= ug_dtype_ulp(UG_DT_BF16, want), "out[%zu,%zu] oracle %a double %a", t, j, g, want);
        }
    }
    ug_exec_detail_free(&d);
}

static void bad_params(void)
{
    static const char *const bad[][2] = {
        {"\"tokens\":1,\"hidden\":4,\"experts\":16,\"topk\":9,\"world\":2", "topk"},
        {"\"tokens\":1,\"hidden\":4,\"experts\":16,\"topk\":2,\"world\":3", "world"},
        {"\"tokens\":1,\"hidden\":4,\"experts\":2,\"topk\":1,\"world\":4", "experts"},
        {"\"tokens\":1,\"hidden\":4,\"experts\":8,\"topk\":1,\"world\":4,\"wire\":\"fp8\"", "wire"},
        {"\"tokens\":0,\"hidden\":4,\"experts\":8,\"topk\":1,\"world\":4", "tokens"}};
    char fmt[1024];
    make_spec(fmt, sizeof fmt, "%s", "{\"kind\":\"normal\",\"mean\":0,\"std\":1}"); /* the spec, params left as %s */
    OPC_EXPECT_REFUSED_EACH(fmt, bad);
}

/* x[0][2] = NaN or +inf on both wires: the kernel matches the oracle; on the int8 wire all of
 * row 0 is NaN, on the bf16 wire only column 2, and row 1 stays finite. */
static void special_values(void)
{
    static const char *vals[] = {"nan", "inf"};
    for (int wire = 0; wire < 2; wire++)
        for (int v = 0; v < 2; v++) {
            char params[256], spec[1024];
            snprintf(params, sizeof params,
                     "\"tokens\":3,\"hidden\":5,\"experts\":4,\"topk\":2,\"world\":2,\"wire\":\"%s\"",
                     wire ? "int8" : "bf16");
            make_spec(spec, sizeof spec, params, "{\"kind\":\"normal\",\"mean\":0,\"std\":1}");
            char *end = strrchr(spec, '}');
            snprintf(end, sizeof spec - (size_t)(end - spec), ",\"inject\":[{\"input\":\"x\",\"i\":2,\"v\":\"%s\"}]}",
                     vals[v]);
            ug_result r;
            ug_exec_detail d;
            CHECK(opc_run(spec, "sim", &r, &d) == 0 && r.outcome == UG_OUT_PASS, "wire %d %s: %s", wire, vals[v],
                  r.message);
            CHECK(isfinite(opc_out(&d, 0, 1)) == !wire && !isfinite(opc_out(&d, 0, 2)) && isfinite(opc_out(&d, 0, 5)),
                  "wire %d %s: row 0 = %g %g, row 1 = %g", wire, vals[v], opc_out(&d, 0, 1), opc_out(&d, 0, 2),
                  opc_out(&d, 0, 5));
            ug_exec_detail_free(&d);
        }
}

int main(void)
{
    known_value();
    layout_invariants("uniform");
    layout_invariants("hot");
    int8_differential();
    special_values();
    bad_params();
    return check_done();
}
