#!/usr/bin/env bash
# test_kernel_digests.sh — the bit-for-bit guard of sim kernel speed work: every variant
# (the correct kernel and its mutants) of every op runs on every case of the CI share of
# the default plan (`ulpgym bench kernels --kernel-variant all --digest --share 120`, the
# cases the per-op tests run: gen/plan_share.h), and the FNV-1a-64 digest of its
# raw output bytes must equal the one in tests/fixtures/kernel_digests.txt, written with
# the kernels before they were made fast. A differing digest fails and is named by case
# ID, op and variant; runs the fixture lacks (a new plan case, op or mutant) or has but the
# plan no longer makes are listed without failing, so a plan change on another branch does
# not break it, as long as at least 90 % of the fixture's runs are still compared. ~1 min
# on one core (case building dominates).
# ULPGYM_WRITE_DIGESTS=1 rewrites the fixture (only when the numerics change on purpose).
source "$(dirname "$0")/lib.sh"
FIX=${ULPGYM_DATA:?}/tests/fixtures/kernel_digests.txt
[ -f "$FIX" ] || [ -n "${ULPGYM_WRITE_DIGESTS:-}" ] || { echo "no $FIX: skipped"; exit 77; }
ug bench kernels --digest --no-time --kernel-variant all --share 120 >"$T/got" 2>"$T/err"
expect_eq "$?" 0 "bench kernels exit status ($(head -c 300 "$T/err"))"
if [ -n "${ULPGYM_WRITE_DIGESTS:-}" ]; then
    { echo "# kernel_digests.txt — case ID, op, kernel variant, FNV-1a-64 of the raw output bytes, for every"
      echo "# default-plan case and variant (tests/test_kernel_digests.sh; ULPGYM_WRITE_DIGESTS=1 rewrites it)."
      cat "$T/got"; } >"$FIX"
    echo "wrote $FIX"
fi

# compare FIXTURE GOT: prints one line per differing, missing or new (case, op, variant).
compare() {
    awk 'FNR == NR { if ($0 !~ /^#/) want[$1 " " $2 " " $3] = $4; next }
         { k = $1 " " $2 " " $3; seen[k] = 1
           if (!(k in want)) print "new " k " " $4
           else if (want[k] != $4) print "differs " k ": " $4 " (fixture " want[k] ")" }
         END { for (k in want) if (!(k in seen)) print "missing " k }' "$1" "$2"
}
compare "$FIX" "$T/got" >"$T/diff"
if grep -q '^differs ' "$T/diff"; then
    bad "$(grep -c '^differs ' "$T/diff") kernel runs differ from the fixture:"; grep '^differs ' "$T/diff" | head -50 >&2
else ok; fi
if grep -qv '^differs ' "$T/diff"; then
    echo "not compared (new or gone; ULPGYM_WRITE_DIGESTS=1 rewrites the fixture):"; grep -v '^differs ' "$T/diff" | head -20
fi
want=$(grep -vc '^#' "$FIX")
gone=$(grep -c '^missing ' "$T/diff")
if [ $((10 * (want - gone))) -ge $((9 * want)) ]; then ok; else bad "only $((want - gone)) of $want fixture runs compared"; fi

# The comparison can fail: one digest altered and one line dropped are both reported.
awk 'NR == 5 { $4 = "0000000000000000" } NR != 9' "$FIX" >"$T/bad_fix"
compare "$T/bad_fix" "$T/got" >"$T/bad_diff"
expect_eq "$(grep -c '^differs ' "$T/bad_diff")" 1 "an altered digest is reported"
expect_eq "$(grep -c '^new ' "$T/bad_diff")" "$(($(grep -c '^new ' "$T/diff") + 1))" "a run the fixture lacks is reported"
finish
