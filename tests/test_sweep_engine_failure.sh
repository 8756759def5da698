#!/usr/bin/env bash
# test_sweep_engine_failure.sh — a sweep that cannot go on is not a finding: past a file
# size limit (SIGXFSZ) or on a full disk (a 1 MiB tmpfs) it exits 3 with one line saying
# why, marks its run failed, keeps every result committed before, and a resume once the
# cause is gone finishes the run case for case. A backend that cannot work (replay folder
# missing or unreadable, plugin not loadable) is refused before the database is written:
# exit 2, no database file. The tmpfs part needs root and mount; without them it is left
# out (said on stdout), the rest still runs.
. "$(dirname "$0")/lib.sh"
q() { sqlite3 "$1" "$2"; }

# 160 small explicit cases: ~3 KB of database each, so a few hundred KiB of room runs out mid-sweep
{
    echo '{"name":"engine_failure","version":1,"seed":5,"cases":['
    sep=
    for rows in 1 2 3 4; do
        for cols in $(seq 8 47); do
            echo "$sep{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$rows,\"cols\":$cols},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
            sep=,
        done
    done
    echo ']}'
} >"$T/plan.json"
SWEEP=(sweep --plan "$T/plan.json" --no-regressions -j2 --quiet)

# stopped_then_resumed DB LABEL: the sweep just run exited 3 with one line, its run reads
# failed with some results kept; the caller frees the room, then a resume finishes it.
check_stopped() {
    local db=$1 label=$2
    expect_eq "$(wc -l <"$T/err")" 1 "$label: one-line reason"
    expect_grep '^ulpgym: sweep stopped \(engine failure\): database: .*run 1 marked failed.*--resume 1' "$T/err"
    expect_eq "$(q "$db" "SELECT status FROM runs")" failed "$label: run status"
    local kept
    kept=$(q "$db" "SELECT count(*) FROM results")
    [ "$kept" -gt 0 ] && [ "$kept" -lt 160 ] && ok || bad "$label: $kept results kept, expected some but not all 160"
    q "$db" "SELECT case_id || verdict FROM results ORDER BY case_id" >"$T/kept"
}
check_resumed() {
    local db=$1 label=$2
    expect_eq "$(q "$db" "SELECT status, n_cases, n_pass FROM runs")" "done|160|160" "$label: resumed run"
    q "$db" "SELECT case_id || verdict FROM results ORDER BY case_id" >"$T/all"
    expect_eq "$(comm -23 "$T/kept" "$T/all" | wc -l)" 0 "$label: every result kept before the failure is still there"
}

# 1. a file size limit: SIGXFSZ would kill the sweep (exit 153, the run left running)
(ulimit -f 256; exec "$UG_BIN" "${SWEEP[@]}" --db "$T/fsize.db") >"$T/out" 2>"$T/err"
expect_eq "$?" 3 "sweep past ulimit -f: exit status ($(head -c 300 "$T/err"))"
expect_grep 'a file size limit' "$T/err"
check_stopped "$T/fsize.db" "ulimit -f"
expect_status 0 ug sweep --db "$T/fsize.db" --resume latest -j2 --quiet
check_resumed "$T/fsize.db" "ulimit -f"

# 2. a full disk: a 1 MiB tmpfs with 400 KiB left when the sweep starts (room for one batch of 64, not three)
MNT=$T/mnt
mkdir -p "$MNT"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs "$MNT" 2>/dev/null; then
    trap 'umount "$MNT" 2>/dev/null' EXIT
    avail=$(df --output=avail -B1024 "$MNT" | tail -1)
    dd if=/dev/zero of="$MNT/filler" bs=1024 count=$((avail - 400)) 2>/dev/null
    expect_status 3 ug "${SWEEP[@]}" --db "$MNT/full.db"
    expect_grep 'database or disk is full' "$T/err"
    check_stopped "$MNT/full.db" "disk full"
    rm -f "$MNT/filler"
    expect_status 0 ug sweep --db "$MNT/full.db" --resume latest -j2 --quiet
    check_resumed "$MNT/full.db" "disk full"
else
    echo "no tmpfs (needs root and mount): the disk-full part is left out"
fi

# 3. backends that cannot work are refused before the database exists
mkdir -p "$T/unreadable"
printf 'not a library' >"$T/notalib.so"
refuse() { # refuse LABEL PATTERN BACKEND [RUNNER...]: exit 2, one line matching PATTERN, no database
    local label=$1 pattern=$2 backend=$3 db=$T/refused.db
    shift 3
    rm -f "$db"
    "$@" "$UG_BIN" "${SWEEP[@]}" --db "$db" --backend "$backend" >"$T/out" 2>"$T/err"
    expect_eq "$?" 2 "$label: exit status ($(head -c 300 "$T/err"))"
    expect_eq "$(wc -l <"$T/err")" 1 "$label: one-line message"
    expect_grep "$pattern" "$T/err"
    [ ! -e "$db" ] && ok || bad "$label: the database was written"
}
refuse "replay folder missing" 'is not a folder \(No such file' "replay:$T/nowhere"
refuse "plugin not loadable" 'cannot load plugin' "plugin:$T/notalib.so"
chmod 000 "$T/unreadable"
if [ "$(id -u)" != 0 ]; then
    refuse "replay folder unreadable" 'cannot read the folder' "replay:$T/unreadable"
elif command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then # root reads anything: ask as nobody
    chmod 777 "$T"
    refuse "replay folder unreadable" 'cannot read the folder' "replay:$T/unreadable" \
        setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups
else
    echo "running as root without setpriv: the unreadable-folder part is left out"
fi
chmod 755 "$T/unreadable"
finish
