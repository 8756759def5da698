#!/usr/bin/env bash
# test_bench_oracle.sh — `ulpgym bench oracle`: the per-op table lists every selected op
# (and only those) with the cases asked for, elements, times and ratios (the sweep's naive
# and device-bound passes within its oracle), then the overall row; --sample all checks every element; --digest prints one stable line per case; bad
# options get a one-line message and exit 2.
. "$(dirname "$0")/lib.sh"
num='[0-9]+(\.[0-9]+)?'

# three ops, two cases each, every element, without the slow MPFR column
expect_status 0 ug bench oracle --op attn_softmax --op moe_grouped_gemm --op gqa_decode_attn --limit 2 --sample all \
    --no-mpfr
for op in attn_softmax moe_grouped_gemm gqa_decode_attn; do
    expect_grep "^$op +2 +[0-9]+ +$num +$num +- +$num +- +[0-9]+ +$num +$num +$num +$num\$" "$T/out"
    # the naive and device-bound passes are parts of the sweep's oracle
    awk -v op="$op" '$1 == op && !($12 + $13 <= $10 + 0.02) { exit 1 }' "$T/out" && ok ||
        bad "$op: naive + device ms within sweep ms"
done
expect_grep "^all +6 +[0-9]+ " "$T/out"
expect_grep 'every element \(--sample all\)' "$T/out"
expect_eq "$(grep -cvE '^(op |all |CPU ms)' "$T/out")" 3 "only the selected ops are listed"
# the elements every output of moe_grouped_gemm's first two cases holds, against a sample below
all_elems=$(awk '$1 == "moe_grouped_gemm" {print $3}' "$T/out")

# the MPFR column on the default sample (fewer elements than with --sample all)
expect_status 0 ug bench oracle --op moe_grouped_gemm --limit 2 --sample 8
expect_grep "^moe_grouped_gemm +2 +[0-9]+ +$num +$num +$num +$num +$num " "$T/out"
few=$(awk '$1 == "moe_grouped_gemm" {print $3}' "$T/out")
[ "${few:-0}" -lt "${all_elems:-0}" ] && ok || bad "--sample 8 checked $few elements, --sample all $all_elems"

# a group selects each of its ops
expect_status 0 ug bench oracle --group GreenLight --limit 1 --no-mpfr
for op in $(ug plan --group GreenLight --count | awk '/^  [a-z]/ && NF == 2 {print $1}'); do
    expect_grep "^$op +1 " "$T/out"
done

# --digest: one line per case (ID, op, two digests, elements settled by MPFR), the same twice
expect_status 0 ug bench oracle --op moe_grouped_gemm --limit 3 --sample all --digest
expect_eq "$(grep -cE '^[0-9a-f]{16} moe_grouped_gemm [0-9a-f]{16} [0-9a-f]{16} [0-9]+$' "$T/out")" 3 "digest lines"
cp "$T/out" "$T/digest1"
expect_status 0 ug bench oracle --op moe_grouped_gemm --limit 3 --sample all --digest
cmp -s "$T/out" "$T/digest1" && ok || bad "digests differ between two runs"

# bad input: one line, exit 2
for args in "--sample 0" "--sample some" "--limit 0" "--repeat x" "--op no_such_op" "--frobnicate"; do
    # shellcheck disable=SC2086 # the options split on purpose
    expect_status 2 ug bench oracle $args
    expect_eq "$(wc -l <"$T/err")" 1 "one-line message for $args"
done
finish
