#!/usr/bin/env bash
# test_input_refusals.sh — inputs that used to be taken wrongly (#17 item 13):
# - `corpus import` of a folder with symlink loops walks each folder once (it used to
#   follow the loops to the path length limit, for minutes);
# - a relative --plan path is recorded absolute, so `sweep --resume` works from any folder;
# - a plan that lists a case twice is refused (it used to count 3 cases and store 2 rows);
# - case specs with bytes after the JSON, "v":99 or a \u0000 escape (cJSON would end the
#   string there, giving the ID of the spec without the rest) are refused, in `case` and in
#   plan files; an escaped backslash before "u0000" is not such an escape.
. "$(dirname "$0")/lib.sh"
src=${ULPGYM_DATA:?}
case_json() { echo "{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$1,\"cols\":$2},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}${3:-}}"; }

# 1. corpus import through symlink loops: each folder once, every finding still imported
data="$T/data"                      # a data dir whose corpus/found starts empty
mkdir -p "$data/corpus" "$T/in/sub"
ln -s "$src/gen" "$data/gen"
found=$(ls "$src"/corpus/found/attn_softmax/*.json | head -1)
[ -n "$found" ] && ok || bad "no attn_softmax finding in corpus/found"
cp "$found" "$T/in/sub/"
ln -s .. "$T/in/sub/up"; ln -s ../sub "$T/in/sub/again"; ln -s . "$T/in/here"
ULPGYM_DATA="$data" timeout 60 "$UG_BIN" corpus import "$T/in" --db "$T/c.db" >"$T/out" 2>"$T/err"
expect_eq "$?" 0 "corpus import through symlink loops: exit status ($(head -c 300 "$T/err"))"
expect_eq "$(grep -c ' <- ' "$T/out")" 1 "the finding is imported once"
expect_eq "$(grep -c 'walked already' "$T/out")" 3 "each loop is skipped once"

# 2. a relative --plan path: resume from another folder
mkdir -p "$T/here" "$T/elsewhere"
echo "{\"name\":\"rel\",\"version\":1,\"seed\":2,\"cases\":[$(case_json 2 8),$(case_json 2 9),$(case_json 3 8)]}" \
    >"$T/here/plan.json"
(cd "$T/here" && "$UG_BIN" sweep --plan plan.json --no-regressions --db "$T/rel.db" --quiet -j1 >/dev/null 2>&1)
expect_eq "$(sqlite3 "$T/rel.db" "SELECT plan_path FROM runs")" "$T/here/plan.json" "plan path recorded absolute"
# as if killed after one result: the run reads running with two cases missing
sqlite3 "$T/rel.db" "UPDATE runs SET status = 'running';
    DELETE FROM results WHERE case_id IN (SELECT case_id FROM results ORDER BY case_id LIMIT 2)"
(cd "$T/elsewhere" && "$UG_BIN" sweep --resume latest --db "$T/rel.db" --quiet -j1) >"$T/out" 2>"$T/err"
expect_eq "$?" 0 "resume from another folder: exit status ($(head -c 300 "$T/err"))"
expect_eq "$(sqlite3 "$T/rel.db" "SELECT status, n_cases FROM runs")" "done|3" "resumed run"

# 3. a case listed twice (three times here) is refused, naming the second listing
echo "{\"name\":\"dup\",\"version\":1,\"seed\":2,\"cases\":[$(case_json 2 8),$(case_json 2 9),$(case_json 2 8),$(case_json 2 8)]}" \
    >"$T/dup.json"
expect_status 2 ug plan --plan "$T/dup.json" --count
expect_grep 'cases\[2\]: case [0-9a-f]{16} is listed twice' "$T/err"
expect_status 2 ug sweep --plan "$T/dup.json" --no-regressions --db "$T/dup.db" --quiet
expect_eq "$(wc -l <"$T/err")" 1 "one-line message for a duplicate case"
[ ! -e "$T/dup.db" ] && ok || bad "a refused plan wrote the database"
# ... also when one listing is heavy and the plan is read :light (which leaves heavy cases
# out): a plan that is refused whole is refused in every selection
echo "{\"name\":\"dup\",\"version\":1,\"seed\":2,\"cases\":[$(case_json 2 8 ',"heavy":true'),$(case_json 2 9),$(case_json 2 8)]}" \
    >"$T/dupheavy.json"
expect_status 2 ug plan --plan "$T/dupheavy.json:light" --count
expect_grep 'cases\[2\]: case [0-9a-f]{16} is listed twice' "$T/err"
expect_status 2 ug plan --plan "$T/dupheavy.json" --count
# the same case with a seed of its own is another case
echo "{\"name\":\"dup\",\"version\":1,\"seed\":2,\"cases\":[$(case_json 2 8),$(case_json 2 8 ',"seed":7')]}" >"$T/twoseeds.json"
expect_status 0 ug plan --plan "$T/twoseeds.json" --count
expect_grep '^total 2$' "$T/out"

# 4. specs
base='{"v":1,"op":"attn_softmax","dtype":"fp32","params":{"rows":2,"cols":8},"dist":{"x":{"kind":"normal","mean":0,"std":1}},"seed":5,"plan":"p"}'
expect_status 0 ug case --spec "$base" --json
base_id=$(sed -n 's/.*"case_id":[[:space:]]*"\([0-9a-f]*\)".*/\1/p' "$T/out")
expect_status 2 ug case --spec "$base garbage"
expect_grep 'not valid JSON \(or has bytes after its end\)' "$T/err"
expect_status 2 ug case --spec "$base{}"
expect_status 2 ug case --spec "${base/\"v\":1/\"v\":99}"
expect_grep 'field "v" \(spec version\) must be 1' "$T/err"
expect_status 2 ug case --spec "${base/\"plan\":\"p\"/\"plan\":\"p\\u0000tail\"}"
expect_grep 'holds a \\u0000 escape' "$T/err"
expect_eq "$(grep -c "$base_id" "$T/out")" 0 "a \\u0000 spec never gets the base spec's ID"
expect_status 0 ug case --spec "${base/\"plan\":\"p\"/\"plan\":\"p\\\\u0000tail\"}" --json # an escaped backslash
expect_eq "$(grep -c "$base_id" "$T/out")" 0 "the escaped backslash spec is another case"
echo "{\"name\":\"nul\",\"version\":1,\"seed\":2,\"cases\":[$(case_json 2 8 ',"plan":"x\u0000y"')]}" >"$T/nul.json"
expect_status 2 ug plan --plan "$T/nul.json" --count
expect_grep 'nul.json: holds a \\u0000 escape' "$T/err"
finish
