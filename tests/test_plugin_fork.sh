#!/usr/bin/env bash
# test_plugin_fork.sh — a plugin that forks a child holding the worker's descriptors
# (tests/fixtures/fork_plugin.c) and then crashes or returns: the case is recorded
# CRASH / FAIL promptly (not TIMEOUT at the limit), only a hanging kernel times out, the
# sweep takes far less than the case timeout, and no child outlives the sweep (each
# worker runs in its own process group, killed at case end; docs/SWEEP.md).
. "$(dirname "$0")/lib.sh"
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfork_plugin.so
DB=$T/fork.db
export ULPGYM_FORK_PIDS=$T/pids
: >"$ULPGYM_FORK_PIDS"
# a process that exists and is not a zombie
alive() { [ -r "/proc/$1/stat" ] && ! grep -q ') Z ' "/proc/$1/stat"; }

# rows 5: the plugin segfaults after forking; rows 3, 4: it returns zeros (FAIL)
plan() {
    echo '{"name":"fork","version":1,"seed":5,"cases":['
    local sep=
    for rows in "$@"; do
        echo "$sep{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$rows,\"cols\":16},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":2}}}"
        sep=,
    done
    echo ']}'
}
plan 5 3 4 >"$T/plan.json"
start=$(date +%s)
ug sweep --plan "$T/plan.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j2 --case-timeout 20 --quiet \
    >"$T/out" 2>"$T/err"
took=$(($(date +%s) - start))
if [ "$took" -lt 10 ]; then ok; else bad "the sweep took $took s (case timeout 20 s): a forked child held it up"; fi
verdict_rows() { sqlite3 "$DB" "SELECT r.verdict FROM results r JOIN cases c USING (case_id)
    WHERE r.run_id = $1 AND (c.spec_json LIKE '%\"rows\":$2,%' OR c.spec_json LIKE '%\"rows\":$2}%')"; }
expect_eq "$(verdict_rows 1 5)" CRASH "the crash after a fork is CRASH, not TIMEOUT"
expect_grep 'signal 11 \(SIGSEGV\)' <(sqlite3 "$DB" "SELECT message FROM results WHERE verdict = 'CRASH'")
expect_eq "$(verdict_rows 1 3)$(verdict_rows 1 4)" FAILFAIL "a kernel that forks and returns gets its verdict"
expect_eq "$(wc -l <"$ULPGYM_FORK_PIDS")" 3 "each case forked one child"

# a hang after a fork is TIMEOUT at the limit, and its child goes with the worker
plan 7 >"$T/hang.json"
start=$(date +%s)
ug sweep --plan "$T/hang.json" --no-regressions --db "$DB" --backend "$PLUGIN" -j1 --case-timeout 2 --quiet \
    >"$T/out" 2>"$T/err"
took=$(($(date +%s) - start))
if [ "$took" -lt 10 ]; then ok; else bad "the hanging case's sweep took $took s (limit 2 s)"; fi
expect_eq "$(verdict_rows 2 7)" TIMEOUT "a hang after a fork is TIMEOUT"

sleep 0.5 # SIGKILL is delivered asynchronously
left=
while read -r pid; do alive "$pid" && left="$left $pid"; done <"$ULPGYM_FORK_PIDS"
expect_eq "${left:-none}" none "children still alive after the sweeps"
for pid in $left; do kill -9 "$pid" 2>/dev/null; done
finish
