#!/usr/bin/env bash
# test_ideal_backend.sh — the standards' self-check: the `ideal` backend hands the judge the
# oracle's own correctly rounded values, which every standard must pass on every case (a
# standard that fails them is wrong, not the kernel). Checked on every element
# (--sample all) over the first 12 plan cases of every op (its required cases: smallest
# shapes, tile edges, production lengths, every dtype, stress distributions) and the fuzz
# findings; `naive` (the same-dtype naive evaluation) runs and is stored.
source "$(dirname "$0")/lib.sh"
DB=$T/ideal.db
ops=$(ug ops | awk '$3 == "implemented" {print $2}')
for op in $ops; do
    expect_status 0 ug sweep --backend ideal --sample all --op "$op" --limit 12 -j 2 --db "$DB" --quiet
done
q() { sqlite3 "$DB" "$1"; }
n=$(q "select count(*) from results")
if [ "$n" -ge $((12 * $(echo "$ops" | wc -w))) ]; then ok; else bad "only $n cases judged"; fi
expect_eq "$(q "select count(distinct c.op) from results r join cases c using (case_id)")" \
          "$(ug ops | awk '$3 == "implemented"' | wc -l | tr -d ' ')" "every implemented op in the shard"
expect_eq "$(q "select count(*) from results where verdict != 'PASS'")" 0 "every case passes with the ideal outputs"
bad_std=$(q "select standard || ' ' || case_id from verdicts where verdict = 'FAIL' limit 5")
expect_eq "$bad_std" "" "no standard fails a correctly rounded output"
expect_eq "$(q "select distinct backend from runs")" ideal "the runs record their backend"
# the naive evaluation is no correct kernel: it may fail cases (exit 1 under --fail-on fail); it runs and is stored
expect_status 0 ug sweep --backend naive --op attn_softmax --limit 20 --no-regressions -j 1 --db "$T/naive.db" --quiet \
    --fail-on never
expect_grep '^run 1: 20 cases' "$T/out"
finish
