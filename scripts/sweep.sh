#!/usr/bin/env bash
# sweep.sh — the main job on a fresh machine: install what is missing, build, sweep the
# default nightly plan into ./ulpgym.db (or $ULPGYM_DB), print a summary and write
# ulpgym-reports/latest.html and ulpgym-reports/latest.md (or into $ULPGYM_REPORT_DIR): outside
# the source's reports/ folder, which holds the report code.
# Extra arguments go to `ulpgym sweep` (e.g. --group GreenLight, --kernel-variant ...).
# The sweep runs with --fail-on never, so failing cases do not stop the reports; pass
# --fail-on fail (or new) to have this script exit with the sweep's status 1 after them.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh >/dev/null
db=${ULPGYM_DB:-./ulpgym.db}
status=0
./build/ulpgym sweep --db "$db" --fail-on never "$@" || status=$?
[ "$status" -le 1 ] || exit "$status" # 2 bad input, 3 engine failure, 130 interrupted: no reports
echo
./build/ulpgym history --db "$db" --last 5
out=${ULPGYM_REPORT_DIR:-ulpgym-reports}
mkdir -p "$out"
./build/ulpgym report --db "$db" --run latest --format html -o "$out/latest.html"
./build/ulpgym report --db "$db" --run latest --format md -o "$out/latest.md"
echo "report: $(cd "$out" && pwd)/latest.html (markdown: $out/latest.md)"
exit "$status"
