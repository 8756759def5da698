#!/usr/bin/env bash
# nightly.sh — the nightly job: build, sweep the default plan, write the report, diff the
# run against the last finished run of the same plan (hash), case selection, backend and
# deciding standard (like for like), and exit 1 when a case fails that did not fail
# before (0: no new failures, 2: the job itself failed);
# then the standards' self-check: the correct sim kernels over the whole plan at other
# plan seeds must pass under each op's primary standard and under certified (3: a false
# alarm, i.e. a tolerance or contract fitted to one seed's cases); then, when the script
# built ulpgym itself, the per-op plan tests over every plan case of every mutant
# (ULPGYM_PLAN_SHARE=full ctest -L plan; CI runs only their stratified share) (4: a mutant
# escapes the full plan or the correct kernel fails a case).
#
# Drift before failure: cases that pass in both runs but whose max ulp error (or |error
# balance|) grew by more than a factor (--drift-factor F, default 4) are listed, top movers
# first, in drift.txt; with --gate drift they fail the night (5).
#
# Usage: scripts/nightly.sh [--gate drift] [--drift-factor F] [ulpgym sweep options...]
#        (e.g. --group GreenLight -j 16)
# Environment:
#   ULPGYM_DB          results database (default ./ulpgym.db); history accumulates there
#   ULPGYM_BIN         use this ulpgym binary and skip deps/build (CI, tests, clusters)
#   ULPGYM_REPORT_DIR  where the report and new_failures.txt go (default
#                      $ULPGYM_DATA/nightly-reports, else nightly-reports/ beside the database)
#   ULPGYM_SEED_CHECK  plan seeds of the self-check (default "2 3 4"; empty: skip it)
#   ULPGYM_SEED_CHECK_ARGS  extra sweep options for the self-check (default: the whole plan)
#   ULPGYM_MUTANT_CHECK  1 (default when this script builds) runs the full-plan mutant
#                      check through ctest in build/; 0 skips it
# "New failure": a case whose verdict now is neither PASS nor SKIP, and which either had
# no result in the compared run or had PASS/SKIP there; "fixed" passes now and failed
# there; "still failing" failed in both. The script says whether the code (git revision)
# changed between the two runs; a run with no like-for-like predecessor says so and
# counts every failure as new.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
db=${ULPGYM_DB:-$PWD/ulpgym.db}
reports=${ULPGYM_REPORT_DIR:-${ULPGYM_DATA:-$(dirname "$db")}/nightly-reports}
die() { echo "nightly: $*" >&2; exit 2; }
gate_drift=0 drift_factor=4 sweep_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --gate) [ "${2:-}" = drift ] || die "--gate takes \"drift\""; gate_drift=1; shift 2 ;;
    --drift-factor) [[ "${2:-}" =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v f="$2" 'BEGIN { exit !(f > 1) }' ||
        die "--drift-factor takes a number > 1"; drift_factor=$2; shift 2 ;;
    *) sweep_args+=("$1"); shift ;;
    esac
done
set -- "${sweep_args[@]}"

if [ -n "${ULPGYM_BIN:-}" ]; then
    bin=$ULPGYM_BIN
else
    ./scripts/deps.sh || die "installing dependencies failed"
    ./scripts/build.sh >/dev/null || die "build failed"
    bin=$PWD/build/ulpgym
fi
command -v sqlite3 >/dev/null || die "sqlite3 (the command-line shell) is needed for the diff (scripts/deps.sh installs it)"
mkdir -p "$reports" || die "cannot create $reports"

# --fail-on never: the failing cases are this script's to judge (new ones against the like-for-like run, below)
"$bin" sweep --db "$db" --no-progress --fail-on never "$@"
status=$?
# 1 = the oracle self-check found a rounding that changes: reported, but the run is complete
# 3 = an engine failure (disk full, file size limit: the run is marked failed), 130 = interrupted: the job failed
[ $status -eq 0 ] || [ $status -eq 1 ] || die "sweep exited with status $status (an interrupted or failed run continues with: $bin sweep --db $db --resume latest)"

q() { sqlite3 -batch "$db" "$@"; }
run=$(q "SELECT max(run_id) FROM runs WHERE merged_from IS NULL")
# like for like: the same plan (hash), selection, backend and deciding standard
prev=$(q "SELECT max(p.run_id) FROM runs p, runs c WHERE c.run_id = $run AND p.run_id < $run AND p.status = 'done'
          AND p.merged_from IS NULL AND p.plan_hash IS c.plan_hash AND p.backend IS c.backend
          AND p.op_filter IS c.op_filter AND p.group_filter IS c.group_filter AND p.case_limit IS c.case_limit
          AND p.shard IS c.shard AND p.sample IS c.sample AND p.primary_standard IS c.primary_standard")
echo
echo "nightly: run $run$([ -n "$prev" ] && echo ", compared with run $prev (same plan, selection and backend)" ||
    echo ", no earlier finished run of the same plan, selection and backend to compare with")"

if "$bin" report -h >/dev/null 2>&1; then
    "$bin" report --db "$db" --run "$run" --format html -o "$reports/nightly-$run.html" &&
        echo "nightly: report $reports/nightly-$run.html"
fi

if [ -n "$prev" ]; then
    q "SELECT CASE WHEN p.git_rev IS NOT c.git_rev THEN 'nightly: code changed: ' || p.git_rev || ' -> ' || c.git_rev END
       FROM runs p, runs c WHERE p.run_id = ${prev} AND c.run_id = $run" | grep -v '^$'
fi
new_failures="
SELECT r.case_id, c.op, c.dtype, coalesce(p.verdict, '(new case)') AS was, r.verdict AS now, r.message
FROM results r JOIN cases c USING (case_id)
LEFT JOIN results p ON p.case_id = r.case_id AND p.run_id = ${prev:-0}
WHERE r.run_id = $run AND r.verdict NOT IN ('PASS', 'SKIP') AND coalesce(p.verdict, 'PASS') IN ('PASS', 'SKIP')
ORDER BY c.op, r.case_id"
q -header -separator '  ' "$new_failures" >"$reports/new_failures.txt"
n_new=$(q "SELECT count(*) FROM ($new_failures)")
n_fixed=0 n_still=0
if [ -n "$prev" ]; then
    n_fixed=$(q "SELECT count(*) FROM results r JOIN results p ON p.case_id = r.case_id AND p.run_id = $prev
                 WHERE r.run_id = $run AND r.verdict = 'PASS' AND p.verdict NOT IN ('PASS', 'SKIP')")
    n_still=$(q "SELECT count(*) FROM results r JOIN results p ON p.case_id = r.case_id AND p.run_id = $prev
                 WHERE r.run_id = $run AND r.verdict NOT IN ('PASS', 'SKIP') AND p.verdict NOT IN ('PASS', 'SKIP')")
fi
totals=$(q "SELECT count(*) || ' cases: ' || sum(verdict = 'PASS') || ' pass, ' || sum(verdict NOT IN ('PASS', 'SKIP'))
            || ' not passing, ' || sum(verdict = 'SKIP') || ' skipped' FROM results WHERE run_id = $run")
echo "nightly: $n_new new failures, $n_fixed fixed, $n_still still failing (list: $reports/new_failures.txt)"
echo "nightly: run $run: $totals"
[ "$n_new" -gt 0 ] && head -n 21 "$reports/new_failures.txt"

# Drift: both runs pass the case, but an output's max ulp error or |error balance| grew by
# more than the factor (floors 0.5 ulp and 1e-7, so noise at the rounding level never counts).
n_drift=0
if [ -n "$prev" ]; then
    drift_sql="
    SELECT r.case_id, c.op, c.dtype, m.output, pm.max_ulp AS ulp_was, m.max_ulp AS ulp_now, pm.eb AS eb_was, m.eb AS eb_now
    FROM results r JOIN results p ON p.case_id = r.case_id AND p.run_id = $prev
    JOIN metrics m ON m.run_id = r.run_id AND m.case_id = r.case_id
    JOIN metrics pm ON pm.run_id = p.run_id AND pm.case_id = p.case_id AND pm.output = m.output
    JOIN cases c ON c.case_id = r.case_id
    WHERE r.run_id = $run AND r.verdict = 'PASS' AND p.verdict = 'PASS'
      AND (coalesce(m.max_ulp, 0) > $drift_factor * max(coalesce(pm.max_ulp, 0), 0.5)
           OR abs(coalesce(m.eb, 0)) > $drift_factor * max(abs(coalesce(pm.eb, 0)), 1e-7))
    ORDER BY coalesce(m.max_ulp, 0) / max(coalesce(pm.max_ulp, 0), 0.5) DESC, r.case_id"
    q -header -separator '  ' "$drift_sql" >"$reports/drift.txt"
    n_drift=$(q "SELECT count(DISTINCT case_id) FROM ($drift_sql)")
    echo "nightly: drift: $n_drift passing cases whose error grew more than ${drift_factor}x (list: $reports/drift.txt)"
    [ "$n_drift" -gt 0 ] && head -n 11 "$reports/drift.txt"
fi

# The standards' self-check, in a scratch database of its own (the history stays clean).
false_alarms=0
seeds=${ULPGYM_SEED_CHECK-2 3 4}
for seed in $seeds; do
    sdb=$reports/seed-check-$seed.db
    rm -f "$sdb" "$sdb-wal" "$sdb-shm"
    # shellcheck disable=SC2086 # the options are words
    "$bin" sweep --db "$sdb" --seed "$seed" --backend sim --no-regressions --quiet --fail-on never --top 0 \
        ${ULPGYM_SEED_CHECK_ARGS:-} >/dev/null
    [ $? -le 1 ] || die "self-check sweep at seed $seed failed"
    n=$(sqlite3 -batch "$sdb" "SELECT count(*) FROM results WHERE verdict != 'PASS'")
    m=$(sqlite3 -batch "$sdb" "SELECT count(*) FROM verdicts WHERE standard = 'certified' AND verdict = 'FAIL'")
    echo "nightly: self-check at plan seed $seed: $n cases fail their primary standard, $m fail certified ($sdb)"
    false_alarms=$((false_alarms + n + m))
done
mutant_escapes=0
if [ "${ULPGYM_MUTANT_CHECK:-$([ -z "${ULPGYM_BIN:-}" ] && echo 1 || echo 0)}" = 1 ]; then
    log=$reports/mutant-check.log
    if ULPGYM_PLAN_SHARE=full ctest --test-dir build -L plan -j "$(nproc)" >"$log" 2>&1; then
        echo "nightly: full-plan mutant check: every mutant caught, every correct case passes ($log)"
    else
        mutant_escapes=1
        echo "nightly: full-plan mutant check FAILED: $(grep -c 'Failed' "$log") per-op tests ($log)"
    fi
fi
[ "$n_new" -gt 0 ] && exit 1
[ "$false_alarms" -gt 0 ] && exit 3
[ "$mutant_escapes" -gt 0 ] && exit 4
[ "$gate_drift" = 1 ] && [ "$n_drift" -gt 0 ] && exit 5
exit 0
