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
finish() { echo "$passed passed, $failed failed"; [ "$failed" = 0 ]; }
