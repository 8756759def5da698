#!/usr/bin/env bash
# test_sweep_nightly.sh — scripts/nightly.sh: exit 0 while nothing new fails, exit 1 with
# the list when a case fails that passed in the last like-for-like run (the same plugin
# file made wrong by an environment variable stands in for a bad kernel change), drift of
# headroom listed and gated (5), runs of another selection or backend are not compared, 0
# again once the failures are old (still failing counted), and it counts the cases fixed
# when the bug goes away; the self-check (3) and a sweep that cannot start (2). Uses the
# built binary (ULPGYM_BIN): no build. (test_nightly_planted: one planted sim mutant after
# a clean night, the diff's JSON and the reports, without the sqlite3 shell.)
. "$(dirname "$0")/lib.sh"
NIGHTLY=${ULPGYM_DATA:?}/scripts/nightly.sh
export ULPGYM_DB=$T/nightly.db ULPGYM_REPORT_DIR=$T/reports ULPGYM_SEED_CHECK=
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so
SEL=(--op attn_softmax --limit 40 -j2)
# the same plugin file on every night; ULPGYM_FAULTY_SCALE turns it into a wrong kernel
# (every output x1.01), as a kernel change between two nights would
expect_status 0 bash "$NIGHTLY" "${SEL[@]}" --backend "$PLUGIN"
expect_grep 'nightly: run 1, no earlier finished run of the same plan, selection and backend' "$T/out"
expect_grep 'nightly: 0 new failures' "$T/out"

ULPGYM_FAULTY_SCALE=1.01 expect_status 1 bash "$NIGHTLY" "${SEL[@]}" --backend "$PLUGIN"
expect_grep 'nightly: run 2, compared with run 1 \(same plan, selection and backend\)' "$T/out"
n_fail=$(sqlite3 "$ULPGYM_DB" "SELECT count(*) FROM results WHERE run_id = 2 AND verdict = 'FAIL'")
if [ "$n_fail" -gt 0 ]; then ok; else bad "the broken plugin failed no case"; fi
expect_grep "nightly: $n_fail new failures, 0 fixed, 0 still failing" "$T/out"
expect_grep "nightly: run 2: 40 cases: [0-9]+ pass, $n_fail not passing, [0-9]+ skipped" "$T/out"
expect_eq "$(awk -F'\t' '$4 == "PASS" && $5 == "FAIL"' "$T/reports/new_failures.txt" | wc -l)" "$n_fail" \
    "each new failure listed as PASS -> FAIL"
expect_grep "^case_id	op	dtype	verdict_a	verdict_b	used_a	used_b	figure$" "$T/reports/new_failures.txt"
for f in nightly-2.html nightly-2.xml nightly-2.json diff.txt diff.json; do
    [ -s "$T/reports/$f" ] && ok || bad "nightly wrote no $f"
done

# drift before failure: a kernel whose outputs move by 0.3 % still passes every case under pypto
# (the runs name it with --primary: attn_softmax's own certified fails such a move), but uses more
# than a quarter of its tolerance, far over 4x what it used: listed, and with --gate drift the
# night fails (5)
D=$T/drift.db
DSEL=("${SEL[@]}" --primary pypto)
ULPGYM_DB=$D expect_status 0 bash "$NIGHTLY" "${DSEL[@]}" --backend "$PLUGIN"
ULPGYM_DB=$D ULPGYM_FAULTY_SCALE=1.003 expect_status 0 bash "$NIGHTLY" "${DSEL[@]}" --backend "$PLUGIN"
expect_grep 'nightly: 0 new failures' "$T/out"
n_drift=$(sed -n 's/^nightly: drift: \([0-9]*\) passing cases.*/\1/p' "$T/out")
[ "${n_drift:-0}" -gt 0 ] && ok || bad "no drift reported: $(grep drift "$T/out")"
expect_grep "^case_id	op	dtype	verdict_a	verdict_b	used_a	used_b	figure$" "$T/reports/drift.txt"
expect_eq "$(($(wc -l <"$T/reports/drift.txt") - 1))" "$n_drift" "drift.txt lists the drifting cases"
ULPGYM_DB=$D expect_status 0 bash "$NIGHTLY" --gate drift "${DSEL[@]}" --backend "$PLUGIN" # errors shrink: no drift
expect_grep 'nightly: drift: 0 passing cases' "$T/out"
ULPGYM_DB=$D ULPGYM_FAULTY_SCALE=1.003 expect_status 5 bash "$NIGHTLY" --gate drift --drift-factor 4 "${DSEL[@]}" \
    --backend "$PLUGIN"
expect_grep "nightly: drift: $n_drift passing cases" "$T/out"
expect_status 2 bash "$NIGHTLY" --gate nothing "${SEL[@]}"
expect_status 2 bash "$NIGHTLY" --drift-factor 0.5 "${SEL[@]}"

# another selection or another backend is not compared with these runs
expect_status 0 bash "$NIGHTLY" --op attn_softmax --limit 12 -j2 --backend "$PLUGIN"
expect_grep 'nightly: run 3, no earlier finished run of the same plan, selection and backend' "$T/out"
expect_status 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep 'nightly: run 4, no earlier finished run' "$T/out"

# still broken: compared with run 2 (the last like-for-like run), nothing new, all still failing
ULPGYM_FAULTY_SCALE=1.01 expect_status 0 bash "$NIGHTLY" "${SEL[@]}" --backend "$PLUGIN"
expect_grep 'nightly: run 5, compared with run 2' "$T/out"
expect_grep "nightly: 0 new failures, 0 fixed, $n_fail still failing" "$T/out"

expect_status 0 bash "$NIGHTLY" "${SEL[@]}" --backend "$PLUGIN"
expect_grep "nightly: 0 new failures, $n_fail fixed, 0 still failing" "$T/out"

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
