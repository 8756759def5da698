# test_replay_roundtrip.sh — the replay bridge end to end: every plan case is exported,
# an independent program (examples' ulpgym_replay_plugin running the sim kernels through
# the plugin ABI, with no ulpgym library) writes the outputs, and `ulpgym check` stores
# results, metrics and verdicts identical to a sim sweep — for the correct kernels and
# for a planted mutant (so failing verdicts match too). Also: single-case export by ID
# prefix, --run collecting checks, device-declared SKIP/ERROR, and the replay:DIR backend.
. "$(dirname "$0")/lib.sh"
EX=$(dirname "$UG_BIN")/examples
PLUG=$EX/libulpgym_plugin_sim.so
DRIVE=$EX/ulpgym_replay_plugin
DB=$T/r.db
q() { sqlite3 "$DB" "$1"; }
# rows of run A not in run B, over a table's columns (both directions must be empty)
differ() {
    local cols=$3
    q "select count(*) from (select $cols from $4 where run_id = $1 except select $cols from $4 where run_id = $2)"
}
same_runs() {
    local a=$1 b=$2 what=$3
    for spec in "results:case_id, verdict, primary_standard, message" \
        "metrics:case_id, output, dtype, n_checked, n_total, nonfinite_mismatch, max_abs, max_abs_index, max_rel, max_ulp, max_ulp_index, mean_ulp, mere, mare, rmse, eb, small_err_ratio, cosine, bench_max_abs, bench_mere, bench_mare, bench_rmse, bench_small_err_ratio" \
        "verdicts:case_id, standard, verdict, thresholds"; do
        local table=${spec%%:*} cols=${spec#*:}
        expect_eq "$(differ "$a" "$b" "$cols" "$table")/$(differ "$b" "$a" "$cols" "$table")" "0/0" "$what: $table differ"
    done
}

# 1. the reference: a sim sweep of the whole default plan (run 1)
expect_status 0 ug sweep --db "$DB" --quiet
total=$(q "select n_cases from runs where run_id = 1")
if [ "$total" -gt 0 ]; then ok; else bad "empty reference sweep"; fi

# 2. export all, device writes, check (run 2)
expect_status 0 ug export --dir "$T/plan"
expect_grep "exported $total cases" "$T/out"
expect_status 0 "$DRIVE" "$PLUG" "$T"/plan/*/
expect_status 0 ug check --outputs "$T/plan" --db "$DB" --run roundtrip
expect_eq "$(q "select backend || ' ' || plan_name || ' ' || n_cases || ' ' || status from runs where run_id = 2")" "replay roundtrip $total done" "replay run row"
same_runs 1 2 "sim sweep vs replay"

# 3. the replay:DIR backend reads the same folders inside a sweep (run 3)
expect_status 0 ug sweep --db "$DB" --quiet --backend "replay:$T/plan"
same_runs 1 3 "sim sweep vs sweep --backend replay:DIR"

# 4. a mutant: failing verdicts match as well (runs 4 and 5)
expect_status 0 ug sweep --db "$DB" --quiet --op attn_softmax --kernel-variant mut_bf16_sum
expect_status 0 ug export --op attn_softmax --dir "$T/mut"
ULPGYM_PLUGIN_SIM_VARIANT=mut_bf16_sum expect_status 0 "$DRIVE" "$PLUG" "$T"/mut/*/
expect_status 1 ug check --outputs "$T/mut" --db "$DB"
same_runs 4 5 "mutant sweep vs mutant replay"
nfail=$(q "select count(*) from results where run_id = 5 and verdict = 'FAIL'")
if [ "$nfail" -gt 0 ]; then ok; else bad "the mutant replay shows no FAIL"; fi

# 5. one case by ID prefix; --run collects; a plain check starts a new run
id=$(ug plan --op inplace_add_rmsnorm --list | awk '$3 == "bf16" {print $1; exit}')
expect_status 0 ug export "${id:0:8}" --dir "$T/one"
expect_grep "ulpgym check $id --outputs $T/one" "$T/out"
expect_status 0 "$DRIVE" "$PLUG" "$T/one"
expect_status 0 ug check "${id:0:8}" --outputs "$T/one" --db "$DB" --run single
expect_grep "verdict PASS" "$T/out"
runs=$(q "select count(*) from runs")
expect_status 0 ug check "$id" --outputs "$T/one" --db "$DB" --run single
expect_eq "$(q "select count(*) from runs")" "$runs" "--run NAME adds to its run"
expect_eq "$(q "select n_cases from runs where plan_name = 'single'")" 1 "re-check replaces, no duplicate"
expect_status 0 ug check "$id" --outputs "$T/one" --db "$DB" --json
expect_grep '"verdict"|"outcome"' "$T/out"
expect_eq "$(q "select count(*) from runs")" "$((runs + 1))" "plain check starts a run"
other=$(ug plan --op attn_softmax --list | awk 'NR == 1 {print $1}')
expect_status 2 ug check "$other" --outputs "$T/one" --db "$DB"
expect_grep "is case $id, not $other" "$T/err"

# 6. the device declines or fails: SKIP / ERROR with its reason
rm -f "$T"/one/outputs/*.npy
echo "no bf16 kernel on this card" >"$T/one/outputs/unsupported.txt"
expect_status 1 ug check "$id" --outputs "$T/one" --db "$DB" --run status
expect_eq "$(q "select verdict || ': ' || message from results where case_id = '$id' and run_id = (select max(run_id) from runs)")" "SKIP: unsupported: no bf16 kernel on this card" "device SKIP"
rm -f "$T/one/outputs/unsupported.txt"
printf 'HBM ECC error\nmore detail\n' >"$T/one/outputs/error.txt"
expect_status 1 ug check "$id" --outputs "$T/one" --db "$DB" --run status
expect_eq "$(q "select verdict || ': ' || message from results where case_id = '$id' and run_id = (select max(run_id) from runs)")" "ERROR: device error: HBM ECC error" "device ERROR"

# 7. re-exporting clears what a previous device run left
expect_status 0 ug export "$id" --dir "$T/one"
expect_eq "$(ls "$T/one/outputs" | wc -l)" 0 "stale outputs removed on export"
finish
