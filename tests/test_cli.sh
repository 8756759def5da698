#!/usr/bin/env bash
# test_cli.sh — the command line end to end: a small sweep stores a verdict for every
# case, triage reproduces stored metrics exactly, a mutant fails where the sim kernel
# passes, `sweep --primary` decides every case by the standard it names (and triage
# follows the run), and bad input (unknown op, malformed plan, unknown case ID, unknown
# --primary, a file that is not a database) gets a one-line error, exit status 2, and
# leaves no partial row behind.
. "$(dirname "$0")/lib.sh"
db="$T/cli.db"

# help on every command
for c in $(ug help | awk '/^  [a-z]+ /{print $1}'); do expect_status 0 ug "$c" -h; done

# plan --count ends with the total
expect_status 0 ug plan --op attn_softmax --count
expect_grep '^total [0-9]+$' "$T/out"
n_plan=$(awk '/^total/{print $2}' "$T/out")

# a sweep of one op: every case gets a verdict, all pass
expect_status 0 ug sweep --op attn_softmax --db "$db" --quiet --no-regressions
expect_eq "$(sqlite3 "$db" 'select count(*) from results where run_id=1')" "$n_plan" "results stored"
expect_eq "$(sqlite3 "$db" "select count(*) from results where run_id=1 and verdict<>'PASS'")" "0" "sim passes"
expect_eq "$(sqlite3 "$db" 'select count(distinct standard) from verdicts where run_id=1')" \
    "$(ug standards | grep -c '^  rule:')" "every standard stored"
expect_eq "$(sqlite3 "$db" 'select count(*) from pass_rate where run_id=1 and pass_pct=100')" "3" "pass_rate view per dtype"

# a mutant run (exit 1: it has failing cases, --fail-on fail by default), then triage of a case it fails: stored
# metrics reproduce exactly, and the case fails now (exit 1; 4 would be "not reproduced")
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --db "$db" --quiet
fail_id=$(sqlite3 "$db" "select case_id from results where run_id=2 and verdict='FAIL' limit 1")
[ -n "$fail_id" ] && ok || bad "the bf16-sum mutant failed no case"
expect_status 1 ug triage "${fail_id:0:8}" --db "$db"
expect_grep 'reproduced exactly' "$T/out"
expect_grep 'verdict FAIL' "$T/out"
expect_grep 'backend sim:mut_bf16_sum' "$T/out"
expect_grep "reproduce: ([^ ]*/)?ulpgym case --backend 'sim:mut_bf16_sum' --spec" "$T/out"
# the reproduction line itself works and fails the same way
spec=$(sed -n "s/^reproduce: [^ ]*ulpgym case --backend 'sim:mut_bf16_sum' --spec '\(.*\)'$/\1/p" "$T/out")
expect_status 1 ug case --backend sim:mut_bf16_sum --spec "$spec"
expect_grep "case $fail_id .*verdict FAIL" "$T/out"
expect_status 0 ug case --spec "$spec"

# history: two runs, the second below 100 %
expect_status 0 ug history --db "$db"
expect_grep "^ +2 .*sim:mut_bf16_sum" "$T/out"

# --primary pypto: every case of the run (and the run itself) records pypto as the deciding standard, and the
# outcome is the pypto verdict (attn_softmax has numeric outputs only). The same mutant cases decided by the op's
# own primary (certified) fail more often: the figures differ.
expect_status 1 ug sweep --op attn_softmax --kernel-variant mut_bf16_sum --limit 20 --db "$db" --quiet \
    --primary pypto
expect_grep 'every outcome decided by the pypto standard \(--primary\)' "$T/out"
expect_eq "$(sqlite3 "$db" "select primary_standard, count(*) from results where run_id=3 group by 1")" "pypto|20" \
    "--primary pypto stored as every case's primary_standard"
expect_eq "$(sqlite3 "$db" "select primary_standard from runs where run_id=3")" "pypto" "--primary kept on the run"
expect_eq "$(sqlite3 "$db" "select count(*) from results r join verdicts v using (run_id, case_id)
                            where r.run_id=3 and v.standard='pypto' and r.verdict<>v.verdict")" "0" \
    "outcome = pypto verdict"
expect_eq "$(sqlite3 "$db" "select primary_standard is null, (select group_concat(distinct primary_standard)
                            from results where run_id=1) from runs where run_id=1")" "1|certified" \
    "a plain sweep: NULL on the run, the op's own primary on its cases"
n_own=$(sqlite3 "$db" "select sum(b.verdict='PASS') from results a join results b on b.case_id=a.case_id and b.run_id=2
                       where a.run_id=3")
n_pypto=$(sqlite3 "$db" "select sum(verdict='PASS') from results where run_id=3")
[ "$n_pypto" -gt "$n_own" ] && ok || bad "the mutant's cases pass pypto ($n_pypto) no more often than certified ($n_own)"
# triage follows the run's --primary, and its reproduction line carries it
own_id=$(sqlite3 "$db" "select a.case_id from results a join results b on b.case_id=a.case_id and b.run_id=2
                        where a.run_id=3 and a.verdict='PASS' and b.verdict='FAIL' limit 1")
expect_status 0 ug triage "$own_id" --db "$db" --run 3
expect_grep 'reproduced exactly' "$T/out"
expect_grep "verdict PASS \(primary: pypto\)" "$T/out"
expect_grep "reproduce: ([^ ]*/)?ulpgym case --backend 'sim:mut_bf16_sum' --primary pypto --spec" "$T/out"
expect_status 1 ug triage "$own_id" --db "$db" --run 2
expect_grep "verdict FAIL \(primary: certified\)" "$T/out"
# --resume keeps the run's own --primary and refuses another
expect_status 2 ug sweep --resume 3 --primary certified --db "$db"
expect_grep 'drop .*--primary' "$T/err"
# (run 3 interrupted: one case lost; a finished run is not resumable)
lost=$(sqlite3 "$db" "select case_id from results where run_id=3 limit 1")
sqlite3 "$db" "delete from metrics where run_id=3 and case_id='$lost'; delete from verdicts where run_id=3 and case_id='$lost';
               delete from results where run_id=3 and case_id='$lost'; update runs set status='interrupted' where run_id=3"
expect_status 0 ug sweep --resume 3 --db "$db" --quiet --fail-on never
expect_eq "$(sqlite3 "$db" "select primary_standard, resumes, status from runs where run_id=3")" "pypto|1|done" \
    "resume keeps --primary"
expect_eq "$(sqlite3 "$db" "select count(*) from verdicts where run_id=3 and case_id='$lost' and standard='pypto'")" 1 \
    "the resumed case judged again"

rows_before=$(sqlite3 "$db" 'select (select count(*) from runs)||"/"||(select count(*) from results)')
# bad input: exit 2, one line on stderr naming the problem, nothing written
expect_status 2 ug sweep --op no_such_op --db "$db"
expect_grep 'unknown op "no_such_op"' "$T/err"
expect_eq "$(wc -l < "$T/err")" "1" "one-line error"
printf '{"name":"broken","version":1,"ops":{"attn_softmax":{"cases":3}' > "$T/broken.json"
expect_status 2 ug sweep --plan "$T/broken.json" --db "$db"
expect_grep 'broken.json: not valid JSON' "$T/err"
printf '{"name":"p","version":1,"ops":{"attn_softmax":{"cases":"many"}}}' > "$T/badq.json"
expect_status 2 ug sweep --plan "$T/badq.json" --db "$db"
expect_grep 'ops.attn_softmax needs a number' "$T/err"
expect_status 2 ug triage 0123456789abcdef --db "$db"
expect_grep 'unknown case ID' "$T/err"
expect_status 2 ug triage xyz --db "$db"
expect_grep 'not a case ID' "$T/err"
expect_status 2 ug sweep --op attn_softmax --kernel-variant mut_nothing --db "$db" --limit 1
expect_status 2 ug sweep --op attn_softmax --limit 1 --primary bogus --db "$db"
expect_grep 'unknown standard "bogus"; give a numeric standard: pypto, .*certified' "$T/err"
expect_eq "$(wc -l < "$T/err")" "1" "one-line error"
for discrete in exact boundary_aware topk_set; do
    expect_status 2 ug sweep --op attn_softmax --limit 1 --primary $discrete --db "$db"
    expect_grep "$discrete is a discrete compare.*give a numeric standard: pypto, " "$T/err"
done
expect_status 2 ug case --spec '{}' --primary bogus
expect_eq "$(sqlite3 "$db" 'select (select count(*) from runs)||"/"||(select count(*) from results)')" "$rows_before" \
    "bad input left rows behind"

echo "this is not a database" > "$T/notadb.db"
cp "$T/notadb.db" "$T/notadb.orig"
expect_status 2 ug history --db "$T/notadb.db"
expect_grep 'not a ulpgym database' "$T/err"
expect_status 2 ug sweep --op attn_softmax --limit 1 --db "$T/notadb.db"
cmp -s "$T/notadb.db" "$T/notadb.orig" && ok || bad "a non-database file was modified"
expect_status 2 ug history --db "$T/missing.db"
expect_grep 'no database at' "$T/err"
[ ! -e "$T/missing.db" ] && ok || bad "history created a database"
sqlite3 "$T/other.db" 'create table t(x)'
expect_status 2 ug sweep --op attn_softmax --limit 1 --db "$T/other.db"
expect_grep 'not a ulpgym one' "$T/err"
expect_status 2 ug bogus
expect_status 2 ug plan --count --group Nowhere
# the CI share: glm_gate's 520 plan cases cut to the stratified 120; a bad size refused
ug plan --op glm_gate --share 120 --count >"$T/share" 2>&1 && ok || bad "plan --share"
expect_grep '^total 120$' "$T/share"
expect_status 2 ug plan --op glm_gate --share 0 --count
expect_grep 'share must be a positive' "$T/err"
# the nightly plan holds the release report's totals: each group its target, 11,923 in all
ug plan --count >"$T/count" 2>&1 && ok || bad "plan --count"
for g in "DeepSeek 5863" "GLM 4163" "Operator 582" "GreenLight 1315"; do
    set -- $g
    expect_grep "^group $1 +$2 cases +\\(release target $2;" "$T/count"
done
expect_grep '^total 11923$' "$T/count"
# a sweep's count line reconciles with plan --count: plan cases plus corpus/found/ regression cases
n_plan=$(ug plan --op attn_softmax --count | sed -n 's/^total //p')
n_found=$(ls "$ULPGYM_DATA/corpus/found/attn_softmax/"*.json | wc -l)
expect_status 0 ug sweep --op attn_softmax --db "$T/count.db" --no-progress -j 2
expect_grep "^  the run's $((n_plan + n_found)) cases: $n_plan plan cases and $n_found regression cases from corpus/found/" "$T/out"
finish
