#!/usr/bin/env bash
# test_replay_triage.sh — device triage works: a replay run (`check` of outputs a device wrote)
# records the folder each case's outputs came from, so the triage line its report prints
# rejudges those very outputs as printed (no kernel runs, metrics reproduced exactly); a bare
# `--backend replay` means the same; a folder moved away is named as gone (exit 2) and
# `--backend replay:DIR` reads it where it is now.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null || { echo "Debian's python3 with numpy is missing: skipped"; exit 77; }
DB=$T/r.db
cd "$T" || exit 1
expect_status 0 ug export --op attn_softmax --per-op 12 --dir "$T/dev"
expect_status 0 "$PY" "$ULPGYM_DATA/examples/replay/replay_numpy.py" "$T/dev"
# a planted device bug: one bf16 case's output scaled by 1.5 (the bits of y times 1.5, rounded to bf16)
bad_id=$(grep -lE '^."dtype":[[:space:]]+"bf16"' "$T"/dev/*/case.json |
         while read -r f; do d=$(dirname "$f"); n=$("$PY" -c "import numpy,sys; print(numpy.load(sys.argv[1]).size)" "$d/outputs/y.npy"); [ "$n" -ge 8 ] && basename "$d" && break; done)
[ -n "$bad_id" ] && ok || bad "no bf16 case with 8+ elements among the exported ones"
"$PY" - "$T/dev/$bad_id/outputs/y.npy" <<'PY'
import sys, numpy as np
y = np.load(sys.argv[1])
f = (y.astype(np.uint32) << 16).view(np.float32) * np.float32(1.5)
np.save(sys.argv[1], (f.view(np.uint32) >> 16).astype(np.uint16))  # truncation is fine: it is a bug anyway
PY
ug check --outputs "$T/dev" --run device --db "$DB" --fail-on never >"$T/check" 2>&1
expect_grep "^$bad_id .*FAIL" "$T/check"
expect_status 0 ug report --db "$DB" --format md -o "$T/r.md"
line=$(grep -o "\`[^\`]*triage $bad_id[^\`]*\`" "$T/r.md" | tr -d '`')
[ -n "$line" ] && ok || bad "the report has no triage line for $bad_id: $(grep -c triage "$T/r.md") lines"
cd / && sh -c "$line" >"$T/pasted" 2>&1
st=$?
cd "$T" || exit 1
expect_eq "$st" 1 "the pasted triage line runs and the case fails (exit 1): $(tail -3 "$T/pasted")"
expect_grep "^backend replay:$T/dev/$bad_id \(the device outputs stored by the run, judged again" "$T/pasted"
expect_grep 'reproduced exactly' "$T/pasted"
expect_grep 'verdict FAIL' "$T/pasted"
# --backend replay (bare) is the stored folder too; sim reruns the built-in kernel instead (PASS)
expect_status 1 ug triage "$bad_id" --db "$DB" --backend replay
expect_grep 'reproduced exactly' "$T/out"
expect_status 0 ug triage "$bad_id" --db "$DB" --backend sim
# the folder moved: named as gone, and readable where it is now
mv "$T/dev" "$T/moved"
expect_status 2 ug triage "$bad_id" --db "$DB"
expect_grep "which is gone; name where they are now: --backend replay:DIR" "$T/err"
expect_status 1 ug triage "$bad_id" --db "$DB" --backend "replay:$T/moved"
expect_grep 'verdict FAIL' "$T/out"
finish
