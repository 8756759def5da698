/* chunked_gated_delta_rule.c — param checks of chunked_gated_delta_rule, the
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

const ug_op_def ug_opdef_chunked_gated_delta_rule = {
    .op = UG_OP_CHUNKED_GATED_DELTA_RULE, .decl.check = check, .build = ug_delta_build, .oracle = ug_delta_oracle,
    .geometry = geometry};
