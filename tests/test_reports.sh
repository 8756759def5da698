#!/usr/bin/env bash
# test_reports.sh — history, diff and every report format on a database with three runs
# (sim, a planted-bug mutant, sim again) plus a synthetic fourth run that flips one
# verdict under the same plan, code and backend (a flaky case). The JUnit output is
# validated against the published Jenkins schemas (tests/fixtures/jenkins-*.xsd) with
# xmllint; the HTML opens in headless
# Chromium, whose DOM must hold the report's sections and whose screenshot must be real.
# The certified pass rate beside the pass rate (history, diff, md/json/html reports) is
# checked against the verdicts table on a mutant whose pypto and certified rates differ
# (glm_gate's mut_bf16_acc),
# swept once as usual and once with `--primary certified`.
. "$(dirname "$0")/lib.sh"
db="$T/r.db"
ug sweep --op attn_softmax --db "$db" --quiet >/dev/null
ug sweep --op attn_softmax --kernel-variant mut_tail_tile --db "$db" --quiet >/dev/null
ug sweep --op attn_softmax --db "$db" --quiet >/dev/null
n=$(sqlite3 "$db" 'select count(*) from results where run_id=1')
n_fail=$(sqlite3 "$db" "select count(*) from results where run_id=2 and verdict<>'PASS'")
[ "$n_fail" -gt 0 ] && ok || bad "the tail-tile mutant failed nothing"

# diff: run 1 -> 2 has exactly the mutant's failures as new failures, grouped in one section
# (ID, op, dtype, PASS -> verdict, figure, then a triage line); 2 -> 3 fixes them
expect_status 1 ug diff 1 2 --db "$db"
expect_grep "^NEW FAILURES: $n_fail " "$T/out"
expect_eq "$(grep -cE '^  [0-9a-f]{16}  attn_softmax +[a-z0-9]+ +PASS -> [A-Z]+  y: ' "$T/out")" "$n_fail" \
    "new failures 1->2, each with its figure"
expect_eq "$(grep -cE '^      .*ulpgym triage [0-9a-f]{16} --db .* --run 2' "$T/out")" "$n_fail" "a triage line each"
expect_grep "^total +$n +$n +$n_fail +0 +0 " "$T/out"
expect_status 0 ug diff 2 latest --db "$db"
expect_grep "^FIXED: $n_fail " "$T/out"
expect_eq "$(grep -c ' -> PASS  was: ' "$T/out")" "$n_fail" "fixed 2->3, with the figure they failed by"
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
               insert into results select 4, case_id, verdict, primary_standard, kernel_ms, oracle_ms, oracle_fallbacks, message,
               oracle_raised, oracle_unsettled, outputs_dir, used from results where run_id=3;
               update results set verdict='FAIL' where run_id=4 and case_id='$flip';"
expect_status 0 ug history --db "$db"
expect_grep "^  $flip .*3:PASS 4:FAIL|^  $flip .*4:FAIL 3:PASS" "$T/out"
expect_grep "^  $flip .*first failed in run 4" "$T/out"
expect_status 0 ug history --db "$db" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"])==4 and len(d["flaky"])==1 and d["regressions"][0]["first_failing_run"]==4' "$T/out" && ok || bad "history --json"
# flaky means the same code: a run of other plugin bytes (SHA-256) or of another (dirty) source
# revision that flips a second case is not flaky
db5=$T/same_code.db
cp "$db" "$db5"
flip2=$(sqlite3 "$db5" "select case_id from results where run_id=3 order by case_id limit 1 offset 1")
for r in "5|'other-bytes'|git_rev" "6|backend_sha256|git_rev || '-dirty-0badc0de'"; do
    IFS='|' read -r id sha rev <<<"$r"
    sqlite3 "$db5" "insert into runs(run_id, started_at, status, plan_name, plan_hash, backend, git_rev, backend_sha256)
                    select $id, started_at, 'done', plan_name, plan_hash, backend, $rev, $sha from runs where run_id=3;
                    insert into results select $id, case_id, verdict, primary_standard, kernel_ms, oracle_ms,
                    oracle_fallbacks, message, oracle_raised, oracle_unsettled, outputs_dir, used from results where run_id=3;
                    update results set verdict='FAIL' where run_id=$id and case_id='$flip2';"
done
expect_status 0 ug history --db "$db5" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"])==6 and len(d["flaky"])==1, d["flaky"]' "$T/out" \
    && ok || bad "other plugin bytes or source revision counted as flaky"

# markdown: the release report's table
expect_status 0 ug report --db "$db" --run 2 --format md
expect_grep "^\| GreenLight \| 1 \| $n \| $((n - n_fail)) \| $n_fail \| 0 \|" "$T/out"
expect_grep '^\| GreenLight \| attn_softmax \|' "$T/out"
expect_grep 'ulpgym triage [0-9a-f]{16} --db [^ ]+ --run 2`' "$T/out"
# a triage line copied from the report runs as printed: the run's own kernel (its backend is stored), metrics reproduced
line=$(grep -o '`[^`]*ulpgym triage [^`]*`' "$T/out" | head -1 | tr -d '`')
sh -c "$line" >"$T/pasted" 2>&1
expect_grep 'reproduced exactly' "$T/pasted"
expect_grep '^backend sim:mut_tail_tile' "$T/pasted"
# json
expect_status 0 ug report --db "$db" --run 2 --format json -o "$T/r.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["total"]; assert t["cases"]==int(sys.argv[2]) and t["failed"]==int(sys.argv[3]), t' \
    "$T/r.json" "$n" "$n_fail" && ok || bad "report json totals"
# junit: valid against the schema, one testcase per case, failures counted
expect_status 0 ug report --db "$db" --run 2 --format junit -o "$T/r.xml"
for xsd in "$(dirname "$0")"/fixtures/jenkins-*.xsd; do expect_status 0 xmllint --noout --schema "$xsd" "$T/r.xml"; done
expect_eq "$(grep -c '<testcase ' "$T/r.xml")" "$n" "one testcase per case"
expect_eq "$(grep -c '<failure ' "$T/r.xml")" "$n_fail" "one failure per failing case"
# GitLab shows the failure's body, not its message: the body holds the figures, thresholds and a
# triage line that runs as is (database and run named); test names carry dtype and shape and end with [ID]
python3 - "$T/r.xml" "$db" <<'PY' && ok || bad "junit failure bodies / test names"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.iter("testcase")
fails = [(c, c.find("failure")) for c in root.iter("testcase") if c.find("failure") is not None]
assert fails, "no failure"
for c, f in fails:
    name, body = c.get("name"), f.text or ""
    assert "=" in name and any(d in name for d in ("fp32", "fp16", "bf16")), name
    assert "FAIL by " in body and "output " in body and "elements checked" in body and "thresholds: {" in body, body
    case_id = name.rsplit("[", 1)[1].rstrip("]")
    assert ("ulpgym triage " + case_id + " --db ") in body and " --run 2" in body, body
PY
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
    # no horizontal overflow at 1280 and 800 px (long threshold JSON must wrap)
    expect_page_fits "$browser" "$T/r.html" 1280 800
    expect_grep 'ulpgym triage [0-9a-f]{16} --db [^ ]+ --run 2' "$T/dom.html"
fi
# the histogram colours by outcome: the mutant's failing cases are red, an all-PASS run has no red
grep -q 'class="bar notpass"' "$T/r.html" && ok || bad "no red bar in a run with failures"
ug report --db "$db" --run 3 --format html -o "$T/r3.html" && ok || bad "report run 3"
grep -q 'class="bar notpass"' "$T/r3.html" && bad "an all-PASS run shows red bars" || ok
grep -q 'class="count"' "$T/r3.html" && ok || bad "bars carry no counts"
# the history chart of a sim run holds only sim runs (1 and 3), the mutant run 2 only itself
expect_eq "$(grep -o '<title>run [0-9]* ' "$T/r3.html" | sort -u | tr -d '\n')" "<title>run 1 <title>run 3 " "sim history"
expect_eq "$(grep -o '<title>run [0-9]* ' "$T/r.html" | sort -u | tr -d '\n')" "<title>run 2 " "mutant history"
expect_status 2 ug report --db "$db" --format pdf
expect_status 2 ug report --db "$db" --run 42
# the synthetic run 4 stored no verdicts: the certified standard judged none of its cases
expect_status 0 ug report --db "$db" --run 4 --format md
expect_grep "^\| \*\*total\*\* \| 1 \| $n \| .* \| – \|$" "$T/out"
expect_status 0 ug report --db "$db" --run 4 --format json -o "$T/r4.json"
python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["total"]
assert t["pass_rate_certified"] is None and t["certified_judged"] == 0, t' "$T/r4.json" && ok ||
    bad "report json of a run without verdicts: pass_rate_certified null"

# --- the certified pass rate beside the pass rate, against the verdicts table ---
# (glm_gate: an op pypto decides, whose bf16-accumulator mutant certified fails more often)
cdb="$T/c.db"
ug sweep --op glm_gate --kernel-variant mut_bf16_acc --limit 20 --db "$cdb" --quiet >/dev/null
ug sweep --op glm_gate --kernel-variant mut_bf16_acc --limit 20 --db "$cdb" --quiet --primary certified >/dev/null
cq() { sqlite3 "$cdb" "$1"; }
# what the reports must show, straight from the tables: the outcome's pass rate, and the certified verdict's over
# the cases it judged (PASS or FAIL; NA and cases without verdicts left out)
outcome_rate() { cq "select printf('%.2f', 100.0 * sum(verdict = 'PASS') / count(*)) from results where run_id = $1"; }
cert_rate() {
    cq "select printf('%.2f', 100.0 * sum(verdict = 'PASS') / count(*)) from verdicts
        where run_id = $1 and standard = 'certified' and verdict in ('PASS', 'FAIL')"
}
p1=$(outcome_rate 1) c1=$(cert_rate 1) p2=$(outcome_rate 2) c2=$(cert_rate 2)
[ "$p1" != "$c1" ] && ok || bad "mut_bf16_acc: pypto and certified pass rates agree ($p1 %), the test proves nothing"
expect_eq "$p2" "$c1" "--primary certified: the outcome's pass rate is the certified one"
expect_eq "$c2" "$c1" "certified verdicts do not depend on the deciding standard"
expect_eq "$(cq "select count(*) from verdicts
                 where run_id = 1 and standard = 'certified' and verdict in ('PASS','FAIL')")" 20 \
    "certified judged every case"
# history: pass % then cert % per run; --primary shown after the plan
expect_status 0 ug history --db "$cdb"
expect_grep "^ +pass % +cert % +backend / plan$|pass % +cert % +backend / plan$" "$T/out"
expect_eq "$(awk '$1 == 1 {print $8, $9}' "$T/out")" "$p1% $c1%" "history run 1: pass % and cert %"
expect_eq "$(awk '$1 == 2 {print $8, $9}' "$T/out")" "$p2% $c2%" "history run 2: pass % and cert %"
expect_grep "^ +2 .* sim:mut_bf16_acc / [^ ]+ --primary certified$" "$T/out"
# the two runs decide by different standards: their differing verdicts are neither flaky nor regressions
expect_grep 'flaky cases .*: none' "$T/out"
expect_grep 'regressions .*: none' "$T/out"
expect_status 0 ug history --db "$cdb" --json
python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["runs"]
assert ["%.2f" % x["pass_rate_certified"] for x in r] == sys.argv[2:4], r
assert ["%.2f" % x["pass_rate"] for x in r] == sys.argv[4:6], r
assert r[0]["primary_standard"] is None and r[1]["primary_standard"] == "certified", r' \
    "$T/out" "$c1" "$c2" "$p1" "$p2" && ok || bad "history --json: pass_rate_certified"
# diff 1 -> 2: the cases pypto passes and certified fails become NEW FAIL; no certified verdict flips
n_newfail=$(cq "select count(*) from results a join results b on b.case_id = a.case_id and b.run_id = 2
                where a.run_id = 1 and a.verdict = 'PASS' and b.verdict <> 'PASS'")
expect_status "$([ "$n_newfail" -gt 0 ] && echo 1 || echo 0)" ug diff 1 2 --db "$cdb"
expect_grep "outcomes decided by each op's own primary -> certified \(--primary\)" "$T/out"
expect_eq "$(sed -n 's/^NEW FAILURES: \([0-9]*\).*/\1/p' "$T/out")" "$n_newfail" "diff: new failures under --primary certified"
expect_grep "^total +20 +20 +$n_newfail +0 +[0-9]+ +[0-9]+ +0 +0$" "$T/out"
expect_grep "^pass rate over the 20 common cases: $p1% -> $p2%; certified $c1% -> $c2% \(of 20 -> 20 judged\)$" "$T/out"
# report md: the group, total and per-operator rows end with pass rate | certified pass rate
expect_status 0 ug report --db "$cdb" --run 1 --format md
expect_grep '^\| group \| operators \| cases \| passed \| failed \| other \| pass rate \| certified pass rate \|$' \
    "$T/out"
expect_grep "^\| GLM \| 1 \| 20 \| .* \| $p1 % \| $c1 % \|$" "$T/out"
expect_grep "^\| GLM \| glm_gate \| 20 \| .* \| $p1 % \| $c1 % \| [^|]* \|$" "$T/out"
expect_status 0 ug report --db "$cdb" --run 2 --format md
expect_grep "^\| GLM \| glm_gate \| 20 \| .* \| $p2 % \| $c2 % \| [^|]* \|$" "$T/out"
expect_grep 'decided by the `certified` standard \(`sweep --primary certified`\)' "$T/out"
# report json: every tally has pass_rate_certified; the run says which standard decided
expect_status 0 ug report --db "$cdb" --run 1 --format json -o "$T/c1.json"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for t in (d["total"], d["groups"]["GLM"], d["ops"]["glm_gate"]):
    assert "%.2f" % t["pass_rate_certified"] == sys.argv[2] and "%.2f" % t["pass_rate"] == sys.argv[3], t
    assert t["certified_judged"] == 20, t
assert d["primary_standard"] is None' "$T/c1.json" "$c1" "$p1" && ok || bad "report json: pass_rate_certified"
# report html: the summary table has the column and the figure
expect_status 0 ug report --db "$cdb" --run 1 --format html -o "$T/c1.html"
expect_grep '<th>pass rate</th><th>certified pass rate</th>' "$T/c1.html"
expect_grep "<tr class=\"total\">.*<td>$p1 %</td><td>$c1 %</td></tr>" "$T/c1.html"

# SKIP and CRASH for what they are: the faulty plugin declines fp16/bf16 (SKIP) and crashes on rows 5
sdb=$T/skip.db
{
    echo '{"name":"skips","version":1,"seed":3,"cases":['
    echo '{"op":"attn_softmax","dtype":"fp32","params":{"rows":5,"cols":8},"dist":{"x":{"kind":"normal","mean":0,"std":1}}}'
    for c in 3 4 8 9; do
        echo ",{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":3,\"cols\":$c},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
        echo ",{\"op\":\"attn_softmax\",\"dtype\":\"fp16\",\"params\":{\"rows\":3,\"cols\":$c},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
    done
    echo ']}'
} >"$T/skips.json"
ug sweep --plan "$T/skips.json" --no-regressions --db "$sdb" --backend "plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so" --quiet >/dev/null
expect_eq "$(sqlite3 "$sdb" "select group_concat(verdict || ':' || n) from (select verdict, count(*) n from results group by 1 order by 1)")" \
    "CRASH:1,PASS:4,SKIP:4" "the faulty plugin's verdicts"
expect_status 0 ug report --db "$sdb" --format md -o "$T/s.md"
# 4 passes among the 5 cases not skipped: 80 %, not 4 of 9
expect_grep '^\| GreenLight \| attn_softmax \| 9 \| 4 \| 0 \| 5 \| 80.00 % \|' "$T/s.md"
expect_grep '4 SKIP, counted under other, are no verdict' "$T/s.md"
expect_grep '^\| [0-9a-f]{16} \| attn_softmax \| fp32 \| CRASH \| worker killed by signal' "$T/s.md"   # its message decides
if grep -q '| SKIP |' "$T/s.md"; then bad "SKIP listed among the failures"; else ok; fi
expect_status 0 ug report --db "$sdb" --format html -o "$T/s.html"
expect_grep 'fill="#cccccc"><title>attn_softmax fp16: 0/0 pass, 4 skipped' "$T/s.html"
expect_status 0 ug report --db "$sdb" --format json -o "$T/s.json"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["ops"]["attn_softmax"]["pass_rate"] == 80.0 and d["ops"]["attn_softmax"]["skipped"] == 4, d["ops"]
assert [f["max_ulp"] for f in d["failures"]] == [None], d["failures"]' "$T/s.json" && ok || bad "report json: skips and crash"
finish
