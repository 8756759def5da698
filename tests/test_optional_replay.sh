# test_optional_replay.sh — optional outputs through the CLI (docs/PLUGINS.md, "Optional
# outputs"), on flash_attention_mha's softmax_max and softmax_sum: a plugin that leaves them
# unwritten (tests/fixtures/drop_plugin.c forwarding to the sample plugin) sweeps PASS with
# both NA, stored as n_checked 0 and {"provided":false}; the same plugin writing them is
# judged on them; a replay folder without their files is checked PASS with the same rows
# and `check` says "not provided", while a missing required file is still refused (exit 2);
# export marks them optional and `ops show` lists them as optional. The metric fields are one
# list: `case --json` shows every column of the metrics table under its name, with the figures
# the store wrote (null where an output was not provided).
. "$(dirname "$0")/lib.sh"
EX=$(dirname "$UG_BIN")/examples
PLUG=$EX/libulpgym_plugin_sim.so
DROP=${ULPGYM_FIXTURES:?}/libdrop_plugin.so
DRIVE=$EX/ulpgym_replay_plugin
DB=$T/o.db
q() { sqlite3 "$DB" "$1"; }
[ -f "$PLUG" ] && [ -f "$DROP" ] && [ -x "$DRIVE" ] || { echo "plugins not built: skipped"; exit 77; }
SPEC='{"v":1,"op":"flash_attention_mha","dtype":"bf16","seed":3,"params":{"seqlens":"5:9,7:3,33:70","heads":2,"head_dim":16,"causal":1},"dist":{"q":{"kind":"normal","mean":0,"std":1},"k":{"kind":"normal","mean":0,"std":1},"v":{"kind":"normal","mean":0,"std":1}}}'
export ULPGYM_DROP_FORWARD=$PLUG

# 1. the plugin leaves M and L unwritten: PASS, both NA under every standard, stored as such
ULPGYM_DROP_OUTPUTS="softmax_max softmax_sum" expect_status 0 ug case --backend "plugin:$DROP" --spec "$SPEC"
expect_grep "verdict PASS" "$T/out"
expect_grep "output softmax_max \(fp32\): not provided" "$T/out"
expect_grep "output softmax_sum \(fp32\): not provided" "$T/out"
expect_status 0 ug export --op flash_attention_mha --limit 3 --dir "$T/exp"
ULPGYM_DROP_OUTPUTS="softmax_max softmax_sum" expect_status 0 ug sweep --no-regressions --db "$DB" --quiet \
    --plan "$T/exp/plan.json" --backend "plugin:$DROP"
expect_eq "$(q "select group_concat(verdict) from results where run_id = 1")" "PASS,PASS,PASS" "run 1 verdicts"
expect_eq "$(q "select count(*) from metrics where run_id = 1 and output like 'softmax_%' and n_checked = 0
                and max_abs is null and max_ulp_index is null")" 6 "not-provided metrics rows"
expect_eq "$(q "select count(distinct json_extract(thresholds, '$.softmax_sum')) from verdicts where run_id = 1")" 1 \
    "one thresholds text for L under every standard"
expect_eq "$(q "select json_extract(thresholds, '$.softmax_max.provided') from verdicts where run_id = 1 limit 1")" 0 \
    "thresholds say provided false"
expect_eq "$(q "select count(*) from metrics where run_id = 1 and output = 'o' and n_checked > 0")" 3 "o still judged"

# 2. the same plugin writing them: judged (n_checked > 0), still PASS
ULPGYM_DROP_OUTPUTS="" expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$T/exp/plan.json" \
    --backend "plugin:$DROP"
expect_eq "$(q "select count(*) from metrics where run_id = 2 and output like 'softmax_%' and n_checked > 0")" 6 \
    "provided M and L judged"
expect_eq "$(q "select group_concat(verdict) from results where run_id = 2")" "PASS,PASS,PASS" "run 2 verdicts"

# 3. replay: export marks them optional; a folder without their files is not provided
id=$(q "select case_id from results where run_id = 1 limit 1")
expect_grep '"optional":[[:space:]]*true' "$T/exp/$id/case.json"
expect_status 0 "$DRIVE" "$PLUG" "$T/exp/$id"
rm -f "$T/exp/$id/outputs/softmax_max.npy" "$T/exp/$id/outputs/softmax_sum.npy"
expect_status 0 ug check "$id" --outputs "$T/exp" --db "$DB" --run optional
expect_grep "output softmax_max \(fp32\): not provided" "$T/out"
run=$(q "select max(run_id) from runs")
expect_eq "$(q "select verdict from results where run_id = $run")" PASS "replay without M and L"
expect_eq "$(q "select count(*) from metrics where run_id = $run and output like 'softmax_%' and n_checked = 0")" 2 \
    "replay: not-provided rows"
rm -f "$T/exp/$id/outputs/lse.npy"
expect_status 2 ug check "$id" --outputs "$T/exp" --db "$DB"
expect_grep "missing output file .*lse.npy" "$T/err"

# 4. ops show lists them as optional, with their math
expect_status 0 ug ops show flash_attention_mha
expect_grep "optional \(judged when the kernel writes it.*row max m = max_j s_tj" "$T/out"
expect_status 0 ug ops show flash_attention_mha --json
expect_grep '"optional":[[:space:]]*true' "$T/out"
# 5. the metric fields, one list for the store and the JSON: every column of the metrics table is
# a key of each output in `case --json`, holding the stored figure (run 1, where M and L were not
# provided: null figures and indices, n_checked 0)
if command -v python3 >/dev/null; then
    id1=$(q "select case_id from results where run_id = 1 order by case_id limit 1")
    spec1=$(q "select spec_json from cases where case_id = '$id1'")
    ULPGYM_DROP_OUTPUTS="softmax_max softmax_sum" expect_status 0 ug case --backend "plugin:$DROP" --spec "$spec1" --json
    cp "$T/out" "$T/case.json"
    python3 - "$DB" "$id1" "$T/case.json" <<'PY' && ok || bad "case --json metric fields against the stored row"
import json, math, sqlite3, sys
db, cid, path = sys.argv[1:]
con = sqlite3.connect(db)
cols = [r[1] for r in con.execute("pragma table_info(metrics)")][4:]
outs = {o["name"]: o for o in json.load(open(path))["outputs"]}
assert len(cols) >= 21 and len(outs) == 4, (cols, list(outs))
for name, o in outs.items():
    row = con.execute("select " + ", ".join(cols) + " from metrics where run_id = 1 and case_id = ? and output = ?",
                      (cid, name)).fetchone()
    assert row, name
    for c, v in zip(cols, row):
        assert c in o, f"{name}: column {c} missing from the JSON"
        j = o[c]
        same = (v is None and j is None) or (v is not None and j is not None and math.isclose(v, j, rel_tol=1e-12))
        assert same, f"{name}.{c}: stored {v}, JSON {j}"
    if name.startswith("softmax_"):
        assert o["provided"] is False and o["n_checked"] == 0 and o["max_abs"] is None and o["max_ulp_index"] is None, o
print("metric fields:", len(cols), "columns, every one in the JSON of", len(outs), "outputs")
PY
fi
finish
