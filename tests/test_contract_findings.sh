#!/usr/bin/env bash
# test_contract_findings.sh — every contract finding of the fuzzer that was fixed stays
# fixed: each spec in tests/fixtures/contract_findings/ (a case the correct sim kernel
# failed because the contract, the standard or the case builder was wrong; the file name
# says which) must PASS with the sim kernel and with the ideal backend (the oracle's own
# correctly rounded outputs). Add the spec of each contract finding you fix here.
. "$(dirname "$0")/lib.sh"
dir=${ULPGYM_DATA:?}/tests/fixtures/contract_findings
n=0
for f in "$dir"/*.json; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    for b in sim ideal; do
        expect_status 0 ug case --backend "$b" --spec-file "$f"
        grep -q "verdict PASS" "$T/out" && ok || bad "$(basename "$f") with $b: $(grep -m1 verdict "$T/out")"
    done
done
[ "$n" -ge 4 ] && ok || bad "only $n contract findings in $dir"
finish
