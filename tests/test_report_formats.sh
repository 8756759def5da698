#!/usr/bin/env bash
# test_report_formats.sh — the md, JSON, JUnit and CSV reports (docs/REPORTS.md) on a real
# like-for-like pair: a clean run of a small plan through examples/plugin_sim, then the same
# plan, backend and selection again with ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile (a planted
# kernel bug that fails exactly one case). md, JSON and JUnit must show that new failure first
# (and, two runs later, the case still failing, then fixed, and a passing case's drift);
# JUnit validates against the published Jenkins schemas (tests/fixtures/jenkins-*.xsd) and
# keeps its test names across a plan edit that leaves the cases alone; the CSV parses with
# Python's csv module and its rows match the database. Database strings a run may bring from
# another machine (|, backticks, line breaks, <, quotes, a leading =, bytes that are not
# UTF-8) stay inside their cell, attribute or string in every format. -o picks the format
# from the file's extension; --top all lists every failure.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null && command -v xmllint >/dev/null || { echo "python3 or xmllint missing"; exit 77; }
FIX=$(cd "$(dirname "$0")/fixtures" && pwd)
SIMPLUG=plugin:$(dirname "$UG_BIN")/examples/libulpgym_plugin_sim.so
db=$T/f.db
q() { sqlite3 "$db" "$1"; }

# three attn_softmax cases; the tail-tile mutant fails only the one whose rows are longer than one 256-lane tile
case_json() { # dtype rows cols
    printf '{"op":"attn_softmax","dtype":"%s","params":{"rows":%s,"cols":%s},"dist":{"x":{"kind":"normal","mean":0,"std":1}}}' "$@"
}
plan() { # the cases given, as one plan file
    printf '{"name":"formats","version":1,"seed":5,"cases":['
    local sep=
    for c in "$@"; do printf '%s%s' "$sep" "$c"; sep=,; done
    printf ']}\n'
}
A=$(case_json fp32 3 8) B=$(case_json fp32 3 400) C=$(case_json bf16 2 256)
plan "$A" "$B" "$C" >"$T/p.json"
sweep() { ug sweep --plan "$T/p.json" --no-regressions --db "$db" --backend "$SIMPLUG" --quiet >/dev/null 2>&1; }
sweep
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile sweep
expect_eq "$(q "select group_concat(run_id || ':' || verdict) from (select run_id, verdict from results order by 1, 2)")" \
    "1:PASS,1:PASS,1:PASS,2:FAIL,2:PASS,2:PASS" "one planted failure in run 2"
bad_id=$(q "select case_id from results where run_id = 2 and verdict = 'FAIL'")

# --- markdown: leads with what changed ---
expect_status 0 ug report --db "$db" --run 1 --format md
expect_grep '^There is no like-for-like run before this one' "$T/out"
expect_status 0 ug report --db "$db" -o "$T/r.md"
expect_eq "$(grep -m1 -n '^## ' "$T/r.md" | cut -d: -f2-)" "## Since run 1 (like for like)" "md leads with the changes"
expect_grep '\*\*1 new failure\*\*, 0 fixed, 0 still failing, 0 drifting; 2 unchanged' "$T/r.md"
row=$(sed -n '/^### New failures/,$p' "$T/r.md" | grep -m1 -E '^\| [0-9a-f]{16} ')
case "$row" in
"| $bad_id | attn_softmax | fp32 | FAIL | y: "*" checked elements outside the certified bound "*" | "*" | \`"*"ulpgym triage $bad_id --db "*" --run 2 --backend "*"\` |") ok ;;
*) bad "md new-failure row: $row" ;;
esac
expect_grep "^\| $bad_id \| attn_softmax \| fp32 \| FAIL \| \*\*new\*\* y: " "$T/r.md"
expect_grep '^\| GreenLight \| attn_softmax \| 3 \| 2 \| 1 \| 0 \| 66.67 % \| [^|]* \| [0-9.e-]+ [0-9a-f]{16} \|$' "$T/r.md"

# --- JSON: ulpgym-report/1 ---
expect_status 0 ug report --db "$db" -o "$T/r.json"
python3 - "$T/r.json" "$bad_id" "$db" <<'PY' && ok || bad "json report"
import json, sqlite3, sys
text = open(sys.argv[1], encoding="utf-8").read()
def no_constant(c): raise ValueError("non-finite number " + c)
d = json.loads(text, parse_constant=no_constant)
bad, con = sys.argv[2], sqlite3.connect(sys.argv[3])
assert d["format"] == "ulpgym-report/1" and d["run_id"] == 2, d["format"]
run = con.execute("select plan_hash, backend, git_rev, host, started_at from runs where run_id = 2").fetchone()
assert (d["plan_hash"], d["backend"], d["git_rev"], d["host"], d["started_at"]) == run, run
assert d["options"]["sample"] == 0 and d["options"]["seed"] is None and d["options"]["no_regressions"] is True
c = d["changes"]
assert c["compared_run"] == 1 and c["counts"]["new_failures"] == 1 and c["counts"]["unchanged"] == 2, c["counts"]
nf = c["new_failures"][0]
assert nf["case_id"] == bad and nf["verdict_before"] == "PASS" and nf["verdict"] == "FAIL", nf
assert nf["figure"].startswith("y: ") and nf["severity"] > 1 and nf["used"] > 1 and nf["used_before"] <= 1, nf
assert "triage " + bad + " --db " in nf["triage"] and c["fixed"] == c["still_failing"] == c["drift"] == [], c
f = d["failures"][0]
assert d["failures_total"] == 1 and f["case_id"] == bad and f["change"] == "new_failures" and f["rank"] == 1, f
assert f["used"] == nf["used"] and f["max_ulp"] > 0 and f["triage"] == nf["triage"], f
op = d["ops"]["attn_softmax"]
judged = con.execute("select count(*) from results where run_id = 2 and used is not null").fetchone()[0]
assert sum(op["used_histogram"].values()) == judged and sum(op["used_histogram_not_pass"].values()) == 1, op
assert sum(op["max_ulp_histogram"].values()) == 3, op["max_ulp_histogram"]
best = con.execute("select case_id, used from results where run_id = 2 and verdict = 'PASS' order by used desc limit 1").fetchone()
assert (op["closest_to_limit"]["case_id"], op["closest_to_limit"]["used"]) == best, (op["closest_to_limit"], best)
PY
expect_status 0 ug report --db "$db" --run 1 --format json -o "$T/r1.json"
python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["changes"]; assert c["compared_run"] is None and c["new_failures"] == [], c' \
    "$T/r1.json" && ok || bad "json: no like-for-like run before run 1"

# --- JUnit: published schemas, run properties, the new failure first, readable stable names ---
expect_status 0 ug report --db "$db" -o "$T/r.xml"
for xsd in "$FIX"/jenkins-*.xsd; do expect_status 0 xmllint --noout --schema "$xsd" "$T/r.xml"; done
python3 - "$T/r.xml" "$bad_id" "$db" <<'PY' && ok || bad "junit report"
import sqlite3, sys, xml.etree.ElementTree as ET
root, bad, con = ET.parse(sys.argv[1]).getroot(), sys.argv[2], sqlite3.connect(sys.argv[3])
plan, plan_hash, backend, rev, host, started = con.execute(
    "select plan_name, plan_hash, backend, git_rev, host, started_at from runs where run_id = 2").fetchone()
suite = root.find("testsuite")
assert suite.get("name") == "GreenLight.attn_softmax" and suite.get("hostname") == host, suite.attrib
assert suite.get("timestamp") == started.rstrip("Z"), suite.get("timestamp")
props = {p.get("name"): p.get("value") for p in suite.find("properties")}
want = {"plan": plan, "plan_hash": plan_hash, "backend": backend, "git_rev": rev, "standard": "certified", "like_for_like_run": "1"}
assert all(props.get(k) == v for k, v in want.items()) and "seed" not in props, props
cases = list(root.iter("testcase"))
first = cases[0]
assert first.get("name").endswith("[" + bad + "]") and first.find("failure") is not None, first.attrib
msg, body = first.find("failure").get("message"), first.find("failure").text
assert msg.startswith("NEW since run 1 (like for like: it was PASS there): y: "), msg
assert body.startswith("NEW since run 1") and "triage: " in body, body
for c in cases:
    n = c.get("name")
    assert c.get("classname") == "GreenLight.attn_softmax" and len(n) < 120, n
    assert n.split()[0] in ("fp32", "bf16") and " rows=" in n and " cols=" in n and n.endswith("]"), n
PY
# names last across a plan edit that leaves the cases alone (a case added in front, one with a long list)
LONG=$(seq -s, 1 40)
N='{"kind":"normal","mean":0,"std":1}'
plan '{"op":"flash_attention_mha","dtype":"fp16","params":{"seqlens":"'"$LONG"'","heads":1,"head_dim":8},"dist":{"q":'"$N"',"k":'"$N"',"v":'"$N"'}}' \
    "$C" "$A" "$B" >"$T/p.json"
db2=$T/edit.db
ug sweep --plan "$T/p.json" --no-regressions --db "$db2" --backend "$SIMPLUG" --quiet >/dev/null 2>&1
expect_status 0 ug report --db "$db2" -o "$T/e.xml"
for xsd in "$FIX"/jenkins-*.xsd; do expect_status 0 xmllint --noout --schema "$xsd" "$T/e.xml"; done
python3 - "$T/r.xml" "$T/e.xml" <<'PY' && ok || bad "junit names across a plan edit"
import sys, xml.etree.ElementTree as ET
names = [{c.get("name").rsplit("[", 1)[1]: c.get("name") for c in ET.parse(p).getroot().iter("testcase")} for p in sys.argv[1:]]
common = set(names[0]) & set(names[1])
assert len(common) == 3 and all(names[0][k] == names[1][k] for k in common), names
long = [n for n in names[1].values() if n.startswith("fp16 ")]
assert long and long[0].startswith("fp16 seqlens=1,2,3,…(40) heads=1 head_dim=8 [") and len(long[0]) < 120, long
PY
# a seed given to the sweep is a property
ug sweep --plan "$T/p.json" --no-regressions --db "$T/seed.db" --seed 9 --limit 1 --quiet >/dev/null 2>&1
expect_status 0 ug report --db "$T/seed.db" --format junit
expect_grep '<property name="seed" value="9"/>' "$T/out"

# still failing, fixed and drift, on a copy: the bug again (run 3), then the correct kernel (run 4)
gdb=$T/g.db
cp "$db" "$gdb"
g_sweep() { ULPGYM_PLUGIN_SIM_VARIANT=$1 ug sweep --plan "$T/p3.json" --no-regressions --db "$gdb" --backend "$SIMPLUG" --quiet \
    >/dev/null 2>&1; }
plan "$A" "$B" "$C" >"$T/p3.json"
g_sweep mut_tail_tile
g_sweep sim
expect_status 0 ug report --db "$gdb" --run 3 -o "$T/g3.xml"
expect_grep "<failure type=\"FAIL\" message=\"still failing \(also in run 2\): y: " "$T/g3.xml"
expect_status 0 ug report --db "$gdb" --run 3 --format md
expect_grep '^### Still failing \(1\)$' "$T/out"
drift_id=$(sqlite3 "$gdb" "select case_id from results where run_id = 4 and case_id <> '$bad_id' order by case_id limit 1")
sqlite3 "$gdb" "update results set used = 0.9 where run_id = 4 and case_id = '$drift_id'"
expect_status 0 ug report --db "$gdb" --run 4 --format md
expect_grep "^\| $bad_id \| attn_softmax \| fp32 \| FAIL \| [0-9.e-]+ \|$" "$T/out"
expect_grep "^\| $drift_id \| attn_softmax \| [a-z0-9]+ \| [0-9.e-]+ → 0.9 \|$" "$T/out"
expect_status 0 ug report --db "$gdb" --run 4 -o "$T/g4.json"
python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))["changes"]
assert c["compared_run"] == 3 and [x["case_id"] for x in c["fixed"]] == [sys.argv[2]] and c["fixed"][0]["verdict_before"] == "FAIL", c
assert [(x["case_id"], x["used"]) for x in c["drift"]] == [(sys.argv[3], 0.9)] and c["still_failing"] == c["new_failures"] == [], c' \
    "$T/g4.json" "$bad_id" "$drift_id" && ok || bad "json: fixed and drift"

# --- CSV: one row per case x output, against the database ---
csv_check() { # DB RUN CSV
    python3 - "$@" <<'PY'
import csv, json, math, sqlite3, sys
con, run = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
with open(sys.argv[3], encoding="utf-8", errors="strict", newline="") as fh:
    rows = list(csv.DictReader(fh))
with open(sys.argv[3], "rb") as fh:
    raw = fh.read()
assert raw.count(b"\r\n") >= len(rows) + 1, "records end with CRLF"
head = ["Case ID", "API Name", "Group", "Dtype", "Output", "DEVICE Dtype", "Shape", "Params", "Verdict", "Standard",
        "Headroom Used", "Status", "MaxAbsErr", "MaxRelativeErr", "MaxUlpErr", "Cosine", "MERE", "MARE", "RMSE",
        "Checked", "Total", "Message"]
assert list(rows[0].keys()) == head if rows else True, list(rows[0].keys())
def num(s): return None if s == "" else float(s)
def same(a, b): return (a is None and b is None) or (a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b))))
want = 0
for cid, op, grp, dt, verdict, std, msg, spec, used in con.execute(
        "select r.case_id, c.op, c.op_group, c.dtype, r.verdict, r.primary_standard, coalesce(r.message, ''),"
        " c.spec_json, r.used from results r join cases c using (case_id) where r.run_id = ?", (run,)):
    mine = [r for r in rows if r["Case ID"] == cid]
    mets = con.execute("select output, dtype, n_checked, n_total, max_abs, max_rel, max_ulp, cosine, mere, mare, rmse"
                       " from metrics where run_id = ? and case_id = ? order by rowid", (run, cid)).fetchall()
    want += max(1, len(mets))
    assert len(mine) == max(1, len(mets)), (cid, len(mine), len(mets))
    for r in mine:
        assert (r["API Name"], r["Group"], r["Dtype"], r["Verdict"], r["Standard"]) == (op, grp, dt, verdict, std), r
        assert r["Message"] == msg, (r["Message"], msg)
        assert json.loads(r["Params"]) == json.loads(spec)["params"], r["Params"]
    if not mets:
        assert mine[0]["Output"] == "" and mine[0]["Status"] == "" and mine[0]["MaxAbsErr"] == "", mine[0]
        continue
    for r, m in zip(mine, mets):
        assert (r["Output"], r["DEVICE Dtype"], int(r["Checked"]), int(r["Total"])) == m[:4], (r, m)
        for col, v in zip(("MaxAbsErr", "MaxRelativeErr", "MaxUlpErr", "Cosine", "MERE", "MARE", "RMSE"), m[4:]):
            assert same(num(r[col]), v), (cid, col, r[col], v)
        assert r["Status"] in ("PASS", "FAIL", "NONFINITE", "NA"), r["Status"]
    judged = [num(r["Headroom Used"]) for r in mine if r["Headroom Used"] != ""]
    if used is not None:
        assert judged and max(judged) == used, (cid, judged, used)
    assert ("FAIL" in [r["Status"] for r in mine]) == (verdict == "FAIL"), (cid, verdict, [r["Status"] for r in mine])
assert len(rows) == want, (len(rows), want)
PY
}
expect_status 0 ug report --db "$db" -o "$T/r.csv"
csv_check "$db" 2 "$T/r.csv" && ok || bad "csv rows against the database (run 2)"
expect_grep "^$bad_id,attn_softmax,GreenLight,fp32,y,fp32,\"\[3, 400\]\",.*,FAIL,certified,[0-9.]+,FAIL," "$T/r.csv"
expect_status 0 ug report --db "$db2" -o "$T/e.csv"
csv_check "$db2" 1 "$T/e.csv" && ok || bad "csv rows against the database (two outputs)"
expect_grep '^[0-9a-f]{16},flash_attention_mha,.*,o,fp16,"\[820, 1, 8\]",' "$T/e.csv"
# CRASH and SKIP (the faulty plugin): one row each with no output
plan "$(case_json fp32 5 8)" "$(case_json fp16 3 8)" "$A" >"$T/faulty.json"
fdb=$T/faulty.db
ug sweep --plan "$T/faulty.json" --no-regressions --db "$fdb" --backend "plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so" \
    --quiet >/dev/null 2>&1
expect_eq "$(sqlite3 "$fdb" "select group_concat(verdict) from (select verdict from results order by 1)")" "CRASH,PASS,SKIP" \
    "the faulty plugin's verdicts"
expect_status 0 ug report --db "$fdb" -o "$T/f.csv"
csv_check "$fdb" 1 "$T/f.csv" && ok || bad "csv rows of a crash and a skip"
expect_status 0 ug report --db "$fdb" -o "$T/f.xml"
for xsd in "$FIX"/jenkins-*.xsd; do expect_status 0 xmllint --noout --schema "$xsd" "$T/f.xml"; done
expect_grep '<skipped>' "$T/f.xml"
expect_grep '<error type="CRASH" message="' "$T/f.xml"

# --- strings from another machine, in every format: a crash's message (its deciding words) and the run's row ---
hdb=$T/hostile.db
cp "$fdb" "$hdb"
crash_id=$(sqlite3 "$hdb" "select case_id from results where verdict = 'CRASH'")
sqlite3 "$hdb" "update results set message = '=cmd|x' || char(10) || 'two \`lines\` <b>&amp;</b> \"q\" ' || cast(x'ff' as text) || ' end'
                where verdict = 'CRASH';
                update runs set host = 'h<\"x\">&|\`', plan_name = 'p|\`n\`';"
for ext in md json xml csv; do expect_status 0 ug report --db "$hdb" -o "$T/h.$ext"; done
python3 - "$T/h.md" "$T/h.json" "$T/h.xml" "$T/h.csv" "$crash_id" <<'PY' && ok || bad "hostile strings escaped"
import csv, json, re, sys, xml.etree.ElementTree as ET
md, js, xm, cs, bad = sys.argv[1:]
lines = open(md, encoding="utf-8", errors="strict").read().splitlines()
rows = [l for l in lines if l.startswith("| " + bad + " ")]
assert rows and all(len(re.split(r"(?<!\\)\|", r)) == 9 for r in rows), rows  # the message's | and line break stay in its cell
assert "| CRASH | =cmd\\|x two \\`lines\\` \\<b\\>\\&amp;\\</b\\> \"q\" \\\\xff end |" in rows[0], rows[0]
assert 'host h\\<"x"\\>\\&\\|\\`,' in lines[2] and "plan `` p\\|`n` `` (hash" in lines[2], lines[2]
d = json.load(open(js, encoding="utf-8", errors="strict"))
assert d["host"] == 'h<"x">&|`' and d["plan"] == "p|`n`", (d["host"], d["plan"])
assert d["failures"][0]["message"] == '=cmd|x\ntwo `lines` <b>&amp;</b> "q" \\xff end', d["failures"][0]["message"]
root = ET.parse(xm).getroot()
assert root.find("testsuite").get("hostname") == 'h<"x">&|`'
e = [c.find("error") for c in root.iter("testcase") if c.find("error") is not None][0]
assert 'message: =cmd|x\ntwo `lines` <b>&amp;</b> "q" \\xff end' in e.text, e.text
r = [r for r in csv.DictReader(open(cs, encoding="utf-8", errors="strict", newline="")) if r["Case ID"] == bad][0]
assert r["Message"] == "'=cmd|x\ntwo `lines` <b>&amp;</b> \"q\" \\xff end", r["Message"]
PY
for xsd in "$FIX"/jenkins-*.xsd; do expect_status 0 xmllint --noout --schema "$xsd" "$T/h.xml"; done

# --- the CLI: format from the extension, a conflicting --format, --top all ---
for pair in "md:^# ulpgym run 2" "json:^\{" "xml:^<\?xml" "csv:^Case ID,API Name," "html:<html"; do
    ext=${pair%%:*} pat=${pair#*:}
    expect_status 0 ug report --db "$db" -o "$T/x.$ext"
    expect_grep "$pat" "$T/x.$ext"
done
expect_status 2 ug report --db "$db" --format json -o "$T/y.csv"
expect_grep 'does not match -o' "$T/err"
[ -e "$T/y.csv" ] && bad "a refused report wrote its file" || ok
expect_status 0 ug report --db "$db" --format junit -o "$T/y.xml"
expect_status 0 ug report --db "$db" --format md -o "$T/y.txt"
expect_grep '^# ulpgym run 2' "$T/y.txt"
mdb=$T/many.db
ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --limit 40 --db "$mdb" --quiet >/dev/null 2>&1
n_fail=$(sqlite3 "$mdb" "select count(*) from results where verdict not in ('PASS', 'SKIP')")
[ "$n_fail" -gt 5 ] && ok || bad "mut_bf16_sum failed only $n_fail of 40: --top all shows nothing more"
expect_status 0 ug report --db "$mdb" --top all -o "$T/all.json"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert len(d["failures"]) == d["failures_total"] == int(sys.argv[2])' \
    "$T/all.json" "$n_fail" && ok || bad "--top all lists every failure"
expect_status 0 ug report --db "$mdb" --top 5 -o "$T/five.md"
expect_grep "^5 of $n_fail failing cases" "$T/five.md"
expect_eq "$(grep -cE '^\| [0-9a-f]{16} \| attn_softmax ' "$T/five.md")" 5 "--top 5 lists five"
expect_status 2 ug report --db "$mdb" --top many
finish
