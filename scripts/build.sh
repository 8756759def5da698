#!/usr/bin/env bash
# build.sh — configure and build ulpgym into ./build (Release). Used by test.sh and sweep.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
