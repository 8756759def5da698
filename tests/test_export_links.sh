#!/usr/bin/env bash
# test_export_links.sh — an export folder may come from another machine (issue #36, items 3
# and 4): `export` writes only into an empty folder (or, with --force, over an earlier
# export) and never through a symbolic link (case.json, index.json, inputs/ or a case folder
# that is a link is refused and its target left alone); the numpy replay driver writes each
# output only to <case>/outputs/<name>.npy whatever case.json's "file" says, refuses a case
# whose outputs/ is a link or whose tensor names are paths, and a malformed index.json or a
# missing case folder gets one line and a non-zero exit while the other cases still run.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
cd "$T" || exit 1
echo victim >"$T/victim.txt"
mkdir -p "$T/elsewhere"

# export: a non-empty folder is refused without --force; with it, rewritten in place
expect_status 0 ug export --op attn_softmax --per-op 3 --dir "$T/x"
expect_status 2 ug export --op attn_softmax --per-op 3 --dir "$T/x"
expect_grep 'is not empty .*--force' "$T/err"
expect_status 0 ug export --op attn_softmax --per-op 3 --dir "$T/x" --force
id=$(ls "$T/x" | grep -v json | head -1)
# a case.json that is a link: refused, the victim untouched
rm "$T/x/$id/case.json" && ln -s "$T/victim.txt" "$T/x/$id/case.json"
expect_status 2 ug export --op attn_softmax --per-op 3 --dir "$T/x" --force
expect_grep 'case.json: it is a symbolic link' "$T/err"
expect_eq "$(cat "$T/victim.txt")" victim "the file case.json linked to"
rm "$T/x/$id/case.json"
# inputs/ that is a link to another folder: refused, nothing written there
rm -r "$T/x/$id/inputs" && ln -s "$T/elsewhere" "$T/x/$id/inputs"
expect_status 2 ug export --op attn_softmax --per-op 3 --dir "$T/x" --force
expect_grep 'inputs is a symbolic link' "$T/err"
expect_eq "$(ls "$T/elsewhere" | wc -l)" 0 "nothing written into the linked folder"
rm "$T/x/$id/inputs"
# index.json that is a link
rm "$T/x/index.json" && ln -s "$T/victim.txt" "$T/x/index.json"
expect_status 2 ug export --op attn_softmax --per-op 3 --dir "$T/x" --force
expect_eq "$(cat "$T/victim.txt")" victim "the file index.json linked to"
# a single-case export into a folder that is a link
ln -s "$T/elsewhere" "$T/linked"
expect_status 2 ug export "$id" --dir "$T/linked"
expect_grep 'is a symbolic link' "$T/err"

if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "Debian's python3 with numpy is missing: the replay driver's part is not run"
    finish
    exit
fi
DRIVE=$ULPGYM_DATA/examples/replay/replay_numpy.py
expect_status 0 ug export --op attn_softmax --per-op 4 --dir "$T/r"
ids=($(ls "$T/r" | grep -v json))
# 1. case.json points an output at a file outside the export: the file key is not followed
"$PY" - "$T/r/${ids[0]}/case.json" "$T/victim.txt" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p)); c["outputs"][0]["file"] = sys.argv[2]; c["inputs"][0]["file"] = "/etc/passwd"
json.dump(c, open(p, "w"))
PY
# 2. outputs/ of another case is a link to a folder elsewhere: that case is refused
rm -r "$T/r/${ids[1]}/outputs" && ln -s "$T/elsewhere" "$T/r/${ids[1]}/outputs"
# 3. an output file that is a link: removed and written fresh, its target untouched
ln -s "$T/victim.txt" "$T/r/${ids[2]}/outputs/y.npy"
# 4. a tensor whose name is a path
"$PY" - "$T/r/${ids[3]}/case.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p)); c["outputs"][0]["name"] = "../../../escaped"
json.dump(c, open(p, "w"))
PY
expect_status 1 "$PY" "$DRIVE" "$T/r"
expect_grep "^2 ran, 2 refused$" "$T/out"
expect_grep "case ${ids[1]}: .*outputs is a symbolic link" "$T/err"
expect_grep "case ${ids[3]}: case.json names a tensor '../../../escaped': not a plain name" "$T/err"
expect_eq "$(cat "$T/victim.txt")" victim "the files case.json and a link pointed at"
expect_eq "$(ls "$T/elsewhere" | wc -l)" 0 "nothing written through the linked outputs folder"
[ -f "$T/r/${ids[0]}/outputs/y.npy" ] && [ ! -L "$T/r/${ids[2]}/outputs/y.npy" ] && ok || bad "outputs not where they belong"
if grep -q Traceback "$T/err"; then bad "a traceback: $(head -3 "$T/err")"; else ok; fi
# 5. a malformed index.json: one line, exit 2; an entry with a path, or a missing folder: named, the rest run
cp "$T/r/index.json" "$T/index.good"
echo '{"cases": [' >"$T/r/index.json"
expect_status 2 "$PY" "$DRIVE" "$T/r"
expect_eq "$(wc -l <"$T/err")" 1 "one line for a malformed index.json"
"$PY" - "$T/index.good" "$T/r/index.json" "${ids[0]}" <<'PY'
import json, sys
idx = json.load(open(sys.argv[1]))
idx["cases"] = [c for c in idx["cases"] if c["dir"] == sys.argv[3]] + [{"dir": "../elsewhere"}, {"dir": "0000000000000000"}]
json.dump(idx, open(sys.argv[2], "w"))
PY
expect_status 1 "$PY" "$DRIVE" "$T/r"
expect_grep "^1 ran, 2 refused$" "$T/out"
expect_grep 'is not a plain name' "$T/err"
expect_grep 'case 0000000000000000: .*case.json' "$T/err"
finish
