#!/usr/bin/env bash
# test_sweep_shards.sh — `--shard K/N` slices are disjoint and cover the plan, and
# `ulpgym merge` of shards 1/3..3/3 equals the unsharded run case for case (same case IDs,
# verdicts, metrics, per-standard verdicts). Merges that cannot be right are refused and
# leave the output database as it was.
. "$(dirname "$0")/lib.sh"
ARGS=(--op attn_softmax --kernel-variant mut_tail_tile --quiet --no-regressions --fail-on never) # a mutant: PASS and FAIL both occur
expect_status 0 ug sweep "${ARGS[@]}" --db "$T/whole.db" -j2
for k in 1 2 3; do
    expect_status 0 ug sweep "${ARGS[@]}" --db "$T/shard$k.db" --shard $k/3 -j2
    sqlite3 "$T/shard$k.db" "SELECT case_id FROM results" >"$T/ids$k"
    n=$(wc -l <"$T/ids$k")
    if [ "$n" -ge 20 ] && [ "$n" -le 60 ]; then ok; else bad "shard $k/3 holds $n of 110 cases"; fi
done
sort "$T/ids1" "$T/ids2" "$T/ids3" >"$T/ids_all"
expect_eq "$(sort -u "$T/ids_all" | wc -l)" "$(wc -l <"$T/ids_all")" "shards are disjoint"
sqlite3 "$T/whole.db" "SELECT case_id FROM results ORDER BY case_id" >"$T/ids_whole"
if cmp -s "$T/ids_all" "$T/ids_whole"; then ok; else bad "shards do not cover the plan"; fi
# the same shard twice selects the same cases
expect_status 0 ug sweep "${ARGS[@]}" --db "$T/again.db" --shard 2/3 -j1
expect_eq "$(sqlite3 "$T/again.db" "SELECT case_id FROM results ORDER BY 1" | md5sum)" "$(sort "$T/ids2" | md5sum)" \
    "shard selection is deterministic"

OUT=$T/merged.db
expect_status 0 ug merge "$OUT" "$T/shard1.db" "$T/shard2.db" "$T/shard3.db"
expect_grep "merged 3 databases into run 1 of" "$T/out"
expect_same_results "$T/whole.db" "$OUT" "merged shards differ from the unsharded run"
dump_results "$T/whole.db" >"$T/whole.txt"
expect_grep "FAIL" "$T/whole.txt"
expect_grep "PASS" "$T/whole.txt"
expect_eq "$(sqlite3 "$OUT" "SELECT status, shard, n_cases, plan_hash = (SELECT plan_hash FROM runs) FROM runs")" "done|1/3,2/3,3/3|110|1" \
    "merged run row"
expect_eq "$(sqlite3 "$OUT" "SELECT n_pass, n_fail FROM runs")" "$(sqlite3 "$T/whole.db" "SELECT n_pass, n_fail FROM runs")" \
    "merged counts"
expect_grep "shard1.db#1,.*shard2.db#1,.*shard3.db#1" <(sqlite3 "$OUT" "SELECT merged_from FROM runs")
# a merged run cannot be resumed (its shards can)
expect_status 2 ug sweep --resume latest --db "$OUT"
expect_grep "merged from shard databases" "$T/err"

# refused merges leave OUT untouched
before=$(dump_results "$OUT" | md5sum)
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/shard1.db"
expect_grep "are the same database" "$T/err"
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/./shard1.db"   # the same file by another path
expect_grep "are the same database" "$T/err"
expect_status 2 ug merge "$T/./merged.db" "$T/shard1.db" "$OUT"
expect_grep "both the output and an input" "$T/err"
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/shard3.db"       # shard 2/3 missing
expect_grep "1 of 3 shards missing \\(2/3\\)" "$T/err"
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/again.db" "$T/shard2.db"
expect_grep "both shard 2/3" "$T/err"
expect_status 0 ug sweep --op attn_softmax --quiet --db "$T/other.db" --shard 3/3 # another backend
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/other.db"
expect_grep "differ in backend" "$T/err"
expect_status 0 ug sweep "${ARGS[@]}" --seed 99 --db "$T/seed.db" --shard 3/3 # another plan (seed)
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/seed.db"
expect_grep "differ in plan hash" "$T/err"
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/missing.db"
expect_grep "no database at .*missing.db" "$T/err"
echo "not a database" >"$T/junk.db"
expect_status 2 ug merge "$OUT" "$T/shard1.db" "$T/junk.db"
expect_status 2 ug merge "$OUT" "$OUT"
expect_status 2 ug merge "$OUT"
expect_status 2 ug merge
expect_eq "$(dump_results "$OUT" | md5sum)" "$before" "refused merges changed nothing"
expect_eq "$(sqlite3 "$OUT" "SELECT count(*) FROM runs")" 1 "no run added by refused merges"
# a refused merge into a new path creates nothing there (OUT is left as it was: absent),
# whether refused before OUT is opened (a shard missing, an input missing or not a
# database) or while copying (the same cases in two inputs)
NEW=$T/new.db
expect_status 2 ug merge "$NEW" "$T/shard1.db" "$T/shard3.db"
expect_grep "1 of 3 shards missing" "$T/err"
expect_status 2 ug merge "$NEW" "$T/shard1.db" "$T/missing.db"
expect_status 2 ug merge "$NEW" "$T/shard1.db" "$T/junk.db"
sqlite3 "$T/whole.db" ".backup $T/whole_copy.db"
expect_status 2 ug merge "$NEW" "$T/whole.db" "$T/whole_copy.db"
expect_grep "already came from an earlier input" "$T/err"
expect_eq "$(ls "$T" | grep -c '^new\.db')" 0 "files left at a refused merge's new OUT path"
# --partial merges what is there and says so in the run's status
expect_status 0 ug merge --partial "$T/part.db" "$T/shard1.db" "$T/shard3.db"
expect_eq "$(sqlite3 "$T/part.db" "SELECT status FROM runs")" "partial" "a partial merge is marked partial"
finish
