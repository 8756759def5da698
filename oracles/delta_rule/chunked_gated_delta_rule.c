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
 * pypto with atol 0 / rtol 1e-3 (docs/STANDARDS.md). */
#include <stdio.h>

#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/verdict.h"

static int check(const ug_params *P, char *err, size_t errlen)
{
    long chunk = ug_p_int(P, "chunk");
    if (chunk != 32 && chunk != 64 && chunk != 128) {
        snprintf(err, errlen, "chunked_gated_delta_rule: param \"chunk\" must be 32, 64 or 128");
        return -2;
    }
    return ug_delta_check(P, err, errlen);
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    /* chunk borders and the tail chunk are row-tile edges */
    ug_delta_geometry(c, out, g, (size_t)ug_p_int(&c->params, "chunk"), 32);
}

static const ug_param_decl params[] = {
    UG_DELTA_PARAM_DECLS,
    {"chunk", UG_PARAM_INT, "64", 32, 128, NULL,
     "L tokens per chunk: 32, 64 or 128; the last chunk holds T mod L when L does not divide T"},
    {NULL},
};

static const ug_tensor_decl tensors[] = {UG_DELTA_TENSOR_DECLS("fp32:fp32")};

static const ug_output_rule outputs[] = {
    {"o", UG_CMP_NUMERIC, 0.0, 1e-3, 0.005},  /* docs/STANDARDS.md: chunked_gated_delta_rule 0 / 1e-3 */
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
    .decl = {"chunked_gated_delta_rule", params, NULL, tensors, check},
    .semantics = UG_DELTA_SEMANTICS " Every tensor is fp32. The result does not depend on chunk; the chunked kernel's "
                                    "own fp32 intermediates (the cumulative log-decay G, e^{G_r-G_c}) can overflow or "
                                    "absorb small g after a huge one, and the oracle still expects the exact value.",
    .build = ug_delta_build,
    .oracle = ug_delta_oracle,
    .geometry = geometry,
};
