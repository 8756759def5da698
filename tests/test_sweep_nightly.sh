#!/usr/bin/env bash
# test_sweep_nightly.sh — scripts/nightly.sh: exit 0 while nothing new fails, exit 1 with
# the list when a case fails that passed in the previous run (a planted-bug mutant
# stands in for a bad kernel change), 0 again once the failures are old, and it counts
# the cases fixed when the bug goes away. Uses the built binary (ULPGYM_BIN): no build.
. "$(dirname "$0")/lib.sh"
NIGHTLY=${ULPGYM_DATA:?}/scripts/nightly.sh
export ULPGYM_DB=$T/nightly.db ULPGYM_REPORT_DIR=$T/reports ULPGYM_SEED_CHECK=
SEL=(--op attn_softmax --limit 40 -j2)

expect_status 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep 'nightly: run 1, no earlier finished run' "$T/out"
expect_grep 'nightly: 0 new failures' "$T/out"

expect_status 1 bash "$NIGHTLY" "${SEL[@]}" --kernel-variant mut_tail_tile
expect_grep 'nightly: run 2, compared with run 1' "$T/out"
expect_grep 'backend changed: sim -> sim:mut_tail_tile' "$T/out"
n_fail=$(sqlite3 "$ULPGYM_DB" "SELECT count(*) FROM results WHERE run_id = 2 AND verdict = 'FAIL'")
if [ "$n_fail" -gt 0 ]; then ok; else bad "the mutant failed no case"; fi
expect_grep "nightly: $n_fail new failures, 0 fixed" "$T/out"
expect_eq "$(grep -c '  PASS  FAIL  ' "$T/reports/new_failures.txt")" "$n_fail" "each new failure listed as PASS -> FAIL"

expect_status 0 bash "$NIGHTLY" "${SEL[@]}" --kernel-variant mut_tail_tile
expect_grep 'nightly: 0 new failures, 0 fixed' "$T/out"

expect_status 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep "nightly: 0 new failures, $n_fail fixed" "$T/out"

# the standards' self-check: the correct kernels at another plan seed pass (exit 0, one line
# per seed); a kernel that fails there is a false alarm of the standards: exit 3
ULPGYM_SEED_CHECK="2 3" ULPGYM_SEED_CHECK_ARGS="--op attn_softmax --limit 10 -j2" \
    expect_status 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep 'nightly: self-check at plan seed 2: 0 cases fail their primary standard, 0 fail certified' "$T/out"
expect_grep 'nightly: self-check at plan seed 3: 0 cases' "$T/out"
ULPGYM_SEED_CHECK="2" ULPGYM_SEED_CHECK_ARGS="--op attn_softmax --limit 40 -j2 --kernel-variant mut_bf16_sum" \
    expect_status 3 bash "$NIGHTLY" "${SEL[@]}"
expect_grep 'nightly: self-check at plan seed 2: [1-9][0-9]* cases fail' "$T/out"

# a sweep that cannot start is the job's own failure: exit 2
expect_status 2 bash "$NIGHTLY" --plan "$T/missing.json"
expect_grep 'nightly: sweep exited with status 2' "$T/err"
finish
