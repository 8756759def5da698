/* gated_delta_rule.c — param checks of gated_delta_rule, the recurrent (decode)
 * gated delta rule:
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale
 * per value head h, reading qk head h / (Hv/Hqk) (grouped value heads, 32:16 in production).
 *
 * q, k, v are bf16; g (log decay, <= 0), beta and the state are fp32; o is bf16 and the
 * final state fp32. The operator expects l2-normalised q and k (the builder normalises
 * them, then rounds to bf16) and does not normalise them again: kernel and oracle use the
 * given values. The oracle is the shared recurrent reference (delta_rule_ref.c), exact
 * with a certified fast path. Primary standard certified: at the reference suite's own
 * input scale (q, k, v, g, beta randn x 0.1, a zero state; tests/ops/qwen3_5_9b) o and the
 * state are ~1e-2, below the listed atol 0.05, so pypto (0.05 / 0.01) and the reference
 * test's own rule passed mut_decay_after and mut_beta_v_only on every element; certified
 * fails both there (tests/test_reference_mutants.sh). The pair stays stored beside it. */
#include "oracles/delta_rule/delta_rule_ref.h"

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    ug_delta_geometry(c, out, g, 1, 32); /* one token per step; 32-lane rows */
}

const ug_op_def ug_opdef_gated_delta_rule = {
    .decl.check = ug_delta_check, .build = ug_delta_build, .oracle = ug_delta_oracle, .geometry = geometry};
