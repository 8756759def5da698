#!/usr/bin/env bash
# test_corpus_import.sh — `corpus import` reads only what it should (#36 item 12): regular
# files only (a FIFO named *.json is refused at once, never opened to read: it used to block
# for ever), no symbolic link inside the import folder is followed out of it (a link to /
# was walked), a dangling link gets a message (it used to give exit 2 and none), a spec
# with an unknown top-level key is refused (it was imported as a second copy of a case
# under a new ID), a spec that every sweep would refuse (a distribution for a tensor the op
# lacks) is refused; every refusal has its line and the exit status is 2.
. "$(dirname "$0")/lib.sh"
src=${ULPGYM_DATA:?}
data="$T/data"                      # a data dir whose corpus/found starts empty
mkdir -p "$data/corpus" "$T/in/sub"
ln -s "$src/gen" "$data/gen"
export ULPGYM_DATA="$data"
found=$(ls "$src"/corpus/found/attn_softmax/*.json | head -1)
id=$(basename "$found" .json)
import() { expect_status "$1" timeout 60 "$UG_BIN" corpus import "${@:2}" --db "$T/c.db"; }

# a folder with one good finding, links that stay inside, and every kind of refusal
cp "$found" "$T/in/sub/"
ln -s .. "$T/in/sub/up"                     # inside: walked once, not refused
mkfifo "$T/in/fifo.json"
ln -s / "$T/in/root"
ln -s "$src/corpus/found" "$T/in/elsewhere" # a folder outside, full of findings
ln -s "$T/nothing-there.json" "$T/in/dangling.json"
sed 's/^{/{"comment":"a second copy",/' "$found" >"$T/in/extra.json"
sed 's/"dist":{/"dist":{"zz":{"kind":"const","value":1},/' "$found" >"$T/in/lacks.json"
import 2 "$T/in"
expect_grep "^$id  <- .*/in/sub/$id.json" "$T/out"
expect_grep '^1 cases kept as regression cases \(origin fuzz\), 6 refused$' "$T/out"
expect_grep 'fifo.json: not a regular file \(a FIFO, socket or device\); not read' "$T/err"
expect_grep 'in/root: a symbolic link that leads out of the import folder .* \(to /\); not followed' "$T/err"
expect_grep 'in/elsewhere: a symbolic link that leads out of the import folder' "$T/err"
expect_grep 'dangling.json: a dangling symbolic link \(its target does not exist\); not followed' "$T/err"
expect_grep 'extra.json: not a case spec: case spec: unknown field "comment"' "$T/err"
expect_grep "lacks.json: .*\"dist\" names \"zz\", which is not one of its drawn inputs" "$T/err"
expect_eq "$(wc -l <"$T/err")" 6 "one line per refusal"
expect_eq "$(ls "$data/corpus/found/attn_softmax" | wc -l)" 1 "only the finding was kept"
expect_eq "$(sqlite3 "$T/c.db" "SELECT count(*) FROM cases WHERE origin = 'fuzz'")" 1 "one regression case stored"

# the same refusals for files named on the command line
import 2 "$T/in/fifo.json"
expect_grep 'fifo.json: not a regular file' "$T/err"
import 2 "$T/in/dangling.json"
expect_grep 'dangling.json is a dangling symbolic link' "$T/err"
import 2 "$T/in/extra.json"
expect_grep 'unknown field "comment"' "$T/err"
import 2 /dev/null
expect_grep '/dev/null: not a regular file' "$T/err"
# a link named on the command line is the user's choice: followed (here: to a folder of
# findings corpus/found already holds, each refused as such)
ln -s "$T/in/sub" "$T/named"
import 2 "$T/named"
expect_grep "case $id is already a regression case" "$T/err"
finish
