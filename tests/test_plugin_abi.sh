# test_plugin_abi.sh — the plugin backend through the CLI: every status of ABI v1
# (unsupported -> SKIP, error -> ERROR with the plugin's message, undefined statuses and
# unterminated messages handled), loader errors (missing file, missing symbol, wrong ABI
# version) as exit 2 with nothing stored, and ULPGYM_BACKEND selecting the plugin.
. "$(dirname "$0")/lib.sh"
FX=$ULPGYM_FIXTURES
STUB=$FX/libstub_plugin.so
SIMPLUG=$(dirname "$UG_BIN")/examples/libulpgym_plugin_sim.so
DB=$T/p.db
q() { sqlite3 "$DB" "$1"; }
# a small plan of explicit cases (no generalization space to expand on every sweep)
expect_status 0 ug export --op attn_softmax --per-op 6 --dir "$T/e"
P=$T/e/plan.json

# unsupported -> SKIP, message kept
ULPGYM_STUB_MODE=unsupported expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 6 --backend "plugin:$STUB"
expect_eq "$(q "select count(*) from results where run_id = 1 and verdict = 'SKIP'")" 6 "unsupported gives SKIP"
expect_eq "$(q "select count(*) from results where run_id = 1 and message like 'unsupported: stub: no kernel for %'")" 6 "SKIP keeps the plugin's reason"
expect_eq "$(q "select backend from runs where run_id = 1")" "plugin:$STUB" "run records the plugin"

# error -> ERROR with the message (a failing case: exit 1 under --fail-on fail; SKIP above is none)
ULPGYM_STUB_MODE=error expect_status 1 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 3 --backend "plugin:$STUB"
expect_eq "$(q "select count(*) from results where run_id = 2 and verdict = 'ERROR' and message like 'kernel error -7: stub: device queue lost for %'")" 3 "error gives ERROR with message"

# a positive status other than 1 is an error, not a pass
ULPGYM_STUB_MODE=rc7 expect_status 1 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 2 --backend "plugin:$STUB"
expect_eq "$(q "select count(*) from results where run_id = 3 and verdict = 'ERROR' and message like '%returned 7, which ABI v1 does not define%'")" 2 "undefined status is ERROR"

# an unterminated message is cut at the buffer, never overrun
ULPGYM_STUB_MODE=noterm expect_status 1 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "plugin:$STUB"
len=$(q "select length(message) from results where run_id = 4")
if [ "$len" -gt 20 ] && [ "$len" -lt 600 ]; then ok; else bad "unterminated message length $len"; fi

# ULPGYM_BACKEND picks the backend when --backend is absent
ULPGYM_BACKEND="plugin:$SIMPLUG" expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 4
expect_eq "$(q "select backend || ' ' || n_pass from runs where run_id = 5")" "plugin:$SIMPLUG 4" "ULPGYM_BACKEND honoured"

# loader errors: clear message, exit 2, no run row
runs_before=$(q "select count(*) from runs")
expect_status 2 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "plugin:$T/nothing.so"
expect_grep "cannot load plugin .*nothing.so" "$T/err"
expect_status 2 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "plugin:$FX/libnosym_plugin.so"
expect_grep "does not export ulpgym_run" "$T/err"
ULPGYM_STUB_MODE=abi2 expect_status 2 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "plugin:$STUB"
expect_grep "speaks ABI v2, this ulpgym speaks v1" "$T/err"
expect_status 2 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "plugin:"
expect_grep "needs a path" "$T/err"
expect_status 2 ug sweep --no-regressions --db "$DB" --quiet --plan "$P" --limit 1 --backend "replay"
expect_grep "replay:DIR" "$T/err"
expect_eq "$(q "select count(*) from runs")" "$runs_before" "failed loads store no run"

# `ulpgym case` runs a plugin too
expect_status 0 ug case --backend "plugin:$SIMPLUG" --spec '{"v":1,"op":"attn_softmax","dtype":"bf16","params":{"rows":2,"cols":300},"dist":{"x":{"kind":"normal","mean":0,"std":1}},"seed":7}'
expect_grep "verdict PASS" "$T/out"

# the contract a plugin author reads: tensors with shapes in params, per implemented op
expect_status 0 ug ops show inplace_add_rmsnorm --json
expect_grep '"shape":[[:space:]]*\["rows", "h"\]' "$T/out"
expect_grep '"abi":' "$T/out"
expect_status 0 ug ops show attn_softmax
expect_grep 'built +mask +\[rows, cols\] +fp32->fp32 fp16->fp32 bf16->fp32' "$T/out"
expect_grep 'cap +fp32 +default 0 in \[0, inf\]' "$T/out"
# every implemented op's contract states every dimension (no "?": shapes are declared formulas)
for op in $(ug ops | awk '$3 == "implemented" {print $2}'); do
    ug ops show "$op" --json >"$T/contract.json" 2>&1
    if grep -q '"?"' "$T/contract.json"; then bad "$op: a \"?\" dimension in ops show --json"; else ok; fi
done
finish
