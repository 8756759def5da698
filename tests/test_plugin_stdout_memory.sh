#!/usr/bin/env bash
# test_plugin_stdout_memory.sh — two more things a plugin cannot do (docs/SWEEP.md, "What a
# plugin can and cannot do to a sweep"):
# 1. corrupt a command's output by printing: what it writes to stdout, when loaded or when
#    called, by stdio or by write(1), lands on stderr, so `case --json` stays one JSON
#    document and a sweep's stdout its summary;
# 2. allocate without bound: the kernel's process has its address space capped from the
#    case memory budget (RLIMIT_AS), so a kernel that mallocs 1 GiB under --case-memory
#    256M gets NULL and its crash is CRASH "out of memory", in a sweep and in `case`; with a
#    4G budget the same case PASSes (the cap, not the case, made it fail).
# Uses tests/fixtures/faulty_plugin.c ($ULPGYM_FAULTY_NOISY; rows 10 allocates 1 GiB).
. "$(dirname "$0")/lib.sh"
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so
spec() { echo "{\"v\":1,\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$1,\"cols\":8},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":2}},\"seed\":5}"; }

# 1. a noisy plugin
export ULPGYM_FAULTY_NOISY=1
expect_status 0 ug case --spec "$(spec 3)" --backend "$PLUGIN" --json
expect_eq "$(head -c 1 "$T/out")$(tail -c 2 "$T/out" | head -c 1)" "{}" "case --json stdout is one JSON object"
expect_eq "$(grep -c 'noise' "$T/out")" 0 "no plugin noise on case --json's stdout"
expect_grep 'noise: loaded' "$T/err"           # the constructor's, at dlopen in ulpgym itself
expect_grep 'noise: called' "$T/err"           # the kernel's, in its contained process
expect_grep 'noise: raw write' "$T/err"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["verdict"] == "PASS"' "$T/out" && ok ||
        bad "case --json output does not parse: $(head -c 200 "$T/out")"
fi
{
    echo '{"name":"noise_memory","version":1,"seed":3,"cases":['
    echo "$(spec 3 | sed 's/,"seed":5//'),"
    echo "$(spec 10 | sed 's/,"seed":5//')"
    echo ']}'
} >"$T/plan.json"
expect_status 0 ug sweep --plan "$T/plan.json" --no-regressions --db "$T/n.db" --backend "$PLUGIN" --quiet -j2
expect_eq "$(grep -c 'noise' "$T/out")" 0 "no plugin noise on the sweep's stdout"
expect_grep '^run 1: 2 cases' "$T/out"
unset ULPGYM_FAULTY_NOISY

# 2. a kernel that allocates past the budget
expect_status 1 ug case --spec "$(spec 10)" --backend "$PLUGIN" --case-memory 256M
expect_grep 'verdict CRASH' "$T/out"
expect_grep 'signal 11 \(SIGSEGV\).*: out of memory \(an allocation failed under the address space cap.*256 MiB' "$T/out"
expect_status 0 ug case --spec "$(spec 10)" --backend "$PLUGIN" --case-memory 4G
expect_grep 'verdict PASS' "$T/out"
expect_status 1 ug sweep --plan "$T/plan.json" --no-regressions --db "$T/m.db" --backend "$PLUGIN" --quiet -j2 \
    --case-memory 256M # the CRASH is a failing case
expect_eq "$(sqlite3 "$T/m.db" "SELECT group_concat(verdict, ' ') FROM (SELECT verdict FROM results ORDER BY verdict)")" \
    "CRASH PASS" "verdicts under 256M"
expect_eq "$(sqlite3 "$T/m.db" "SELECT count(*) FROM results WHERE verdict = 'CRASH' AND message LIKE '%: out of memory (%'")" \
    1 "the crash says out of memory"
expect_status 0 ug sweep --plan "$T/plan.json" --no-regressions --db "$T/m.db" --backend "$PLUGIN" --quiet -j2 \
    --case-memory 4G
expect_eq "$(sqlite3 "$T/m.db" "SELECT group_concat(verdict) FROM results WHERE run_id = 2")" "PASS,PASS" "verdicts under 4G"
finish
