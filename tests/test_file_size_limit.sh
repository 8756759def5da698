#!/usr/bin/env bash
# test_file_size_limit.sh — past `ulimit -f` every command that writes a file reports the
# failed write and exits non-zero instead of dying by SIGXFSZ (status 153), and the files it
# read are unchanged: merge into a database, report to a file. (sweep's own stop and resume
# under the limit: test_sweep_engine_failure.sh.)
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 is needed"; exit 77; }

expect_status 0 ug sweep --op attn_softmax --limit 40 --no-regressions -j2 --quiet --db "$T/a.db"
before=$(sha256sum "$T/a.db" | cut -d' ' -f1)

# run_limited BLOCKS CMD...: CMD under `ulimit -f BLOCKS` (512-byte blocks); status in $rc
run_limited() {
    local blocks=$1
    shift
    (ulimit -f "$blocks"; exec "$UG_BIN" "$@") >"$T/out" 2>"$T/err"
    rc=$?
}

run_limited 16 merge "$T/m.db" "$T/a.db"
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && ok || bad "merge past ulimit -f: status $rc (153 = killed by SIGXFSZ)"
expect_grep '^ulpgym: ' "$T/err"

run_limited 4 report --db "$T/a.db" --format html -o "$T/r.html"
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && ok || bad "report past ulimit -f: status $rc (153 = killed by SIGXFSZ)"
expect_grep '^ulpgym: ' "$T/err"

expect_eq "$(sha256sum "$T/a.db" | cut -d' ' -f1)" "$before" "the source database is unchanged"
expect_status 0 ug merge "$T/m2.db" "$T/a.db"
expect_eq "$(sqlite3 "$T/m2.db" 'SELECT count(*) FROM results')" 40 "a merge without the limit still has every result"
finish
