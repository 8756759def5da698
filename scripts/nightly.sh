#!/usr/bin/env bash
# nightly.sh — the nightly job: build, sweep the default plan, write the report, diff the
# run against the previous finished run of the same plan, and exit 1 when a
# case fails that did not fail before (0: no new failures, 2: the job itself failed);
# then the standards' self-check: the correct sim kernels over the whole plan at other
# plan seeds must pass under each op's primary standard and under certified (3: a false
# alarm, i.e. a tolerance or contract fitted to one seed's cases).
#
# Usage: scripts/nightly.sh [ulpgym sweep options...]     (e.g. --group GreenLight -j 16)
# Environment:
#   ULPGYM_DB          results database (default ./ulpgym.db); history accumulates there
#   ULPGYM_BIN         use this ulpgym binary and skip deps/build (CI, tests, clusters)
#   ULPGYM_REPORT_DIR  where the report and new_failures.txt go (default ./reports)
#   ULPGYM_SEED_CHECK  plan seeds of the self-check (default "2 3 4"; empty: skip it)
#   ULPGYM_SEED_CHECK_ARGS  extra sweep options for the self-check (default: the whole plan)
# "New failure": a case whose verdict now is neither PASS nor SKIP, and which either had
# no result in the previous run or had PASS/SKIP there. The script also says whether the
# code (git revision) or the plan (plan hash) changed between the two runs, so a change
# in results can be told apart from a change in what was tested.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
db=${ULPGYM_DB:-$PWD/ulpgym.db}
reports=${ULPGYM_REPORT_DIR:-$PWD/reports}
die() { echo "nightly: $*" >&2; exit 2; }

if [ -n "${ULPGYM_BIN:-}" ]; then
    bin=$ULPGYM_BIN
else
    ./scripts/deps.sh || die "installing dependencies failed"
    ./scripts/build.sh >/dev/null || die "build failed"
    bin=$PWD/build/ulpgym
fi
command -v sqlite3 >/dev/null || die "sqlite3 (the command-line shell) is needed for the diff (scripts/deps.sh installs it)"
mkdir -p "$reports" || die "cannot create $reports"

"$bin" sweep --db "$db" --no-progress "$@"
status=$?
# 1 = the oracle self-check found a rounding that changes: reported, but the run is complete
[ $status -eq 0 ] || [ $status -eq 1 ] || die "sweep exited with status $status (interrupted runs continue with: $bin sweep --db $db --resume latest)"

q() { sqlite3 -batch "$db" "$@"; }
run=$(q "SELECT max(run_id) FROM runs WHERE merged_from IS NULL")
prev=$(q "SELECT max(p.run_id) FROM runs p, runs c WHERE c.run_id = $run AND p.run_id < $run AND p.status = 'done'
          AND p.plan_name IS c.plan_name AND p.merged_from IS NULL")
echo
echo "nightly: run $run$([ -n "$prev" ] && echo ", compared with run $prev" || echo ", no earlier finished run to compare with")"

if "$bin" report -h >/dev/null 2>&1; then
    "$bin" report --db "$db" --run "$run" --format html -o "$reports/nightly-$run.html" &&
        echo "nightly: report $reports/nightly-$run.html"
fi

if [ -n "$prev" ]; then
    q "SELECT CASE WHEN p.git_rev IS NOT c.git_rev THEN 'nightly: code changed: ' || p.git_rev || ' -> ' || c.git_rev END,
              CASE WHEN p.plan_hash IS NOT c.plan_hash THEN 'nightly: plan changed: hash ' || p.plan_hash || ' -> ' || c.plan_hash END,
              CASE WHEN p.backend IS NOT c.backend THEN 'nightly: backend changed: ' || p.backend || ' -> ' || c.backend END,
              CASE WHEN p.primary_standard IS NOT c.primary_standard THEN 'nightly: deciding standard changed: '
                   || coalesce(p.primary_standard, 'each op''s own') || ' -> '
                   || coalesce(c.primary_standard, 'each op''s own') END
       FROM runs p, runs c WHERE p.run_id = ${prev} AND c.run_id = $run" | tr '|' '\n' | grep -v '^$'
fi
new_failures="
SELECT r.case_id, c.op, c.dtype, coalesce(p.verdict, '(new case)') AS was, r.verdict AS now, r.message
FROM results r JOIN cases c USING (case_id)
LEFT JOIN results p ON p.case_id = r.case_id AND p.run_id = ${prev:-0}
WHERE r.run_id = $run AND r.verdict NOT IN ('PASS', 'SKIP') AND coalesce(p.verdict, 'PASS') IN ('PASS', 'SKIP')
ORDER BY c.op, r.case_id"
q -header -separator '  ' "$new_failures" >"$reports/new_failures.txt"
n_new=$(q "SELECT count(*) FROM ($new_failures)")
n_fixed=0
[ -n "$prev" ] && n_fixed=$(q "SELECT count(*) FROM results r JOIN results p ON p.case_id = r.case_id AND p.run_id = $prev
                               WHERE r.run_id = $run AND r.verdict = 'PASS' AND p.verdict NOT IN ('PASS', 'SKIP')")
echo "nightly: $n_new new failures, $n_fixed fixed (list: $reports/new_failures.txt)"
[ "$n_new" -gt 0 ] && head -n 21 "$reports/new_failures.txt"

# The standards' self-check, in a scratch database of its own (the history stays clean).
false_alarms=0
seeds=${ULPGYM_SEED_CHECK-2 3 4}
for seed in $seeds; do
    sdb=$reports/seed-check-$seed.db
    rm -f "$sdb" "$sdb-wal" "$sdb-shm"
    # shellcheck disable=SC2086 # the options are words
    "$bin" sweep --db "$sdb" --seed "$seed" --backend sim --no-regressions --quiet ${ULPGYM_SEED_CHECK_ARGS:-} >/dev/null
    [ $? -le 1 ] || die "self-check sweep at seed $seed failed"
    n=$(sqlite3 -batch "$sdb" "SELECT count(*) FROM results WHERE verdict != 'PASS'")
    m=$(sqlite3 -batch "$sdb" "SELECT count(*) FROM verdicts WHERE standard = 'certified' AND verdict = 'FAIL'")
    echo "nightly: self-check at plan seed $seed: $n cases fail their primary standard, $m fail certified ($sdb)"
    false_alarms=$((false_alarms + n + m))
done
[ "$n_new" -gt 0 ] && exit 1
[ "$false_alarms" -gt 0 ] && exit 3
exit 0
