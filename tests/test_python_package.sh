# test_python_package.sh — the Python package (python/, docs/PYTHON.md) as a user gets it:
# a fresh venv (--system-site-packages: Debian's numpy and pytest) installs it from the tree
# offline; its own tests pass (python/tests: encode/decode against known bits, inputs equal
# `ulpgym export`'s files bit for bit, the oracle's values pass every standard, bad outputs
# are clear errors, the recorder, the plugin); the pytest plugin runs
# examples/pytest/test_numpy_kernels.py over 20 cases of two ops: the correct numpy kernels
# pass and are recorded as a run `ulpgym history` lists, the planted bug fails with the
# verdict line and a triage line that, pasted into sh, reproduces the FAIL; a test without a
# selection is skipped with the reason; ulpgym-replay-numpy answers an export `check`
# passes; a venv without numpy says what is missing (pip refuses the install, the console
# command exits 2 with one line); an editable install runs from the tree. Needs a python3
# with venv, numpy and pytest (scripts/deps.sh installs python3-venv python3-pip
# python3-numpy python3-pytest); without one the test exits 77 (ctest: skipped).
. "$(dirname "$0")/lib.sh"
PY=
for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import venv, ensurepip, numpy, pytest' 2>/dev/null; then
        PY=$cand; break
    fi
done
if [ -z "$PY" ]; then
    echo "no python3 with venv, numpy and pytest here: the Python package is not checked (skipped;" \
         "scripts/deps.sh installs python3-venv python3-numpy python3-pytest)"
    exit 77
fi
LIB=$(dirname "$UG_BIN")/libulpgym.so
SRC=$ULPGYM_DATA/python
EX=$ULPGYM_DATA/examples/pytest/test_numpy_kernels.py
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
unset PYTHONPATH ULPGYM_EXAMPLE_BUG
cd "$T" || exit 1
[ -f "$LIB" ] && ok || bad "no $LIB: the build makes it beside $UG_BIN"
V=$T/venv
VPY=$V/bin/python
pt() { "$VPY" -m pytest -p no:cacheprovider "$@"; }

# 1. a fresh venv installs the package from the tree, offline; nothing is written into the tree
expect_status 0 "$PY" -m venv --system-site-packages "$V"
expect_status 0 "$VPY" -m pip install --no-index "$SRC"
expect_grep "Successfully installed ulpgym-" "$T/out"
expect_status 0 "$VPY" -c 'import ulpgym; print(ulpgym.__file__); print(ulpgym.__version__)'
expect_grep "^$V/lib/python3[.0-9]*/site-packages/ulpgym/__init__.py$" "$T/out"
[ -f "$ULPGYM_DATA/VERSION" ] && expect_eq "$(tail -1 "$T/out")" "$(head -1 "$ULPGYM_DATA/VERSION")" "package version"
expect_status 0 "$V/bin/ulpgym-py" info
expect_grep "^library $(realpath "$LIB"): ulpgym " "$T/out"
expect_eq "$(find "$SRC" -name __pycache__ -o -name '*.egg-info' -o -name build -o -name dist | head -3)" "" \
    "the install wrote nothing into python/"

# 2. the package's own tests
expect_status 0 pt -q "$SRC/tests"
expect_grep "^[0-9]+ passed" "$T/out"

# 3. the plugin over 20 cases of two ops: the correct kernels pass, recorded as a run
SEL=(--ulpgym-op attn_softmax --ulpgym-op rms_norm_rope --ulpgym-per-op 10)
DB=$T/pytest.db
expect_status 0 pt -q "$EX" "${SEL[@]}" --collect-only
expect_grep "test_kernel\[rms_norm_rope-bf16-hk8-hq32-t4-b3a53a87ca7f9ef2\]" "$T/out"
expect_status 0 pt -q "$EX" "${SEL[@]}" --ulpgym-db "$DB" --ulpgym-run numpy-kernels
expect_grep "^20 passed" "$T/out"
expect_grep "^ulpgym: run 1 \(numpy-kernels\) in $DB: 20 PASS" "$T/out"
expect_status 0 ug history --db "$DB"
expect_grep "done +20 +20 +0 .*replay / numpy-kernels" "$T/out"

# 4. the planted bug fails: verdict line and triage line in the failure text, recorded in
# pytest's cache folder; the triage line pasted into sh reproduces the FAIL from the stored outputs
ULPGYM_EXAMPLE_BUG=1 expect_status 1 "$VPY" -m pytest -q -o cache_dir="$T/cache" "$EX" "${SEL[@]}"
cp "$T/out" "$T/bug.txt"
expect_grep "^[0-9]+ failed, [0-9]+ passed" "$T/bug.txt"
expect_grep "^case [0-9a-f]{16} (attn_softmax|rms_norm_rope) (bf16|fp16|fp32) FAIL under certified: .+" "$T/bug.txt"
expect_grep "^triage: .*ulpgym triage [0-9a-f]{16} --db $T/cache/.*results.db" "$T/bug.txt"
expect_eq "$(grep -c '^case .* FAIL under ' "$T/bug.txt")" "$(grep -c '^triage: .* triage ' "$T/bug.txt")" \
    "a triage line per failure"
line=$(grep -m1 '^triage: ' "$T/bug.txt" | sed 's/^triage: //')
id=$(grep -m1 '^case .* FAIL under ' "$T/bug.txt" | cut -d' ' -f2)
sh -c "$line" >"$T/triage.txt" 2>&1
rc=$?
[ "$rc" -le 1 ] && ok || bad "the pasted triage line exited $rc: $(head -c 300 "$T/triage.txt")"
expect_grep "^case $id$" "$T/triage.txt"
expect_grep "^now: FAIL" "$T/triage.txt"
expect_grep "reproduced exactly" "$T/triage.txt"
bugdb=$(grep -m1 '^triage: ' "$T/bug.txt" | grep -oE -- "--db [^ ]+" | cut -d' ' -f2)
expect_status 0 ug history --db "$bugdb"
expect_grep "done +20 +[0-9]+ +[1-9][0-9]* .*replay / pytest" "$T/out"

# 5. no selection: skipped with the reason, never silently passed
expect_status 0 pt -q -rs "$EX"
expect_grep "1 skipped" "$T/out"
expect_grep "no ulpgym cases selected: run pytest with --ulpgym-op" "$T/out"

# 6. the numpy replay driver as a console command: an export answered, `check` passes it
expect_status 0 ug export --op attn_softmax --op inplace_add_rmsnorm --per-op 4 --dir "$T/exp"
expect_status 0 "$V/bin/ulpgym-replay-numpy" "$T/exp"
expect_grep "^8 ran$" "$T/out"
expect_status 0 ug check --outputs "$T/exp" --db "$T/replay.db" --run numpy-replay

# 7. a venv without numpy: pip refuses the install naming numpy; without the dependency the
# package imports, and numpy's absence is one line from the console command, not a traceback
W=$T/bare
expect_status 0 "$PY" -m venv "$W"
expect_status 1 "$W/bin/python" -m pip install --no-index "$SRC"
expect_grep "numpy" "$T/err"
expect_status 0 "$W/bin/python" -m pip install --no-index --no-deps -e "$SRC"
expect_status 0 "$W/bin/python" -c 'import ulpgym; print(ulpgym.__file__)'
expect_eq "$(cat "$T/out")" "$SRC/ulpgym/__init__.py" "the editable install runs from the tree"
expect_status 2 "$W/bin/ulpgym-replay-numpy" "$T/exp"
expect_grep "^ulpgym-replay-numpy: needs numpy, which .* lacks \(pip install numpy" "$T/err"
expect_eq "$(wc -l <"$T/err")" 1 "one line"
expect_status 2 "$W/bin/ulpgym-replay-torch" "$T/exp" "$T/exp-out"
expect_grep "^ulpgym-replay-torch: needs numpy" "$T/err"
expect_status 1 "$W/bin/python" -c 'import ulpgym; ulpgym.cases(op="attn_softmax")'
expect_grep "ImportError: ulpgym.cases needs numpy" "$T/err"
finish
