#!/usr/bin/env bash
# test_npy_files.sh — `check` reads a device's output .npy by its header first: a file
# whose header fits the case but whose size does not (a 2 GiB sparse tail), or whose
# header declares a huge shape the case does not have, is refused before its data is
# read (bounded RSS, measured with /usr/bin/time -v); a symlink to /dev/zero or a FIFO is
# refused as not a regular file (exit 2, nothing stored).
. "$(dirname "$0")/lib.sh"
db=$T/n.db
ug sweep --no-regressions --db "$db" --quiet --op attn_softmax --limit 1 >/dev/null 2>&1
id=$(sqlite3 "$db" "select case_id from results limit 1")
ug triage "$id" --db "$db" --dump "$T/d" >/dev/null 2>&1 # case.json, inputs/, outputs/y.npy (the sim kernel's)
[ -s "$T/d/outputs/y.npy" ] && ok || bad "triage --dump wrote no outputs/y.npy"
expect_status 0 ug check "$id" --db "$db" --outputs "$T/d"
good=$T/y.good.npy
cp "$T/d/outputs/y.npy" "$good"
results() { sqlite3 "$db" "select count(*) from results"; }
stored=$(results)

# check_refused WHAT PATTERN: check exits 2 naming the problem, stores nothing, peak RSS < 64 MiB
check_refused() {
    local rss
    /usr/bin/time -v "$UG_BIN" check "$id" --db "$db" --outputs "$T/d" >"$T/out" 2>"$T/err"
    expect_eq "$?" 2 "$1: exit status"
    expect_grep "$2" "$T/err"
    expect_eq "$(results)" "$stored" "$1: nothing stored"
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$T/err")
    if [ -n "$rss" ] && [ "$rss" -lt 65536 ]; then ok; else bad "$1: peak RSS ${rss:-?} KiB"; fi
}

# the right header and data, then a 2 GiB sparse tail
truncate -s 2G "$T/d/outputs/y.npy"
check_refused "sparse tail" 'overlong \.npy data: shape and dtype <f4 need [0-9]+ bytes, the file has 2147483'
# a header declaring 65536 x 8192 fp32 (2 GiB) in a sparse file of exactly that size: not the case's shape
python3 - "$T/d/outputs/y.npy" <<'EOF' || { echo "python3 is missing"; exit 77; }
import sys
h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 8192), }"
h += b" " * (117 - len(h)) + b"\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h)
    f.truncate(128 + 65536 * 8192 * 4)
EOF
check_refused "huge declared shape" 'shape \(65536, 8192\), but output "y" has shape \('
# not regular files
rm -f "$T/d/outputs/y.npy" && ln -s /dev/zero "$T/d/outputs/y.npy"
check_refused "/dev/zero" 'y\.npy is not a regular file'
rm -f "$T/d/outputs/y.npy" && mkfifo "$T/d/outputs/y.npy"
check_refused "a FIFO" 'y\.npy is not a regular file'
# a symlink to a good regular file is fine
rm -f "$T/d/outputs/y.npy" && ln -s "$good" "$T/d/outputs/y.npy"
expect_status 0 ug check "$id" --db "$db" --outputs "$T/d"
finish
