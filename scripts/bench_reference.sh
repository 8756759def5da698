#!/usr/bin/env bash
# bench_reference.sh — what each heavy case of the reference plan (gen/plans/reference.json,
# the cases `ulpgym plan --plan reference --list` marks heavy) costs on one core: issue #19
# asks for every accepted reference shape in <= 60 s of CPU. Per case, one at a time under
# `nice -n 10`, `ulimit -t LIMIT` and ULPGYM_CASE_MEMORY (default 6G):
#   - `ulpgym case --spec-file SPEC`: user+sys CPU, peak RSS and verdict (or how it died);
#   - `ulpgym bench kernels --spec-file SPEC`: the kernel's own CPU, and that command's
#     total less the kernel = input drawing + the op's builder (it runs no oracle).
# "oracle + judging" is the case's total less bench kernels' total. Prints a markdown table
# (docs/PERFORMANCE.md "The reference plan's heavy cases"). CPU time, not wall: it holds on a
# loaded machine. flash_attention_mha and flash_attention_mha_grad are left out unless named
# with --op (their oracle is timed on its own in PERFORMANCE.md).
#
# usage: scripts/bench_reference.sh [--op OP]... [--case ID]... [--limit SECONDS] [--memory SIZE] [--no-kernel]
#   --case ID    only these cases (full 16-digit IDs, as `ulpgym plan --plan reference --list` prints)
#   --no-kernel  skip bench kernels (half the time; the kernel and drawing columns stay empty)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ULPGYM:-$here/build/ulpgym}"
[ -x "$bin" ] || { echo "bench_reference: $bin not built (./scripts/build.sh)" >&2; exit 2; }
limit=300 memory=6G kernel=1 ops=() cases=()
while [ $# -gt 0 ]; do
    case "$1" in
    --op) ops+=("$2"); shift 2 ;;
    --case) cases+=("$2"); shift 2 ;;
    --limit) limit="$2"; shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --no-kernel) kernel=0; shift ;;
    *) echo "usage: $0 [--op OP]... [--case ID]... [--limit SECONDS] [--memory SIZE] [--no-kernel]" >&2; exit 2 ;;
    esac
done
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export ULPGYM_CASE_MEMORY="$memory"

# Runs "$@" niced under the CPU limit; writes "user sys maxrss_kB status" to $tmp/t.
timed() {
    local rc=0
    ( ulimit -t "$limit"; exec nice -n 10 /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$@" ) >"$tmp/out" 2>&1 || rc=$?
    local t; t=$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+$' "$tmp/time" | tail -1 || true)
    [ -n "$t" ] || t="0 0 0"
    echo "$t $rc" >"$tmp/t"
}

# The params column: a long repeated list ("8192,8192,…") as "8192 × 64".
short_params() {
    python3 -c '
import json, re, sys
p = json.loads(sys.argv[1])
def s(v):
    if isinstance(v, str) and "," in v:
        parts = v.split(",")
        if len(set(parts)) == 1 and len(parts) > 2: return "%s × %d" % (parts[0], len(parts))
        if len(parts) > 6: return ",".join(parts[:4]) + ",… (%d)" % len(parts)
    return str(v)
print(", ".join("%s %s" % (k, s(v)) for k, v in p.items()))' "$1"
}

want() { # case $2 of op $1 selected?
    local op="$1" c
    if [ ${#cases[@]} -gt 0 ]; then
        for c in "${cases[@]}"; do [ "$c" = "$2" ] && return 0; done
        return 1
    fi
    if [ ${#ops[@]} -eq 0 ]; then
        [ "$op" != flash_attention_mha ] && [ "$op" != flash_attention_mha_grad ]
        return
    fi
    local o; for o in "${ops[@]}"; do [ "$o" = "$op" ] && return 0; done
    return 1
}

printf '| case | op | params | verdict | case CPU s | peak RSS MB | kernel CPU s | inputs + builder CPU s | oracle + judging CPU s |\n'
printf '|---|---|---|---|---:|---:|---:|---:|---:|\n'
"$bin" plan --plan reference --specs | while read -r id heavy spec; do
    [ "$heavy" = heavy ] || continue
    op=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["op"])' "$spec")
    want "$op" "$id" || continue
    params=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["params"]))' "$spec")
    printf '%s\n' "$spec" >"$tmp/spec.json"
    timed "$bin" case --spec-file "$tmp/spec.json"
    read -r cu cs crss crc <"$tmp/t"
    verdict=$(awk '/^case / {for (i = 1; i < NF; i++) if ($i == "verdict") print $(i + 1)}' "$tmp/out")
    need=$(sed -n 's/.*this case needs \([0-9]*\) bytes of memory.*/\1/p' "$tmp/out" | head -1)
    if [ -n "$need" ] && [ -z "$verdict" ]; then # refused before anything is drawn
        printf '| %s | %s | %s | refused: needs %.1f GiB > %s | | | | | |\n' "$id" "$op" "$(short_params "$params")" \
            "$(awk -v b="$need" 'BEGIN{print b / 1073741824}')" "$memory"
        continue
    fi
    if [ -z "$verdict" ]; then
        if [ "$crc" -eq 137 ] || [ "$crc" -eq 152 ]; then verdict="killed at ${limit} s CPU"
        else verdict="exit $crc: $(grep -v '^ ' "$tmp/out" | tail -1 | cut -c1-80)"; fi
    fi
    kcpu="" draw="" rest=""
    if [ "$kernel" = 1 ]; then
        timed "$bin" bench kernels --spec-file "$tmp/spec.json"
        read -r bu bs _ brc <"$tmp/t"
        k=$(awk '{for (i = 1; i < NF; i++) if ($i == "cpu") print $(i + 1) / 1000}' "$tmp/out" | tail -1)
        if [ "$brc" -eq 0 ] && [ -n "$k" ]; then
            kcpu=$(awk -v k="$k" 'BEGIN{printf "%.2f", k}')
            draw=$(awk -v u="$bu" -v s="$bs" -v k="$k" 'BEGIN{printf "%.2f", u + s - k}')
            rest=$(awk -v c="$cu" -v d="$cs" -v u="$bu" -v s="$bs" 'BEGIN{printf "%.2f", c + d - u - s}')
        else kcpu="(exit $brc)"; fi
    fi
    total=$(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.2f", u + s}')
    [ "$crc" -eq 137 ] || [ "$crc" -eq 152 ] && total="> $total" && rest=""
    printf '| %s | %s | %s | %s | %s | %d | %s | %s | %s |\n' "$id" "$op" "$(short_params "$params")" "$verdict" \
        "$total" $((crss / 1024)) "$kcpu" "$draw" "$rest"
done
