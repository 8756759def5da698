#!/usr/bin/env bash
# test_reports.sh — history, diff and every report format on a database with three runs
# (sim, a planted-bug mutant, sim again) plus a synthetic fourth run that flips one
# verdict under the same plan, code and backend (a flaky case). The JUnit output is
# validated against tests/fixtures/junit.xsd with xmllint; the HTML opens in headless
# Chromium, whose DOM must hold the report's sections and whose screenshot must be real.
. "$(dirname "$0")/lib.sh"
db="$T/r.db"
ug sweep --op attn_softmax --db "$db" --quiet >/dev/null
ug sweep --op attn_softmax --kernel-variant mut_tail_tile --db "$db" --quiet >/dev/null
ug sweep --op attn_softmax --db "$db" --quiet >/dev/null
n=$(sqlite3 "$db" 'select count(*) from results where run_id=1')
n_fail=$(sqlite3 "$db" "select count(*) from results where run_id=2 and verdict<>'PASS'")
[ "$n_fail" -gt 0 ] && ok || bad "the tail-tile mutant failed nothing"

# diff: run 1 -> 2 has exactly the mutant's failures as NEW FAIL; 2 -> 3 fixes them
expect_status 1 ug diff 1 2 --db "$db"
expect_eq "$(grep -c '^  NEW FAIL' "$T/out")" "$n_fail" "new failures 1->2"
expect_grep "^total +$n +$n_fail +0 " "$T/out"
expect_status 0 ug diff 2 latest --db "$db"
expect_eq "$(grep -c '^  FIXED' "$T/out")" "$n_fail" "fixed 2->3"
expect_status 2 ug diff 1 99 --db "$db"
expect_grep 'no run 99' "$T/err"

# history: three runs, the middle one below 100 %, per dtype with --by
expect_status 0 ug history --db "$db"
expect_eq "$(grep -cE '^ +[123] ' "$T/out")" "3" "three runs listed"
expect_grep "^ +2 .* sim:mut_tail_tile" "$T/out"
expect_grep 'flaky cases .*: none' "$T/out"
expect_grep 'regressions .*: none' "$T/out"   # the mutant is another backend, not a regression
expect_status 0 ug history --db "$db" --by dtype --last 1
expect_eq "$(grep -cE '^ +3 .* (fp32|fp16|bf16) ' "$T/out")" "3" "one line per dtype"

# a synthetic fourth run: a copy of run 3 with one verdict flipped -> flaky and regression
flip=$(sqlite3 "$db" "select case_id from results where run_id=3 order by case_id limit 1")
sqlite3 "$db" "insert into runs(run_id, started_at, status, plan_name, plan_hash, backend, git_rev)
               select 4, started_at, 'done', plan_name, plan_hash, backend, git_rev from runs where run_id=3;
               insert into results select 4, case_id, verdict, primary_standard, kernel_ms, oracle_ms, oracle_fallbacks, message
               from results where run_id=3;
               update results set verdict='FAIL' where run_id=4 and case_id='$flip';"
expect_status 0 ug history --db "$db"
expect_grep "^  $flip .*3:PASS 4:FAIL|^  $flip .*4:FAIL 3:PASS" "$T/out"
expect_grep "^  $flip .*first failed in run 4" "$T/out"
expect_status 0 ug history --db "$db" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"])==4 and len(d["flaky"])==1 and d["regressions"][0]["first_failing_run"]==4' "$T/out" && ok || bad "history --json"

# markdown: the release report's table
expect_status 0 ug report --db "$db" --run 2 --format md
expect_grep "^\| GreenLight \| 1 \| $n \| $((n - n_fail)) \| $n_fail \| 0 \|" "$T/out"
expect_grep '^\| GreenLight \| attn_softmax \|' "$T/out"
expect_grep 'ulpgym triage [0-9a-f]{16}' "$T/out"
# json
expect_status 0 ug report --db "$db" --run 2 --format json -o "$T/r.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["total"]; assert t["cases"]==int(sys.argv[2]) and t["failed"]==int(sys.argv[3]), t' \
    "$T/r.json" "$n" "$n_fail" && ok || bad "report json totals"
# junit: valid against the schema, one testcase per case, failures counted
expect_status 0 ug report --db "$db" --run 2 --format junit -o "$T/r.xml"
expect_status 0 xmllint --noout --schema "$(dirname "$0")/fixtures/junit.xsd" "$T/r.xml"
expect_eq "$(grep -c '<testcase ' "$T/r.xml")" "$n" "one testcase per case"
expect_eq "$(grep -c '<failure ' "$T/r.xml")" "$n_fail" "one failure per failing case"
# html: self-contained, renders in Chromium
expect_status 0 ug report --db "$db" --run 2 --format html -o "$T/r.html"
if grep -qiE '<script|src="http|href="http|@import|url\(' "$T/r.html"; then bad "html refers to outside resources"; else ok; fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    bad "chromium is not installed (scripts/deps.sh installs it with ULPGYM_WITH_BROWSER=1)"
else
    flags="--headless --no-sandbox --disable-gpu --user-data-dir=$T/chrome"
    timeout 120 "$browser" $flags --dump-dom "file://$T/r.html" >"$T/dom.html" 2>"$T/chrome.err"
    for id in summary history heatmap histograms failures; do expect_grep "id=\"$id\"" "$T/dom.html"; done
    expect_eq "$(grep -o 'class="cell"' "$T/dom.html" | wc -l)" "3" "heatmap cells (3 dtypes)"
    expect_eq "$(grep -o 'class="failure"' "$T/dom.html" | wc -l)" "$([ "$n_fail" -lt 25 ] && echo "$n_fail" || echo 25)" "failure rows"
    timeout 120 "$browser" $flags --window-size=1200,1600 --screenshot="$T/r.png" "file://$T/r.html" >/dev/null 2>&1
    size=$(stat -c %s "$T/r.png" 2>/dev/null || echo 0)
    [ "$size" -gt 20000 ] && ok || bad "screenshot is $size bytes"
    dims=$(python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(24); print(*struct.unpack(">II", b[16:24]))' "$T/r.png")
    expect_eq "$dims" "1200 1600" "screenshot size"
fi
expect_status 2 ug report --db "$db" --format pdf
expect_status 2 ug report --db "$db" --run 42
finish
