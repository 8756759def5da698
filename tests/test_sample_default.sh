#!/usr/bin/env bash
# test_sample_default.sh — every output element is judged by default (issue #38 item 4), and
# every place a user reads a run says how many were: the sweep's summary line, the stored
# metrics (n_checked), runs.sample (0 = all) and the md/json/html reports. `--sample N` judges
# N an output (all of a case re-checked near a tolerance, where that fits the budget); a case whose every-element check would not fit the case memory budget is
# judged on 512 an output (UG_SAMPLE_PARTIAL) instead of being refused or exhausting memory.
source "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null && command -v python3 >/dev/null || { echo "sqlite3 or python3 missing: skipped"; exit 77; }
# two interleave_rope cases: 4,194,304 output elements (96 B each for the full check: 384 MiB)
# and 256 elements
cat >"$T/plan.json" <<'EOF'
{"name":"sample","version":1,"seed":0,"cases":[
 {"dist":{"x":{"kind":"normal","mean":0,"std":1}},"dtype":"bf16","op":"interleave_rope","params":{"b":1,"d":64,"n":1,"s":65536},"seed":7,"v":1},
 {"dist":{"x":{"kind":"normal","mean":0,"std":1}},"dtype":"bf16","op":"interleave_rope","params":{"b":1,"d":64,"n":1,"s":4},"seed":8,"v":1}]}
EOF
sweep() { ug sweep --plan "$T/plan.json" --no-regressions -j 1 --quiet --db "$@"; }
sums() { sqlite3 "$1" "select sum(n_checked) || ' ' || sum(n_total) from metrics where run_id = ${2:-1}"; }

# the default: every element, said in the summary, the metrics and the run
expect_status 0 sweep "$T/all.db"
expect_grep '^  judged 4194560 of 4194560 output elements \(100%\); 0 of the cases on a sample' "$T/out"
expect_eq "$(sums "$T/all.db")" "4194560 4194560" "metrics of the default sweep"
expect_eq "$(sqlite3 "$T/all.db" 'select sample from runs')" 0 "runs.sample of the default sweep"

# --sample N: N an output, where the re-check near a tolerance (which a correctly rounded tie
# sets off) cannot judge every element within the budget; the summary counts what the metrics hold
expect_status 0 sweep "$T/s64.db" --sample 64 --case-memory 200M
expect_eq "$(sqlite3 "$T/s64.db" 'select n_checked between 32 and 64 from metrics order by n_total desc limit 1')" 1 \
    "the large case at --sample 64 (the sample's rows x columns: up to 64)"
read -r judged total <<<"$(sums "$T/s64.db")"
expect_grep "^  judged $judged of $total output elements .*; [12] of the cases on a sample" "$T/out"

# a budget the large case fits but its every-element check does not: 512 of it, the rest whole
expect_status 0 sweep "$T/mem.db" --case-memory 200M
expect_grep '^  judged 768 of 4194560 output elements .*; 1 of the cases on a sample' "$T/out"
expect_eq "$(sqlite3 "$T/mem.db" 'select n_checked from metrics order by n_total desc limit 1')" 512 \
    "the case over the budget is judged on 512 elements"
expect_eq "$(sqlite3 "$T/mem.db" 'select verdict from results' | sort -u)" PASS "verdicts over the budget"

# the reports say it too
expect_status 0 ug report --db "$T/mem.db" --format md -o "$T/r.md"
expect_grep '^Judged: 768 of 4194560 output elements' "$T/r.md"
expect_status 0 ug report --db "$T/all.db" --format json -o "$T/r.json"
python3 - "$T/r.json" <<'PY' && ok || bad "json report: elements"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["elements"] == {"judged": 4194560, "total": 4194560}, d["elements"]
assert d["options"]["sample"] == 0, d["options"]
PY
expect_status 0 ug report --db "$T/s64.db" --format html -o "$T/r.html"
expect_grep "judged $judged of 4194560 output elements" "$T/r.html"
finish
