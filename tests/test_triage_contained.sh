#!/usr/bin/env bash
# test_triage_contained.sh — `case` and `triage` run a plugin's kernel in a contained
# process, as a sweep worker does: a segfaulting kernel is CRASH and a hanging one TIMEOUT
# (`--case-timeout`), with the sweep's messages, instead of killing (exit 139) or hanging
# the command; triage of a stored CRASH case says what was stored and what happened now.
. "$(dirname "$0")/lib.sh"
SEGV=plugin:${ULPGYM_FIXTURES:?}/libsegv_plugin.so
FAULTY=plugin:$ULPGYM_FIXTURES/libfaulty_plugin.so
spec() { echo "{\"v\":1,\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$1,\"cols\":16},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}},\"seed\":7}"; }
db=$T/c.db

# `case`: a crash is a verdict, not the command's death
expect_status 1 timeout 60 "$UG_BIN" case --backend "$SEGV" --spec "$(spec 3)"
expect_grep 'verdict CRASH' "$T/out"
expect_grep 'worker killed by signal 11 \(SIGSEGV\) after [0-9]+ ms' "$T/out"
# a hang ends at --case-timeout (the outer timeout only stops a command that hangs)
expect_status 1 timeout 60 "$UG_BIN" case --backend "$FAULTY" --spec "$(spec 7)" --case-timeout 1
expect_grep 'verdict TIMEOUT' "$T/out"
expect_grep 'no result after 1\.[0-9] s \(limit 1 s\): worker killed' "$T/out"
expect_status 2 ug case --spec "$(spec 3)" --case-timeout never
expect_grep 'case: --case-timeout takes SECONDS > 0, not "never"' "$T/err"

# `triage` of a stored CRASH: says what was stored and that it crashed again
ug sweep --db "$db" --quiet -j 1 --limit 1 --op attn_softmax --backend "$SEGV" >/dev/null 2>&1
id=$(sqlite3 "$db" "select case_id from results where verdict = 'CRASH'")
[ -n "$id" ] && ok || bad "the sweep stored no CRASH"
expect_status 2 timeout 60 "$UG_BIN" triage "$id" --db "$db" # a database never loads its plugin unasked
expect_grep 'triage loads a plugin only when you name it' "$T/err"
expect_status 1 timeout 60 "$UG_BIN" triage "$id" --db "$db" --backend "$SEGV" # CRASH now: a failing case
expect_grep '^stored in run 1: CRASH: worker killed by signal 11 \(SIGSEGV\)' "$T/out"
expect_grep '^now: CRASH: worker killed by signal 11 \(SIGSEGV\)' "$T/out"
expect_grep 'the verdict is reproduced' "$T/out"
expect_grep '^the kernel crashed: no outputs to check' "$T/out"
if grep -q '0 values compared' "$T/out"; then bad "triage claims 0 values compared for a CRASH"; else ok; fi
# with the correct kernel (--backend): no comparison, every element checked
expect_status 0 timeout 60 "$UG_BIN" triage "$id" --db "$db" --backend sim
expect_grep '^all elements:' "$T/out"

# `triage` of a stored TIMEOUT with a short limit
echo "{\"name\":\"h\",\"version\":1,\"seed\":3,\"cases\":[$(spec 7 | sed 's/"v":1,//; s/,"seed":7//')]}" >"$T/h.json"
ug sweep --db "$db" --quiet -j 1 --plan "$T/h.json" --backend "$FAULTY" --case-timeout 1 >/dev/null 2>&1
hid=$(sqlite3 "$db" "select case_id from results where verdict = 'TIMEOUT'")
[ -n "$hid" ] && ok || bad "the sweep stored no TIMEOUT"
expect_status 1 timeout 60 "$UG_BIN" triage "$hid" --db "$db" --case-timeout 1 --backend "$FAULTY" # TIMEOUT now
expect_grep '^now: TIMEOUT: no result after 1\.[0-9] s \(limit 1 s\): worker killed' "$T/out"
expect_grep '^the kernel hung: no outputs to check' "$T/out"
finish
