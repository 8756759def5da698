#!/usr/bin/env bash
# test_readme_tour.sh — the README's five-minute tour runs as printed: its code block is read
# from README.md and each line run in a fresh folder (B the built program), with the exit
# status each one documents (0, and 1 where a planted bug's cases fail); the summary of the
# mutant's sweep names the case the tour then triages, whose stored metrics reproduce exactly.
# No SQL and no placeholder: a line the tour prints must work on any machine.
source "$(dirname "$0")/lib.sh"
README=${ULPGYM_DATA:?}/README.md
awk '/^## A five-minute tour/ {on = 1; next} on && /^```sh/ {block = 1; next} block && /^```/ {exit} block {print}' \
    "$README" >"$T/tour.sh"
expect_eq "$(head -1 "$T/tour.sh" | cut -d' ' -f1)" "B=./build/ulpgym" "the tour starts by naming the program"
[ "$(wc -l <"$T/tour.sh")" -ge 8 ] && ok || bad "the tour has $(wc -l <"$T/tour.sh") lines"
mkdir -p "$T/fresh" && cd "$T/fresh" || exit 1
unset ULPGYM_DB ULPGYM_PLAN ULPGYM_BACKEND
n=0
while IFS= read -r line; do
    n=$((n + 1))
    [ $n = 1 ] && continue # B=./build/ulpgym: the built program stands in for it
    cmd=${line%%#*}        # the comment is documentation
    want=0
    case $line in *"exit 1"* | *kernel-variant*) want=1 ;; esac
    case $cmd in '$B triage '*) want=1 ;; esac # the tour triages a failing case: it still fails (--fail-on fail)
    B=$UG_BIN bash -c "$cmd" >"$T/step$n.out" 2>"$T/step$n.err"
    st=$?
    expect_eq "$st" "$want" "tour line $n ($cmd) exit status; $(tail -2 "$T/step$n.err")"
done <"$T/tour.sh"
# the mutant's summary names the case the tour triages, and triage reproduces it
tri=$(grep -n '^$B triage ' "$T/tour.sh" | head -1 | cut -d: -f1)
id=$(sed -n "${tri}p" "$T/tour.sh" | grep -oE '[0-9a-f]{16}')
mut=$(grep -n 'kernel-variant' "$T/tour.sh" | head -1 | cut -d: -f1)
expect_grep "^ +1\. $id " "$T/step$mut.out"
expect_grep "triage $id --db $T/fresh/ulpgym.db --run 2" "$T/step$mut.out"
expect_grep 'reproduced exactly' "$T/step$tri.out"
expect_grep 'verdict FAIL' "$T/step$tri.out"
expect_grep "^ +1\. $id " "$T/step$(grep -n '^$B failures' "$T/tour.sh" | head -1 | cut -d: -f1).out"
finish
