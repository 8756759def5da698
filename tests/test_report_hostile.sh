#!/usr/bin/env bash
# test_report_hostile.sh — a database from another machine cannot inject markup or commands
# into a report (issue #36 items 1, 2). A real run gets rows whose case ID is markup
# (`<script src=//x>`), a command (`$(touch PWNED)`) or carries control characters, and a
# verdict that is markup (`<u>FAIL</u>`); then every report format is written: HTML and
# JUnit hold the strings only as escaped text (JUnit still parses as XML), JSON and CSV
# parse and hold the strings as data, Markdown has no raw tag, and no printed command is
# built from an ID that is not 16 hex digits (so pasting a report's line runs nothing).
. "$(dirname "$0")/lib.sh"
db=$T/hostile.db
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 6 --kernel-variant mut_bf16_sum \
    --fail-on never >/dev/null 2>&1
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM results WHERE run_id = 1")" 6 "the run's rows"
sqlite3 "$db" "
insert into cases values ('<script src=//x>', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message)
    values (1, '<script src=//x>', 'FAIL', 'pypto', '<img src=x onerror=alert(1)>');
insert into cases values ('\$(touch $T/PWNED)', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message)
    values (1, '\$(touch $T/PWNED)', 'CRASH', 'pypto', 'boom'||char(27)||'[2J');
insert into cases values ('00000000deadbeef', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message)
    values (1, '00000000deadbeef', '<u>FAIL</u>', 'pypto', 'a&b \"q\" ''s''');"

for fmt in md html junit json csv; do
    expect_status 0 ug report --db "$db" --run 1 --format "$fmt" -o "$T/r.$fmt"
done
# HTML and JUnit: no raw markup from the database, the strings there as text
for f in html junit; do
    if grep -qE '<script src=//x>|<u>FAIL</u>|<img src=x' "$T/r.$f"; then
        bad "$f: raw markup from the database: $(grep -oE '<script src=//x>|<u>FAIL</u>|<img src=x' "$T/r.$f" | head -2)"
    else ok; fi
    expect_grep '&lt;script src=//x&gt;' "$T/r.$f"
done
expect_grep '&lt;u&gt;FAIL&lt;/u&gt;' "$T/r.html"
python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/r.junit" && ok || bad "JUnit does not parse"
# JSON and CSV: they parse, and hold the strings as data
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
text = json.dumps(d)
assert "<script src=//x>" in text and "<u>FAIL</u>" in text, "hostile strings missing from JSON"
' "$T/r.json" && ok || bad "JSON: $(head -c 300 "$T/r.json")"
python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows), "ragged CSV"
assert any("<script src=//x>" in c for r in rows for c in r), "hostile ID missing from CSV"
' "$T/r.csv" && ok || bad "CSV: $(head -c 300 "$T/r.csv")"
# Markdown: tags and pipes escaped, so a renderer shows text
if grep -qE '<script src=//x>|<u>FAIL</u>' "$T/r.md"; then bad "md: raw markup"; else ok; fi
# no command built from a hostile ID, in any format or in diff; none ran
for f in "$T"/r.*; do
    if grep -qE 'triage[^|]*(touch|<script|&lt;script|\\u003cscript)' "$f"; then
        bad "$(basename "$f"): a command built from a hostile case ID: $(grep -oE 'triage[^|]{0,60}(touch|script)' "$f" | head -1)"
    else ok; fi
done
ug diff 1 1 --db "$db" --fail-on never >"$T/diff.out" 2>&1
if grep -qE 'triage .*(touch|<script)' "$T/diff.out"; then bad "diff: a command built from a hostile case ID"; else ok; fi
if grep -q $'\033' "$T/diff.out"; then bad "diff: a control character reached the terminal"; else ok; fi
[ ! -e "$T/PWNED" ] && ok || bad "a command in a case ID ran"
finish
