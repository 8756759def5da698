#!/usr/bin/env bash
# test_plugin_declared.sh — a plugin written to an older contract is not blamed for params
# it never knew (issue #36 item 17). `ops show` prints each op's contract digest; a plugin
# exporting ulpgym_implements (tests/fixtures/declared_plugin.c: its text from
# $ULPGYM_DECL_TEXT, its kernels the sample plugin's) gets SKIP, with the reason, for every
# case whose param it does not list at a non-default value or whose value it does not list;
# the other cases run and pass; a malformed declaration is ERROR naming it; without one,
# every case runs as before. Each run stores every op's contract digest (runs.contracts).
. "$(dirname "$0")/lib.sh"
export ULPGYM_DECL_FORWARD=$(dirname "$UG_BIN")/examples/libulpgym_plugin_sim.so
PLUG=plugin:$ULPGYM_FIXTURES/libdeclared_plugin.so
[ -f "$ULPGYM_DECL_FORWARD" ] || { echo "skipped: no sample plugin at $ULPGYM_DECL_FORWARD"; exit 77; }
db=$T/d.db
q() { sqlite3 "$db" "$1"; }

# the contract digest: 16 hex digits, the same in text and JSON, different per op
expect_status 0 ug ops show attn_softmax
expect_grep '^  contract: [0-9a-f]{16} ' "$T/out"
digest=$(sed -n 's/^  contract: \([0-9a-f]*\) .*/\1/p' "$T/out")
expect_status 0 ug ops show attn_softmax --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["contract"] == sys.argv[2]' "$T/out" "$digest" &&
    ok || bad "ops show --json has another contract than the text"
ug ops show rms_norm_rope >"$T/other" 2>&1
if grep -q "contract: $digest" "$T/other"; then bad "two ops share a contract digest"; else ok; fi

# the plan's attn_softmax cases at default cap and mask: the ones an old kernel implements
ug plan --op attn_softmax --specs >"$T/specs"
n_all=$(wc -l <"$T/specs")
n_default=$(python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    p = json.loads(line.split(" ", 2)[2])["params"]
    n += p.get("cap", 0) == 0 and p.get("mask", "none") == "none"
print(n)' "$T/specs")
[ "$n_default" -gt 0 ] && [ "$n_default" -lt "$n_all" ] && ok || bad "the plan has $n_default of $n_all cases at default cap and mask"

# 1. written before cap and mask existed: those cases SKIP with the reason, the rest PASS
export ULPGYM_DECL_TEXT='{"contract":"0123456789abcdef","params":{"rows":"any","cols":"any","scale":"any"}}'
expect_status 0 ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --backend "$PLUG" -j 2
expect_eq "$(q "select count(*) from results where run_id = 1 and verdict = 'PASS'")" "$n_default" "cases run and passed"
expect_eq "$(q "select count(*) from results where run_id = 1 and verdict = 'SKIP'")" "$((n_all - n_default))" "cases skipped"
expect_eq "$(q "select count(*) from results where run_id = 1 and verdict not in ('PASS', 'SKIP')")" 0 "cases failed"
expect_eq "$(q "select json_extract(contracts, '$.attn_softmax') from runs where run_id = 1")" "$digest" \
    "the run stores the contract it judged by"
expect_grep 'the plugin declares no param (cap|mask) for attn_softmax \(written to an older contract\?\); this case has (cap|mask) = [^,]+, the default is (0|"none") \(it was written to contract 0123456789abcdef of attn_softmax; this ulpgym.s is [0-9a-f]{16}\)' \
    <(q "select message from results where run_id = 1 and verdict = 'SKIP'")

# 2. a list of values: mask implemented as none and causal only
export ULPGYM_DECL_TEXT='{"params":{"rows":"any","cols":"any","scale":"any","cap":"any","mask":["none","causal"]}}'
expect_status 0 ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --backend "$PLUG" -j 2
n_padding=$(grep -c '"mask":"padding"' "$T/specs")
expect_eq "$(q "select count(*) from results where run_id = 2 and verdict = 'SKIP'")" "$n_padding" "padding cases skipped"
expect_eq "$(q "select count(*) from results where run_id = 2 and verdict = 'PASS'")" "$((n_all - n_padding))" "others passed"
expect_grep 'implements attn_softmax.s param mask only as \["none","causal"\]; this case has mask = "padding"$' \
    <(q "select message from results where run_id = 2 and verdict = 'SKIP'")

# 3. a malformed declaration: ERROR naming it, on the first case (sweep exits 1 under --fail-on fail)
export ULPGYM_DECL_TEXT='{"params":[1]}'
expect_status 1 ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 2 --backend "$PLUG"
expect_eq "$(q "select count(*) from results where run_id = 3 and verdict = 'ERROR' and message like '%ulpgym_implements(\"attn_softmax\") is not a JSON object%'")" 2 "malformed: ERROR"
export ULPGYM_DECL_TEXT='{"params":{"rows":"all"}}'
expect_status 1 ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 1 --backend "$PLUG"
expect_grep 'lists param rows as neither "any" nor an array' <(q "select message from results where run_id = 4")

# 4. no declaration (NULL): every case runs, as before the export existed
unset ULPGYM_DECL_TEXT
expect_status 0 ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 20 --backend "$PLUG"
expect_eq "$(q "select count(*) from results where run_id = 5 and verdict = 'PASS'")" 20 "undeclared: every case runs"
finish
