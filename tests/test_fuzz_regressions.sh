#!/usr/bin/env bash
# test_fuzz_regressions.sh — findings become regression cases: `ulpgym corpus import`
# keeps a found spec (and a raw fuzzer input with --op) in corpus/found/ and the database
# (origin fuzz); the next sweep of the op runs it; it fails with the beyond-plan mutant the
# plan cannot catch and passes with the correct kernel; --no-regressions leaves it out.
. "$(dirname "$0")/lib.sh"
src=${ULPGYM_DATA:?}
data="$T/data"                      # a data dir whose corpus/found starts empty
mkdir -p "$data/corpus"
ln -s "$src/gen" "$data/gen"
export ULPGYM_DATA="$data"
db="$T/f.db"
found=$(ls "$src"/corpus/found/attn_softmax/*.json | head -1)
[ -n "$found" ] && ok || bad "no attn_softmax finding in corpus/found"
mkdir -p "$T/in" && cp "$found" "$T/in/"
expect_status 0 ug corpus import "$T/in" --db "$db"
id=$(basename "$found" .json)
expect_grep "^$id  <- " "$T/out"
[ -f "$data/corpus/found/attn_softmax/$id.json" ] && ok || bad "import did not write corpus/found"
expect_eq "$(sqlite3 "$db" "select origin from cases where case_id='$id'")" "fuzz" "origin fuzz"

# the plan alone cannot catch the tanh-overflow mutant; with the finding, the sweep does
expect_status 0 ug sweep --op attn_softmax --kernel-variant mut_tanh_overflow --db "$db" --quiet --no-regressions
expect_eq "$(sqlite3 "$db" "select count(*) from results where run_id=1 and verdict<>'PASS'")" "0" "plan misses the mutant"
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_tanh_overflow --db "$db" --quiet # the finding fails
expect_eq "$(sqlite3 "$db" "select verdict from results where run_id=2 and case_id='$id'")" "NONFINITE" "finding fails"
expect_status 0 ug sweep --op attn_softmax --db "$db" --quiet
expect_eq "$(sqlite3 "$db" "select verdict from results where run_id=3 and case_id='$id'")" "PASS" "sim passes it"
expect_eq "$(sqlite3 "$db" "select count(*) from results where run_id=1 and case_id='$id'")" "0" "--no-regressions"

# a raw fuzzer input, decoded in the op's space
printf '\x01\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00' > "$T/raw-input"
expect_status 0 ug corpus import "$T/raw-input" --op attn_softmax --db "$db"
expect_grep '1 cases kept' "$T/out"
# bad input
echo 'not json' > "$T/junk.txt"
expect_status 2 ug corpus import "$T/junk.txt" --db "$db"
expect_grep 'not a case spec' "$T/err"
expect_status 2 ug corpus import "$T/nothing-here" --db "$db"
expect_status 2 ug fuzz no_such_op
finish
