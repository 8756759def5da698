#!/usr/bin/env bash
# test_triage_zero.sh — triage never measures an element whose exact value is 0 in ulps.
#
# A naive bf16 rms_norm_rope case (issue 34's example) whose gamma_q is injected 0 at a rope
# pair (3, 67), so q_out's columns 3 and 67 are exactly 0 in every row. Its outputs are the
# naive kernel's own (`triage --backend naive --dump`), with one of those exact zeros
# replaced by 0.003, as a device might leave it; `check` judges them as a replay run. One ulp
# at 0 is bf16's smallest subnormal (2^-133), so that element would read 3e37 ulps and
# dominate every ulp figure (the worst element, "N % of the ulp error at axis 0 position 0").
# Triage must lead with what decides the case — pypto's |a - g| / (atol + rtol*|g|): the
# planted element is 3x its allowance, well behind the naive kernel's worst — and leave the
# exact zeros out of the ulp figures (absolute error instead). The plan's naive cases hold no
# exact zero at this revision, hence the planted one.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
db=$T/z.db
spec='{"v":1,"op":"rms_norm_rope","dtype":"bf16","seed":7,"plan":"test/zero","params":{"t":4,"hq":4,"hk":1,"d":128,"max_pos":4096},"dist":{"q":{"kind":"uniform","lo":-2,"hi":2},"k":{"kind":"uniform","lo":-2,"hi":2},"gamma_q":{"kind":"uniform","lo":0.5,"hi":1.5},"gamma_k":{"kind":"uniform","lo":0.5,"hi":1.5}},"inject":[{"input":"gamma_q","i":3,"v":"zero"},{"input":"gamma_q","i":67,"v":"zero"}]}'
expect_status 1 ug case --backend naive --spec "$spec" --json
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["case_id"])' "$T/out")
# a database holding the case (a plan case's sweep makes it; the case goes in as `triage --shrink` stores one)
expect_status 0 ug sweep --op rms_norm_rope --limit 1 --db "$db" --quiet
python3 - "$db" "$id" "$spec" <<'PY' && ok || bad "case not stored"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO cases VALUES (?, 'rms_norm_rope', 'GreenLight', 'bf16', ?, 'manual', 'now')", (sys.argv[2], sys.argv[3]))
c.commit()
PY
expect_status 1 ug triage "$id" --db "$db" --backend naive --dump "$T/d"
python3 - "$T/d" <<'PY' && ok || bad "planting the element"
import ast, struct, sys
d = sys.argv[1]
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    return b[:10 + n], ast.literal_eval(b[10:10 + n].decode()), b[10 + n:]
head, h, body = load(d + "/outputs/q_out.npy")
_, he, eb = load(d + "/exact/q_out.npy")
q = list(struct.unpack("<%dH" % (len(body) // 2), body))
exact = struct.unpack("<%dd" % (len(eb) // 8), eb)
zeros = [i for i, v in enumerate(exact) if v == 0]
assert h["descr"] == "<u2" and list(h["shape"]) == [4, 4, 128], h
assert len(zeros) == 32 and zeros[:2] == [3, 67], zeros[:4]       # columns 3 and 67 of every row
assert all(q[i] == 0 for i in zeros), "the naive kernel gives those zeros exactly"
q[3] = struct.unpack("<I", struct.pack("<f", 0.003))[0] >> 16      # 0.00299072265625 in bf16, at [0,0,3]
open(d + "/outputs/q_out.npy", "wb").write(head + struct.pack("<%dH" % len(q), *q))
PY
# decided by pypto (the replay run names it; rms_norm_rope's own primary is certified, whose bound
# at an exact zero would make the planted element lead)
expect_status 1 ug check --outputs "$T/d" --db "$db" --top 0 --primary pypto

# text: the verdict leads with its deciding figure, the elements with their ratio to the allowance
expect_status 1 ug triage "$id" --db "$db"
cp "$T/out" "$T/triage.txt"
expect_grep '^now: FAIL: q_out: [0-9]+ of 2048 checked elements beyond atol 0.001 \+ rtol 0.001 \* \|g\| \(10 allowed\)' \
    "$T/triage.txt"
expect_grep '^stored metrics of run 2: .* reproduced exactly' "$T/triage.txt"
first=$(sed -n '/^  worst elements of q_out/{n;p;q}' "$T/triage.txt")
[[ "$first" =~ ^\ \ \ \ \[[0-9]+,[0-9]+,[0-9]+\]\ \ [0-9.]+x\ allowed\ \ kernel ]] && ok || bad "worst element line: $first"
[[ "$first" != *"[0,0,3]"* ]] && ok || bad "the exact zero leads the worst elements: $first"
if grep -E '[0-9.]+e\+[1-9][0-9] ulp' "$T/triage.txt"; then bad "an ulp figure of 1e10 or more"; else ok; fi
expect_grep '^  ulp error histogram of q_out \(secondary\): .*>256 0, NaN/Inf 0; not in ulps \(exact value below the smallest normal\) 32$' \
    "$T/triage.txt"
axis0=$(sed -n '/where the error of q_out clusters/{n;p;q}' "$T/triage.txt")
share=$(echo "$axis0" | sed -n 's/^    axis 0, position [0-9]*: \([0-9.]*\)% of the elements beyond the allowance.*/\1/p')
[ -n "$share" ] && awk -v s="$share" 'BEGIN { exit !(s < 50) }' && ok || bad "axis 0 cluster: $axis0"

# JSON: every element, the planted one measured by its allowance and its absolute error, not in ulps
expect_status 1 ug triage "$id" --db "$db" --json --worst 2048
python3 - "$T/out" <<'PY' && ok || bad "triage --json of the exact zeros"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "FAIL" and d["stored_metrics_reproduced"] is True, d["verdict"]
o = d["outputs"][0]
assert o["output"] == "q_out" and o["yardstick"]["standard"] == "pypto", o["yardstick"]
assert sum(o["histogram"].values()) == 2048 and o["not_in_ulps"] == 32, (o["histogram"], o["not_in_ulps"])
assert sum(o["ulp_histogram"].values()) == 2048 - 32 and o["ulp_histogram"][">256"] == 0, o["ulp_histogram"]
w = o["worst"]
assert len(w) == 2048 and all(w[i]["ratio"] >= w[i + 1]["ratio"] for i in range(len(w) - 1))
z = {e["index"]: e for e in w}
p = z["[0,0,3]"]
assert p["exact"] == 0 and p["ulp"] is None and abs(p["abs_err"] - 0.00299072265625) < 1e-12, p
assert abs(p["ratio"] - 2.99072265625) < 1e-9 and w[0]["ratio"] > 3 * p["ratio"], (p, w[0])
assert all(e["ulp"] is None for e in w if e["exact"] == 0) and all(e["ulp"] < 256 for e in w if e["exact"] != 0)
PY
finish
