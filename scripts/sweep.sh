#!/usr/bin/env bash
# sweep.sh — the main job on a fresh machine: install what is missing, build, sweep the
# default nightly plan into ./ulpgym.db (or $ULPGYM_DB) and print a summary.
# Extra arguments go to `ulpgym sweep` (e.g. --group GreenLight, --kernel-variant ...).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh >/dev/null
db=${ULPGYM_DB:-./ulpgym.db}
./build/ulpgym sweep --db "$db" "$@"
echo
./build/ulpgym history --db "$db" --last 5
if ./build/ulpgym help report >/dev/null 2>&1; then
    mkdir -p reports
    ./build/ulpgym report --db "$db" --run latest --format html -o reports/latest.html
    echo "report: $(pwd)/reports/latest.html"
fi
