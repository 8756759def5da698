#!/usr/bin/env bash
# test_failures.sh — failures without SQL: a mutant sweep's summary ends with its five most
# severe failing cases, each with the figure that decided it and a triage line that pasted
# into sh reruns the case and shows its FAIL; `ulpgym failures` lists them all (text, JSON with
# the database's count, --standard, --op, --top); bad input is one line and exit 2; rows a
# hostile database holds (control characters, a case ID that is no case ID) are printed
# escaped and get no triage line.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null && command -v python3 >/dev/null || { echo "sqlite3 or python3 missing: skipped"; exit 77; }
db="$T/f.db"

# --- the summary of a mutant sweep ---
# (decided by pypto, whose figures rank by failed / (allowed + 1); attn_softmax's own primary is certified)
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --db "$db" --quiet --no-regressions --primary pypto
cp "$T/out" "$T/summary"
n_fail=$(sqlite3 "$db" "select count(*) from results where run_id=1 and verdict not in ('PASS','SKIP')")
[ "$n_fail" -gt 5 ] && ok || bad "the bf16-sum mutant fails only $n_fail cases: the test proves nothing"
expect_grep "^failing cases, most severe first \(5 of $n_fail\):$" "$T/summary"
expect_eq "$(grep -cE '^ +[0-9]+\. [0-9a-f]{16}  attn_softmax +(bf16|fp16|fp32) +FAIL +y: [0-9]+ of [0-9]+ checked elements beyond atol' "$T/summary")" 5 \
    "five ranked rows with their deciding figure"
expect_eq "$(grep -cE '^ +[^ ]*ulpgym'"'"'? triage [0-9a-f]{16} --db [^ ]+ --run 1$' "$T/summary")" 5 "five triage lines"
expect_grep "^  \($((n_fail - 5)) more: [^ ]*ulpgym'? failures --run 1 --db [^ ]*f\.db\)$" "$T/summary"
# the most severe first: the first row's severity is the largest failed / (allowed + 1) of the run
first=$(grep -oE '^ +1\. [0-9a-f]{16}' "$T/summary" | awk '{print $2}')
top=$(sqlite3 "$db" "select v.case_id from verdicts v join results r using (run_id, case_id) where r.run_id=1
    and v.standard='pypto' and r.verdict='FAIL' order by json_extract(v.thresholds, '\$.y.failed') * 1.0 /
    (json_extract(v.thresholds, '\$.y.allowed') + 1) desc, v.case_id limit 1")
expect_eq "$first" "$top" "ranked by severity"

# a triage line pasted into sh reruns the case: the same FAIL, the stored metrics reproduced
line=$(grep -E ' triage [0-9a-f]{16} --db ' "$T/summary" | head -1 | sed 's/^ *//')
expect_status 1 sh -c "$line"
expect_grep 'reproduced exactly' "$T/out"
expect_grep 'verdict FAIL' "$T/out"

# --top 0: no list; --top 2: two rows and the rest counted
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --db "$db" --quiet --no-regressions --top 0 \
    --primary pypto
if grep -q 'failing cases' "$T/out"; then bad "--top 0 still lists failures"; else ok; fi
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --db "$db" --quiet --no-regressions --top 2 \
    --primary pypto
expect_eq "$(grep -cE ' triage [0-9a-f]{16} ' "$T/out")" 2 "--top 2"
expect_grep "^  \($((n_fail - 2)) more: " "$T/out"
expect_status 2 ug sweep --op attn_softmax --db "$db" --top -1

# --- ulpgym failures ---
expect_status 0 ug failures --db "$db" --run 1
expect_grep "^run 1 \(backend sim:mut_bf16_sum\): $n_fail cases failing" "$T/out"
expect_eq "$(grep -cE ' triage [0-9a-f]{16} --db ' "$T/out")" "$n_fail" "every failure listed with its triage line"
expect_status 0 ug failures --db "$db" --run 1 --json
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
for i, r in enumerate(rows):
    assert r["rank"] == i + 1 and len(r["case_id"]) == 16 and r["verdict"] == "FAIL", r
    assert r["op"] == "attn_softmax" and r["dtype"] in ("bf16", "fp16", "fp32"), r
    assert r["standards"] == ["pypto"] and "y" in r["thresholds"]["pypto"], r
    assert " triage " + r["case_id"] + " --db " in r["triage"] and r["triage"].endswith(" --run 1"), r
    assert r["figure"].startswith("y: ") and "checked elements beyond atol" in r["figure"], r
sev = [r["severity"] for r in rows]
assert sev == sorted(sev, reverse=True), sev
' "$T/out" "$n_fail" && ok || bad "failures --json: $(head -c 300 "$T/out")"
# latest is the default run; --top; --op
expect_status 0 ug failures --db "$db" --top 3
expect_grep '^run 3 ' "$T/out"
expect_eq "$(grep -cE ' triage [0-9a-f]{16} ' "$T/out")" 3 "failures --top 3"
expect_status 0 ug failures --db "$db" --run 1 --op attn_softmax --op glm_gate --json
python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == int(sys.argv[2])' "$T/out" "$n_fail" && ok ||
    bad "--op attn_softmax keeps every row"
expect_status 0 ug failures --db "$db" --run 1 --op glm_gate --json
expect_eq "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/out")" 0 "--op of another op: none"
# --standard certified: the cases whose stored certified verdict is FAIL, worded by its figures
n_cert=$(sqlite3 "$db" "select count(*) from verdicts where run_id=1 and standard='certified' and verdict='FAIL'")
expect_status 0 ug failures --db "$db" --run 1 --standard certified
expect_grep "^run 1 .*: $n_cert cases whose stored certified verdict is FAIL" "$T/out"
expect_eq "$(grep -cE 'checked elements outside the certified bound \(worst [0-9.e+]+ x\)$' "$T/out")" "$n_cert" \
    "every row worded by the certified figures"
expect_status 0 ug failures --db "$db" --run 1 --standard certified --json
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == int(sys.argv[2]) and all(r["standards"] == ["certified"] for r in rows), len(rows)
' "$T/out" "$n_cert" && ok || bad "failures --standard certified --json"

# bad input: one line, exit 2
for args in "--op no_such_op" "--standard bogus" "--run 99" "--run x" "--top many" "--frobnicate"; do
    # shellcheck disable=SC2086 # the options are words
    expect_status 2 ug failures --db "$db" $args
    expect_eq "$(wc -l <"$T/err")" 1 "failures $args: one-line error"
done
echo "not a database" >"$T/notadb.db"
expect_status 2 ug failures --db "$T/notadb.db"
expect_grep 'not a ulpgym database' "$T/err"
expect_status 2 ug failures --db "$T/missing.db"

# --- a hostile database: strings are data, a case ID is checked before a command is built from it ---
hdb="$T/hostile.db"
cp "$db" "$hdb"
esc=$(printf '\033')
sqlite3 "$hdb" "
insert into cases values ('0123'||char(27)||'[31m\$(touch $T/pwned)', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message)
    values (3, '0123'||char(27)||'[31m\$(touch $T/pwned)', 'CRASH', 'pypto', 'boom'||char(27)||'[2J'||char(7));
insert into cases values ('00000000deadbeef', 'attn_softmax'||char(27)||']0;title'||char(7), 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message) values (3, '00000000deadbeef', 'FAIL', 'pypto', 'm');
insert into verdicts values (3, '00000000deadbeef', 'pypto', 'FAIL', '{\"y\":{\"failed\":');
insert into cases values ('00000000feedface', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message)
    values (3, '00000000feedface', 'FAIL'||char(27)||'[2J', 'pypto', 'odd verdict');
insert into cases values ('0123456789ABCDEF', 'attn_softmax', 'GreenLight', 'bf16', '{}', 'plan', 'x');
insert into results(run_id, case_id, verdict, primary_standard, message) values (3, '0123456789ABCDEF', 'ERROR', 'pypto', 'e');"
expect_status 0 ug failures --db "$hdb"
if grep -q "$esc" "$T/out" || grep -q $'\a' "$T/out"; then bad "a control character reached the terminal"; else ok; fi
expect_grep '0123\\x1b\[31m\$\(touch ' "$T/out"
expect_grep 'boom\\x1b\[2J\\x07' "$T/out"
expect_grep '00000000deadbeef  attn_softmax\\x1b\]0;title\\x07 +bf16  FAIL +fails pypto$' "$T/out"
expect_grep '00000000feedface  attn_softmax +bf16  FAIL\\x1b\[2J +odd verdict$' "$T/out"
expect_grep 'triage 00000000deadbeef --db ' "$T/out"
expect_grep 'triage 00000000feedface --db ' "$T/out"
expect_eq "$(grep -c 'the case ID is not 16 hex digits; no triage line' "$T/out")" 2 "two rows refused for triage"
expect_grep '^ +\(row [0-9]+: the case ID is not 16 hex digits; no triage line\)$' "$T/out"
if grep -qE 'triage (0123|.0123)' "$T/out"; then bad "a triage line built from a hostile case ID"; else ok; fi
[ ! -e "$T/pwned" ] && ok || bad "a command in a case ID ran"
expect_status 0 ug failures --db "$hdb" --json
python3 -c '
import json, sys
rows = {r["case_id"]: r for r in json.load(open(sys.argv[1]))}
evil = [r for k, r in rows.items() if k.startswith(r"0123\x1b[31m$(touch ")][0]
assert evil["triage"] is None and "16 hex digits" in evil["refused"] and evil["verdict"] == "CRASH", evil
assert evil["figure"] == r"boom\x1b[2J\x07" and evil["severity"] == "inf", evil
upper = rows["0123456789ABCDEF"]
assert upper["triage"] is None and upper["refused"], upper
dead = rows["00000000deadbeef"]
assert dead["op"] == r"attn_softmax\x1b]0;title\x07" and dead["figure"] == "fails pypto", dead
assert " triage 00000000deadbeef " in dead["triage"], dead
odd = rows["00000000feedface"]
assert odd["verdict"] == r"FAIL\x1b[2J" and odd["figure"] == "odd verdict", odd
' "$T/out" && ok || bad "hostile rows in JSON: $(head -c 400 "$T/out")"
[ ! -e "$T/pwned" ] && ok || bad "a command in a case ID ran"
finish
