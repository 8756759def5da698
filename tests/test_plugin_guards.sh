#!/usr/bin/env bash
# test_plugin_guards.sh — a plugin's out-of-bounds accesses are caught and named (core/guard.h,
# docs/SWEEP.md "What a plugin can and cannot do to a sweep"): in a sweep and in `case`, a
# write just past or before an output is ERROR "wrote after/before output y", a changed
# input ERROR "modified input x", and a write of megabytes past the end (or kilobytes before
# the start) and a read far past an input are CRASH naming the buffer and the guard page;
# the same plugin's correct cases still PASS. Faults by row count: tests/fixtures/faulty_plugin.c.
. "$(dirname "$0")/lib.sh"
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so
DB=$T/g.db
q() { sqlite3 "$DB" "$1"; }
# what a fault row must give: verdict and message (an extended regex); rows 3 is the correct kernel.
# A CPU that does not say whether a fault read or wrote gives "accessed".
want_of() {
    local killed=': worker killed by signal 11 \(SIGSEGV\) after [0-9]+ ms$'
    case $1 in
        3) echo 'PASS|^$' ;;
        9 | 20) echo 'ERROR|^wrote after output y$' ;;
        21) echo "CRASH|^(wrote|accessed) past the end of output y$killed" ;;
        22 | 23) echo 'ERROR|^wrote before output y$' ;;
        24) echo 'ERROR|^modified input x$' ;;
        25) echo "CRASH|^(wrote|accessed) before the start of output y$killed" ;;
        26) echo "CRASH|^(read|accessed) past the end of input x$killed" ;;
    esac
}
ROWS="3 9 20 21 22 23 24 25 26"
spec() { # rows cols
    local dist='"dist":{"x":{"kind":"normal","mean":0,"std":1}}'
    echo "{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$1,\"cols\":$2},$dist}"
}
# each fault on an output whose bytes are a multiple of 64 (cols 16: its end 64-byte aligned)
# and on one that is not (cols 7), and the correct kernel on both
{
    echo '{"name":"guards","version":1,"seed":5,"cases":['
    sep=
    for rows in $ROWS; do
        for cols in 16 7; do
            echo "$sep$(spec "$rows" "$cols")"
            sep=,
        done
    done
    echo ']}'
} >"$T/plan.json"

expect_status 1 ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j2 --quiet # cases fail
for rows in $ROWS; do
    want=$(want_of "$rows")
    for cols in 16 7; do
        got=$(q "SELECT r.verdict || '|' || r.message FROM results r JOIN cases c USING (case_id)
                 WHERE c.spec_json LIKE '%\"cols\":$cols,%' AND c.spec_json LIKE '%\"rows\":$rows}%'")
        expect_eq "${got%%|*}" "${want%%|*}" "rows $rows cols $cols verdict ($got)"
        if printf '%s\n' "${got#*|}" | grep -qE -- "${want#*|}"; then ok; else bad "rows $rows cols $cols: '$got'"; fi
    done
done
expect_eq "$(q "SELECT status, n_cases, n_pass FROM runs")" "done|18|2" "the sweep completes, the correct cases pass"

# `case` runs the kernel in a contained process and checks the guards there: same verdicts
for rows in 23 24 21; do
    want=$(want_of "$rows")
    expect_status 1 timeout 60 "$UG_BIN" case --backend "$PLUGIN" \
        --spec "$(spec "$rows" 16 | sed 's/^{/{"v":1,"seed":7,/')"
    expect_grep "verdict ${want%%|*} " "$T/out"
    sed -n 2p "$T/out" | sed 's/^ *//' >"$T/msg"
    expect_grep "${want#*|}" "$T/msg"
done
finish
