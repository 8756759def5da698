#!/usr/bin/env bash
# test_router_underflow.sh — glm_select_experts' contract where a token's chosen sigmoid
# scores all fall below fp32's smallest normal (every chosen logit below -126 ln 2): a
# device's fp32 s may be subnormal or 0 there, so its renormalised weights may be 0/0; the
# semantics accept NaN or the exact value for them, and only for them. A fuzz finding: the
# correct sim kernel (fp32 sigmoid 1/(1 + e^-x), 0/0 below -88.7) was NONFINITE on router
# logits all -65504 while the exact weights are 1/top_k.
# And a NaN beside scores that fp32's sigmoid rounds to one value (logits near +-80): NaNs
# rank first and tie with each other, and the tie rule still decides among the finite
# scores (the exact set was required before, which the correct kernel failed: a finding of
# a 60 s fuzz).
source "$(dirname "$0")/lib.sh"
spec() { # spec LOGIT RENORMALIZE
    printf '{"dist":{"e_score_correction_bias":{"kind":"const","value":0},"router_logits":{"kind":"const","value":%s}},"dtype":"fp32","op":"glm_select_experts","params":{"tokens":4,"renormalize":%s},"seed":7,"v":1}' "$1" "$2"
}
for logit in -65504 -104 -90 -88 -87.3 -87 -50; do
    expect_status 0 ug case --spec "$(spec "$logit" 1)"
    expect_grep "verdict PASS" "$T/out"
done
# without renormalisation nothing divides: the exact weights (0 in fp32) as before
expect_status 0 ug case --spec "$(spec -65504 0)"
expect_grep "verdict PASS" "$T/out"
nan_spec='{"dist":{"e_score_correction_bias":{"hi":0.001,"kind":"uniform","lo":0},"router_logits":{"hi":80,"kind":"uniform","lo":-80}},"dtype":"fp32","inject":[{"i":384,"input":"router_logits","v":"nan"},{"i":"all","input":"e_score_correction_bias","v":"zero"},{"i":0,"input":"router_logits","v":"zero"}],"op":"glm_select_experts","params":{"group_score":"max","num_expert_group":4,"renormalize":0,"routed_scaling_factor":2.5,"tokens":1,"topk_group":2},"seed":0,"v":1}'
expect_status 0 ug case --spec "$nan_spec"
expect_grep "verdict PASS" "$T/out"
grep -q "every chosen logit below -126 ln 2" <(ug ops show glm_select_experts) && ok || bad "the contract states the rule"
grep -q "NaN scores tie with each other" <(ug ops show glm_select_experts) && ok || bad "the contract states the NaN tie rule"
finish
