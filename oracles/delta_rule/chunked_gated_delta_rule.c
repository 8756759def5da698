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
 * pypto with atol 0 / rtol 1e-3 (docs/STANDARDS.md).
 * certified with c = 8, not 2: its device bound follows the recurrence (any summation order
 * of each step), but this device runs the WY form, whose in-chunk triangular solve and
 * chunk-level products round in other places. Measured with the correct sim kernel, worst
 * |a - g*| / (B + ulp/2) of ht over the first 12 plan cases: 1.2 / 1.5 / 2.5 / 1.3 at plan
 * seeds 1-4 (in units of c = 1); c = 8 leaves a factor of 3 over the worst, and a mutant
 * that gets a chunk border or the decay wrong is off by far more (ops show --mutants). */
#include <stdio.h>

#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/delta_rule/delta_rule_wy.h"
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

/* The values (EXACT, CERT, and the benchmark's NAIVE) come from the recurrence; the device
 * bound from the chunked WY form the device runs (delta_rule_wy.c). */
static int oracle(const ug_case *c, ug_ar *ar, const ug_selection *sel)
{
    if (ug_ar_get_mode(ar) == UG_AR_DEVICE) return ug_delta_wy_oracle(c, ar, sel);
    return ug_delta_oracle(c, ar, sel);
}

const ug_op_def ug_opdef_chunked_gated_delta_rule = {
    .op = UG_OP_CHUNKED_GATED_DELTA_RULE, .decl.check = check, .build = ug_delta_build, .oracle = oracle,
    .geometry = geometry};
