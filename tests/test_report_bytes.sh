#!/usr/bin/env bash
# test_report_bytes.sh — a plugin's or a device's message that is not UTF-8 (GBK text, a
# stray 0xff, control bytes, a cut-off sequence) is stored sanitised, each bad byte kept
# as \xNN (core/utf8.h), so the JUnit report is well-formed XML and the JSON report is
# UTF-8 JSON, checked with python3's own parsers (exit 77 without python3).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 is missing: cannot parse the reports"; exit 77; }
STUB=plugin:${ULPGYM_FIXTURES:?}/libstub_plugin.so
db=$T/b.db
q() { sqlite3 "$db" "$1"; }

# the reports of run $1 parse, and their message of a bad case holds the escapes
check_reports() {
    expect_status 0 ug report --db "$db" --run "$1" --format junit -o "$T/r$1.xml"
    expect_status 0 python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/r$1.xml"
    expect_status 0 ug report --db "$db" --run "$1" --format json -o "$T/r$1.json"
    expect_status 0 python3 -c 'import sys, json; json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))' "$T/r$1.json"
    expect_status 0 ug report --db "$db" --run "$1" --format html -o "$T/r$1.html"
    expect_status 0 python3 -c 'import sys; open(sys.argv[1], encoding="utf-8", errors="strict").read()' "$T/r$1.html"
    expect_grep '\\xff' "$T/r$1.xml"
}

# a plugin's message
ULPGYM_STUB_MODE=bytes ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 2 --backend "$STUB" \
    >"$T/out" 2>&1
expect_eq "$(q "select count(*) from results where run_id = 1 and verdict = 'ERROR'")" 2 "the plugin's errors are stored"
msg=$(q "select message from results where run_id = 1 limit 1")
# (e8 b1 b8 of the GBK text happens to be valid UTF-8: it stays as it is)
expect_eq "$msg" 'kernel error -3: \xc9豸\xb4\xed\xce\xf3 \xff\x1b[31m\x07 <]]>& café \xc3' "every byte kept"
check_reports 1

# a device's message (outputs/error.txt of an exported case)
id=$(q "select case_id from results where run_id = 1 limit 1")
expect_status 0 ug export "$id" --db "$db" --dir "$T/dev"
printf 'NPU \xff\xfe fault\x01 at \xe4\xb8' >"$T/dev/outputs/error.txt"
ug check "$id" --db "$db" --outputs "$T/dev" >"$T/out" 2>&1
expect_eq "$(q "select message from results where run_id = 2")" 'device error: NPU \xff\xfe fault\x01 at \xe4\xb8' \
    "the device's message, every byte kept"
check_reports 2
finish
