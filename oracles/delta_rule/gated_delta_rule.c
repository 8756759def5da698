/* gated_delta_rule.c — operator definition of gated_delta_rule, the recurrent (decode)
 * gated delta rule:
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale
 * per value head h, reading qk head h / (Hv/Hqk) (grouped value heads, 32:16 in production).
 *
 * q, k, v are bf16; g (log decay, <= 0), beta and the state are fp32; o is bf16 and the
 * final state fp32. The operator expects l2-normalised q and k (the builder normalises
 * them, then rounds to bf16) and does not normalise them again: kernel and oracle use the
 * given values. The oracle is the shared recurrent reference (delta_rule_ref.c), exact
 * with a certified fast path. Primary standard pypto, 0.05 / 0.01 for both outputs
 * (STANDARDS.md lists one pair for the op). */
#include <stdio.h>

#include "kernels/sim/delta_rule/gated_delta_rule.h"
#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/verdict.h"

#define GDR_OP "gated_delta_rule"

static int build(ug_case *c, char *err, size_t errlen)
{
    ug_delta_params p;
    if (ug_delta_read_params(&c->spec, GDR_OP, &p, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_BF16) {
        snprintf(err, errlen, GDR_OP ": dtype must be bf16 (q, k, v and o; g, beta and the state are fp32)");
        return -2;
    }
    return ug_delta_build(c, &p, UG_DT_BF16, UG_DT_BF16, err, errlen);
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_delta_params p;
    char err[256];
    if (ug_delta_read_params(&c->spec, GDR_OP, &p, err, sizeof err)) return -2;
    return ug_delta_oracle(c, ar, sel, &p);
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_delta_geometry(c, out, g, 1, 32); /* one token per step; 32-lane rows */
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 0.05, 0.01, 0.005},  /* STANDARDS.md: gated_delta_rule 0.05 / 0.01 */
    {"ht", UG_CMP_NUMERIC, 0.05, 0.01, 0.005}, /* the same pair for the final state */
};

const ug_op_def ug_opdef_gated_delta_rule = {
    .op = UG_OP_GATED_DELTA_RULE,
    .summary = "recurrent gated delta rule: S_t = e^g S_{t-1}(I - beta k k^T) + beta v k^T, o_t = S_t q_t*scale; "
               "value heads share qk heads",
    .dtypes = "bf16",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 2,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_gated_delta_rule_variants,
    .params_doc =
        "{\"tokens\":\"T tokens of one sequence, processed in order (int, 1..65536; 1 = decode)\","
        "\"hv\":\"Hv value heads (int, a multiple of hqk, <= 256)\","
        "\"hqk\":\"Hqk query/key heads (int, 1..256); value head h reads qk head h / (Hv/Hqk)\","
        "\"dk\":\"Dk key head dim (int, 1..1024, default 128)\",\"dv\":\"Dv value head dim (int, 1..1024, default 128)\","
        "\"scale\":\"fp32 output scale (default Dk^-1/2)\","
        "\"tensors\":\"in q[T,Hqk,Dk] bf16 and k[T,Hqk,Dk] bf16, both expected l2-normalised along Dk (used as given, "
        "not normalised by the op); v[T,Hv,Dv] bf16; g[T,Hv] fp32 log decay (<= 0); beta[T,Hv] fp32 in (0,1); "
        "h0[Hv,Dv,Dk] fp32 initial state (row i = value index, S maps keys to values); "
        "out o[T,Hv,Dv] bf16, ht[Hv,Dv,Dk] fp32 final state; all row-major\"}",
};
