#!/usr/bin/env bash
# sweep.sh — the main job on a fresh machine: install what is missing, build, sweep the
# default nightly plan into ./ulpgym.db (or $ULPGYM_DB), print a summary and write
# reports/latest.html and reports/latest.md.
# Extra arguments go to `ulpgym sweep` (e.g. --group GreenLight, --kernel-variant ...).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh >/dev/null
db=${ULPGYM_DB:-./ulpgym.db}
./build/ulpgym sweep --db "$db" "$@"
echo
./build/ulpgym history --db "$db" --last 5
mkdir -p reports
./build/ulpgym report --db "$db" --run latest --format html -o reports/latest.html
./build/ulpgym report --db "$db" --run latest --format md -o reports/latest.md
echo "report: $(pwd)/reports/latest.html (markdown: reports/latest.md)"
