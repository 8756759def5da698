#!/usr/bin/env bash
# test_format.sh — every C source and header git tracks is formatted as .clang-format says
# (the style the code was written in: 4 spaces, 120 columns, function braces on their own
# line). Run `clang-format -i FILE` to fix a file. Checked with Debian 12's clang-format 14:
# another major version formats some constructs differently, so the test skips there rather
# than ask for a style no one can reproduce. The check must fail on a misformatted file, so it
# is run on a copy with one first.
source "$(dirname "$0")/lib.sh"
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}
command -v clang-format >/dev/null || { echo "clang-format missing (scripts/deps.sh installs it): skipped"; exit 77; }
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
[ "$major" = 14 ] || { echo "clang-format $major, not 14: skipped"; exit 77; }
cd "$SRC"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z '*.c' '*.h' >"$T/files"
else
    find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print0 >"$T/files"
fi
[ -s "$T/files" ] || { echo "no C files found under $SRC"; exit 1; }

# The check itself fails on a planted misformat.
cp .clang-format "$T/.clang-format"
printf 'int f(int x){return x+1;}\n' >"$T/planted.c"
if clang-format --dry-run --Werror --style=file "$T/planted.c" >/dev/null 2>&1; then bad "a misformatted file passed"; else ok; fi

xargs -0 -n 40 clang-format --dry-run --Werror --style=file <"$T/files" >"$T/fmt" 2>&1
if [ -s "$T/fmt" ]; then
    bad "files not formatted (clang-format -i FILE fixes each):"
    grep -o '^[^:]*\.[ch]:' "$T/fmt" | sort -u | head -20 >&2
else ok; fi
finish
