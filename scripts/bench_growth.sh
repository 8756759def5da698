#!/usr/bin/env bash
# bench_growth.sh — how a sweep's cost grows with the plan size: sweeps cost-balanced
# slices of the nightly plan (shard 1/12 ≈ 1k cases, 1/3 ≈ 4k, the whole ≈ 12k) into
# fresh databases and prints, per size, the wall and CPU time (parent and workers), CPU
# ms per case, the largest process's peak RSS, the database size and the time a report
# and a history query take on it. Used for docs/PERFORMANCE.md "Growth with the plan".
#
# usage: scripts/bench_growth.sh [-j N] [SLICE...]     SLICE: K/N or "all" (default 1/12 1/3 all)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ULPGYM:-$here/build/ulpgym}"
jobs=2
if [ "${1:-}" = "-j" ]; then jobs="$2"; shift 2; fi
slices=("$@"); [ ${#slices[@]} -gt 0 ] || slices=(1/12 1/3 all)
[ -x "$bin" ] || { echo "bench_growth: $bin not built (./scripts/build.sh)" >&2; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

secs() { # seconds one command takes, wall clock
    local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'
}

printf '| slice | cases | wall s | CPU s | CPU ms/case | peak RSS MiB | db MiB | report s | history s |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for s in "${slices[@]}"; do
    db="$tmp/g.db"; rm -f "$db"*
    shard=(); [ "$s" = all ] || shard=(--shard "$s")
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
        "$bin" sweep --no-regressions --fail-on never -j "$jobs" "${shard[@]}" --db "$db" >"$tmp/out" 2>&1 ||
        { echo "bench_growth: sweep $s failed:" >&2; tail -5 "$tmp/out" >&2; exit 1; }
    read -r wall user sys rss <"$tmp/time"
    cases=$(sqlite3 "$db" 'select count(*) from results')
    dbmb=$(awk -v b="$(stat -c %s "$db")" 'BEGIN{printf "%.1f", b/1048576}')
    rep=$(secs "$bin" report --db "$db" --format html -o "$tmp/r.html")
    hist=$(secs "$bin" history --by op --db "$db")
    awk -v s="$s" -v n="$cases" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss" -v d="$dbmb" \
        -v rp="$rep" -v h="$hist" 'BEGIN{c=u+y; printf "| %s | %d | %.1f | %.1f | %.2f | %.0f | %s | %s | %s |\n",
        s, n, w, c, 1000*c/n, r/1024, d, rp, h}'
done
