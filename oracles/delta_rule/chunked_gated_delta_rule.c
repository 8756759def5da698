/* chunked_gated_delta_rule.c — operator definition of chunked_gated_delta_rule, the
 * chunked (WY) form of the gated delta rule that prefill kernels use:
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale
 * computed in chunks of L in {32, 64, 128} tokens with the in-chunk cumulative log-decay,
 * the WY representation and (I - A)^{-1} by forward substitution, the state carried
 * between chunks (kernels/sim/delta_rule/chunked_gated_delta_rule.c).
 *
 * The oracle is deliberately NOT the chunked algorithm: it is the recurrent definition
 * shared with gated_delta_rule (delta_rule_ref.c), so a wrong WY derivation, a chunk
 * border or tail mistake cannot cancel out. Everything is fp32; q and k are expected
 * l2-normalised (the builder normalises them) and are used as given. Primary standard
 * pypto with atol 0 / rtol 1e-3 (STANDARDS.md). */
#include <stdio.h>

#include "kernels/sim/delta_rule/chunked_gated_delta_rule.h"
#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/verdict.h"

#define CGDR_OP "chunked_gated_delta_rule"

static int read_params(const ug_spec *s, ug_delta_params *p, long *chunk, char *err, size_t errlen)
{
    if (ug_delta_read_params(s, CGDR_OP, p, err, errlen) || ug_param_int(s->params, "chunk", 64, chunk, err, errlen))
        return -2;
    if (*chunk != 32 && *chunk != 64 && *chunk != 128) {
        snprintf(err, errlen, CGDR_OP ": param \"chunk\" must be 32, 64 or 128");
        return -2;
    }
    return 0;
}

static int build(ug_case *c, char *err, size_t errlen)
{
    ug_delta_params p;
    long chunk;
    if (read_params(&c->spec, &p, &chunk, err, errlen)) return -2;
    if (c->spec.dtype != UG_DT_FP32) {
        snprintf(err, errlen, CGDR_OP ": dtype must be fp32 (every tensor is fp32)");
        return -2;
    }
    return ug_delta_build(c, &p, UG_DT_FP32, UG_DT_FP32, err, errlen);
}

static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    ug_delta_params p;
    long chunk;
    char err[256];
    if (read_params(&c->spec, &p, &chunk, err, sizeof err)) return -2;
    return ug_delta_oracle(c, ar, sel, &p);
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_delta_params p;
    long chunk = 64;
    char err[256];
    if (read_params(&c->spec, &p, &chunk, err, sizeof err)) chunk = 64;
    ug_delta_geometry(c, out, g, (size_t)chunk, 32); /* chunk borders and the tail chunk are row-tile edges */
}

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 0.0, 1e-3, 0.005},  /* STANDARDS.md: chunked_gated_delta_rule 0 / 1e-3 */
    {"ht", UG_CMP_NUMERIC, 0.0, 1e-3, 0.005}, /* the same pair for the final state */
};

const ug_op_def ug_opdef_chunked_gated_delta_rule = {
    .op = UG_OP_CHUNKED_GATED_DELTA_RULE,
    .summary = "chunked (WY) gated delta rule, prefill form; judged against the recurrent definition",
    .dtypes = "fp32",
    .primary = UG_STD_PYPTO,
    .bench_level = 0,
    .outputs = outputs,
    .n_outputs = 2,
    .build = build,
    .oracle = oracle,
    .geometry = geometry,
    .variants = ug_chunked_gated_delta_rule_variants,
    .params_doc =
        "{\"tokens\":\"T tokens of one sequence (int, 1..65536)\","
        "\"chunk\":\"L tokens per chunk (int, 32 | 64 | 128, default 64); the last chunk holds T mod L when L does not "
        "divide T\","
        "\"hv\":\"Hv value heads (int, a multiple of hqk, <= 256)\","
        "\"hqk\":\"Hqk query/key heads (int, 1..256); value head h reads qk head h / (Hv/Hqk)\","
        "\"dk\":\"Dk key head dim (int, 1..1024, default 128)\",\"dv\":\"Dv value head dim (int, 1..1024, default 128)\","
        "\"scale\":\"fp32 output scale (default Dk^-1/2)\","
        "\"tensors\":\"in q[T,Hqk,Dk] fp32 and k[T,Hqk,Dk] fp32, both expected l2-normalised along Dk (used as given, "
        "not normalised by the op); v[T,Hv,Dv] fp32; g[T,Hv] fp32 per-token log decay (<= 0; the kernel forms the "
        "in-chunk cumulative sum); beta[T,Hv] fp32 in (0,1); h0[Hv,Dv,Dk] fp32 initial state (row i = value index); "
        "out o[T,Hv,Dv] fp32, ht[Hv,Dv,Dk] fp32 final state; all row-major\"}",
};
