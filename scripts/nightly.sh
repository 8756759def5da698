#!/usr/bin/env bash
# nightly.sh — the nightly job: build, sweep the default plan, compare the run like for like
# (`ulpgym diff --like-for-like`: with the last finished run of the same plan hash, case
# selection, backend, sample and deciding standard), write the run's reports (HTML, JUnit,
# JSON, CSV) and the diff, and exit 1 when a case fails that did not fail before (0: no
# new failures, 2: the job itself failed);
# then the standards' self-check: the correct sim kernels over the whole plan at other
# plan seeds must pass under each op's primary standard and under certified (3: a false
# alarm, i.e. a tolerance or contract fitted to one seed's cases); then, when the script
# built ulpgym itself, the per-op plan tests over every plan case of every mutant
# (ULPGYM_PLAN_SHARE=full ctest -L plan; CI runs only their stratified share) (4: a mutant
# escapes the full plan or the correct kernel fails a case).
#
# Drift before failure: cases that pass in both runs but now use at least a quarter of what
# their deciding standard allows and more than a factor (--drift-factor F, default 4) times
# what they used before (their headroom, results.used) are listed, largest growth first,
# in drift.txt; with --gate drift they fail the night (5).
#
# Usage: scripts/nightly.sh [--gate drift] [--drift-factor F] [ulpgym sweep options...]
#        (e.g. --group GreenLight -j 16)
# Environment:
#   ULPGYM_DB          results database (default ./ulpgym.db); history accumulates there
#   ULPGYM_BIN         use this ulpgym binary and skip deps/build (CI, tests, clusters)
#   ULPGYM_REPORT_DIR  where the reports, the diff, new_failures.txt and drift.txt go
#                      (default ./ulpgym-reports, in the source tree the script runs from)
#   ULPGYM_SEED_CHECK  plan seeds of the self-check (default: three fresh seeds drawn from the
#                      date, YYYYMMDD1..3, so no rule is fitted to a fixed set of seeds; they are
#                      printed and kept in seed-check.txt; empty: skip it); at each seed the
#                      correct sim kernels and every op's legal variants (legal_*) are swept
#   ULPGYM_SEED_CHECK_ARGS  extra sweep options for the self-check (default: the whole plan)
#   ULPGYM_MUTANT_CHECK  1 (default when this script builds) runs the full-plan mutant
#                      check through ctest in build/; 0 skips it
# Files written into the report folder (RUN is the run's ID):
#   nightly-RUN.html, nightly-RUN.xml (JUnit), nightly-RUN.json, nightly-RUN.csv  the run's report
#   diff.txt, diff.json    `ulpgym diff --like-for-like` as text and as JSON (ulpgym-diff/1)
#   new_failures.txt       the new failures, tab-separated under a header (every failing case
#                          when there is no run to compare with)
#   drift.txt              the drifting cases, the same columns
# "New failure": a case whose verdict now is neither PASS nor SKIP, and which either had
# no result in the compared run or had PASS/SKIP there; "fixed" passes now and failed
# there; "still failing" failed in both. The script says whether the code (git revision)
# changed between the two runs; a run with no like-for-like predecessor says so and
# counts every failure as new. Needs bash and coreutils, sed, grep, awk; not the sqlite3 shell.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
db=${ULPGYM_DB:-$PWD/ulpgym.db}
reports=${ULPGYM_REPORT_DIR:-$PWD/ulpgym-reports}
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
mkdir -p "$reports" || die "cannot create $reports"

# --fail-on never: the failing cases are this script's to judge (new ones against the like-for-like run, below)
"$bin" sweep --db "$db" --no-progress --fail-on never "$@"
status=$?
# 1 = the oracle self-check found a rounding that changes: reported, but the run is complete
# 3 = an engine failure (disk full, file size limit: the run is marked failed), 130 = interrupted: the job failed
[ $status -eq 0 ] || [ $status -eq 1 ] || die "sweep exited with status $status (an interrupted or failed run continues with: $bin sweep --db $db --resume latest)"

# The comparison: `ulpgym diff --like-for-like` (the latest run against its like-for-like predecessor).
ud() { "$bin" diff --like-for-like "$@" --db "$db" --fail-on never --factor "$drift_factor"; }
ud latest >"$reports/diff.txt" || die "ulpgym diff --like-for-like failed: $(head -c 300 "$reports/diff.txt")"
run=$(sed -n 's/^like for like: run \([0-9][0-9]*\) .*/\1/p' "$reports/diff.txt")
prev=$(sed -n 's/^like for like: run [0-9]* compared with run \([0-9][0-9]*\),.*/\1/p' "$reports/diff.txt")
[ -n "$run" ] || die "ulpgym diff named no run: $(head -c 300 "$reports/diff.txt")"
ud "$run" --json >"$reports/diff.json" || die "ulpgym diff --json failed"
echo
echo "nightly: run $run$([ -n "$prev" ] && echo ", compared with run $prev (same plan, selection and backend)" ||
    echo ", no earlier finished run of the same plan, selection and backend to compare with")"

for fmt in html junit json csv; do
    ext=$fmt
    [ "$fmt" = junit ] && ext=xml
    out=$reports/nightly-$run.$ext
    if "$bin" report --db "$db" --run "$run" --format "$fmt" -o "$out" 2>"$reports/report.err"; then
        echo "nightly: report $out"
    else
        echo "nightly: no $fmt report: $(head -n 1 "$reports/report.err")"
    fi
done
rm -f "$reports/report.err"

sed -n 's/^  code changed: /nightly: code changed: /p' "$reports/diff.txt"
# new failures: against the compared run, or every failing case when there is none
ud "$run" --list "$([ -n "$prev" ] && echo new_failures || echo failing)" >"$reports/new_failures.txt" ||
    die "ulpgym diff --list failed"
rows() { echo $(($(wc -l <"$1") - 1)); }
n_new=$(rows "$reports/new_failures.txt")
counts=$(sed -n 's/^\([0-9]*\) new failures, \([0-9]*\) fixed, \([0-9]*\) still failing, \([0-9]*\) drift$/\2 \3/p' \
    "$reports/diff.txt")
read -r n_fixed n_still <<<"${counts:-0 0}"
echo "nightly: $n_new new failures, $n_fixed fixed, $n_still still failing (list: $reports/new_failures.txt)"
echo "nightly: $(grep -m1 "^run $run: " "$reports/diff.txt")"
if [ "$n_new" -gt 0 ] && [ -n "$prev" ]; then # the diff's section: figures and triage lines
    sed -n '/^NEW FAILURES: [1-9]/,/^$/p' "$reports/diff.txt" | head -n 41
elif [ "$n_new" -gt 0 ]; then
    head -n 21 "$reports/new_failures.txt"
fi

# Drift: both runs pass the case, but its headroom used grew more than the factor (to at least 0.25).
n_drift=0
if [ -n "$prev" ]; then
    ud "$run" --list drift >"$reports/drift.txt" || die "ulpgym diff --list drift failed"
    n_drift=$(rows "$reports/drift.txt")
    echo "nightly: drift: $n_drift passing cases whose headroom used grew more than ${drift_factor}x (list: $reports/drift.txt)"
    [ "$n_drift" -gt 0 ] && head -n 11 "$reports/drift.txt"
fi
echo "nightly: the comparison: $reports/diff.txt (JSON: $reports/diff.json)"

# The standards' self-check, in a scratch database of its own (the history stays clean).
# How many cases of the latest run of database $1 `ulpgym failures` lists (options $2...).
n_failing() {
    local sdb=$1
    shift
    "$bin" failures --db "$sdb" "$@" | sed -n '1s/^run [0-9]* (backend .*): \([0-9][0-9]*\) case.*/\1/p'
}
# The legal kernel variants (`ops show OP`: legal_*) as OP:VARIANT, of the ops the self-check
# sweeps (its --op options, else every op); none when its options pick a kernel themselves.
legal_variants() {
    local args=" ${ULPGYM_SEED_CHECK_ARGS:-} " ops op
    case $args in *" --kernel-variant "* | *" --backend "*) return 0 ;; esac
    ops=$(printf '%s\n' $args | awk 'prev == "--op" {print} {prev = $0}')
    [ -n "$ops" ] || ops=$("$bin" ops | awk '$3 == "implemented" {print $2}')
    for op in $ops; do
        "$bin" ops show "$op" | awk -v op="$op" '$1 ~ /^legal_/ && NF > 1 {print op ":" $1}'
    done
}
false_alarms=0
today=$(date -u +%Y%m%d)
seeds=${ULPGYM_SEED_CHECK-${today}1 ${today}2 ${today}3}
[ -z "$seeds" ] || echo "nightly: self-check plan seeds: $seeds" | tee "$reports/seed-check.txt"
for seed in $seeds; do
    sdb=$reports/seed-check-$seed.db
    rm -f "$sdb" "$sdb-wal" "$sdb-shm"
    # shellcheck disable=SC2086 # the options are words
    "$bin" sweep --db "$sdb" --seed "$seed" --backend sim --no-regressions --quiet --fail-on never --top 0 \
        ${ULPGYM_SEED_CHECK_ARGS:-} >/dev/null
    [ $? -le 1 ] || die "self-check sweep at seed $seed failed"
    n=$(n_failing "$sdb")
    m=$(n_failing "$sdb" --standard certified)
    [ -n "$n" ] && [ -n "$m" ] || die "self-check at seed $seed: ulpgym failures could not be read"
    echo "nightly: self-check at plan seed $seed: $n cases fail their primary standard, $m fail certified ($sdb)"
    false_alarms=$((false_alarms + n + m))
    for lv in $(legal_variants); do # OP:VARIANT, each a false-alarm test of its own
        # shellcheck disable=SC2086 # the options are words
        "$bin" sweep --db "$sdb" --seed "$seed" --op "${lv%%:*}" --backend "sim:${lv#*:}" --no-regressions \
            --quiet --fail-on never --top 0 ${ULPGYM_SEED_CHECK_ARGS:-} >/dev/null
        [ $? -le 1 ] || die "self-check sweep of ${lv#*:} at seed $seed failed"
        n=$(n_failing "$sdb")
        m=$(n_failing "$sdb" --standard certified)
        [ -n "$n" ] && [ -n "$m" ] || die "self-check at seed $seed: ulpgym failures could not be read"
        [ $((n + m)) -eq 0 ] || echo "nightly: self-check at plan seed $seed: the legal variant ${lv#*:} of ${lv%%:*}: $n cases fail their primary standard, $m fail certified"
        false_alarms=$((false_alarms + n + m))
    done
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
