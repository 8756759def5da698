#!/usr/bin/env bash
# test_shard_cost.sh — `--shard K/N --cost-from DB` deals shards by the times DB measured: a case made
# known-expensive in a constructed cost database gets a shard of its own (in `plan --shard`, `plan
# --shard-stats` and the sweep alike), every case is in exactly one shard, the deal depends on DB's contents
# and not its path, a resume deals the same shard and refuses costs that changed, `merge` refuses shards
# dealt by different costs, and a missing, junk or same-as-output DB is exit 2 with a message.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing: skipped"; exit 77; }
# a plan of 40 small cases of its own (the nightly plan takes seconds to expand), from
# attn_softmax's space with its first 20 required cases (the rest grid points)
mkdir -p "$T/plans" "$T/ops"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["required"] = d["required"][:20]; json.dump(d, open(sys.argv[2], "w"))' \
    "$ULPGYM_DATA/gen/ops/attn_softmax.json" "$T/ops/attn_softmax.json"
echo '{"name":"shardcost","version":1,"ops":{"attn_softmax":{"cases":40}}}' >"$T/plans/p.json"
OP=(--plan "$T/plans/p.json")
SW=("${OP[@]}" --no-regressions --quiet -j2)
# a cost database: 20 measured cases, the first (by ID) made to cost 1000 s
expect_status 0 ug sweep "${SW[@]}" --limit 20 --db "$T/cost.db"
X=$(sqlite3 "$T/cost.db" "SELECT case_id FROM results ORDER BY case_id LIMIT 1")
sqlite3 "$T/cost.db" "UPDATE results SET kernel_ms = 1e6 WHERE case_id = '$X'"
cp "$T/cost.db" "$T/copy.db"

# the expensive case is alone in shard 1/4 (dealt first); by the estimates it is not
expect_status 0 ug plan "${OP[@]}" --shard 1/4 --cost-from "$T/cost.db" --list
expect_eq "$(awk '{print $1}' "$T/out")" "$X" "shard 1/4 by measured cost holds the expensive case alone"
for k in 1 2 3 4; do ug plan "${OP[@]}" --shard $k/4 --list >"$T/est$k"; done
expect_eq "$(grep -l "^$X " "$T"/est? | xargs cat | wc -l | awk '$1 > 1 {print "shared"}')" shared \
    "by the estimates the case shares its shard"
# every case in exactly one shard; the same deal from a copy of the database at another path
ug plan "${OP[@]}" --list | awk '{print $1}' | sort >"$T/all"
for k in 1 2 3 4; do
    ug plan "${OP[@]}" --shard $k/4 --cost-from "$T/cost.db" --list | awk '{print $1}' >>"$T/dealt"
    ug plan "${OP[@]}" --shard $k/4 --cost-from "$T/copy.db" --list | awk '{print $1}' >>"$T/dealt_copy"
done
expect_eq "$(sort "$T/dealt" | md5sum)" "$(md5sum <"$T/all")" "the shards hold every case once"
expect_eq "$(md5sum <"$T/dealt_copy")" "$(md5sum <"$T/dealt")" "the deal depends on the costs, not the file's path"
# --shard-stats: one row per shard, the expensive shard's estimate is its measured 1000 s, then max/mean
expect_status 0 ug plan "${OP[@]}" --shard-stats 4 --cost-from "$T/cost.db" --measured "$T/cost.db"
expect_grep '^ +1/4 +1 +100[0-9]{4}\.[0-9] +100[0-9]{4}\.[0-9]$' "$T/out"
expect_eq "$(awk '$1 ~ /^[0-9]+\/4$/ {n += $2} END {print n}' "$T/out")" 40 "shard-stats counts every case"
expect_grep '^max/mean +(3\.99[0-9]|4\.000) +(3\.99[0-9]|4\.000)$' "$T/out" # one shard holds ~4x the mean
expect_grep '^estimate: 20 of 40 cases measured' "$T/out"

# the sweep runs the same deal, records it, and a resume deals the same shard again
expect_status 0 ug sweep "${SW[@]}" --shard 1/4 --cost-from "$T/cost.db" --db "$T/s1.db"
expect_eq "$(sqlite3 "$T/s1.db" "SELECT case_id FROM results")" "$X" "sweep --shard 1/4 --cost-from runs the expensive case alone"
expect_eq "$(sqlite3 "$T/s1.db" "SELECT cost_from = '$(realpath "$T/cost.db")', length(cost_hash) FROM runs")" "1|16" \
    "the run records the cost database and the costs' fingerprint"
expect_status 0 ug sweep "${SW[@]}" --shard 2/4 --cost-from "$T/cost.db" --db "$T/s2.db"
ug plan "${OP[@]}" --shard 2/4 --cost-from "$T/cost.db" --list | awk '{print $1}' | sort >"$T/plan2"
expect_eq "$(sqlite3 "$T/s2.db" "SELECT case_id FROM results ORDER BY 1" | md5sum)" "$(md5sum <"$T/plan2")" \
    "sweep --shard 2/4 runs what plan --shard 2/4 lists"
sqlite3 "$T/s2.db" "UPDATE runs SET status = 'interrupted'; DELETE FROM results WHERE rowid IN (SELECT rowid FROM results LIMIT 5)"
expect_status 0 ug sweep --resume latest --db "$T/s2.db" --quiet
expect_eq "$(sqlite3 "$T/s2.db" "SELECT case_id FROM results ORDER BY 1" | md5sum)" "$(md5sum <"$T/plan2")" \
    "a resume runs the missing cases of the same deal"
# costs that changed since the run started: the shard would differ, the resume is refused
sqlite3 "$T/s2.db" "UPDATE runs SET status = 'interrupted'; DELETE FROM results WHERE rowid IN (SELECT rowid FROM results LIMIT 1)"
sqlite3 "$T/cost.db" "UPDATE results SET kernel_ms = kernel_ms + 5 WHERE case_id <> '$X'"
expect_status 2 ug sweep --resume latest --db "$T/s2.db" --quiet
expect_grep 'changed since the run started \(cost hash [0-9a-f]{16}, now [0-9a-f]{16}\)' "$T/err"
expect_eq "$(sqlite3 "$T/s2.db" "SELECT status, resumes FROM runs")" "interrupted|1" "a refused resume changed nothing"
# merge joins only shards of one deal
expect_status 0 ug sweep "${SW[@]}" --shard 3/4 --db "$T/s3.db"             # dealt by estimates
expect_status 2 ug merge --partial "$T/m.db" "$T/s1.db" "$T/s3.db"
expect_grep 'differ in the costs their shards were dealt by \(--cost-from\)' "$T/err"
expect_status 0 ug merge --partial "$T/m.db" "$T/s1.db" "$T/s2.db"

# bad input: exit 2, one line, nothing run
expect_status 2 ug sweep "${SW[@]}" --shard 1/4 --cost-from "$T/missing.db" --db "$T/bad.db"
expect_grep 'cost-from: no database at .*missing.db' "$T/err"
echo "not a database" >"$T/junk.db"
expect_status 2 ug sweep "${SW[@]}" --shard 1/4 --cost-from "$T/junk.db" --db "$T/bad.db"
expect_grep 'cost-from: .*junk.db' "$T/err"
expect_status 2 ug plan "${OP[@]}" --shard 1/4 --cost-from "$T/missing.db" --list
expect_grep 'cost-from' "$T/err"
expect_status 2 ug plan "${OP[@]}" --shard-stats 4 --measured "$T/junk.db"
expect_grep 'measured: .*junk.db' "$T/err"
expect_status 2 ug sweep "${SW[@]}" --shard 1/4 --cost-from "$T/s1.db" --db "$T/s1.db"
expect_grep 'is the database this sweep writes' "$T/err"
expect_status 2 ug sweep "${SW[@]}" --cost-from "$T/copy.db" --db "$T/bad.db"
expect_grep 'give --shard' "$T/err"
expect_status 2 ug sweep --resume latest --db "$T/s2.db" --cost-from "$T/copy.db"
expect_status 2 ug plan "${OP[@]}" --shard-stats 0
expect_status 2 ug plan "${OP[@]}" --shard-stats 4 --list
expect_status 2 ug plan "${OP[@]}" --measured "$T/copy.db" --count
expect_status 2 ug plan "${OP[@]}" --cost-from "$T/copy.db" --count
[ -e "$T/bad.db" ] && bad "a refused sweep created its database" || ok
finish
