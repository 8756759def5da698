#!/usr/bin/env bash
# test_tightness.sh — `ulpgym ops show OP --tightness`: per output, the worst share of its
# allowance a legal kernel (the correct one and the legal_* variants) used over the op's
# plan cases. Differential: the figures equal the largest "used" that a sweep of the same
# cases with the same kernels stored in its verdicts; each legal kernel passes, so every
# figure is at most 1; and the options refuse what they cannot do.
source "$(dirname "$0")/lib.sh"
OP=attn_softmax
SEED=7
jq_() { sqlite3 :memory: "select json_extract('$(sed "s/'/''/g" "$T/tight.json")', '$1')"; }

expect_status 0 ug ops show "$OP" --tightness --seed "$SEED" --json
cp "$T/out" "$T/tight.json"
expect_eq "$(jq_ '$.op')" "$OP" "the JSON names the op"
expect_eq "$(jq_ '$.false_alarms')" 0 "no legal kernel fails a case"
kernels=$(( $(ug ops show "$OP" | awk '$1 ~ /^legal_/ && NF > 1' | wc -l) + 1 ))
expect_eq "$(jq_ '$.legal_kernels')" "$kernels" "the correct kernel and every legal variant ran"
cases=$(jq_ '$.cases')
expect_eq "$cases" "$(ug plan --op "$OP" --seed "$SEED" --count | awk '$1 == "total" {print $2}')" "every plan case of the op"
expect_eq "$(jq_ '$.outputs[0].certified.judged')" "$((cases * kernels))" "every case x kernel judged under certified"

# the same cases and kernels swept into a database: the worst stored "used" per standard
DB=$T/sweep.db
expect_status 0 ug sweep --op "$OP" --seed "$SEED" --no-regressions --db "$DB" --quiet -j 2
for v in $(ug ops show "$OP" | awk '$1 ~ /^legal_/ && NF > 1 {print $1}'); do
    expect_status 0 ug sweep --op "$OP" --seed "$SEED" --backend "sim:$v" --no-regressions --db "$DB" --quiet -j 2
done
worst() {
    sqlite3 "$DB" "select printf('%.4g', max(json_extract(j.value, '$.used'))) from verdicts v, json_each(v.thresholds) j
                   where v.standard = '$1' and j.key = 'y'"
}
primary=$(jq_ '$.primary')
expect_eq "$primary" "$(ug ops | awk -v op="$OP" '$2 == op {print $5}')" "the JSON names the op's primary standard"
for key in primary certified; do
    std=$([ "$key" = certified ] && echo certified || echo "$primary")
    expect_eq "$(sqlite3 :memory: "select printf('%.4g', $(jq_ "\$.outputs[0].$key.worst"))")" "$(worst "$std")" \
              "$std: the tightness figure is the sweep's worst stored headroom"
    w=$(jq_ "\$.outputs[0].$key.worst")
    if awk -v w="$w" 'BEGIN { exit !(w > 0 && w <= 1) }'; then ok; else bad "$std worst $w is not in (0, 1]"; fi
done

# the text form names the worst case, which the plan holds
expect_status 0 ug ops show "$OP" --tightness --seed "$SEED"
expect_grep '^    y +[0-9.e+-]+ +[0-9a-f]{16} (sim|legal_[a-z0-9_]+) ' "$T/out"
id=$(awk '$1 == "y" {print $3; exit}' "$T/out")
expect_grep "^$id " <(ug plan --op "$OP" --seed "$SEED" --list)

# bad input: a clear message and a non-zero exit
expect_status 2 ug ops show "$OP" --seed 3
expect_grep 'seed goes with --tightness' "$T/err"
expect_status 2 ug ops --tightness
expect_status 2 ug ops show "$OP" --tightness --seed -4
expect_status 2 ug ops show no_such_op --tightness
expect_grep 'unknown op' "$T/err"
finish
