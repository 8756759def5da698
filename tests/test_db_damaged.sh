#!/usr/bin/env bash
# test_db_damaged.sh — a damaged database never reads as a smaller clean run (issue #36
# item 5). Pages of a real database are zeroed with dd (`pragma integrity_check` then
# fails); `db check` says so (exit 2, naming the database and the sqlite3 command), merge
# and --cost-from refuse it as an input, and the reading commands stop with the message
# instead of printing what they could still read.
. "$(dirname "$0")/lib.sh"
db=$T/sound.db
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --fail-on never >/dev/null 2>&1
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --kernel-variant mut_bf16_sum --fail-on never >/dev/null 2>&1
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'done'")" 2 "runs stored"
expect_status 0 ug db check --db "$db"
expect_grep "sound\\.db: ok" "$T/out"
expect_status 0 env ULPGYM_DB="$db" "$UG_BIN" db check # $ULPGYM_DB names it too

# damaged DB PAGE...: a copy of the sound database (every row in the main file) with those pages zeroed
damaged() {
    local out=$1; shift
    sqlite3 "$db" ".backup '$out'"
    for p in "$@"; do dd if=/dev/zero of="$out" bs=4096 seek=$((p - 1)) count=1 conv=notrunc 2>/dev/null; done
    [ "$(sqlite3 "$out" "pragma integrity_check" 2>&1 | head -1)" != ok ] && ok || bad "$out: zeroing pages $* left it sound"
}
# a leaf page of a table in the middle of its pages (dbstat), else the middle page of the file
leaf_of() {
    local p
    p=$(sqlite3 "$db" "SELECT pageno FROM dbstat WHERE name = '$1' AND pagetype = 'leaf' ORDER BY pageno" 2>/dev/null |
        awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }')
    echo "${p:-$(($(sqlite3 "$db" "PRAGMA page_count") / 2))}"
}
expect_eq "$(sqlite3 "$db" "PRAGMA page_size")" 4096 "page size"
mid=$(($(sqlite3 "$db" "PRAGMA page_count") / 2))
damaged "$T/middle.db" $mid $((mid + 1)) $((mid + 2)) $((mid + 3)) # four pages in the middle, as the issue found
damaged "$T/rows.db" "$(leaf_of results)" "$(leaf_of metrics)" "$(leaf_of verdicts)"

# db check: exit 2, the database named, the command that lists every problem
for d in middle rows; do
    expect_status 2 ug db check --db "$T/$d.db"
    expect_grep "database .*$d\\.db is damaged: run \`sqlite3 .*$d\\.db 'pragma integrity_check'\`" "$T/err"
done
expect_status 2 ug db check --db "$T/absent.db"
expect_grep "no database at" "$T/err"
expect_status 2 ug db
expect_status 2 ug db check --db "$db" extra

# a schema version no ulpgym writes (negative: fuzz_db found it read past the migrations)
sqlite3 "$T/negative.db" "PRAGMA user_version = -7"
for cmd in "sweep --no-regressions --quiet --op attn_softmax --limit 1" "db check" "history"; do
    expect_status 2 ug $cmd --db "$T/negative.db"
    expect_grep "negative\.db is an SQLite database but not a ulpgym one \(schema version -7\)" "$T/err"
done

# merge and --cost-from check their inputs first: refused, naming the file; no OUT made
expect_status 2 ug merge "$T/merged.db" "$T/middle.db"
expect_grep "merge: database .*middle\\.db is damaged" "$T/err"
expect_eq "$(ls "$T" | grep -c '^merged\\.db')" 0 "files left by the refused merge"
expect_status 2 ug plan --op attn_softmax --shard-stats 2 --cost-from "$T/middle.db"
expect_grep "cost-from: database .*middle\\.db is damaged" "$T/err"
expect_status 2 ug sweep --no-regressions --quiet --op attn_softmax --db "$T/new.db" --shard 1/2 --cost-from "$T/middle.db"
expect_grep "cost-from: database .*middle\\.db is damaged" "$T/err"
expect_status 0 ug plan --op attn_softmax --shard-stats 2 --cost-from "$db" # the sound one is taken

# expect_status_nonzero command...: the command fails (its message is checked apart)
expect_status_nonzero() { if "$@" >"$T/out" 2>"$T/err"; then bad "'$*' exited 0 on a damaged database"; else ok; fi; }
# every reading command: its queries step with ug_db_step_row (db/internal.h)
for cmd in "failures" "diff 1 2" "report --format json" "report --format md" "history"; do
    expect_status_nonzero ug $cmd --db "$T/rows.db"
    expect_grep "database .*rows\\.db is damaged: run \`sqlite3" "$T/err"
done
finish
