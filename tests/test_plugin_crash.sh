# test_plugin_crash.sh — a plugin that segfaults on every case costs each case a CRASH
# verdict and the sweep completes (the sweep's worker isolation, `sweep -j`).
. "$(dirname "$0")/lib.sh"
SEGV=$ULPGYM_FIXTURES/libsegv_plugin.so
DB=$T/c.db
"$UG_BIN" sweep --db "$DB" --quiet -j 2 --limit 5 --op attn_softmax --backend "plugin:$SEGV" >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -le 2 ]; then ok; else bad "sweep itself died with status $rc: $(head -c 300 "$T/err")"; fi
expect_eq "$(sqlite3 "$DB" "select status || ' ' || n_cases from runs")" "done 5" "the sweep completes"
expect_eq "$(sqlite3 "$DB" "select count(*) from results where verdict = 'CRASH'")" 5 "every case is CRASH"
# the same database still takes a healthy run afterwards
expect_status 0 ug sweep --no-regressions --db "$DB" --quiet -j 2 --limit 3 --op attn_softmax
expect_eq "$(sqlite3 "$DB" "select n_pass from runs where run_id = 2")" 3 "a healthy run after the crashes"
finish
