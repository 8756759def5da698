# test_reference_plan.sh — the reference plan (gen/plans/reference.json, issue #19 item 6):
# `--plan reference` resolves to it; every case names its source test as
# tests/ops/<path>.py::<function>[param id]; ":light" drops exactly the cases marked heavy;
# the light part swept with the sim kernels has no failure under the ops' primary
# standards, under `reference` (the reference tests' own rules) and under `certified`;
# `ulpgym report --unmatched` (and the md report of a reference run) lists the reference
# tests without an equivalent, and every GLM and DeepSeek operator has a case or is named
# there; a malformed source, heavy, unmatched or deviations entry is refused with exit 2.
# The heavy cases run in the nightly's full reference sweep, not here.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 is needed to read the sweep's verdicts"; exit 77; }

ug plan --plan reference --list >"$T/all.txt" 2>"$T/err" || bad "plan --plan reference: $(cat "$T/err")"
ug plan --plan reference:light --list >"$T/light.txt" 2>"$T/err" || bad "plan --plan reference:light: $(cat "$T/err")"
n_all=$(wc -l <"$T/all.txt")
n_heavy=$(grep -c '(heavy)$' "$T/all.txt")
expect_eq "$(grep -cE '<- tests/ops/[^ ]+\.py::[A-Za-z0-9_]+(\[[^]]+\])?( \(heavy\))?$' "$T/all.txt")" "$n_all" \
    "every reference case names its source as tests/ops/<path>.py::<function>[id]"
expect_eq "$(wc -l <"$T/light.txt")" "$((n_all - n_heavy))" ":light leaves out exactly the heavy cases"
expect_eq "$(grep -c '(heavy)$' "$T/light.txt")" "0" "no heavy case in the light plan"
[ "$n_all" -ge 80 ] && ok || bad "the reference plan has $n_all cases (87 when written)"
# --specs (scripts/bench_reference.sh reads it): the same cases in the same order, heavy
# marked alike, each line's spec the case's own (its op, dtype and params as --list shows)
ug plan --plan reference --specs >"$T/specs.txt" 2>"$T/err" || bad "plan --specs: $(cat "$T/err")"
expect_eq "$(cut -d' ' -f1 "$T/specs.txt" | tr '\n' ' ')" "$(cut -d' ' -f1 "$T/all.txt" | tr '\n' ' ')" "--specs lists --list's IDs in order"
expect_eq "$(grep -c '^[0-9a-f]* heavy {' "$T/specs.txt")" "$n_heavy" "--specs marks the same cases heavy"
python3 -c 'import json, sys
specs = [l.split(" ", 2) for l in open(sys.argv[1])]
rows = [l.split() for l in open(sys.argv[2])]
bad = [s[0] for s, r in zip(specs, rows) if [json.loads(s[2])[k] for k in ("op", "dtype")] != r[1:3]]
print(len(bad))' "$T/specs.txt" "$T/all.txt" >"$T/specbad.txt"
expect_eq "$(cat "$T/specbad.txt")" "0" "each --specs spec has its case's op and dtype"
ug plan --plan "$ULPGYM_DATA/gen/plans/reference.json" --count | tail -1 >"$T/bypath.txt"
expect_eq "$(cat "$T/bypath.txt")" "total $n_all" "--plan NAME and --plan FILE are the same plan"

# the light part with the sim kernels: nothing fails under the primary standards, and under
# reference and certified exactly the plan's listed deviations (each with its reason) fail
db="$T/ref.db"
ug sweep --plan reference:light --no-regressions --db "$db" --quiet -j 2 >"$T/sweep.txt" 2>&1
n_light=$((n_all - n_heavy))
expect_eq "$(sqlite3 "$db" 'select count(*) from results')" "$n_light" "every light case has a result"
expect_eq "$(sqlite3 "$db" "select count(*) from results where verdict<>'PASS'")" "0" \
    "sim passes every light reference case under its primary standard"
expect_eq "$(sqlite3 "$db" "select count(*) from verdicts where standard='reference' and verdict<>'NA'")" \
    "$n_light" "every light case is judged by its reference rule (every op in the plan has one)"
sqlite3 "$db" "select case_id, standard from verdicts where standard in ('reference','certified') and verdict='FAIL'" |
    while IFS='|' read -r id std; do
        echo "$(grep "^$id " "$T/light.txt" | sed 's/.*<- //') $std"
    done | sort >"$T/failed.txt"
python3 -c 'import json,sys
light = {l.split("<- ")[1].strip() for l in open(sys.argv[2]) if "<- " in l}
for d in json.load(open(sys.argv[1]))["deviations"]:
    if d["source"] in light: print(d["source"], d["standard"])' \
    "$ULPGYM_DATA/gen/plans/reference.json" "$T/light.txt" | sort >"$T/deviations.txt"
expect_eq "$(cat "$T/failed.txt")" "$(cat "$T/deviations.txt")" \
    "the light cases failing reference or certified are exactly the plan's known deviations of light cases"

# the unmatched list
expect_status 0 ug report --unmatched
expect_grep 'Reference tests without an equivalent' "$T/out"
expect_grep 'test_mla_prolog.py::test_deepseek_v2_lite_chat_mla_prolog`: the KV half' "$T/out"
expect_eq "$(sed '/^## Known deviations/q' "$T/out" | grep -c '^- `tests/ops/')" \
    "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["unmatched"]))' "$ULPGYM_DATA/gen/plans/reference.json")" \
    "every unmatched entry printed"
expect_eq "$(grep -c '^- `tests/ops/deepseek_v32_exp/test_lightning_indexer_prolog_quant.py::test_b1_s1_4k_s2_64k` under reference: heavy case' "$T/out")" "1" \
    "the one known deviation printed with its reason: a heavy case whose rule is below one output ulp"
expect_eq "$(sed -n '/^## Known deviations/,$p' "$T/out" | grep -c '^- `tests/ops/')" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["deviations"]))' "$ULPGYM_DATA/gen/plans/reference.json")" \
    "every deviation printed"
expect_eq "$(wc -l <"$T/deviations.txt")" "0" \
    "no deviation of a light case: the goldens that round as their kernels do are the tests' own (reference_golden)"
# the GLM and DeepSeek operators joined the plan: each has a case or is named by an unmatched entry
awk '{print $2}' "$T/all.txt" | sort -u >"$T/plan_ops.txt"
for op in $(ug ops | awk '($1 == "GLM" || $1 == "DeepSeek") && $3 == "implemented" {print $2}'); do
    grep -qx "$op" "$T/plan_ops.txt" || grep -qw "$op" "$T/out" || bad "$op: no reference case and no unmatched entry"
done
expect_grep 'test_lightning_indexer_prolog_quant.py::test_b2_s1_4k_s2_64k`: not runnable as stored' "$T/out"
# the non-quantised MLA prolog tests: b4 is an mla_prolog case, b64 is named with the memory it needs;
# the other-SoC and graph-captured variants say why they have no case of their own
grep -q ' mla_prolog .*test_mla_prolog_quant.py::test_b4_s64k2_pa_nd_bf16_d (heavy)$' "$T/all.txt" && ok ||
    bad "test_b4_s64k2_pa_nd_bf16_d is not an mla_prolog case"
expect_grep 'test_b64_s64k2_pa_nd_bf16_d`: not in the plan for its size.*28766 MiB' "$T/out"
expect_grep 'test_flash_attention_mha_910.py::test_01`: the same shape.*covered by that case' "$T/out"
expect_grep 'test_flash_attention_mha_grad_a3.py`: the A3 kernel writes dq, dk and dv in fp32' "$T/out"
expect_grep 'test_gated_delta_rule_aclgraph_qwen3_6_27b.py`: no precision compare' "$T/out"
expect_eq "$(grep -c 'not transcribed yet' "$T/out")" "0" "no reference test left 'not transcribed yet'"
expect_status 0 ug report --db "$db" --format md
expect_grep 'Reference tests without an equivalent' "$T/out"

# malformed plans: exit 2 with the key named
bad_plan() { # JSON, the word the message must hold
    printf '%s' "$1" >"$T/bad.json"
    expect_status 2 ug plan --plan "$T/bad.json" --count
    expect_grep "$2" "$T/err"
}
C='"op":"attn_softmax","dtype":"fp32","params":{"rows":1,"cols":4},"dist":{"x":{"kind":"normal"}}'
bad_plan '{"name":"b","version":1,"cases":[{'"$C"',"source":7}]}' 'source'
bad_plan '{"name":"b","version":1,"cases":[{'"$C"',"heavy":"yes"}]}' 'heavy'
bad_plan '{"name":"b","version":1,"cases":[{'"$C"'}],"unmatched":[{"source":"x"}]}' 'unmatched\[0\]'
bad_plan '{"name":"b","version":1,"cases":[{'"$C"'}],"unmatched":{"source":"x","why":"y"}}' 'unmatched'
bad_plan '{"name":"b","version":1,"cases":[{'"$C"'}],"deviations":[{"source":"x","why":"y"}]}' 'deviations\[0\]'
printf '%s' '{"name":"b","version":1,"cases":[{'"$C"'}],"deviations":[{"source":"x","standard":"nope","why":"y"}]}' >"$T/bad.json"
expect_status 2 ug report --unmatched --plan "$T/bad.json"
expect_grep 'unknown standard "nope"' "$T/err"
expect_status 2 ug plan --plan no_such_plan --count
expect_grep 'gen/plans/no_such_plan.json' "$T/err"
finish
