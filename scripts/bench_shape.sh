#!/usr/bin/env bash
# bench_shape.sh — how one case's cost grows with its tensor size: runs `ulpgym case` on a
# geometric series of shapes of three op families (elementwise norm, attention, grouped
# GEMM), each with its space's "normal" draws, and prints per shape the output elements,
# the whole case's CPU time (`ulpgym case`: input build, kernel, sampled oracle, judging),
# the kernel's own CPU time (`ulpgym bench kernels --spec-file`) and the rest (inputs,
# oracle, judging). Used for docs/PERFORMANCE.md "Growth with the shape". CPU time, not
# wall: it holds on a loaded machine.
#
# usage: scripts/bench_shape.sh [OP...]   (default: inplace_add_rmsnorm flash_attention_mha moe_grouped_gemm)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ULPGYM:-$here/build/ulpgym}"
[ -x "$bin" ] || { echo "bench_shape: $bin not built (./scripts/build.sh)" >&2; exit 2; }
ops=("$@"); [ ${#ops[@]} -gt 0 ] || ops=(inplace_add_rmsnorm flash_attention_mha moe_grouped_gemm)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

series() { # one params object per line, smallest first
    case "$1" in
    inplace_add_rmsnorm) for r in 1 8 64 512; do echo "{\"rows\":$r,\"h\":7168}"; done ;;
    flash_attention_mha) for s in 256 512 1024 2048; do echo "{\"seqlens\":\"$s\",\"heads\":2,\"head_dim\":128}"; done ;;
    moe_grouped_gemm) for t in 16 64 256 1024; do
        echo "{\"tokens\":$t,\"experts\":8,\"h\":2048,\"inter\":1024,\"groups\":\"uniform\"}"; done ;;
    *) echo "bench_shape: no series for op $1" >&2; exit 2 ;;
    esac
}

printf '| op | params | output elements | case CPU s | kernel CPU s | rest CPU s | rest CPU µs per element |\n|---|---|---:|---:|---:|---:|---:|\n'
for op in "${ops[@]}"; do
    dist=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["dists"]["normal"]))' \
        "$here/gen/ops/$op.json")
    series "$op" | while read -r params; do
        spec="{\"op\":\"$op\",\"dtype\":\"bf16\",\"params\":$params,\"dist\":$dist,\"seed\":1}"
        /usr/bin/time -f '%U %S' -o "$tmp/time" "$bin" case --spec "$spec" >"$tmp/out" 2>&1 ||
            { echo "bench_shape: $op $params failed:" >&2; tail -3 "$tmp/out" >&2; exit 1; }
        read -r user sys <"$tmp/time"
        elems=$(awk '/elements checked/ {for (i = 1; i < NF; i++) if ($i == "of") n += $(i + 1)} END {print n}' "$tmp/out")
        printf '%s\n' "$spec" >"$tmp/spec.json"
        kern=$("$bin" bench kernels --spec-file "$tmp/spec.json" | awk '{for (i = 1; i < NF; i++) if ($i == "cpu") print $(i + 1) / 1000}')
        awk -v o="$op" -v p="$params" -v e="$elems" -v u="$user" -v s="$sys" -v k="$kern" \
            'BEGIN{c = u + s; printf "| %s | `%s` | %d | %.2f | %.3f | %.2f | %.3f |\n", o, p, e, c, k, c - k, 1e6 * (c - k) / e}'
    done
done
