#!/usr/bin/env bash
# test_sanitizers.sh — the UndefinedBehaviorSanitizer sweep of every op (issue #36 item 15):
# builds the CLI with clang -fsanitize=undefined -fno-sanitize-recover=undefined into a
# folder of its own and sweeps the first 2 plan cases of every implemented op with it;
# any UBSan report (written to files by log_path, whichever process met it: the sweep's
# parent, a worker, a kernel) fails the test and is printed, and so does any case that
# did not PASS (a worker UBSan stopped is a CRASH).
#
# Cost (measured on the shared 2-core machine, docs/SWEEP.md "Sanitizers"): the build is
# about 115 s of CPU (clang -O2, the ulpgym target only), the sweep of 68 cases about 15 s,
# so about a minute of a 2-core CI's wall time: it runs by default where clang is
# installed, and is skipped (exit 77) without clang or with ULPGYM_WITH_SANITIZERS=0.
# ULPGYM_SAN_BUILD names a build folder to reuse (default: the test's scratch folder,
# built afresh).
. "$(dirname "$0")/lib.sh"
if [ "${ULPGYM_WITH_SANITIZERS:-1}" = 0 ]; then
    echo "skipped: ULPGYM_WITH_SANITIZERS=0"
    exit 77
fi
command -v clang >/dev/null || { echo "skipped: no clang (the UBSan build needs it; docs/SWEEP.md)"; exit 77; }
SRC=${ULPGYM_DATA:?}
BUILD=${ULPGYM_SAN_BUILD:-$T/build-ubsan}
# UG_NO_TARGET_CLONES: clang 14 emits no symbol for an exported target_clones function (kernels/sim/attention/attn_vec.c)
SAN="-fsanitize=undefined -fno-sanitize-recover=undefined -g -DUG_NO_TARGET_CLONES"
t0=$(date +%s)
if ! { CC=clang cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$SAN" &&
       cmake --build "$BUILD" --target ulpgym -j "$(nproc)"; } >"$T/build.log" 2>&1; then
    bad "the UBSan build failed: $(tail -20 "$T/build.log")"
    finish
    exit
fi
t1=$(date +%s)
SANBIN=$BUILD/ulpgym
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$T/ubsan"
ops=$("$SANBIN" ops | awk '$3 == "implemented" { print $2 }')
[ -n "$ops" ] && ok || bad "no implemented op listed"
for op in $ops; do
    "$SANBIN" sweep --op "$op" --limit 2 --db "$T/san.db" --no-regressions --quiet --fail-on never -j "$(nproc)" \
        >"$T/sweep_$op.out" 2>&1
    rc=$?
    [ "$rc" = 0 ] && ok || bad "sweep --op $op exited $rc: $(tail -3 "$T/sweep_$op.out")"
done
t2=$(date +%s)
reports=$(ls "$T"/ubsan.* 2>/dev/null)
if [ -z "$reports" ]; then ok; else bad "UBSan reports: $(cat $reports | grep -m5 'runtime error')"; cat $reports >&2; fi
expect_eq "$(sqlite3 "$T/san.db" "SELECT group_concat(case_id || ' ' || verdict, ', ') FROM results WHERE verdict <> 'PASS'")" "" \
    "cases that did not PASS under UBSan"
echo "UBSan build $((t1 - t0)) s, sweep of $(echo "$ops" | wc -w) ops $((t2 - t1)) s"
finish
