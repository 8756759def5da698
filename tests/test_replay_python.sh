# test_replay_python.sh — the replay loop with a truly independent program: the numpy
# kernels of examples/replay/replay_numpy.py (their own fp32 arithmetic, numpy's .npy
# reader and writer) answer every exported plan case, and `ulpgym check` gives each case
# the same verdict as the sim sweep (the first 40 plan cases of each of the two ops the
# script has kernels for), and case.json's params_json carries every default. Needs a
# python3 with numpy; without one the test exits 77 (ctest: skipped); scripts/deps.sh
# installs python3-numpy so CI runs it.
. "$(dirname "$0")/lib.sh"
PY=
for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import numpy' 2>/dev/null; then PY=$cand; break; fi
done
if [ -z "$PY" ]; then
    echo "no python3 with numpy here: the numpy replay example is not checked (skipped)"
    exit 77
fi
DB=$T/py.db
q() { sqlite3 "$DB" "$1"; }
expect_status 0 ug export --op attn_softmax --op inplace_add_rmsnorm --per-op 40 --dir "$T/all"
expect_status 0 ug sweep --no-regressions --db "$DB" --quiet --plan "$T/all/plan.json"
expect_status 0 "$PY" "$ULPGYM_DATA/examples/replay/replay_numpy.py" "$T/all"
expect_grep "^[0-9]+ ran$" "$T/out"
expect_status 0 ug check --outputs "$T/all" --db "$DB" --run numpy
# case.json's params_json is the text a plugin gets: every param of the op, defaults written in
expect_eq "$("$PY" -c "import glob, json, sys
cases = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/*/case.json')]
case = next(c for c in cases if c['op'] == 'attn_softmax' and 'scale' not in c['params'])
print(' '.join(sorted(json.loads(case['params_json']))))" "$T/all")" "cap cols mask rows scale" "params_json with defaults"
n=$(q "select n_cases from runs where run_id = 1")
expect_eq "$(q "select count(*) from results a join results b using (case_id) where a.run_id = 1 and b.run_id = 2 and a.verdict = b.verdict")" "$n" "numpy verdicts equal sim verdicts"
# numpy's own .npy files for bf16 are uint16 raw bits, as case.json promised
expect_eq "$("$PY" -c "import numpy, json, sys; d = sys.argv[1]; c = json.load(open(d + '/case.json')); print(numpy.load(d + '/' + c['outputs'][0]['file']).dtype.str)" "$(ls -d "$T"/all/*/ | while read -r d; do grep -q '"dtype":.*"bf16"' "$d/case.json" && echo "$d" && break; done)")" "<u2" "bf16 output is <u2"
finish
