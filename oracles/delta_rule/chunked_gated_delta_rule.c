/* chunked_gated_delta_rule.c — param checks of chunked_gated_delta_rule, the
 * chunked (WY) form of the gated delta rule that prefill kernels use:
 *     S_t = e^{g_t} S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t * scale
 * computed in chunks of L in {32, 64, 128} tokens with the in-chunk cumulative log-decay,
 * the WY representation and (I - A)^{-1} by forward substitution, the state carried
 * between chunks (kernels/sim/delta_rule/chunked_gated_delta_rule.c).
 *
 * The values (EXACT, CERT, NAIVE) deliberately do NOT come from the chunked algorithm: they
 * are the recurrent definition shared with gated_delta_rule (delta_rule_ref.c), so a wrong
 * WY derivation, a chunk border or tail mistake cannot cancel out. Everything is fp32; q
 * and k are expected l2-normalised (the builder normalises them) and are used as given.
 * Primary standard pypto with rtol 1e-3 (docs/STANDARDS.md) and atol 2^-20 max|g|
 * (adjust_rule). Varlen (params.seqlens, the reference's act_seq_len): sequences packed
 * along the tokens, each from its own h0 rows to its own ht rows; both the recurrence and the WY bound run each sequence on its own
 * (ug_delta_check refuses lengths that are empty or do not sum to tokens).
 *
 * certified: the device bound B (UG_AR_DEVICE) is the chunked WY form's own
 * (delta_rule_wy.c: chunks of params.chunk tokens, every stage rounded to fp32, every
 * reduction, the cumulative log-decay included, in any order), with the default c = 2.
 * With the recurrence's bound the WY device needed c = 8 and still failed ht at the
 * reference suite's draws (gates down to -37: the fp32 cumulative decay's absolute error
 * grows with |G| and enters every e^{G_r - G_c}, which the recurrence never rounds). Worst
 * |a - g*| / (c B + ulp/2) of the correct sim kernel, every element of the 90 plan cases:
 * 0.138 / 0.119 / 0.139 / 0.130 at plan seeds 1-4 (c = 2); 0.076 on the reference plan's
 * six cases (aligned_gqa was 2.73 at c = 8). The mutants stay caught (ops show --mutants). */
#include <math.h>
#include <stdio.h>

#include "oracles/delta_rule/delta_rule_ref.h"
#include "oracles/delta_rule/delta_rule_wy.h"
#include "op_params.h"

static int check(const ug_params *P, char *err, size_t errlen)
{
    long chunk = UG_P(chunked_gated_delta_rule, P)->chunk;
    if (chunk != 32 && chunk != 64 && chunk != 128) {
        snprintf(err, errlen, "chunked_gated_delta_rule: param \"chunk\" must be 32, 64 or 128");
        return -2;
    }
    return ug_delta_check(P, err, errlen);
}

static void geometry(const ug_case *c, int out, ug_geom *g)
{
    /* chunk borders and the tail chunk are row-tile edges */
    ug_delta_geometry(c, out, g, (size_t)UG_P(chunked_gated_delta_rule, &c->params)->chunk, 32);
}

/* pypto's atol, per case: 2^-20 of the output's largest |g| (about 8 fp32 ulps of it). The
 * reference test's atol 0 holds against its own fp32 golden, not against the exact value:
 * an element that cancels to near 0 keeps the absolute error of the O(max|g|) terms that
 * cancelled, and with atol 0 the correct sim kernel failed 3 of 3,600 cases over plan seeds
 * 1-40 (9b52e4f023d63f67 at seed 8: ht 2 elements at |g| ~ 5e-5, 1 allowed). With the floor
 * its worst pypto headroom over those seeds is 0.28, and every mutant's catch count is
 * unchanged (ops show --mutants). From the whole output (F64), so --sample does not move it.
 * At least one quantum of the output's subnormal range (fp32 2^-149): an output whose
 * every element is that small rounds onto a grid of that spacing, so a legal kernel that
 * differs from g at all is a quantum off (a fuzz case with h0 subnormal, beta and v zero
 * gave atol 4e-51, and the oracle's own rounded output could not have passed it). */
#define ATOL_OF_MAX 0x1p-20
static void adjust_rule(const ug_case *c, int out, const double *g, size_t n, ug_output_rule *rule)
{
    (void)g, (void)n; /* the checked elements' values would make atol move with --sample */
    double max_abs;
    ug_oracle_output_scale(c, out, NULL, &max_abs);
    rule->pypto_atol = fmax(ATOL_OF_MAX * max_abs, ug_dtype_ulp(c->out[out].dtype, 0.0));
}

const ug_op_def ug_opdef_chunked_gated_delta_rule = {
    .decl.check = check,
    .build = ug_delta_build,
    /* the values from the recurrence; the device bound from the chunked WY form the device runs (delta_rule_wy.c) */
    .oracle = ug_delta_oracle,
    .device_oracle = ug_delta_wy_oracle,
    .geometry = geometry,
    .adjust_rule = adjust_rule};
