#!/usr/bin/env bash
# test_variant_codes.sh — every sim variant a declaration lists ("sim_variants") is tested by
# some sim kernel code as UG_VAR_<NAME>. A kernel gets its variant as that generated code
# (cmake/op_params.cmake); a declared name that no kernel tests would run as "sim" silently:
# test_plan_<op> catches that for a mutant (the plan no longer catches it), but not for a
# legal variant, whose job is to pass. The check must fail on a name no kernel tests, so it is
# run with one planted first.
source "$(dirname "$0")/lib.sh"
SRC=${ULPGYM_DATA:?ULPGYM_DATA is set by ctest}
command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
cd "$SRC"

# Prints "op name" for every declared variant but sim whose code no kernel source names.
untested() {
    python3 - "$@" <<'EOF'
import glob, json, re, sys
code = ''.join(open(f).read() for f in glob.glob('kernels/sim/**/*.[ch]', recursive=True))
named = set(re.findall(r'\bUG_VAR_[A-Z0-9_]+\b', code))
for f in sorted(glob.glob('oracles/*/*.json')) + sys.argv[1:]:
    decl = json.load(open(f))
    for v in decl.get('sim_variants', []):
        if v['name'] != 'sim' and 'UG_VAR_' + v['name'].upper() not in named:
            print(decl['op'], v['name'])
EOF
}

printf '{"op": "t_planted", "sim_variants": [{"name": "sim"}, {"name": "legal_never_written"}]}\n' >"$T/planted.json"
untested "$T/planted.json" >"$T/planted"
expect_grep '^t_planted legal_never_written$' "$T/planted"

untested >"$T/untested"
if [ -s "$T/untested" ]; then bad "declared variants no kernel tests (UG_VAR_<NAME>): $(tr '\n' ';' <"$T/untested")"; else ok; fi
python3 -c "import glob,json; print(sum(len(json.load(open(f)).get('sim_variants',[])) for f in glob.glob('oracles/*/*.json')))" >"$T/n"
# not a vacuous pass: each of the 34 ops declares sim, two mutants and a legal variant at least
if [ "$(cat "$T/n")" -ge 136 ]; then ok; else bad "only $(cat "$T/n") declared variants read"; fi
finish
