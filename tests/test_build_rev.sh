#!/usr/bin/env bash
# test_build_rev.sh — the source revision stored with every run (cmake/build_rev.cmake, run
# at every build): a clean checkout gives its 12-hex commit; uncommitted changes add
# "-dirty-<hash of the changes>", different for different changes, so history never calls
# two different dirty builds "the same code"; no git gives "unknown"; the output file is
# rewritten only when the revision changes (no rebuild otherwise). And the binary under
# test carries a revision of that form.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null && command -v cmake >/dev/null || { echo "git and cmake needed: skipped"; exit 77; }
S=$ULPGYM_DATA/cmake/build_rev.cmake
R=$T/repo
export GIT_CEILING_DIRECTORIES=$T # the scratch repo is inside the source tree: never look above it
rm -rf "$R" && mkdir -p "$R" && cd "$R" || exit 1
git init -q . && git config user.email t@t && git config user.name t
echo 'int x;' >a.c && git add a.c && git commit -qm one
rev() { cmake -DSRC="$R" -DOUT="$T/rev.c" -P "$S" && sed -n 's/.*ug_build_rev\[\] = "\(.*\)";/\1/p' "$T/rev.c"; }
clean=$(rev)
expect_eq "$clean" "$(git rev-parse --short=12 HEAD)" "clean checkout: the commit"
before=$(stat -c %Y.%s "$T/rev.c")
sleep 1.1
rev >/dev/null
expect_eq "$(stat -c %Y.%s "$T/rev.c")" "$before" "unchanged revision: file not rewritten"
echo 'int y;' >>a.c
d1=$(rev)
case "$d1" in "$clean"-dirty-????????) ok ;; *) bad "dirty tree: got '$d1'" ;; esac
echo 'int z;' >>a.c
d2=$(rev)
case "$d2" in "$clean"-dirty-????????) ok ;; *) bad "dirty tree: got '$d2'" ;; esac
[ "$d1" != "$d2" ] && ok || bad "two different changes share revision $d1"
git checkout -q a.c && touch new.c
d3=$(rev)
case "$d3" in "$clean"-dirty-????????) ok ;; *) bad "untracked file: got '$d3'" ;; esac
rm -rf "$R/.git"
expect_eq "$(rev)" unknown "no git"
# the binary under test stores a revision of one of these forms
cd "$T" && "$UG_BIN" sweep --op attn_softmax --limit 1 --db "$T/r.db" --quiet >/dev/null 2>&1
stored=$(sqlite3 "$T/r.db" "SELECT git_rev FROM runs")
[[ "$stored" =~ ^([0-9a-f]{12}(-dirty-[0-9a-f]{8})?|unknown)$ ]] && ok || bad "stored revision '$stored'"
finish
