#!/usr/bin/env bash
# test_db_readonly.sh — the reading commands (history, report, diff, export, triage) open
# the database read-only: they work on a database file and folder nobody may write (run
# as an unprivileged user via setpriv when the test runs as root, since root writes
# through chmod), they leave its bytes as they were, and an empty file stays 0 bytes and
# is refused as not a ulpgym database (exit 2) instead of getting a schema written in; a
# sweep into a database or folder it may not write is refused, saying it is read-only.
. "$(dirname "$0")/lib.sh"
db=$T/ro/r.db
mkdir -p "$T/ro" "$T/w"
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 3 >/dev/null 2>&1
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 3 --kernel-variant mut_tail_tile >/dev/null 2>&1
id=$(sqlite3 "$db" "select case_id from results limit 1")
[ -n "$id" ] && ok || bad "no case stored"
sqlite3 "$db" "PRAGMA journal_mode" | grep -qx wal && ok || bad "the database is not in WAL mode"
sum=$(md5sum <"$db")
chmod 444 "$db"
chmod 555 "$T/ro"
chmod 777 "$T/w"
# as_reader CMD...: as a user who cannot write the file or its folder
as_reader() {
    if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; else "$@"; fi
}
export HOME=$T/w # nothing of the reader's own goes into the folder under test
expect_status 0 as_reader "$UG_BIN" history --db "$db"
expect_grep 'run' "$T/out"
expect_status 0 as_reader "$UG_BIN" report --db "$db" --format json -o "$T/w/r.json"
expect_status 0 as_reader "$UG_BIN" report --db "$db" --format junit -o "$T/w/r.xml"
expect_status 0 as_reader "$UG_BIN" diff 1 2 --db "$db"
expect_status 0 as_reader "$UG_BIN" export "$id" --db "$db" --dir "$T/w/e"
expect_status 0 as_reader "$UG_BIN" triage "$id" --db "$db" --run 1
expect_grep 'reproduced exactly' "$T/out"
expect_eq "$(md5sum <"$db")" "$sum" "the read-only database's bytes"
expect_eq "$(ls "$T/ro")" "r.db" "nothing written beside the database"
# a sweep into a database it may not write says it is read-only (exit 2), before it runs
# anything, instead of "not a ulpgym database" or an engine failure (issue #36 item 14)
SW=(sweep --no-regressions --quiet --op attn_softmax --limit 1 -j1)
expect_status 2 as_reader "$UG_BIN" "${SW[@]}" --db "$db"
expect_grep "database .*/ro/r\.db is read-only" "$T/err"
expect_status 2 as_reader "$UG_BIN" "${SW[@]}" --db "$T/ro/new.db"
expect_grep "cannot create database .*/ro/new\.db: its folder .*/ro may not be written" "$T/err"
chmod 777 "$T/ro" # the folder writable, the file not
expect_status 2 as_reader "$UG_BIN" "${SW[@]}" --db "$db"
expect_grep "database .*/ro/r\.db is read-only \(this user may not write the file\)" "$T/err"
rm -f "$T/ro/r.db-wal" "$T/ro/r.db-shm"
chmod 666 "$db" && chmod 555 "$T/ro" # the file writable, its folder not (SQLite keeps -wal and -shm there)
expect_status 2 as_reader "$UG_BIN" "${SW[@]}" --db "$db"
expect_grep "read-only here: its folder .*/ro may not be written" "$T/err"
expect_eq "$(md5sum <"$db")" "$sum" "the database's bytes after the refused sweeps"
chmod 444 "$db"
chmod 755 "$T/ro"

# merge reads write-protected shard files in a writable folder (what a nightly's collected
# shards look like) without leaving -wal/-shm files beside them, as the owner (root passes
# access(W_OK) on any file: the write bit decides) and as another user
mkdir -p "$T/sh" && cp "$db" "$T/sh/a.db" && chmod 444 "$T/sh/a.db"
expect_status 0 ug merge "$T/w/m.db" "$T/sh/a.db"
expect_eq "$(ls "$T/sh")" "a.db" "nothing written beside a write-protected shard by merge"
expect_eq "$(sqlite3 "$T/w/m.db" "SELECT count(*) FROM results")" "$(sqlite3 "$db" "SELECT count(*) FROM results WHERE run_id = 2")" \
    "the merged run holds the shard's latest run"
chmod 777 "$T/sh" && rm -f "$T/w/m.db"
expect_status 0 as_reader "$UG_BIN" merge "$T/w/m.db" "$T/sh/a.db"
expect_eq "$(ls "$T/sh")" "a.db" "nothing written beside a shard another user may not write"

# an older ulpgym's database (schema 3) it may not write: refused, saying why
cp "$db" "$T/ro/v3.db" && chmod 644 "$T/ro/v3.db"
sqlite3 "$T/ro/v3.db" "ALTER TABLE runs DROP COLUMN primary_standard; PRAGMA user_version = 3; PRAGMA journal_mode = DELETE" >/dev/null
chmod 444 "$T/ro/v3.db" && chmod 555 "$T/ro"
expect_status 2 as_reader "$UG_BIN" history --db "$T/ro/v3.db"
expect_grep 'has schema version 3, older than this ulpgym.s 11, and cannot be upgraded here \(it is not writable\)' "$T/err"
chmod 755 "$T/ro"

# an empty file is not a ulpgym database, and stays empty
: >"$T/w/empty.db"
expect_status 2 ug history --db "$T/w/empty.db"
expect_grep 'empty\.db is not a ulpgym database' "$T/err"
expect_eq "$(stat -c %s "$T/w/empty.db")" 0 "the empty file's size"
expect_status 2 ug report --db "$T/w/empty.db"
expect_eq "$(stat -c %s "$T/w/empty.db")" 0 "the empty file's size after report"
finish
