#!/usr/bin/env bash
# test_plan_seeds.sh — tolerances not fitted to one seed: the correct sim kernels pass under
# each op's primary standard AND under certified when the plan seed changes. Seeds 2 and
# 3 redraw every case's inputs (new case IDs); checked over the first 8 plan cases of
# every implemented op (its required cases: smallest shapes, tile edges, production
# lengths, every dtype, the stress distributions). scripts/nightly.sh runs the same check
# over the whole plan at seeds 2, 3 and 4 (ULPGYM_SEED_CHECK); two seeds keep 34 ops inside
# CI's budget.
source "$(dirname "$0")/lib.sh"
ops=$(ug ops | awk '$3 == "implemented" {print $2}')
for seed in 2 3; do
    DB=$T/seed$seed.db
    for op in $ops; do
        expect_status 0 ug sweep --seed "$seed" --op "$op" --limit 8 --no-regressions -j 2 --db "$DB" --quiet
    done
    q() { sqlite3 "$DB" "$1"; }
    n=$(q "select count(*) from results")
    if [ "$n" -ge $((8 * $(echo "$ops" | wc -w))) ]; then ok; else bad "seed $seed: only $n cases judged"; fi
    expect_eq "$(q "select group_concat(case_id || ' ' || verdict, ', ') from results where verdict != 'PASS'")" "" \
              "seed $seed: every case passes under its op's primary standard"
    expect_eq "$(q "select group_concat(case_id, ', ') from verdicts where standard = 'certified' and verdict = 'FAIL'")" "" \
              "seed $seed: no case fails under certified"
done
# the seeds really redraw the cases: no case ID in common between seeds 2 and 3
expect_eq "$(sqlite3 "$T/seed2.db" "attach '$T/seed3.db' as b; select count(*) from cases where case_id in (select case_id from b.cases)")" \
          0 "seeds 2 and 3 share no case"
finish
