#!/usr/bin/env bash
# test_plan_coverage.sh — structural coverage (`ulpgym plan --coverage`): every structural
# axis an op's space declares holds at least 20 plan cases or 5 % of the op's cases,
# whichever is more, in the nightly plan, and every op declares some; the counts are right
# (checked against plan --specs for two axes); a short axis or an op without axes exits 1 and
# a malformed axis 2, with a message.
source "$(dirname "$0")/lib.sh"
expect_status 0 ug plan --coverage
cp "$T/out" "$T/cov"
expect_grep '^0 short axes; 0 ops declare no structural axes' "$T/cov"
[ "$(grep -c '^[a-z0-9_]*: [0-9]* cases; each axis needs' "$T/cov")" = 34 ] && ok || bad "not all 34 ops have axes"
for op in glm_attention sparse_attention_antiquant sparse_flash_attention_quant; do
    expect_grep "^$op: [0-9]+ cases; each axis needs" "$T/cov"
done
# the grouped-kv-heads count, recounted from the specs
want=$(ug plan --op glm_attention --specs | awk '{print $3}' | sed -n 's/.*"heads_kv":\([0-9]*\).*"heads_q":\([0-9]*\).*/\1 \2/p' |
       awk '$1 > 1 && $1 < $2' | wc -l)
got=$(awk '/^glm_attention:/ {on = 1; next} /^[a-z]/ {on = 0} on && /grouped kv heads/ {print $1}' "$T/cov")
expect_eq "$got" "$want" "glm_attention's grouped-kv-heads count matches the specs"
[ "$got" -ge 32 ] && ok || bad "glm_attention has only $got grouped-kv-head cases"
# a context of one token (minof), recounted from the specs
want=$(ug plan --op glm_attention --specs | sed -n 's/.*"actual_seqs":"\([0-9,]*\)".*/,\1,/p' | grep -c ',1,')
got=$(awk '/^glm_attention:/ {on = 1; next} /^[a-z]/ {on = 0} on && /a context of one token/ {print $1}' "$T/cov")
expect_eq "$got" "$want" "glm_attention's one-token-context count matches the specs"

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
# an op whose space declares no axis fails the rule
python3 - "$D/gen/ops/glm_attention.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
del d["coverage"]
json.dump(d, open(p, "w"))
PY
ULPGYM_DATA=$D expect_status 1 ug plan --coverage --op glm_attention --op page_attention
expect_grep '^glm_attention: 640 cases; declares no structural axes' "$T/out"
expect_grep '^0 short axes; 1 ops declare no structural axes' "$T/out"
finish
