#!/usr/bin/env bash
# test_sample_recheck.sh — sampled verdicts near the budget are exact: a case judged on a
# sample (--sample 512, as a case over the case memory budget is) whose checked elements come within half of an output's
# tolerance (or beyond it, or differ in a code or a NaN/Inf) is re-checked on every element
# (run/exec.c), so its verdict is the one `--sample all` gives and its metrics say so
# (n_checked = n_total). Shown on the first 3 plan cases of every op (its required cases:
# tile edges, tails, production lengths, every dtype, stress data) with the correct kernel
# and every planted mutant. Cases whose sample stayed well inside the tolerances keep the
# sampled verdict, and it must be the --sample all one too: the sample holds each output's
# structural rows and columns and the op's hot rows (a cache scatter's target slots,
# ug_geom_hot), so a verdict that differs is a sampling gap this test reports.
source "$(dirname "$0")/lib.sh"
expect_status 0 ug export --per-op 3 --dir "$T/x"
PLAN=$T/x/plan.json
: >"$T/sampled.txt"
: >"$T/all.txt"
: >"$T/rechecked.txt"
for op in $(ug ops | awk '$3 == "implemented" {print $2}'); do
    for v in $(ug ops show "$op" --json | python3 -c 'import json,sys; print(" ".join(x["name"] for x in json.load(sys.stdin)["kernel_variants"]))'); do
        for mode in sampled all; do
            db="$T/$op-$v-$mode.db"
            sample=512; [ $mode = all ] && sample=all
            ug sweep --plan "$PLAN" --op "$op" --kernel-variant "$v" --sample $sample -j 2 --quiet --db "$db" >/dev/null 2>&1
            sqlite3 "$db" "select '$op $v ' || case_id || ' ' || verdict from results order by case_id" >>"$T/$mode.txt"
        done
        sqlite3 "$T/$op-$v-sampled.db" "select distinct '$op $v ' || case_id from metrics
            where case_id in (select case_id from metrics where n_checked < n_total and n_total > 512) is not 1
              and n_total > 512 and n_checked = n_total" >>"$T/rechecked.txt"
    done
done
n=$(wc -l <"$T/all.txt")
if [ "$n" -gt 400 ] && [ "$n" = "$(wc -l <"$T/sampled.txt")" ]; then ok; else bad "compared $n verdicts"; fi
nrc=$(wc -l <"$T/rechecked.txt")
if [ "$nrc" -gt 20 ]; then ok; else bad "only $nrc sampled cases were re-checked on every element"; fi
# every re-checked case has the --sample all verdict
join <(awk '{print $1"_"$2"_"$3, $4}' "$T/sampled.txt" | sort) <(awk '{print $1"_"$2"_"$3, $4}' "$T/all.txt" | sort) >"$T/joined"
differ=$(awk '$2 != $3 {print $1}' "$T/joined" | sort)
rechecked=$(awk '{print $1"_"$2"_"$3}' "$T/rechecked.txt" | sort)
both=$(comm -12 <(echo "$differ") <(echo "$rechecked") | grep -c . || true)
expect_eq "$both" 0 "re-checked cases whose verdict differs from --sample all"
expect_eq "$(echo "$differ" | grep -c . || true)" 0 "verdicts that differ between --sample 512 and --sample all: $(echo $differ)"
echo "$n variant x case verdicts; $nrc sampled cases re-checked on every element; $(echo "$differ" | grep -c . || true) verdicts differ from --sample all (clean samples)"
finish
