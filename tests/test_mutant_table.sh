#!/usr/bin/env bash
# test_mutant_table.sh — `ulpgym ops show OP --mutants`: per kernel variant, the plan cases
# catching it, and of the cases whose outputs it changes how many are caught. Differential:
# a variant's "changes N" is the number of plan cases whose output digest (`bench kernels
# --digest`, the raw output bits) differs from the correct kernel's; caught <= changed
# <= cases; the correct kernel and the legal variants are caught nowhere.
source "$(dirname "$0")/lib.sh"
OP=attn_softmax
expect_status 0 ug ops show "$OP" --mutants
cp "$T/out" "$T/table"
n=$(ug plan --op "$OP" --count | awk '$1 == "total" {print $2}')
expect_grep "^    sim +0/$n .*certified +0/$n .*the correct kernel" "$T/table"

expect_status 0 ug bench kernels --digest --no-time --kernel-variant all --op "$OP"
awk '$3 == "sim" {sim[$1] = $4} {d[$1 " " $3] = $4; v[$3] = 1}
     END { for (x in v) { c = 0; for (id in sim) if (d[id " " x] != sim[id]) c++; print x, c } }' "$T/out" | sort >"$T/changed"
[ "$(wc -l <"$T/changed")" -ge 10 ] && ok || bad "bench kernels gave digests for only $(wc -l <"$T/changed") variants"
while read -r variant want; do
    [ "$variant" = sim ] && continue
    line=$(sed -n "/plan cases catching/,\$p" "$T/table" | grep -E "^    $variant ")
    got=$(sed -n 's/.* changes \([0-9][0-9]*\).*/\1/p' <<<"$line")
    expect_eq "$got" "$want" "$variant: cases changed (table against bench kernels --digest)"
    caught=$(awk '{split($2, a, "/"); print a[1]}' <<<"$line")
    case $variant in
    legal_*) expect_eq "$caught" 0 "$variant is legal: caught nowhere" ;;
    *) cc=$(sed -n 's/.* caught \([0-9][0-9]*\) (.*/\1/p' <<<"$line")
       if [ -n "$cc" ] && [ "$cc" -le "$got" ] && [ "$got" -le "$n" ] && [ "$caught" -ge "$cc" ]; then ok
       else bad "$variant: caught-of-changed '$cc', changed '$got', caught '$caught', cases $n do not nest"; fi ;;
    esac
done <"$T/changed"
# a mutant that changes every case it touches and is caught in each (the table's own claim)
expect_grep '^    mut_bf16_sum .* changes [1-9][0-9]*, caught [1-9][0-9]* ' "$T/table"
finish
