#!/usr/bin/env bash
# test_db_create_race.sh — sweeps that create one new database at the same moment all
# finish (issue #36 item 8): the schema and its migrations are written in one transaction
# under the write lock (BEGIN IMMEDIATE, the schema version read again inside it), so the
# second sweep finds the first's schema instead of dying "duplicate column name: seed".
# Several tries, each starting three sweeps on a fresh path at once.
. "$(dirname "$0")/lib.sh"
ARGS=(--op attn_softmax --limit 1 -j1 --quiet --no-regressions)
expect_status 0 ug sweep "${ARGS[@]}" --db "$T/alone.db" # the schema one sweep writes alone
schema=$(sqlite3 "$T/alone.db" "PRAGMA user_version; SELECT sql FROM sqlite_master ORDER BY name" | md5sum)
for try in 1 2 3 4 5 6; do
    db=$T/race$try.db
    for k in 1 2 3; do
        (ug sweep "${ARGS[@]}" --db "$db" >"$T/out$k" 2>"$T/err$k"; echo $? >"$T/rc$k") &
    done
    wait
    for k in 1 2 3; do
        expect_eq "$(cat "$T/rc$k")" 0 "try $try: sweep $k's exit status ($(head -c 300 "$T/err$k"))"
    done
    expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'done'")" 3 "try $try: finished runs"
    expect_eq "$(sqlite3 "$db" "PRAGMA user_version; SELECT sql FROM sqlite_master ORDER BY name" | md5sum)" "$schema" \
        "try $try: schema (version and tables) as one sweep writes it"
done
# a reader of the new database in the same moment is never told it is not a ulpgym one
db=$T/race_read.db
(ug sweep "${ARGS[@]}" --db "$db" >/dev/null 2>&1) &
for i in 1 2 3 4 5 6 7 8 9 10; do
    ug history --db "$db" >/dev/null 2>"$T/herr"
    if grep -q "not a ulpgym one" "$T/herr"; then bad "history while the schema is written: $(cat "$T/herr")"; break; fi
done
wait
expect_status 0 ug history --db "$db"
finish
