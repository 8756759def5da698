# lib.sh — helpers for the shell tests: ug (the CLI), a scratch folder T, and
# expect_* assertions that count; finish prints "N passed, N failed" and sets the status.
set -u
UG_BIN=${ULPGYM_BIN:?ULPGYM_BIN is set by ctest}
T=${ULPGYM_TEST_TMP:-$(mktemp -d)}
rm -rf "$T" && mkdir -p "$T"
passed=0
failed=0
ug() { "$UG_BIN" "$@"; }
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
# expect_status N command...: runs the command, checks its exit status.
expect_status() {
    local want=$1; shift
    "$@" >"$T/out" 2>"$T/err"
    local got=$?
    if [ "$got" = "$want" ]; then ok; else bad "'$*' exited $got, expected $want: $(head -c 400 "$T/err")"; fi
}
# expect_grep PATTERN FILE: the file has a line matching the pattern.
expect_grep() { if grep -qE -- "$1" "$2"; then ok; else bad "no '$1' in $2: $(head -c 400 "$2")"; fi; }
expect_eq() { if [ "$1" = "$2" ]; then ok; else bad "${3:-values differ}: '$1' != '$2'"; fi; }
# dump_results DB: every stored result of the database — verdicts, metrics, per-standard verdicts, case specs —
# ordered by case; two databases holding the same sweep (sharded and merged, or not) dump the same text.
dump_results() {
    sqlite3 "$1" "SELECT case_id, verdict, primary_standard, message FROM results ORDER BY 1"
    sqlite3 "$1" "SELECT case_id, output, dtype, n_checked, n_total, nonfinite_mismatch, max_abs, max_abs_index,
        max_rel, max_ulp, max_ulp_index, mean_ulp, mere, mare, rmse, eb, small_err_ratio, cosine, bench_max_abs,
        bench_mere, bench_mare, bench_rmse, bench_small_err_ratio FROM metrics ORDER BY 1, 2"
    sqlite3 "$1" "SELECT case_id, standard, verdict, thresholds FROM verdicts ORDER BY 1, 2"
    sqlite3 "$1" "SELECT case_id, spec_json FROM cases ORDER BY 1"
}
# expect_same_results DB1 DB2 WHAT: the two databases hold the same results (dump_results), else the first differences.
expect_same_results() {
    [ -s "$1" ] && [ -s "$2" ] || { bad "$3: $1 or $2 is missing or empty"; return; }
    dump_results "$1" >"$T/results_1.txt"
    dump_results "$2" >"$T/results_2.txt"
    if cmp -s "$T/results_1.txt" "$T/results_2.txt"; then ok
    else bad "$3: $(diff "$T/results_1.txt" "$T/results_2.txt" | head -5)"; fi
}
# expect_page_fits BROWSER HTML WIDTH...: headless BROWSER lays the page out no wider than
# its window at each WIDTH (long lines must wrap) and renders a real screenshot
# ($T/fit_WIDTH.png); measured on a copy of the page with a script that writes its scroll
# width (the reports themselves have no script).
expect_page_fits() {
    local browser=$1 html=$2 width sw iw
    local flags="--headless --no-sandbox --disable-gpu --user-data-dir=$T/chrome"
    shift 2
    sed 's|</body>|<script>document.body.insertAdjacentHTML("beforeend", "<div id=\\"measure\\">" + document.documentElement.scrollWidth + " " + window.innerWidth + "</div>")</script></body>|' \
        "$html" >"$T/measure.html"
    for width in "$@"; do
        timeout 120 "$browser" $flags --window-size=$width,1000 --dump-dom "file://$T/measure.html" >"$T/m.html" 2>/dev/null
        read -r sw iw < <(sed -n 's/.*<div id="measure">\([0-9]*\) \([0-9]*\)<.*/\1 \2/p' "$T/m.html")
        [ -n "${sw:-}" ] && [ "$sw" -le "$iw" ] && ok || bad "at $width px the page is ${sw:-?} px wide (window ${iw:-?})"
        timeout 120 "$browser" $flags --window-size=$width,2400 --screenshot="$T/fit_$width.png" "file://$html" >/dev/null 2>&1
        [ "$(stat -c %s "$T/fit_$width.png" 2>/dev/null || echo 0)" -gt 20000 ] && ok || bad "no real screenshot at $width px"
    done
}
finish() { echo "$passed passed, $failed failed"; [ "$failed" = 0 ]; }
