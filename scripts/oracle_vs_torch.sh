#!/usr/bin/env bash
# oracle_vs_torch.sh — ulpgym's exact oracle against a torch float64 golden on the same plan
# cases, one core, every element (--sample all): per op the engine's CPU ms (exact values),
# the sweep's whole oracle (engine + naive values + device bound), torch-f64 ms and the
# ratios, each beside the GFLOP/s of torch's BLAS on a 1024x1024 float64 matmul, then the
# ratios summed and their geometric mean; the BLAS in use is named, and a warning says when
# it is the unoptimised reference BLAS (Debian's torch without libopenblas0-pthread)
# (docs/PERFORMANCE.md, "Against a torch float64 golden").
#
#   scripts/oracle_vs_torch.sh [--per-op N] [--repeat R] [--op OP]...
#
# Defaults: 20 cases per op, best of 3, every op with a torch reference in
# examples/replay/ulpgym_torch_refs.py. $ULPGYM_BIN picks the binary (default build/ulpgym),
# $ULPGYM_TORCH_PYTHON the python that has torch (default /usr/bin/python3). Exits 77
# ("skipped: ...") when that python has no torch, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${ULPGYM_BIN:-./build/ulpgym}
PY=${ULPGYM_TORCH_PYTHON:-/usr/bin/python3}
per_op=20 repeat=3 ops=()
while [ $# -gt 0 ]; do
    case "$1" in
        --per-op) per_op=${2:?--per-op takes a number}; shift 2 ;;
        --repeat) repeat=${2:?--repeat takes a number}; shift 2 ;;
        --op) ops+=("${2:?--op takes an op name}"); shift 2 ;;
        *) echo "oracle_vs_torch.sh: unexpected argument \"$1\"" >&2; exit 2 ;;
    esac
done
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "skipped: torch is not installed for $PY (set ULPGYM_TORCH_PYTHON)"
    exit 77
fi
[ -x "$BIN" ] || { echo "oracle_vs_torch.sh: no ulpgym binary at $BIN (./scripts/build.sh)" >&2; exit 2; }
if [ ${#ops[@]} -eq 0 ]; then # the ops with a torch reference
    mapfile -t ops < <("$PY" -c 'import sys; sys.path.insert(0, "examples/replay"); import ulpgym_torch_refs as r
print("\n".join(sorted(r.KERNELS)))')
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
op_args=()
for op in "${ops[@]}"; do op_args+=(--op "$op"); done
"$BIN" export "${op_args[@]}" --per-op "$per_op" --dir "$tmp/cases" >/dev/null
"$BIN" bench oracle --plan "$tmp/cases/plan.json" --sample all --no-mpfr --repeat "$repeat" --limit "$per_op" \
    >"$tmp/ulpgym.txt"
"$PY" examples/replay/torch_golden_time.py "$tmp/cases" --ulpgym "$tmp/ulpgym.txt" --repeat "$repeat"
