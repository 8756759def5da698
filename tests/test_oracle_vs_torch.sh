# test_oracle_vs_torch.sh — the torch yardstick names its BLAS and its speed
# (scripts/oracle_vs_torch.sh, examples/replay/torch_golden_time.py): on two small ops, every
# op row carries its ratios and the BLAS GFLOP/s, the summed and geometric-mean rows follow,
# the BLAS line names the library; with torch forced onto Debian's reference BLAS (its folder
# first on LD_LIBRARY_PATH, where it is installed) the line says "reference" and a warning
# follows. Exits 77 (skipped) where /usr/bin/python3 (or $ULPGYM_TORCH_PYTHON) has no torch.
. "$(dirname "$0")/lib.sh"
PY=${ULPGYM_TORCH_PYTHON:-/usr/bin/python3}
"$PY" -c 'import torch, numpy' 2>/dev/null || { echo "no torch for $PY: skipped"; exit 77; }
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}
run() { ULPGYM_BIN="$UG_BIN" ULPGYM_TORCH_PYTHON="$PY" bash "$SRC/scripts/oracle_vs_torch.sh" --per-op 2 --repeat 1 \
            --op rms_norm_rope --op interleave_rope >"$T/out" 2>"$T/err"; }
if run; then ok; else bad "oracle_vs_torch.sh failed: $(tail -3 "$T/err")"; fi
python3 - "$T/out" <<'PY' && ok || bad "rows: $(cat "$T/out")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
rows = {l.split()[0]: l.split() for l in lines if l.split() and l.split()[0] in ("rms_norm_rope", "interleave_rope")}
assert len(rows) == 2, lines
for f in rows.values():  # op cases torch engine eng/torch sweep sweep/torch GFLOP/s
    assert len(f) == 8 and float(f[2]) > 0 and float(f[7]) > 0, f
    assert abs(float(f[3]) / float(f[2]) - float(f[4])) <= 0.01 * float(f[4]) + 0.01, f
assert any(l.startswith("summed over 2 ops") for l in lines), lines
assert any(l.startswith("geometric mean of the ratios") for l in lines), lines
assert any(re.match(r"BLAS: \S+ \(.*\); a 1024x1024 float64 matmul at [0-9.]+ GFLOP/s", l) for l in lines), lines
PY
REF=/usr/lib/x86_64-linux-gnu/blas
if [ -f "$REF/libblas.so.3" ]; then
    LD_LIBRARY_PATH=$REF run && ok || bad "oracle_vs_torch.sh on the reference BLAS failed: $(tail -3 "$T/err")"
    expect_grep "^BLAS: reference " "$T/out"
    expect_grep "^warning: torch's BLAS \(reference" "$T/out"
fi
finish
