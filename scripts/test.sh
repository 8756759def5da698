#!/usr/bin/env bash
# test.sh — installs what is missing, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# chromium: the HTML report test opens it; clang-format: tests/test_format.sh
ULPGYM_WITH_BROWSER=1 ULPGYM_WITH_FORMAT_CHECK=1 ./scripts/deps.sh
export ULPGYM_WITH_SLURM=1                # test_slurm_real may install Slurm and munge (~40 s, beside other tests)
./scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
