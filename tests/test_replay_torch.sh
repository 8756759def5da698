# test_replay_torch.sh — the torch replay driver (examples/replay/replay_torch.py) with its
# contract references (ulpgym_torch_refs.py): upcast to fp32, they pass their primary
# standard on every exported case of every op they cover (the first 8 plan cases of each,
# required cases first); a broken --impl module (softmax without the max subtraction,
# tests/fixtures/torch_softmax_no_max.py) fails the large-logit case the reference passes;
# ops an --impl lacks are SKIP with a reason; a kernel making lightning_indexer_prolog_quant's
# reference-test casts passes `reference` with that test's goldens; bad usage exits 2 with
# one line and writes nothing. Needs a python3 with torch and numpy (Debian python3-torch; scripts/deps.sh
# installs it with ULPGYM_WITH_TORCH=1); without one the test exits 77 (ctest: skipped).
. "$(dirname "$0")/lib.sh"
PY=
for cand in python3 /usr/bin/python3; do
    # find_spec, not import: importing torch costs seconds, and the driver imports it anyway
    if command -v "$cand" >/dev/null && "$cand" -c 'import importlib.util as u, sys
sys.exit(not (u.find_spec("torch") and u.find_spec("numpy")))' 2>/dev/null; then PY=$cand; break; fi
done
if [ -z "$PY" ]; then
    echo "no python3 with torch here: the torch replay driver is not checked (skipped; ULPGYM_WITH_TORCH=1 scripts/deps.sh installs python3-torch)"
    exit 77
fi
REPLAY=$ULPGYM_DATA/examples/replay
BROKEN=$ULPGYM_DATA/tests/fixtures/torch_softmax_no_max.py
DB=$T/t.db
q() { sqlite3 "$DB" "$1"; }
drive() { "$PY" "$REPLAY/replay_torch.py" "$@"; }

# 1. the fp32-upcast references over the first 8 plan cases of every op they cover
ops=$(cd "$REPLAY" && "$PY" -c 'import ulpgym_torch_refs as r; print(" ".join(sorted(r.KERNELS)))')
sel=()
for op in $ops; do sel+=(--op "$op"); done
expect_status 0 ug export "${sel[@]}" --per-op 8 --dir "$T/cases"
n=$(ls -d "$T"/cases/*/ | wc -l)
expect_eq "$n" "$((8 * $(wc -w <<<"$ops")))" "8 exported cases per referenced op"
expect_status 0 drive "$T/cases" "$T/up" --upcast
expect_grep "^$n ran$" "$T/out"
expect_status 0 ug check --outputs "$T/up" --db "$DB" --run torch-upcast
expect_eq "$(q "select count(*) from results where verdict = 'PASS'")" "$n" "every upcast case passes its primary standard"
expect_eq "$(q "select group_concat(op || ':' || verdict) from results join cases using (case_id) where verdict != 'PASS'")" "" "no case left out"

# 2. a broken implementation fails where the bug shows: large logits (N(0, 40^2), bf16)
big=$(ug plan --op attn_softmax --list | awk '$3 == "bf16" && $4 == "{\"cols\":1000,\"rows\":8}" {print $1; exit}')
expect_status 0 ug export "$big" --dir "$T/big"
expect_status 0 drive "$T/big" "$T/big_ref" --upcast
expect_status 0 ug check --outputs "$T/big_ref" --db "$DB"
expect_status 0 drive "$T/big" "$T/big_broken" --upcast --impl "$BROKEN"
expect_status 1 ug check --outputs "$T/big_broken" --db "$DB"
expect_eq "$(q "select verdict from results where case_id = '$big' and run_id = (select max(run_id) from runs)")" "NONFINITE" "softmax without max subtraction"

# 3. an op the --impl module lacks: SKIP with the reason, and the summary names the op
expect_status 0 drive "$T/cases" "$T/skip" --impl "$BROKEN" --op inplace_add_rmsnorm
expect_grep "^8 SKIP$" "$T/out"
expect_grep "no implementation in .*torch_softmax_no_max.py \(skipped\): inplace_add_rmsnorm$" "$T/err"
expect_status 0 ug check --outputs "$T/skip" --db "$DB" --run torch-skip # SKIP is no failure (--fail-on fail)
expect_eq "$(q "select count(*) from results join runs using (run_id) where plan_name = 'torch-skip' and verdict = 'SKIP' and message like 'unsupported: no torch implementation of inplace_add_rmsnorm%'")" 8 "SKIP with the reason"

# 4. the I/O-dtype references run (bf16/fp16 arithmetic; torch's missing CPU fp16 kernels are SKIP, never ERROR)
expect_status 0 drive "$T/cases" "$T/io" --op attn_softmax --op apply_adamw

# 6. a kernel that rounds where lightning_indexer_prolog_quant's reference test rounds (bf16
# after its matmuls and vector stages: examples/replay/indexer_test_casts_torch.py) passes
# `reference` on q_scale, k_scale and weights with the test's own goldens, each of which
# the exact value alone would fail
expect_status 0 ug export --plan "$ULPGYM_DATA/tests/fixtures/lipq_test_casts_plan.json" --dir "$T/lipq"
expect_status 0 drive "$T/lipq" "$T/lipq_out" --impl "$REPLAY/indexer_test_casts_torch.py"
expect_grep "^1 ran$" "$T/out"
ug check --outputs "$T/lipq_out" --db "$DB" --run torch-test-casts >/dev/null 2>&1
sel_ref="from verdicts join runs using (run_id) where plan_name = 'torch-test-casts' and standard = 'reference'"
expect_eq "$(q "select verdict $sel_ref")" "PASS" "the test's casts pass reference against its goldens"
for o in q_scale k_scale weights; do
    fe=$(q "select json_extract(thresholds, '\$.$o.failed_exact') $sel_ref")
    [ "${fe:-0}" -gt 0 ] && ok || bad "$o: the exact value alone fails none ($fe): the golden was not needed"
done

# 5. bad usage: one line, exit 2, nothing written
expect_status 2 drive "$T/cases" "$T/none" --impl no_such_module_here
expect_grep "^replay_torch.py: --impl no_such_module_here: cannot import it" "$T/err"
expect_status 2 drive "$T/up/index.json" "$T/none"
expect_grep "has neither case.json nor index.json" "$T/err"
expect_eq "$(wc -l <"$T/err")" 1 "one line"
drive "$T/big" "$T/none" --device cuda >"$T/out" 2>"$T/err"
rc=$?
case $rc in
    2) expect_grep "^replay_torch.py: --device cuda: torch sees no CUDA device here$" "$T/err" ;;
    0) rm -rf "$T/none" ;;  # this machine has CUDA: the case ran there
    *) bad "--device cuda exited $rc: $(head -c 300 "$T/err")" ;;
esac
if [ -e "$T/none" ]; then bad "a refused replay wrote $T/none"; else ok; fi
finish
