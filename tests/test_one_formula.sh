#!/usr/bin/env bash
# test_one_formula.sh — each operator's formula is written once: no oracle file asks which
# arithmetic it runs in or keeps a second, hand-certified copy of its formula
# (docs/ADDING_AN_OPERATOR.md "The oracle"). In the code (comments aside) of every file of
# oracles/<family>/ (the operators; oracles/mp/ is the engine):
#   - no ug_ar_get_mode, no ug_ar_cert_sink, no UG_AR_<mode> constant, no look at a
#     ug_arx's mode (ugx_of, ugx_is_mp, .mode: the specialisers' own);
#   - no ug_cv_ pair arithmetic, no ug_mp_ MPFR primitive and no include of cert_inline.h,
#     cert_block.h or arith_engine_private.h (the engine's own: fast paths are arith_inline.h's
#     specialisations);
# and `grep -l ug_ar_get_mode oracles/*/*.c` finds nothing (the engine's files read their
# own state); no two files name a UG_ARX_CLONES block alike (clang's global resolvers). The checker must fail on a planted violation, so it is run on a copy with one.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}

cat >"$T/check.py" <<'EOF'
import os, re, sys
root = sys.argv[1]
banned = re.compile(r'\bug_ar_get_mode\b|\bug_ar_cert_sink\b|\bUG_AR_(EXACT|CERT|NAIVE|F64|MPFR_SEQ|DEVICE)\b|\bug_cv_\w+|\bug_mp_\w+'
                    r'|\bugx_of\b|\bugx_is_mp\b|\.mode\b'
                    r'|#\s*include\s+"oracles/mp/(cert_inline|cert_block|arith_engine_private)\.h"')
def code(text):  # comments blanked, line numbers kept
    text = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)
bad = 0
oracles = os.path.join(root, "oracles")
for family in sorted(os.listdir(oracles)):
    folder = os.path.join(oracles, family)
    if not os.path.isdir(folder): continue
    for f in sorted(os.listdir(folder)):
        if not f.endswith((".c", ".h")): continue
        text = open(os.path.join(folder, f), errors="replace").read()
        if f.endswith(".c") and "ug_ar_get_mode" in text:
            print(f"oracles/{family}/{f}: names ug_ar_get_mode"); bad += 1
        if family == "mp": continue
        for n, line in enumerate(code(text).split("\n"), 1):
            m = banned.search(line)
            if m: print(f"oracles/{family}/{f}:{n}: {m.group(0)} (an op's formula is written once, on arith_inline.h)"); bad += 1
# UG_ARX_CLONES names are unique across the oracles: clang emits a clone's resolver as a global
# symbol even for a static function, so two files' clones of one name fail its link.
seen = {}
for family in sorted(os.listdir(oracles)):
    folder = os.path.join(oracles, family)
    if not os.path.isdir(folder): continue
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".c"): continue
        for m in re.finditer(r'UG_ARX_CLONES\(\s*(\w+)', code(open(os.path.join(folder, f), errors="replace").read())):
            where = f"oracles/{family}/{f}"
            if m.group(1) in seen and seen[m.group(1)] != where:
                print(f"{where}: UG_ARX_CLONES({m.group(1)}) also in {seen[m.group(1)]} (clang links one resolver name)"); bad += 1
            seen[m.group(1)] = where
sys.exit(1 if bad else 0)
EOF

if python3 "$T/check.py" "$SRC" >"$T/report" 2>&1; then ok; else cat "$T/report"; bad "an oracle file asks for its arithmetic"; fi

# The checker itself: a copy of oracles/ with one planted mode test must fail, naming it.
mkdir -p "$T/tree" && cp -r "$SRC/oracles" "$T/tree/oracles"
printf 'static int planted(ug_ar *ar) { return ug_ar_get_mode(ar) == UG_AR_CERT; }\n' >>"$T/tree/oracles/optimizer/apply_adamw.c"
expect_status 1 python3 "$T/check.py" "$T/tree"
expect_grep "oracles/optimizer/apply_adamw.c:[0-9]*: ug_ar_get_mode" "$T/out" "the planted mode test is named"
# ... and so must a second file's clone block named like apply_adamw's.
rm -rf "$T/tree" && mkdir -p "$T/tree" && cp -r "$SRC/oracles" "$T/tree/oracles"
printf 'UG_ARX_CLONES(adamw_block, (int x), (x))\n' >>"$T/tree/oracles/norm_rope/mhc_post.c"
expect_status 1 python3 "$T/check.py" "$T/tree"
expect_grep "UG_ARX_CLONES\(adamw_block\) also in" "$T/out" "the second clone block of one name is named"
finish
