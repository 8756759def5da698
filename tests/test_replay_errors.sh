# test_replay_errors.sh — bad replay input gets one clear line and exit 2, and leaves the
# database as it was: missing output, malformed .npy (bad magic, truncated, wrong dtype,
# wrong shape, Fortran order), an edited case.json, a folder that is no export, and the
# export command's own bad arguments.
. "$(dirname "$0")/lib.sh"
EX=$(dirname "$UG_BIN")/examples
DB=$T/e.db
q() { sqlite3 "$DB" "$1"; }
# mknpy FILE DESCR SHAPE FORTRAN NBYTES: a .npy with that header and NBYTES zero bytes
mknpy() {
    local dict="{'descr': '$2', 'fortran_order': $4, 'shape': $3, }"
    local n=$(( ${#dict} + 1 )) total hlen
    total=$(( (10 + n + 63) / 64 * 64 )); hlen=$(( total - 10 ))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((hlen % 256)))\\x$(printf %02x $((hlen / 256)))"
        printf '%s' "$dict"
        printf "%$((hlen - n))s\n" ""
        head -c "$5" /dev/zero
    } >"$1"
}

id=$(ug plan --op attn_softmax --list | awk '$3 == "bf16" && $0 ~ /"cols":257/ {print $1; exit}')
expect_status 0 ug export "$id" --dir "$T/c"
"$EX/ulpgym_replay_plugin" "$EX/libulpgym_plugin_sim.so" "$T/c"
cp "$T/c/outputs/y.npy" "$T/good.npy"
expect_status 0 ug check "$id" --outputs "$T/c" --db "$DB"
state() { q "select (select count(*) from runs) || '/' || (select count(*) from results)"; }
before=$(state)
expect_eq "$before" "1/1" "one good check stored"

Y=$T/c/outputs/y.npy
bad_check() { # pattern: the one-line message expected
    expect_status 2 ug check "$id" --outputs "$T/c" --db "$DB"
    expect_grep "$1" "$T/err"
    expect_eq "$(wc -l <"$T/err")" 1 "one line: $(cat "$T/err")"
    expect_eq "$(state)" "$before" "nothing stored after: $1"
}
rm -f "$Y"
bad_check "missing output file .*/outputs/y.npy"
echo "not numpy" >"$Y"
bad_check "y.npy: not a .npy file"
head -c 200 "$T/good.npy" >"$Y"
bad_check "y.npy: truncated .npy data: shape and dtype <u2 need 2056 bytes, the file has"
mknpy "$Y" '<f4' '(4, 257)' False $((4 * 257 * 4))
bad_check "y.npy: dtype <f4, but output \"y\" is bf16, stored as <u2 \(raw bits\)"
mknpy "$Y" '<u2' '(4, 256)' False $((4 * 256 * 2))
bad_check "y.npy: shape \(4, 256\), but output \"y\" has shape \(4, 257\)"
mknpy "$Y" '<u2' '(4, 257)' True $((4 * 257 * 2))
bad_check "y.npy: .npy is in Fortran order"
mknpy "$Y" '<u2' '(4, 257)' False $((4 * 257 * 2))
expect_status 1 ug check "$id" --outputs "$T/c" --db "$DB" --run zeros  # well-formed zeros: judged, not refused
expect_eq "$(q "select verdict from results where run_id = 2")" FAIL "zeros are judged FAIL"
before=$(state)

cp "$T/good.npy" "$Y"
sed -i 's/"cols":257/"cols":258/' "$T/c/case.json"
bad_check "case.json: the spec hashes to .*, not to the recorded case_id $id \(was it edited\?\)"
expect_status 2 ug check --outputs "$T/nowhere" --db "$DB"
expect_grep "has neither case.json nor index.json" "$T/err"
expect_status 2 ug check "$id" --db "$DB"
expect_grep "give the folder the device wrote with --outputs D" "$T/err"
expect_status 2 ug check zz --outputs "$T/c" --db "$DB"
expect_grep "is not a case ID" "$T/err"
expect_eq "$(state)" "$before" "nothing stored by the failed checks"

expect_status 2 ug export "$id"
expect_grep "give the folder to write with --dir D" "$T/err"
expect_status 2 ug export 0123456789abcdef --dir "$T/x" --db "$DB"
expect_grep "unknown case ID 0123456789abcdef" "$T/err"
expect_status 2 ug export "$id" --op attn_softmax --dir "$T/x"
expect_grep "with a CASE_ID leave them out" "$T/err"
expect_status 2 ug export --op attn_softmax --limit x --dir "$T/x"
expect_status 2 ug export --op no_such_op --dir "$T/x"
if [ ! -e "$T/x" ]; then ok; else bad "failed exports created $T/x"; fi
# a replay folder that is not there is refused before a run starts: no run, no database
expect_status 2 ug sweep --op attn_softmax --limit 3 --backend replay:"$T/nowhere" --db "$T/rp.db" --quiet
expect_grep 'is not a folder' "$T/err"
if [ ! -e "$T/rp.db" ]; then ok; else bad "a refused replay sweep created its database"; fi
finish
