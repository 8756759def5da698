#!/usr/bin/env bash
# test_install.sh — `cmake --install` gives a tool that works from its prefix alone: the prefix
# is installed, moved to another path, and run from an unrelated folder with no ULPGYM_DATA and,
# where a private mount namespace can be made (root, unshare), with the source tree hidden under
# an empty folder. It finds its plans beside itself (PREFIX/share/ulpgym), sweeps, prints triage
# lines that name it as it pastes, and a pasted triage line reproduces the verdict; the library,
# the headers and the Python package's source are installed too.
source "$(dirname "$0")/lib.sh"
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}
BUILD=$(dirname "$UG_BIN")
command -v cmake >/dev/null || { echo "no cmake: skipped"; exit 77; }
# outside the source tree (the build folder, and so T, may lie inside it: hiding it would hide them)
OUT=$(mktemp -d /tmp/ulpgym-install-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
cmake --install "$BUILD" --prefix "$OUT/prefix" >"$T/install.log" 2>&1 || { bad "cmake --install failed: $(tail -3 "$T/install.log")"; finish; exit; }
for f in bin/ulpgym lib/libulpgym.so include/ulpgym/ulpgym.h include/ulpgym/kernel_abi.h \
         share/ulpgym/gen/plans/nightly.json share/ulpgym/gen/plans/reference.json share/ulpgym/gen/ops/attn_softmax.json; do
    if [ -e "$OUT/prefix/$f" ]; then ok; else bad "not installed: $f"; fi
done
mv "$OUT/prefix" "$OUT/moved" # relocatable: nothing points back at the install path
P=$OUT/moved/bin/ulpgym
mkdir -p "$OUT/elsewhere"
cd "$OUT/elsewhere" || exit 1
unset ULPGYM_DATA ULPGYM_PLAN ULPGYM_DB ULPGYM_BACKEND

# run ARGS...: the moved prefix's program with the source tree hidden when the system allows it
hide=0
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then hide=1; fi
run() {
    if [ $hide = 1 ]; then
        unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$SRC" "$@"
    else
        "$@"
    fi
}
[ $hide = 1 ] || echo "note: no private mount namespace here; the source tree stays visible (the prefix was still moved)"
if [ $hide = 1 ]; then
    run sh -c 'test -e "$1/CMakeLists.txt"' sh "$SRC" && bad "the source tree is still visible inside the namespace" || ok
fi

run "$P" --version >"$T/version" 2>&1
expect_grep '^ulpgym [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]{12}.*, plugin ABI 1, API 1\)$' "$T/version"
run "$P" plan --count >"$T/count" 2>&1
expect_grep '^total 11[0-9]{3}$' "$T/count"
run "$P" sweep --op attn_softmax --limit 5 --db "$OUT/elsewhere/s.db" --no-progress >"$T/sweep" 2>&1
st=$?
expect_eq "$st" 0 "installed sweep of 5 correct cases exits 0 ($(tail -3 "$T/sweep"))"
expect_grep '^run 1: 5 cases' "$T/sweep"

# a failing run: its printed triage line names the moved program (not on PATH) and pastes as printed
run "$P" sweep --op attn_softmax --limit 20 --kernel-variant mut_bf16_sum --db "$OUT/elsewhere/m.db" --no-progress \
    --fail-on never >"$T/msweep" 2>&1
expect_grep 'FAIL' "$T/msweep"
line=$(grep -o "$OUT/moved/bin/ulpgym triage .*" "$T/msweep" | head -1)
if [ -n "$line" ]; then ok; else bad "no triage line naming the moved program in the sweep summary: $(tail -8 "$T/msweep")"; fi
run sh -c "$line" >"$T/triage" 2>&1
expect_grep 'stored metrics of run 2|stored metrics of run 1' "$T/triage"
expect_grep 'reproduced exactly' "$T/triage"
expect_grep 'verdict FAIL' "$T/triage"

# on PATH the same line says plain "ulpgym"
PATH="$OUT/moved/bin:$PATH" run "$P" failures --db "$OUT/elsewhere/m.db" --top 1 >"$T/onpath" 2>&1
expect_grep '(^|[^/])ulpgym triage [0-9a-f]{16} --db ' "$T/onpath"
finish
