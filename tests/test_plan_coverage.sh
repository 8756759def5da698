#!/usr/bin/env bash
# test_plan_coverage.sh — structural coverage (`ulpgym plan --coverage`): every structural
# axis an op's space declares holds at least 20 plan cases or 5 % of the op's cases,
# whichever is more, in the nightly plan; the count is right (checked against plan --specs
# for one axis); a short axis exits 1 and a malformed one 2, with a message.
source "$(dirname "$0")/lib.sh"
expect_status 0 ug plan --coverage
cp "$T/out" "$T/cov"
expect_grep '^0 short axes' "$T/cov"
for op in glm_attention sparse_attention_antiquant sparse_flash_attention_quant; do
    expect_grep "^$op: [0-9]+ cases; each axis needs" "$T/cov"
done
# the grouped-kv-heads count, recounted from the specs
want=$(ug plan --op glm_attention --specs | awk '{print $3}' | sed -n 's/.*"heads_kv":\([0-9]*\).*"heads_q":\([0-9]*\).*/\1 \2/p' |
       awk '$1 > 1 && $1 < $2' | wc -l)
got=$(awk '/^glm_attention:/ {on = 1; next} /^[a-z]/ {on = 0} on && /grouped kv heads/ {print $1}' "$T/cov")
expect_eq "$got" "$want" "glm_attention's grouped-kv-heads count matches the specs"
[ "$got" -ge 32 ] && ok || bad "glm_attention has only $got grouped-kv-head cases"

# a data tree whose space declares an axis no case holds, and one that does not parse
D=$T/data
mkdir -p "$D/gen"
cp -r "$ULPGYM_DATA/gen/ops" "$ULPGYM_DATA/gen/plans" "$D/gen/"
python3 - "$D/gen/ops/glm_attention.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
d["coverage"].append({"axis": "a head_dim of 256", "when": "head_dim == 256"})
json.dump(d, open(p, "w"))
PY
ULPGYM_DATA=$D expect_status 1 ug plan --coverage --op glm_attention
expect_grep 'SHORT +a head_dim of 256' "$T/out"
expect_grep '^1 short axes' "$T/out"
python3 - "$D/gen/ops/glm_attention.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
d["coverage"][-1]["when"] = "head_dim === 256"
json.dump(d, open(p, "w"))
PY
ULPGYM_DATA=$D expect_status 2 ug plan --coverage --op glm_attention
expect_grep 'coverage axis "a head_dim of 256"' "$T/err"
finish
