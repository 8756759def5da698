#!/usr/bin/env bash
# test_triage.sh — triage in full: a case failed by the tail-tile mutant is reproduced from
# the database, explained (worst elements, histogram, clusters: each by the error relative to
# what the deciding standard, certified, allows, ulps second), shrunk to a smaller shape that fails the same way (and
# passes with the correct kernel), and printed as JSON. (test_triage_zero: exact zeros.)
. "$(dirname "$0")/lib.sh"
db="$T/t.db"
ug sweep --op attn_softmax --kernel-variant mut_tail_tile --db "$db" --quiet >/dev/null
id=$(sqlite3 "$db" "select r.case_id from results r join cases c using(case_id) where verdict='FAIL'
                    and json_extract(c.spec_json,'\$.dtype') = 'fp32' /* the dump check reads fp32 values */
                    order by json_extract(c.spec_json,'\$.params.rows')*json_extract(c.spec_json,'\$.params.cols') desc limit 1")
[ -n "$id" ] && ok || bad "tail-tile mutant failed nothing"
big=$(sqlite3 "$db" "select json_extract(spec_json,'\$.params.rows')*json_extract(spec_json,'\$.params.cols') from cases where case_id='$id'")

# the case fails now as it did: exit 1 (--fail-on fail; 4 would be "not reproduced")
expect_status 1 ug triage "$id" --db "$db" --run 1
expect_grep 'reproduced exactly' "$T/out"
# each figure led by the error relative to what the deciding standard (certified) allows, ulps second
expect_grep '^  worst elements of y, by \|a - g\*\| / \(2 \* B \+ ulp\(g\)/2\), the certified bound' "$T/out"
expect_grep '^    \[[0-9]+,[0-9]+\]  [0-9.e+-]+x allowed  kernel .*\(0x.*  \|err\| [0-9.e+-]+, [0-9.e+-]+ ulp$' "$T/out"
expect_grep '^  error of y relative to what certified allows \([0-9]+ elements; 1 = at the limit\):' "$T/out"
expect_grep '^  ulp error histogram of y \(secondary\): <=0.5 [0-9]+' "$T/out"
expect_grep 'where the error of y clusters' "$T/out"
expect_grep '% of the elements beyond the allowance \(uniform' "$T/out"

expect_status 1 ug triage "$id" --db "$db" --run 1 --shrink
expect_grep '^shrink: [0-9]+ steps' "$T/out"
new=$(awk '/^smallest failing case/{print $4}' "$T/out")
spec=$(sed -n 's/^spec //p' "$T/out" | tail -1)
[ -n "$new" ] && [ "$new" != "$id" ] && ok || bad "shrink gave no new case ID"
small=$(echo "$spec" | python3 -c 'import json,sys; p=json.load(sys.stdin)["params"]; print(p["rows"]*p["cols"])')
[ "$small" -lt "$big" ] && ok || bad "shrunk shape $small is not smaller than $big"
cols=$(echo "$spec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["params"]["cols"])')
[ $((cols % 256)) -ne 0 ] && [ "$cols" -gt 256 ] && ok || bad "a tail-tile failure needs cols > 256, not a multiple: $cols"
expect_status 1 ug case --backend sim:mut_tail_tile --spec "$spec"     # still fails with the mutant
expect_status 0 ug case --spec "$spec"                                 # and passes with the sim kernel
expect_eq "$(sqlite3 "$db" "select origin from cases where case_id='$new'")" "manual" "shrunk case stored"
expect_status 1 ug triage "${new:0:10}" --db "$db" --backend sim:mut_tail_tile

expect_status 1 ug triage "$id" --db "$db" --run 1 --json
python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["verdict"]=="FAIL" and d["stored_metrics_reproduced"] is True, d["verdict"]
o=d["outputs"][0]
assert o["yardstick"]["standard"]=="certified" and sum(o["histogram"].values())==sum(o["ulp_histogram"].values())+o["not_in_ulps"]
assert len(o["worst"])==5 and o["worst"][0]["ratio"]>=o["worst"][4]["ratio"]>1, o["worst"]
assert d["reproduce"].split(" ", 1)[0].endswith("ulpgym") and " case --backend \x27sim:mut_tail_tile\x27" in d["reproduce"]' "$T/out" && ok || bad "triage --json"
# --dump: files an independent reader (plain Python, no numpy) loads; its max abs error
# between the kernel's output and the exact values equals the one triage reports
expect_status 1 ug triage "$id" --db "$db" --run 1 --dump "$T/dump"
max_abs=$(ug triage "$id" --db "$db" --run 1 --json | python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["outputs"][0]["max_abs"]))')
python3 - "$T/dump" "$max_abs" <<'PY' && ok || bad "dump not readable or inconsistent"
import ast, json, struct, sys
def load(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    code = {"<f8": "d", "<f4": "f", "<u2": "H", "|u1": "B", "<i4": "i", "|i1": "b", "<f2": "e"}[h["descr"]]
    count = 1
    for d in h["shape"]: count *= d
    return h["shape"], struct.unpack("<%d%s" % (count, code), b[10 + n:])
d = sys.argv[1]
case = json.load(open(d + "/case.json"))
shape, y = load(d + "/outputs/y.npy")
eshape, exact = load(d + "/exact/y.npy")
_, rounded = load(d + "/exact/y_rounded.npy")
_, x = load(d + "/inputs/x.npy")
p = case["spec"]["params"] if "spec" in case else json.loads(case["params_json"])
assert list(shape) == list(eshape) == [p["rows"], p["cols"]], (shape, eshape)
assert len(x) == len(y) and all(abs(r - e) <= abs(e) * 2**-23 for r, e in zip(rounded, exact))
assert max(abs(a - b) for a, b in zip(y, exact)) == float(sys.argv[2])
PY

# a case that passes cannot be shrunk
pass_id=$(sqlite3 "$db" "select case_id from results where verdict='PASS' limit 1")
expect_status 2 ug triage "$pass_id" --db "$db" --shrink
expect_grep 'passes with this backend' "$T/err"
expect_status 2 ug triage "$id" --db "$db" --run 7

# an ambiguous prefix is refused by every command, naming the candidates, never resolved silently
twin="${id:0:10}000000"
[ "$twin" != "$id" ] || twin="${id:0:10}ffffff"
sqlite3 "$db" "insert into cases select '$twin', op, op_group, dtype, spec_json, 'manual', first_seen from cases where case_id='$id'"
expect_status 2 ug triage "${id:0:10}" --db "$db"
expect_grep "ambiguous in the database: 2 cases match \\(.*$id" "$T/err"
expect_grep "$twin" "$T/err"
expect_status 2 ug export "${id:0:10}" --db "$db" --dir "$T/exp"
expect_grep "ambiguous in the database: 2 cases match" "$T/err"
expect_status 1 ug triage "$id" --db "$db" --run 1    # the full ID still resolves (and fails)

# the reproduce line is shell-quoted: a spec string holding quotes and a command substitution
# runs the case when pasted, and nothing else
evil='{"v":1,"op":"attn_softmax","dtype":"fp32","seed":5,"plan":"x'"'"'; touch '"$T"'/pwned; echo '"'"'$(touch '"$T"'/pwned2)","params":{"rows":2,"cols":8},"dist":{"x":{"kind":"normal","mean":0,"std":1}}}'
ug case --spec "$evil" >/dev/null && ok || bad "the quoted-plan spec does not run"
evil_id=$(ug case --spec "$evil" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["case_id"])')
sqlite3 "$db" "insert into cases values('$evil_id','attn_softmax','GreenLight','fp32','$(printf %s "$evil" | sed "s/'/''/g")','manual','now')"
expect_status 0 ug triage "$evil_id" --db "$db"
line=$(sed -n 's/^reproduce: //p' "$T/out")
(PATH="$(dirname "$UG_BIN"):$PATH" bash -c "$line" >/dev/null 2>&1) && ok || bad "pasted reproduce line failed: $line"
[ ! -e "$T/pwned" ] && [ ! -e "$T/pwned2" ] && ok || bad "the reproduce line ran a command: $line"
expect_status 2 ug case --spec "${evil/\"seed\":5/\"seed\":5,\"tab\":\"a\\tb\"}"   # control characters refused
expect_grep 'control character' "$T/err"
finish
