#!/usr/bin/env bash
# test_nightly_planted.sh — scripts/nightly.sh with one planted bug after a clean night, with
# a PATH that has no sqlite3 shell (symlinks to the commands the script runs).
#
# The bug: both nights run the same plugin file, examples/plugin_sim (the sim kernels behind
# the public ABI), and on the second night ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile makes it
# run attn_softmax's tail-tile mutant (the last partial tile left out of the row sum), as a
# broken kernel build at the same path would. The run stays like for like (same plan hash,
# backend, selection, sample and deciding standard: a kernel change is what a nightly must
# catch), unlike `--kernel-variant`, which names another backend. What is checked:
#   - `ulpgym diff --like-for-like --json` lists exactly the new failures (read here from the
#     database with Python's own sqlite3 module), each with its figure and triage line;
#   - the night exits 1 and new_failures.txt holds their IDs; diff.txt is grouped by kind;
#   - the HTML, JUnit, JSON (and CSV) reports of the run sit beside each other;
#   - the first night (nothing to compare) and a night of another selection with failures
#     (every failure counts as new), and the same bug a night later (still failing, exit 0).
. "$(dirname "$0")/lib.sh"
NIGHTLY=${ULPGYM_DATA:?}/scripts/nightly.sh
SIMPLUG=$(dirname "$UG_BIN")/examples/libulpgym_plugin_sim.so
[ -f "$SIMPLUG" ] || { echo "skipped: no $SIMPLUG"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }

# The commands nightly.sh runs with ULPGYM_BIN set, and nothing else: no sqlite3.
mkdir -p "$T/bin"
for c in bash env dirname mkdir rm sed grep awk wc head cat; do
    p=$(command -v "$c") || { echo "skipped: no $c"; exit 77; }
    ln -s "$p" "$T/bin/$c"
done
(PATH=$T/bin command -v sqlite3 >/dev/null) && bad "sqlite3 is on the test PATH" || ok
night() { PATH=$T/bin expect_status "$@"; }

export ULPGYM_DB=$T/n.db ULPGYM_REPORT_DIR=$T/reports ULPGYM_SEED_CHECK=
SEL=(--op attn_softmax --limit 40 -j2 --backend "plugin:$SIMPLUG")

# night 1: clean, nothing to compare with
night 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep '^nightly: run 1, no earlier finished run of the same plan, selection and backend' "$T/out"
expect_grep '^nightly: 0 new failures' "$T/out"
expect_status 0 ug diff --like-for-like --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["format"] == "ulpgym-diff/1" and d["run"] == 1 and d["compared_run"] is None and d["like_for_like"] is True, d
assert d["counts"] == {"new_failures": 0, "fixed": 0, "still_failing": 0, "drift": 0}, d["counts"]' "$T/out" &&
    ok || bad "diff --json of a run with nothing to compare"

# night 2: the planted bug
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile night 1 bash "$NIGHTLY" "${SEL[@]}"
cp "$T/out" "$T/night2.out"
expect_grep '^nightly: run 2, compared with run 1 \(same plan, selection and backend\)' "$T/night2.out"
# the new failures, as the database holds them (Python's sqlite3 module, not ulpgym's queries)
python3 - "$ULPGYM_DB" >"$T/want.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT b.case_id FROM results b LEFT JOIN results a ON a.case_id = b.case_id AND a.run_id = 1
                     WHERE b.run_id = 2 AND b.verdict NOT IN ('PASS', 'SKIP')
                     AND coalesce(a.verdict, 'PASS') IN ('PASS', 'SKIP') ORDER BY 1""").fetchall()
print("\n".join(r[0] for r in rows))
PY
n_new=$(grep -c . "$T/want.txt")
[ "$n_new" -gt 0 ] && ok || bad "the planted bug failed no case"
expect_grep "^nightly: $n_new new failures, 0 fixed, 0 still failing" "$T/night2.out"
expect_grep "^NEW FAILURES: $n_new " "$T/night2.out"   # the diff's section, printed by the night
expect_eq "$(awk -F'\t' 'NR > 1 {print $1}' "$T/reports/new_failures.txt" | sort)" "$(cat "$T/want.txt")" \
    "new_failures.txt lists exactly the new failures"

# the diff as JSON: exactly the new failures, each with its figure and a triage line; nothing else moved
expect_status 1 ug diff --like-for-like --json
python3 - "$T/out" "$T/want.txt" <<'PY' && ok || bad "diff --like-for-like --json"
import json, sys
def no_nan(x): raise ValueError("non-finite number in JSON: " + x)
d = json.load(open(sys.argv[1]), parse_constant=no_nan)
want = open(sys.argv[2]).read().split()
assert d["run"] == 2 and d["compared_run"] == 1 and d["like_for_like"] is True, d
got = sorted(x["case_id"] for x in d["new_failures"])
assert got == want, (got, want)
assert d["counts"]["new_failures"] == len(want) and d["counts"]["fixed"] == 0 and d["counts"]["still_failing"] == 0
assert d["fixed"] == [] and d["still_failing"] == [], d
for x in d["new_failures"]:
    assert x["op"] == "attn_softmax" and x["verdict_a"] == "PASS" and x["verdict_b"] != "PASS", x
    assert x["figure"].startswith("y: ") and "outside the certified bound" in x["figure"], x
    assert (" triage " + x["case_id"] + " --db ") in x["triage"] and " --run 2" in x["triage"], x
    assert "--backend" in x["triage"], x   # a plugin run: triage loads it only when named
    assert x["used_b"] is None or x["used_b"] > 1, x
PY
# the text: one section per kind, in order, not one line kind after another per case
expect_status 1 ug diff --like-for-like
awk '/^(NEW FAILURES|FIXED|STILL FAILING|DRIFT|CERTIFIED FLIPS)[: ]/{print $1}' "$T/out" | tr '\n' ' ' >"$T/sections"
expect_eq "$(cat "$T/sections")" "NEW FIXED: STILL DRIFT: CERTIFIED " "diff sections in order"
expect_eq "$(grep -cE '^  [0-9a-f]{16}  attn_softmax +[a-z0-9]+ +PASS -> [A-Z]+  y: ' "$T/out")" "$n_new" "one line per new failure"
expect_status 0 ug diff 1 2 --fail-on never --list new_failures
expect_eq "$(awk -F'\t' 'NR > 1 {print $1}' "$T/out" | sort)" "$(cat "$T/want.txt")" "--list new_failures"

# the run's reports, beside each other
for f in nightly-2.html nightly-2.xml nightly-2.json diff.txt diff.json; do
    [ -s "$T/reports/$f" ] && ok || bad "nightly wrote no $f"
done
python3 - "$T/reports/nightly-2.xml" "$n_new" <<'PY' && ok || bad "nightly JUnit: the failures"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
fails = [c for c in root.iter("testcase") if c.find("failure") is not None]
assert len(fails) == int(sys.argv[2]), (len(fails), sys.argv[2])
PY
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/reports/nightly-2.json" && ok || bad "nightly JSON report"
if ug report --db "$ULPGYM_DB" --run 2 --format csv -o "$T/probe.csv" 2>/dev/null; then
    python3 -c 'import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); assert rows' "$T/reports/nightly-2.csv" &&
        ok || bad "nightly CSV report"
fi

# night 3: the same bug, compared with night 2: nothing new, all still failing
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile night 0 bash "$NIGHTLY" "${SEL[@]}"
expect_grep '^nightly: run 3, compared with run 2' "$T/out"
expect_grep "^nightly: 0 new failures, 0 fixed, $n_new still failing" "$T/out"

# another selection, the bug in it: no run to compare with, so every failure counts as new
ULPGYM_PLUGIN_SIM_VARIANT=mut_tail_tile night 1 bash "$NIGHTLY" --op attn_softmax --limit 30 -j2 \
    --backend "plugin:$SIMPLUG"
expect_grep '^nightly: run 4, no earlier finished run' "$T/out"
n4=$(python3 - "$ULPGYM_DB" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM results WHERE run_id = 4 AND verdict NOT IN ('PASS', 'SKIP')").fetchone()[0])
PY
)
[ "$n4" -gt 0 ] && ok || bad "the bug failed nothing in the first 30 cases"
expect_grep "^nightly: $n4 new failures" "$T/out"
expect_eq "$(($(wc -l <"$T/reports/new_failures.txt") - 1))" "$n4" "first night: every failing case listed"
expect_status 0 ug diff --like-for-like 4           # nothing to compare with: exit 0 (--fail-on new)
expect_grep '^like for like: run 4 has no earlier finished run' "$T/out"
expect_status 1 ug diff --like-for-like 4 --fail-on fail

# a database from elsewhere: strings that are not valid UTF-8 still give valid JSON and escaped text
cp "$ULPGYM_DB" "$T/bad.db"
python3 - "$T/bad.db" "$(head -n 1 "$T/want.txt")" <<'PY' && ok || bad "writing the damaged strings"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE runs SET git_rev = CAST(x'61ff62' AS TEXT) WHERE run_id = 2")
c.execute("UPDATE cases SET dtype = CAST(x'6270c3' AS TEXT) WHERE case_id = ?", (sys.argv[2],))
c.commit()
PY
expect_status 1 ug diff 1 2 --json --db "$T/bad.db"
python3 - "$T/out" "$(head -n 1 "$T/want.txt")" <<'PY' && ok || bad "diff --json with invalid UTF-8 in the database"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))   # strict UTF-8
x = [x for x in d["new_failures"] if x["case_id"] == sys.argv[2]][0]
assert x["dtype"].startswith("bp") and d["git_rev"]["run"].startswith("a"), (x, d["git_rev"])
PY
expect_status 1 ug diff 1 2 --db "$T/bad.db"
expect_grep '^  code changed: .* -> a\\xff' "$T/out"
finish
