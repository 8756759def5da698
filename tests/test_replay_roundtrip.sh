# test_replay_roundtrip.sh — plugin and replay end to end, for the first 8 plan cases of
# every implemented op: `sweep --backend plugin:` with the sample plugin, and the replay
# loop (export, an independent program — examples' ulpgym_replay_plugin, which runs the
# sim kernels through the plugin ABI without any ulpgym library — writes the outputs,
# `ulpgym check` stores them) both store results, metrics and verdicts identical to a sim
# sweep; so does a planted mutant (failing verdicts match too). Also: single-case export
# by ID prefix, --run collecting checks, device-declared SKIP/ERROR, the replay:DIR
# backend, and re-export clearing stale outputs.
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

# 1. the first cases of every op (required cases first), exported once; D/plan.json
#    is a plan of exactly those cases, so the reference sweeps need no plan expansion
expect_status 0 ug export --per-op 8 --dir "$T/plan"
expect_grep "^exported [0-9]+ cases to .*plan.json is their plan" "$T/out"
P=$T/plan/plan.json
expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$P"                            # run 1: sim
total=$(q "select n_cases from runs where run_id = 1")
if [ "$total" -gt 0 ] && [ "$total" = "$(ls -d "$T"/plan/*/ | wc -l)" ]; then ok; else bad "reference sweep has $total cases"; fi

# 2. the sample plugin through the CLI: same rows as the built-in sim backend
expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --backend "plugin:$PLUG"   # run 2
same_runs 1 2 "sim vs plugin:plugin_sim"

# 3. replay: the independent program writes the outputs, check stores them (run 3)
expect_status 0 "$DRIVE" "$PLUG" "$T"/plan/*/
expect_status 0 ug check --outputs "$T/plan" --db "$DB" --run roundtrip
expect_eq "$(q "select backend || ' ' || plan_name || ' ' || n_cases || ' ' || status from runs where run_id = 3")" "replay roundtrip $total done" "replay run row"
same_runs 1 3 "sim sweep vs replay check"

# 4. the replay:DIR backend reads the same folders inside a sweep (run 4)
expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --backend "replay:$T/plan"
same_runs 1 4 "sim sweep vs sweep --backend replay:DIR"

# 5. a mutant: failing verdicts match as well (runs 5 and 6)
expect_status 0 ug export --op attn_softmax --limit 16 --dir "$T/mut"
expect_status 1 ug sweep --no-regressions --db "$DB" --quiet --plan "$T/mut/plan.json" --kernel-variant mut_bf16_sum
ULPGYM_PLUGIN_SIM_VARIANT=mut_bf16_sum expect_status 0 "$DRIVE" "$PLUG" "$T"/mut/*/
expect_status 1 ug check --outputs "$T/mut" --db "$DB"
same_runs 5 6 "mutant sweep vs mutant replay"
nfail=$(q "select count(*) from results where run_id = 6 and verdict = 'FAIL'")
if [ "$nfail" -gt 0 ]; then ok; else bad "the mutant replay shows no FAIL"; fi

# 6. one case by ID prefix; --run collects; a plain check starts a new run
id=$(q "select case_id from cases where op = 'inplace_add_rmsnorm' and dtype = 'bf16' order by case_id limit 1")
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
other=$(q "select case_id from cases where op = 'attn_softmax' order by case_id limit 1")
expect_status 2 ug check "$other" --outputs "$T/one" --db "$DB"
expect_grep "is case $id, not $other" "$T/err"

# 7. the device declines or fails: SKIP / ERROR with its reason
rm -f "$T"/one/outputs/*.npy
echo "no bf16 kernel on this card" >"$T/one/outputs/unsupported.txt"
expect_status 0 ug check "$id" --outputs "$T/one" --db "$DB" --run status # SKIP is no failure (--fail-on fail)
expect_eq "$(q "select verdict || ': ' || message from results where case_id = '$id' and run_id = (select max(run_id) from runs)")" "SKIP: unsupported: no bf16 kernel on this card" "device SKIP"
rm -f "$T/one/outputs/unsupported.txt"
printf 'HBM ECC error\nmore detail\n' >"$T/one/outputs/error.txt"
expect_status 1 ug check "$id" --outputs "$T/one" --db "$DB" --run status
expect_eq "$(q "select verdict || ': ' || message from results where case_id = '$id' and run_id = (select max(run_id) from runs)")" "ERROR: device error: HBM ECC error" "device ERROR"

# 8. re-exporting clears what a previous device run left
expect_status 0 ug export "$id" --dir "$T/one" --force # an earlier export there: written over with --force
expect_eq "$(ls "$T/one/outputs" | wc -l)" 0 "stale outputs removed on export"
finish
