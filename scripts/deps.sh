#!/usr/bin/env bash
# deps.sh — installs the Debian packages ulpgym needs, only those missing.
# Build: cmake, a C compiler, MPFR/GMP, SQLite, cJSON. Fuzzing: clang + libFuzzer's runtime.
# Tests: xmllint (JUnit schema), python3 with numpy (the numpy replay example), python3-venv, python3-pip and
# python3-pytest (the Python package installed into a venv and its pytest plugin, tests/test_python_package.sh);
# chromium (HTML report) when ULPGYM_WITH_BROWSER=1; clang-format (tests/test_format.sh, the style check) when
# ULPGYM_WITH_FORMAT_CHECK=1;
# python3-torch with OpenBLAS (the torch replay driver, tests/test_replay_torch.sh, and the torch float64 yardstick
# of scripts/oracle_vs_torch.sh, which must not run on the reference BLAS; large) when ULPGYM_WITH_TORCH=1.
set -euo pipefail
pkgs=(cmake make gcc clang libclang-rt-14-dev libmpfr-dev libgmp-dev libsqlite3-dev libcjson-dev sqlite3 git
      libxml2-utils python3 python3-numpy python3-venv python3-pip python3-pytest)
[ "${ULPGYM_WITH_BROWSER:-0}" = 1 ] && pkgs+=(chromium)
[ "${ULPGYM_WITH_FORMAT_CHECK:-0}" = 1 ] && pkgs+=(clang-format)
[ "${ULPGYM_WITH_TORCH:-0}" = 1 ] && pkgs+=(python3-torch libopenblas0-pthread)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps.sh: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y "${missing[@]}"
}
