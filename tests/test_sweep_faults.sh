#!/usr/bin/env bash
# test_sweep_faults.sh — crash isolation: a plugin that segfaults, aborts, hangs or writes
# past its output on chosen cases costs exactly those cases (CRASH / TIMEOUT / ERROR) and
# every other case still PASSes; bad sweep options are refused before anything is stored.
. "$(dirname "$0")/lib.sh"
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so
DB=$T/faults.db
q() { sqlite3 "$DB" "$1"; }

# 12 cases: cols 8..19; their row count says which misbehave (see tests/fixtures/faulty_plugin.c).
fault_of() { case $1 in 9|15) echo segv ;; 11) echo abort ;; 12|18) echo hang ;; 14) echo overrun ;; esac; }
{
    echo '{"name":"faults","version":1,"seed":11,"cases":['
    sep=
    for cols in $(seq 8 19); do
        case $(fault_of "$cols") in segv) rows=5 ;; abort) rows=6 ;; hang) rows=7 ;; overrun) rows=9 ;; *) rows=3 ;; esac
        extra=
        [ "$cols" = 16 ] && extra=',"cap":30,"mask":"padding","scale":0.125'
        echo "$sep{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$rows,\"cols\":$cols$extra},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":2}}}"
        sep=,
    done
    echo ']}'
} >"$T/plan.json"

# the sweep finishes; its crashed, hung and erring cases are failing cases (exit 1 under --fail-on fail), listed first
expect_status 1 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j2 --case-timeout 2 --quiet
expect_grep '^run 1: 12 cases' "$T/out"
expect_grep '^ +1\. [0-9a-f]{16}  attn_softmax +[a-z0-9]+ +(CRASH|TIMEOUT|ERROR) ' "$T/out"
expect_grep 'CRASH +3' "$T/out"
expect_grep 'TIMEOUT +2' "$T/out"
# every case has exactly the verdict its fault predicts
verdict_of() { q "SELECT r.verdict FROM results r JOIN cases c USING (case_id) WHERE c.spec_json LIKE '%\"cols\":$1,%'"; }
message_of() { q "SELECT r.message FROM results r JOIN cases c USING (case_id) WHERE c.spec_json LIKE '%\"cols\":$1,%'"; }
for cols in $(seq 8 19); do
    case $(fault_of "$cols") in
        segv) want=CRASH; msg='signal 11 \(SIGSEGV\)' ;;
        abort) want=CRASH; msg='signal 6 \(SIGABRT\)' ;;
        hang) want=TIMEOUT; msg='no result after 2\.[0-9] s \(limit 2 s\)' ;;
        overrun) want=ERROR; msg='^wrote after output y$' ;;
        *) want=PASS; msg='^$' ;;
    esac
    expect_eq "$(verdict_of "$cols")" "$want" "cols=$cols verdict"
    message_of "$cols" >"$T/msg"
    expect_grep "$msg" "$T/msg"
done
expect_eq "$(q "SELECT count(*), count(DISTINCT case_id) FROM results WHERE run_id = 1")" "12|12" "one result per case"
expect_eq "$(q "SELECT status, n_cases, n_pass, jobs FROM runs WHERE run_id = 1")" "done|12|6|2" "run row"

# a per-op timeout overrides the general one
expect_status 0 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j2 --case-timeout 600 \
    --case-timeout attn_softmax=1 --quiet --fail-on never
expect_eq "$(q "SELECT count(*) FROM results WHERE run_id = 2 AND verdict = 'TIMEOUT' AND message LIKE '%(limit 1 s)%'")" 2 \
    "per-op timeout"
# -j1: a single replaced worker still gets through every case
expect_status 0 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j1 --case-timeout 2 --quiet \
    --fail-on never
expect_eq "$(q "SELECT group_concat(verdict) FROM (SELECT verdict FROM results WHERE run_id = 3 ORDER BY case_id)")" \
    "$(q "SELECT group_concat(verdict) FROM (SELECT verdict FROM results WHERE run_id = 1 ORDER BY case_id)")" "-j1 = -j2"

# bad options: exit 2, one line naming the problem, no run stored
runs_before=$(q "SELECT count(*) FROM runs")
for args in "-j 0" "-j x" "--jobs 2000" "--shard 0/3" "--shard 4/3" "--shard 3" "--shard a/b" \
    "--case-timeout 0" "--case-timeout -1" "--case-timeout nosuch_op=3" "--case-timeout attn_softmax=" \
    "--resume 99" "--resume latest --plan $T/plan.json" "--resume latest --backend sim" "--resume 1 --shard 1/2"; do
    # shellcheck disable=SC2086
    expect_status 2 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" $args
    expect_eq "$(wc -l <"$T/err")" 1 "one-line message for $args"
    expect_grep '^ulpgym: ' "$T/err"
done
expect_eq "$(q "SELECT count(*) FROM runs")" "$runs_before" "nothing stored by refused sweeps"
# a plugin that is not there is refused before a run exists
expect_status 2 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend plugin:"$T/missing.so"
expect_eq "$(q "SELECT count(*) FROM runs")" "$runs_before" "nothing stored for a missing plugin"
finish
