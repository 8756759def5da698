#!/usr/bin/env bash
# test_fuzz_findings.sh — `ulpgym fuzz` finds bugs, not contract gaps: fuzzing a planted
# beyond-plan mutant (attn_softmax mut_tanh_overflow) with --max-findings keeps searching
# after the first hit, writes its findings outside the source tree (./ulpgym-found by
# default, --out DIR; its scratch folder in /tmp removed after), one case per failure
# signature with the hits counted, sorted as kernel findings, each with a triage hint
# naming the backend; `corpus import` copies a kernel finding into a temporary data dir's
# corpus/found (never the real one), refuses it a second time, and refuses a contract
# finding (one the correct kernel fails too).
# Needs clang with libFuzzer (the target is built on first use in build-fuzz/ or
# $ULPGYM_FUZZ_BUILD); exits 77 when clang or its libFuzzer runtime is missing, and fails when
# they are there but the target does not build.
. "$(dirname "$0")/lib.sh"
src=${ULPGYM_DATA:?}
command -v clang >/dev/null || { echo "no clang: skipped"; exit 77; }
build=${ULPGYM_FUZZ_BUILD:-$src/build-fuzz}
before=$(find "$src/corpus/found" -type f | sort | md5sum)
cd "$T" || exit 1

# 1. a mutant: several distinct findings, deduplicated, into ./ulpgym-found
expect_status 1 ug fuzz attn_softmax --kernel-variant mut_tanh_overflow --time 120 --max-findings 3 \
    --fuzz-build "$build" --db "$T/f.db"
if grep -q 'building the fuzz target failed' "$T/err"; then
    # Skip only when the toolchain cannot link a fuzzer at all; when it can, our target failing to
    # build is a defect of ours (twice a clang-only error hid here as a skip).
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n; }\n' >"$T/probe.c"
    if clang -fsanitize=fuzzer "$T/probe.c" -o "$T/probe" 2>/dev/null; then
        echo "FAIL: clang links a libFuzzer program but the fuzz target does not build: $(tail -c 600 "$build.log" 2>/dev/null)"
        exit 1
    fi
    echo "libFuzzer runtime missing (clang -fsanitize=fuzzer cannot link): skipped"; exit 77
fi
cp "$T/out" "$T/fuzz1.out"
# the run's scratch folder (corpus, log) in /tmp goes once its findings are out
work=$(sed -nE 's/.* log (.+)\/fuzz\.log .*/\1/p' "$T/fuzz1.out" | head -1)
[ -n "$work" ] && [ ! -e "$work" ] && ok || bad "the scratch folder '$work' outlived a clean run"
out="$T/ulpgym-found"
[ -f "$out/findings.tsv" ] && ok || bad "no findings.tsv in ./ulpgym-found: $(head -c 600 "$T/fuzz1.out")"
expect_eq "$(find "$src/corpus/found" -type f | sort | md5sum)" "$before" "fuzz wrote into the source tree"
summary=$(grep -E '^[0-9]+ failing cases in' "$T/fuzz1.out")
hits=$(echo "$summary" | sed -E 's/^([0-9]+) failing cases.*/\1/')
distinct=$(echo "$summary" | sed -E 's/.*, ([0-9]+) distinct signatures.*/\1/')
rows=$(grep -vc '^#' "$out/findings.tsv")
files=$(find "$out" -name '*.json' | wc -l)
expect_eq "$rows" "$distinct" "one index row per signature"
expect_eq "$files" "$distinct" "one file per signature"
[ "${distinct:-0}" -ge 1 ] && [ "${distinct:-0}" -le 4 ] && ok || bad "distinct signatures: '$summary'"
[ "${hits:-0}" -ge "${distinct:-1}" ] && ok || bad "hits < signatures: '$summary'"
expect_eq "$(awk -F'\t' '!/^#/ {s += $2} END {print s}' "$out/findings.tsv")" "$hits" "hits in the index"
# every mutant finding that the correct kernel passes is a kernel finding, in OUT/<op>/
kernel=$(awk -F'\t' '!/^#/ && $3 == "kernel"' "$out/findings.tsv" | wc -l)
[ "$kernel" -ge 1 ] && ok || bad "no kernel finding: $(cat "$out/findings.tsv")"
awk -F'\t' '!/^#/ {print $3, $5}' "$out/findings.tsv" | while read -r sort file; do
    want=attn_softmax/
    [ "$sort" = kernel ] || want=contract/attn_softmax/
    [[ $file == "$want"*.json ]] || echo "misplaced $sort $file"
done >"$T/misplaced"
[ ! -s "$T/misplaced" ] && ok || bad "$(cat "$T/misplaced")"
expect_grep 'signature op=attn_softmax backend=sim:mut_tanh_overflow outcome=' "$T/fuzz1.out"
id=$(awk -F'\t' '!/^#/ && $3 == "kernel" {print $4; exit}' "$out/findings.tsv")
expect_grep "triage: [^ ]*ulpgym triage $id --db $T/f.db --backend sim:mut_tanh_overflow" "$T/fuzz1.out"
expect_status 1 ug triage "$id" --backend sim:mut_tanh_overflow --db "$T/f.db" # the finding fails (--fail-on fail)
expect_grep 'NONFINITE|FAIL' "$T/out"

# 2. the same search again into the same --out: known signatures are counted, not rewritten
mv "$out" "$T/found2"
expect_status 1 ug fuzz attn_softmax --kernel-variant mut_tanh_overflow --time 120 --max-findings 1 \
    --fuzz-build "$build" --db "$T/f.db" --out "$T/found2"
expect_eq "$(find "$T/found2" -name '*.json' | wc -l)" \
    "$(grep -vc '^#' "$T/found2/findings.tsv")" "one file per signature after a second run"
[ ! -e "$out" ] && ok || bad "--out ignored"

# 3. corpus import into a temporary data dir; a second import of the same is refused
data="$T/data"
mkdir -p "$data/corpus"
ln -s "$src/gen" "$data/gen"
ULPGYM_DATA="$data" expect_status 0 ug corpus import "$T/found2/attn_softmax/$id.json" --db "$T/f.db"
[ -f "$data/corpus/found/attn_softmax/$id.json" ] && ok || bad "import did not write $data/corpus/found"
ULPGYM_DATA="$data" expect_status 2 ug corpus import "$T/found2/attn_softmax/$id.json" --db "$T/f.db"
expect_grep 'already a regression case' "$T/err"

# 4. a contract finding: fuzzing the correct inplace_add_rmsnorm kernel turns up bf16 cases
#    its own sim kernel fails the primary standard on; they sort as contract findings and
#    import refuses them. (Not guaranteed within the time on a loaded machine: then this
#    part is left out; test_found unit-tests the sorting with fabricated contract cases.)
ug fuzz inplace_add_rmsnorm --time 120 --max-findings 1 --fuzz-build "$build" --db "$T/f.db" --out "$T/contract" \
    >"$T/fuzz3.out" 2>"$T/err"
if [ $? = 0 ]; then
    echo "note: no finding for the correct inplace_add_rmsnorm kernel in 120 s; contract import not exercised"
else
    expect_grep '^contract finding [0-9a-f]{16}' "$T/fuzz3.out"
    expect_grep '^  triage: [^ ]*ulpgym triage [0-9a-f]{16} (--db [^ ]+ )?--backend sim$' "$T/fuzz3.out"
    expect_eq "$(find "$T/contract" -path '*/contract/inplace_add_rmsnorm/*.json' | wc -l)" \
        "$(find "$T/contract" -name '*.json' | wc -l)" "the correct kernel's findings are all contract findings"
    cf=$(find "$T/contract/contract" -name '*.json' | head -1)
    ULPGYM_DATA="$data" expect_status 2 ug corpus import "$cf" --db "$T/f.db"
    expect_grep 'is a contract finding' "$T/err"
    ULPGYM_DATA="$data" expect_status 2 ug corpus import "$T/contract" --db "$T/f.db" # only contract/: nothing kept
    expect_grep 'skipping .*contract' "$T/out"
fi
expect_eq "$(find "$data/corpus/found" -name '*.json' | wc -l)" "1" "contract findings imported"
expect_eq "$(find "$src/corpus/found" -type f | sort | md5sum)" "$before" "source corpus/found changed"
finish
