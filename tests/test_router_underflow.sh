#!/usr/bin/env bash
# test_router_underflow.sh — glm_select_experts' contract where a token's chosen sigmoid
# scores all fall below fp32's smallest normal (every chosen logit below -126 ln 2): a
# device's fp32 s may be subnormal or 0 there, so its renormalised weights may be 0/0; the
# semantics accept NaN or the exact value for them, and only for them. A fuzz finding: the
# correct sim kernel (fp32 sigmoid 1/(1 + e^-x), 0/0 below -88.7) was NONFINITE on router
# logits all -65504 while the exact weights are 1/top_k.
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
grep -q "every chosen logit below -126 ln 2" <(ug ops show glm_select_experts) && ok || bad "the contract states the rule"
finish
