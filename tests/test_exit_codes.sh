#!/usr/bin/env bash
# test_exit_codes.sh — one exit-code policy (docs/SWEEP.md, "Exit codes"): --fail-on
# never|fail|new on sweep, check, case, triage and diff. fail (the default but for diff): 1
# when a case is neither PASS nor SKIP; new (diff's default): only a failure that did not fail
# in the previous comparable result (a like-for-like earlier run for sweep, the case's latest
# earlier result of the same backend kind and deciding standard for check and triage, none
# for case); never: 0 whatever the verdicts. triage keeps "not reproduced" apart as 4; bad
# input is 2 everywhere.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing: skipped"; exit 77; }
db="$T/x.db"
MUT=(--op attn_softmax --kernel-variant mut_bf16_sum --quiet --no-regressions --db "$db")

# --- sweep ---
expect_status 0 ug sweep --op attn_softmax --limit 12 --quiet --no-regressions --db "$db"   # run 1: sim, all pass
expect_status 1 ug sweep "${MUT[@]}"                                                         # run 2: fail (default)
expect_grep '^ulpgym: [0-9]+ failing cases \(--fail-on fail\): exit status 1$' "$T/err"
expect_status 0 ug sweep "${MUT[@]}" --fail-on never                                         # run 3
expect_status 0 ug sweep "${MUT[@]}" --fail-on new                                           # run 4: like run 3
expect_status 1 ug sweep "${MUT[@]}" --fail-on fail                                          # run 5
# new against a comparable run in which one case passed: that one is new
flip=$(sqlite3 "$db" "select case_id from results where run_id=5 and verdict='FAIL' order by case_id limit 1")
sqlite3 "$db" "update results set verdict='PASS' where run_id=5 and case_id='$flip'"
expect_status 1 ug sweep "${MUT[@]}" --fail-on new                                           # run 6
expect_grep '^ulpgym: 1 failing case new since run 5 \(--fail-on new\): exit status 1$' "$T/err"
# new with no comparable run (another --limit): every failure is new
expect_status 1 ug sweep "${MUT[@]}" --limit 30 --fail-on new                                # run 7
expect_grep 'no earlier comparable run, so every failure is new' "$T/err"
expect_status 2 ug sweep "${MUT[@]}" --fail-on sometimes
expect_grep 'fail-on takes never, fail or new, not "sometimes"' "$T/err"
expect_eq "$(sqlite3 "$db" 'select count(*) from runs')" 7 "a refused --fail-on writes no run"

# --- case: no database, so new is fail ---
spec=$(sqlite3 "$db" "select spec_json from cases where case_id='$flip'")
expect_status 1 ug case --backend sim:mut_bf16_sum --spec "$spec"
expect_status 1 ug case --backend sim:mut_bf16_sum --spec "$spec" --fail-on new
expect_status 0 ug case --backend sim:mut_bf16_sum --spec "$spec" --fail-on never
expect_status 0 ug case --spec "$spec"
expect_status 2 ug case --spec "$spec" --fail-on maybe

# --- triage: 4 when the stored metrics are not reproduced, then the policy on the verdict now ---
expect_status 1 ug triage "$flip" --db "$db" --run 6                     # fails now; reproduced
expect_grep 'reproduced exactly' "$T/out"
expect_status 0 ug triage "$flip" --db "$db" --run 6 --fail-on never
expect_status 1 ug triage "$flip" --db "$db" --run 6 --fail-on new       # run 5 (sim kind, pypto) passed it: new
expect_status 0 ug triage "$flip" --db "$db" --run 4 --fail-on new       # run 3 failed it too
expect_status 1 ug triage "$flip" --db "$db" --run 2 --fail-on new       # no earlier result failed: new
pass_id=$(sqlite3 "$db" "select case_id from results where run_id=1 and verdict='PASS' limit 1")
expect_status 0 ug triage "$pass_id" --db "$db" --run 1
sqlite3 "$db" "update metrics set max_ulp = max_ulp + 1 where run_id=1 and case_id='$pass_id'"
expect_status 4 ug triage "$pass_id" --db "$db" --run 1
expect_grep 'NOT reproduced' "$T/out"
expect_status 4 ug triage "$pass_id" --db "$db" --run 1 --fail-on never
expect_status 2 ug triage "$pass_id" --db "$db" --fail-on all

# --- diff: new by default (a change), fail and never on request ---
expect_status 0 ug diff 3 4 --db "$db"                  # the same failures: nothing new
expect_status 1 ug diff 3 4 --db "$db" --fail-on fail
expect_status 0 ug diff 3 4 --db "$db" --fail-on never
expect_status 1 ug diff 1 2 --db "$db"                  # sim -> mutant: new failures
expect_status 0 ug diff 1 2 --db "$db" --fail-on never
expect_status 0 ug diff 2 1 --db "$db"                  # mutant -> sim: only fixes
expect_status 2 ug diff 1 2 --db "$db" --fail-on x

# --- check: a device's outputs (here the mutant's, dumped by triage), stored as a replay run ---
ug triage "$flip" --db "$db" --run 2 --dump "$T/dev" >/dev/null 2>&1
[ -s "$T/dev/outputs/y.npy" ] && ok || bad "triage --dump wrote no outputs"
expect_status 1 ug check "$flip" --outputs "$T/dev" --db "$db"
expect_grep '^failing cases, most severe first \(1 of 1\):$' "$T/out"
expect_grep "^ +1\. $flip  attn_softmax .* FAIL +y: [0-9]+ of [0-9]+ checked elements (beyond atol|outside the certified bound)" "$T/out"
expect_grep " triage $flip --db [^ ]+ --run [0-9]+$" "$T/out"
expect_status 0 ug check "$flip" --outputs "$T/dev" --db "$db" --fail-on never --top 0
if grep -q 'failing cases' "$T/out"; then bad "check --top 0 still lists failures"; else ok; fi
expect_status 0 ug check "$flip" --outputs "$T/dev" --db "$db" --fail-on new     # failed in the replay runs before
sqlite3 "$db" "update results set verdict='PASS' where case_id='$flip' and run_id in
               (select run_id from runs where backend = 'replay')"
expect_status 1 ug check "$flip" --outputs "$T/dev" --db "$db" --fail-on new     # passed there: new
expect_grep 'that did not fail before \(--fail-on new\)' "$T/err"
expect_status 2 ug check "$flip" --outputs "$T/dev" --db "$db" --top x
finish
