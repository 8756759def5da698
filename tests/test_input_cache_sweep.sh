# test_input_cache_sweep.sh — a sweep through the drawn-input cache (gen/input_cache.h) stores the
# same results as one without it, cold and warm, with one worker and two; the sweep says
# what it read and stored; a sweep's workers together stay within the folder's cap; a
# folder that is a link is refused with a warning and the sweep draws instead. (ctest turns
# the cache off for every other test: ULPGYM_INPUT_CACHE=off.)
. "$(dirname "$0")/lib.sh"
sel=(--op glm_gate --op apply_adamw --limit 6 --no-regressions --quiet)

ULPGYM_INPUT_CACHE=off expect_status 0 ug sweep "${sel[@]}" -j1 --db "$T/off.db"
expect_eq "$(grep -c 'input cache' "$T/out")" 0 "no cache line when it is off"

export ULPGYM_INPUT_CACHE="$T/cache"
expect_status 0 ug sweep "${sel[@]}" -j2 --db "$T/cold.db"
expect_grep '^input cache .*: 0 tensors read \(0\.0 MiB\), [1-9][0-9]* drawn and stored' "$T/out"
stored=$(sed -n 's/.* \([0-9]*\) drawn and stored.*/\1/p' "$T/out")
expect_eq "$(ls "$T/cache" | grep -c '\.in$')" "$stored" "one file per stored tensor"
expect_status 0 ug sweep "${sel[@]}" -j1 --db "$T/warm.db"
expect_grep "^input cache .*: $stored tensors read .*, 0 drawn and stored" "$T/out"
expect_same_results "$T/off.db" "$T/cold.db" "cold cache"
expect_same_results "$T/off.db" "$T/warm.db" "warm cache"

# every file damaged: each is drawn afresh, the results unchanged
for f in "$T"/cache/*.in; do printf 'x' | dd of="$f" bs=1 seek=100 conv=notrunc status=none; done
expect_status 0 ug sweep "${sel[@]}" -j2 --db "$T/damaged.db"
expect_grep "; $stored damaged files drawn afresh" "$T/out"
expect_same_results "$T/off.db" "$T/damaged.db" "damaged files"

# two workers share one budget: the folder never passes the cap
ULPGYM_INPUT_CACHE="$T/small" ULPGYM_INPUT_CACHE_MAX=5M expect_status 0 ug sweep "${sel[@]}" -j2 --db "$T/small.db"
expect_grep 'drawn only.*of 5 MiB used' "$T/out"
size=$(du -sb "$T/small" | cut -f1)
if [ "$size" -le $((5 << 20)) ]; then ok; else bad "the capped folder holds $size bytes"; fi
expect_same_results "$T/off.db" "$T/small.db" "capped cache"

# a folder that is a link is not used
mkdir -p "$T/elsewhere" && ln -s "$T/elsewhere" "$T/linked"
ULPGYM_INPUT_CACHE="$T/linked" expect_status 0 ug sweep "${sel[@]}" -j1 --db "$T/linked.db"
expect_grep 'warning: input cache .*linked.*a link is not followed.*inputs are drawn instead' "$T/err"
expect_eq "$(ls "$T/elsewhere" | wc -l)" 0 "nothing written through the link"
ULPGYM_INPUT_CACHE_MAX=lots expect_status 0 ug case --spec "$(sqlite3 "$T/off.db" 'SELECT spec_json FROM cases LIMIT 1')"
expect_grep 'ULPGYM_INPUT_CACHE_MAX takes a byte count' "$T/err"
finish
