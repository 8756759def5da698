#!/usr/bin/env bash
# test_plan_hardening.sh — plans are checked whole when they load (#36 items 9, 10, 11, 13):
# - every case a plan yields (explicit cases, a space's required entries and grid points,
#   the corpus/found regression cases) is checked against its op's declaration: a bad
#   param, a distribution for a tensor the op lacks or of an unknown kind is refused with
#   exit 2 naming the case, the param and what is allowed, by `plan`, `sweep` and `export`
#   before any database is touched (it used to pass `plan` and store ERROR verdicts);
# - the plan's name and every text that reaches the database or a report is plain UTF-8
#   without control characters;
# - loading is linear in explicit cases (a scan per case made it quadratic); plan files
#   are regular files of at most 256 MiB (/dev/zero, a FIFO and a folder are refused unread);
# - "version" other than 1, a "seed" that is no integer, a key twice, an unknown key are
#   refused; a selection without a case is refused by `sweep`, and regression cases follow
#   the plan's ops (a plan of attn_softmax never sweeps another op's regression cases).
. "$(dirname "$0")/lib.sh"
src=${ULPGYM_DATA:?}
C='"op":"attn_softmax","dtype":"fp32"'
X='"dist":{"x":{"kind":"normal","mean":0,"std":1}}'
plan_of() { echo "{\"name\":\"h\",\"version\":1,\"seed\":2,\"cases\":[$1]${2:-}}"; }
case_of() { echo "{$C,\"params\":$1,${2:-$X}${3:-}}"; }
# refused PLAN_JSON PATTERN...: `plan --count` exits 2 and its message matches every pattern
refused() {
    printf '%s' "$1" >"$T/bad.json"
    shift
    expect_status 2 ug plan --plan "$T/bad.json" --count
    for p in "$@"; do expect_grep "$p" "$T/err"; done
}

# 1. (item 9) bad params and distributions in explicit cases, with a "dist"
refused "$(plan_of "$(case_of '{"rows":0,"cols":8}')")" 'cases\[0\]: attn_softmax: param "rows" is 0, allowed \[1, [0-9]+\]'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}'),$(case_of '{"rows":-2,"cols":8}')")" \
    'cases\[1\]: attn_softmax: param "rows" is -2, allowed \[1, '
refused "$(plan_of "$(case_of '{"rows":2.5,"cols":8}')")" 'cases\[0\]: attn_softmax: param "rows" must be an integer'
refused "$(plan_of "$(case_of '{"rows":2,"cols":0}')")" 'cases\[0\]: attn_softmax: param "cols" is 0, allowed \[1, '
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' '"dist":{"x":{"kind":"normal","mean":0,"std":1},"y":{"kind":"const","value":1}}')")" \
    'cases\[0\]: attn_softmax: "dist" names "y", which is not one of its drawn inputs \(x\)'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' '"dist":{"x":{"kind":"cauchy"}}')")" \
    'cases\[0\]: "dist" of input "x": distribution: unknown kind "cauchy"'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' '"dist":{}')")" 'cases\[0\]: attn_softmax: "dist" has no distribution for input "x"'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8,"colz":3}')")" 'cases\[0\]: attn_softmax: unknown param "colz"'
refused "$(plan_of "{\"op\":\"attn_softmax\",\"dtype\":\"int8\",\"params\":{\"rows\":2,\"cols\":8},$X}")" \
    'cases\[0\]: attn_softmax: dtype "int8" is not one of its dtypes'
# ... in every command that loads the plan, before a database exists
printf '%s' "$(plan_of "$(case_of '{"rows":0,"cols":8}')")" >"$T/bad.json"
expect_status 2 ug sweep --plan "$T/bad.json" --db "$T/bad.db" --quiet
expect_grep 'param "rows" is 0, allowed' "$T/err"
expect_status 2 ug plan --plan "$T/bad.json" --list
expect_status 2 ug export --plan "$T/bad.json" --dir "$T/exp" --db "$T/bad.db"
expect_grep 'param "rows" is 0, allowed' "$T/err"
[ ! -e "$T/bad.db" ] && ok || bad "a refused plan created the database"
[ ! -e "$T/exp/index.json" ] && ok || bad "a refused plan was exported"
# ... a heavy case is checked in a :light selection too
printf '%s' "$(plan_of "$(case_of '{"rows":2,"cols":8}'),$(case_of '{"rows":0,"cols":8}' "$X" ',"heavy":true')")" >"$T/heavy.json"
expect_status 2 ug plan --plan "$T/heavy.json:light" --count
expect_grep 'cases\[1\]: attn_softmax: param "rows" is 0' "$T/err"

# 2. (item 9) a space's required entries and grid points: a data dir with its own space
data="$T/data"
mkdir -p "$data/gen/plans" "$data/gen/ops" "$data/corpus/found"
space() { # REQUIRED_PARAMS GRID_ROWS
    echo "{\"op\":\"attn_softmax\",\"nightly_cases\":4,\"dists\":{\"n\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}},
      \"required\":[{\"dtype\":\"fp32\",\"dist\":\"n\",\"params\":$1}],
      \"grid\":{\"dtype\":[\"fp32\"],\"dist\":[\"n\"],\"params\":{\"rows\":$2,\"cols\":[8]}}}" >"$data/gen/ops/attn_softmax.json"
}
echo '{"name":"s","version":1,"seed":1,"ops":{"attn_softmax":{"cases":4}}}' >"$data/gen/plans/s.json"
space '{"rows":1,"cols":8}' '[2,3,4,5]'
ULPGYM_DATA="$data" expect_status 0 ug plan --plan s --count
expect_grep '^total 4$' "$T/out"
space '{"rows":0,"cols":8}' '[2,3,4,5]'
ULPGYM_DATA="$data" expect_status 2 ug plan --plan s --count
expect_grep 'attn_softmax.json: required\[0\]: attn_softmax: param "rows" is 0, allowed \[1, ' "$T/err"
space '{"rows":1,"cols":8}' '[0,0.5,-1,-2,-3,-4,-5]'
ULPGYM_DATA="$data" expect_status 2 ug plan --plan s --count
expect_grep 'attn_softmax.json: grid point [0-9a-f]{16}: attn_softmax: param "rows" ' "$T/err"

# 3. (items 9, 13) regression cases: checked like plan cases, and only the plan's ops get them
space '{"rows":1,"cols":8}' '[2,3,4,5]'
mkdir -p "$data/corpus/found/attn_softmax" "$data/corpus/found/inplace_add_rmsnorm"
cp "$src"/corpus/found/attn_softmax/*.json "$data/corpus/found/attn_softmax/"
cp "$src"/corpus/found/inplace_add_rmsnorm/*.json "$data/corpus/found/inplace_add_rmsnorm/"
n_soft=$(ls "$data"/corpus/found/attn_softmax/*.json | wc -l)
ULPGYM_DATA="$data" expect_status 0 ug sweep --plan s --db "$T/r.db" --quiet -j 2
expect_eq "$(sqlite3 "$T/r.db" "SELECT count(*) FROM results r JOIN cases c USING (case_id) WHERE c.origin = 'fuzz'")" \
    "$n_soft" "the plan's op's regression cases are swept"
expect_eq "$(sqlite3 "$T/r.db" "SELECT count(*) FROM results r JOIN cases c USING (case_id) WHERE c.spec_json LIKE '%inplace_add_rmsnorm%'")" \
    "0" "no regression case of an op the plan does not have"
printf '%s' "$(case_of '{"rows":0,"cols":8}' "$X" ',"seed":5')" >"$data/corpus/found/attn_softmax/0000000000000bad.json"
ULPGYM_DATA="$data" expect_status 2 ug sweep --plan s --db "$T/r2.db" --quiet
expect_grep 'regression case .*0000000000000bad.json: attn_softmax: param "rows" is 0, allowed' "$T/err"
[ ! -e "$T/r2.db" ] && ok || bad "a refused regression case created the database"
ULPGYM_DATA="$data" expect_status 0 ug sweep --plan s --db "$T/r2.db" --quiet --no-regressions
rm "$data/corpus/found/attn_softmax/0000000000000bad.json"

# 4. (item 13) a selection without a case: sweep says so, sweeps no regression case, writes nothing
printf '%s' "$(plan_of "$(case_of '{"rows":2,"cols":8}')")" >"$T/one.json"
printf '%s' "$(plan_of '')" >"$T/none.json"
ULPGYM_DATA="$data" expect_status 2 ug sweep --plan "$T/none.json" --db "$T/e.db" --quiet
expect_grep 'none.json has no case: nothing to sweep' "$T/err"
ULPGYM_DATA="$data" expect_status 2 ug sweep --plan "$T/one.json" --op inplace_add_rmsnorm --db "$T/e.db" --quiet
expect_grep 'one.json has no case for --op inplace_add_rmsnorm: nothing to sweep' "$T/err"
[ ! -e "$T/e.db" ] && ok || bad "an empty selection created the database"
expect_status 0 ug plan --plan "$T/none.json" --count # a listing of nothing is no error
expect_grep '^total 0$' "$T/out"

# 5. (item 13) the plan's own fields
one="$(case_of '{"rows":2,"cols":8}')"
refused "{\"name\":\"h\",\"version\":99,\"cases\":[$one]}" '"version" must be 1, the plan format this ulpgym reads'
refused "{\"name\":\"h\",\"version\":\"1\",\"cases\":[$one]}" '"version" must be 1'
refused "{\"name\":\"h\",\"version\":1,\"seed\":\"x\",\"cases\":[$one]}" '"seed" must be an integer in \[0, 2\^53\)'
refused "{\"name\":\"h\",\"version\":1,\"seed\":-1,\"cases\":[$one]}" '"seed" must be an integer'
refused "{\"name\":\"h\",\"version\":1,\"seed\":1.5,\"cases\":[$one]}" '"seed" must be an integer'
refused "{\"name\":\"h\",\"version\":1,\"cases\":[$one],\"cases\":[]}" 'key "cases" appears twice in the top-level object'
refused "{\"name\":\"h\",\"version\":1,\"cases\":[$(case_of '{"rows":2,"rows":3,"cols":8}')]}" 'key "rows" appears twice in one object'
refused "{\"name\":\"h\",\"version\":1,\"case\":[$one]}" 'unknown key "case"'
refused "{\"name\":\"h\",\"version\":1,\"cases\":[$(case_of '{"rows":2,"cols":8}' "$X" ',"comment":"x"')]}" \
    'cases\[0\]: case spec: unknown field "comment"'
refused "{\"name\":\"h\",\"version\":1,\"groups\":{\"GLM\":1e400},\"cases\":[$one]}" 'groups: "GLM" is not a group with a case count'
expect_status 2 ug case --spec "{$C,\"params\":{\"rows\":2,\"cols\":8},$X,\"seed\":1,\"x\":1}"
expect_grep 'unknown field "x"' "$T/err"

# 6. (item 10) names and texts: plain UTF-8, no control characters, said which field
refused "{\"name\":\"h\\u0007\",\"version\":1,\"cases\":[$one]}" '"name" holds a control character'
FF=$'\xff' C3=$'\xc3' E9=$'\xe9' # bytes that are not UTF-8 where they stand
refused "{\"name\":\"h$FF\",\"version\":1,\"cases\":[$one]}" '"name" is not valid UTF-8'
refused "{\"name\":\"\",\"version\":1,\"cases\":[$one]}" '"name" is empty or longer than 63 bytes'
refused "{\"name\":\"$(printf 'n%.0s' {1..64})\",\"version\":1,\"cases\":[$one]}" '"name" is empty or longer than 63 bytes'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' "$X" ',"source":"t\u001b[31m"')")" 'cases\[0\]: "source" holds a control character'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' "$X" ',"note":"a\u0085b"')")" 'cases\[0\]: "note" holds a control character'
refused "$(plan_of "$one" ",\"unmatched\":[{\"source\":\"s\",\"why\":\"a$C3\"}]")" 'unmatched\[0\] "why" is not valid UTF-8'
refused "$(plan_of "$one" ',"deviations":[{"source":"s","standard":"pypto","why":"a\nb"}]')" \
    'deviations\[0\] "why" holds a control character'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' "$X" ',"seed":3,"plan":"p\u0001"')")" 'case spec: a key or string holds a control character'
refused "$(plan_of "$(case_of '{"rows":2,"cols":8}' "$X" ",\"seed\":3,\"plan\":\"p$E9\"")")" \
    'case spec: a key or string is not valid UTF-8'
printf '%s' "{\"name\":\"h\\u0007\",\"version\":1,\"cases\":[$one]}" >"$T/ctl.json"
expect_status 2 ug sweep --plan "$T/ctl.json" --db "$T/ctl.db" --quiet
[ ! -e "$T/ctl.db" ] && ok || bad "a plan with a control character in its name created the database"
cp "$T/one.json" "$T/$(printf 'a\tb').json"
expect_status 2 ug plan --plan "$T/$(printf 'a\tb').json" --count
expect_grep 'plan path holds a control character' "$T/err"

# 7. (item 11) regular files of at most 256 MiB, refused at once
expect_status 2 timeout 20 "$UG_BIN" plan --plan /dev/zero --count
expect_grep '/dev/zero: is a character device, not a regular file: not read' "$T/err"
mkfifo "$T/fifo.json"
expect_status 2 timeout 20 "$UG_BIN" plan --plan "$T/fifo.json" --count
expect_grep 'fifo.json: is a FIFO, not a regular file: not read' "$T/err"
expect_status 2 timeout 20 "$UG_BIN" sweep --plan "$T/fifo.json" --db "$T/f.db" --quiet
expect_status 2 ug plan --plan "$T" --count
expect_grep 'is a folder, not a regular file' "$T/err"
truncate -s 300M "$T/huge.json" # sparse: no disk used
expect_status 2 timeout 20 "$UG_BIN" plan --plan "$T/huge.json" --count
expect_grep 'huge.json: 314572800 bytes, more than the 256 MiB a file read as text may have: not read' "$T/err"

# 8. (item 11) loading is linear in explicit cases: 4x the cases, at most ~7x the CPU
# (a duplicate scan per case made it quadratic: 10k cases 0.25 s, 40k 2.7 s of user CPU)
big() { # N FILE: N distinct explicit cases
    awk -v n="$1" 'BEGIN { printf "{\"name\":\"big\",\"version\":1,\"seed\":3,\"cases\":[";
        for (i = 0; i < n; i++) printf "%s{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":%d,\"cols\":%d},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}", (i ? "," : ""), 1 + i % 100, 8 + int(i / 100);
        printf "]}" }' >"$2"
}
big 10000 "$T/big10k.json"
big 40000 "$T/big40k.json"
cpu() { # the user+sys CPU seconds of `plan --count --plan FILE`, best of 2
    local best=999 t
    for _ in 1 2; do
        t=$( { TIMEFORMAT='%U %S'; time "$UG_BIN" plan --count --plan "$1" >"$T/big.out" 2>&1; } 2>&1 | awk '{print $1 + $2}')
        best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
    done
    echo "$best"
}
t10=$(cpu "$T/big10k.json")
expect_grep '^total 10000$' "$T/big.out"
t40=$(cpu "$T/big40k.json")
expect_grep '^total 40000$' "$T/big.out"
awk -v a="$t10" -v b="$t40" 'BEGIN { exit !(b <= 7 * (a > 0.05 ? a : 0.05)) }' && ok ||
    bad "plan loading is not linear: 10k cases ${t10} s, 40k cases ${t40} s of CPU"
echo "plan --count CPU: 10k explicit cases ${t10} s, 40k ${t40} s"
finish
