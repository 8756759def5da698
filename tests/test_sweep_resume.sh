#!/usr/bin/env bash
# test_sweep_resume.sh — durability: a sweep killed with SIGKILL (or stopped by SIGTERM)
# mid-run leaves a consistent database, and `sweep --resume` runs exactly the missing
# cases: in the end every case of the plan has one result, with the verdicts of an
# uninterrupted run. Resume refuses a plan that changed and a run that does not exist. A
# run swept with --primary STD is resumed deciding by STD (its crashed cases too).
. "$(dirname "$0")/lib.sh"
PLUGIN=plugin:${ULPGYM_FIXTURES:?}/libfaulty_plugin.so
N=120
# A slow kernel (40 ms a case) so that the sweep is surely killed in the middle.
{
    echo '{"name":"slow","version":1,"seed":5,"cases":['
    for i in $(seq 1 $N); do
        [ "$i" = 1 ] || echo ,
        rows=2; [ $((i % 29)) = 0 ] && rows=5 # rows 2: a 40 ms kernel; rows 5: it segfaults (faulty_plugin.c)
        echo "{\"op\":\"attn_softmax\",\"dtype\":\"fp32\",\"params\":{\"rows\":$rows,\"cols\":$i},\"dist\":{\"x\":{\"kind\":\"normal\",\"mean\":0,\"std\":1}}}"
    done
    echo ']}'
} >"$T/plan.json"
ug plan --plan "$T/plan.json" --list | awk '{print $1}' | sort >"$T/plan_ids"
expect_eq "$(wc -l <"$T/plan_ids")" $N "plan size"

# stored results of run 1 in db $1
stored() { sqlite3 "$1" "SELECT count(*) FROM results WHERE run_id = 1" 2>/dev/null || echo 0; }
# starts a sweep into $1 (more sweep options after $2) in the background, waits until some results are committed,
# sends $2
interrupt_midway() {
    local db=$1 sig=$2
    shift 2
    "$UG_BIN" sweep --plan "$T/plan.json" --no-regressions --db "$db" --backend "$PLUGIN" -j2 --quiet "$@" \
        >"$T/bg.out" 2>"$T/bg.err" &
    local pid=$! n=0
    for _ in $(seq 1 400); do
        n=$(stored "$db")
        [ "${n:-0}" -ge 10 ] && break
        sleep 0.05
    done
    kill "-$sig" "$pid"
    wait "$pid"
    echo $? >"$T/bg.status"
}

# --- SIGKILL ---
DB=$T/kill.db
interrupt_midway "$DB" KILL
expect_eq "$(cat "$T/bg.status")" 137 "killed by SIGKILL"
before=$(stored "$DB")
if [ "$before" -ge 10 ] && [ "$before" -lt $N ]; then ok; else bad "killed with $before of $N cases stored"; fi
expect_eq "$(sqlite3 "$DB" "PRAGMA integrity_check")" ok "database consistent after kill -9"
expect_eq "$(sqlite3 "$DB" "SELECT status FROM runs WHERE run_id = 1")" running "status after kill -9"
# no orphaned workers survive the parent (PR_SET_PDEATHSIG)
sleep 0.3
expect_eq "$(pgrep -f "ulpgym sweep --plan $T/plan.json --db $DB" | wc -l)" 0 "workers died with the parent"
# a database never runs code by itself: the plugin must be named again, the same file
expect_status 2 ug sweep --resume latest --db "$DB" -j2 --quiet
expect_grep 'a resume runs a plugin only when you name it: add --backend plugin:/' "$T/err"
cp "${PLUGIN#plugin:}" "$T/other.so"
expect_status 2 ug sweep --resume latest --db "$DB" -j2 --quiet --backend "plugin:$T/other.so"
expect_grep 'you gave another' "$T/err"
expect_eq "$(stored "$DB")" "$before" "refused resumes ran nothing"
expect_status 0 ug sweep --resume latest --db "$DB" -j2 --quiet --backend "$PLUGIN" --fail-on never
expect_grep "^run 1: $((N - before)) cases" "$T/out"
expect_grep "resumed: $before of the run's $N cases were stored before, $N now" "$T/out"
sqlite3 "$DB" "SELECT case_id FROM results WHERE run_id = 1 ORDER BY case_id" >"$T/got_ids"
if cmp -s "$T/got_ids" "$T/plan_ids"; then ok; else bad "resumed run does not hold each plan case once"; fi
expect_eq "$(sqlite3 "$DB" "SELECT status, n_cases, resumes FROM runs WHERE run_id = 1")" "done|$N|1" "run row after resume"
expect_eq "$(sqlite3 "$DB" "SELECT count(*) FROM runs")" 1 "resume reuses the run"
# a finished run has nothing left to run: resuming it is refused and changes nothing (a sweep
# killed before its own run row existed must not "resume" the previous, finished one)
fin=$(sqlite3 "$DB" "SELECT finished_at, resumes FROM runs WHERE run_id = 1")
expect_status 2 ug sweep --resume 1 --db "$DB" --quiet --backend "$PLUGIN"
expect_grep "run 1 finished .*nothing to resume" "$T/err"
expect_status 2 ug sweep --resume latest --db "$DB" --quiet --backend "$PLUGIN"
expect_eq "$(sqlite3 "$DB" "SELECT finished_at, resumes FROM runs WHERE run_id = 1")" "$fin" "refused resume of a done run"

# the same verdicts as an uninterrupted run
REF=$T/ref.db
expect_status 1 ug sweep --plan "$T/plan.json" --no-regressions --db "$REF" --backend "$PLUGIN" -j2 --quiet # faulty cases fail
verdicts() { sqlite3 "$1" "SELECT case_id, verdict FROM results WHERE run_id = 1 ORDER BY case_id"; }
expect_eq "$(verdicts "$DB" | md5sum)" "$(verdicts "$REF" | md5sum)" "resumed verdicts = uninterrupted verdicts"
expect_eq "$(sqlite3 "$REF" "SELECT count(*) FROM results WHERE verdict = 'CRASH'")" 4 "crash cases in the slow plan"

# --- SIGTERM: results so far are committed, status interrupted, exit 130 ---
DB2=$T/term.db
interrupt_midway "$DB2" TERM
expect_eq "$(cat "$T/bg.status")" 130 "exit status after SIGTERM"
expect_grep 'interrupted: `ulpgym sweep --resume latest` runs the rest' "$T/bg.out"
expect_eq "$(sqlite3 "$DB2" "SELECT status FROM runs WHERE run_id = 1")" interrupted "status after SIGTERM"
expect_eq "$(sqlite3 "$DB2" "SELECT n_cases FROM runs WHERE run_id = 1")" "$(stored "$DB2")" "counts committed"
# a changed plan is refused and the run is left as it was
cp "$T/plan.json" "$T/plan.orig"
echo " " >>"$T/plan.json"
expect_status 2 ug sweep --resume latest --db "$DB2" --backend "$PLUGIN"
expect_grep 'plan .* changed since the run started' "$T/err"
expect_eq "$(sqlite3 "$DB2" "SELECT status, resumes FROM runs WHERE run_id = 1")" "interrupted|0" "refused resume changed nothing"
cp "$T/plan.orig" "$T/plan.json"
expect_status 0 ug sweep --resume 1 --db "$DB2" -j1 --quiet --backend "$PLUGIN" --fail-on never
expect_eq "$(verdicts "$DB2" | md5sum)" "$(verdicts "$REF" | md5sum)" "SIGTERM + resume = uninterrupted"
# resume needs an existing database and run
expect_status 2 ug sweep --resume latest --db "$T/none.db"
expect_status 2 ug sweep --resume 7 --db "$DB2"
expect_grep 'no run 7' "$T/err"

# --- a plugin is stored by absolute path and SHA-256; changed bytes are refused on resume;
#     triage never loads a stored plugin unasked ---
DB4=$T/sha.db
mkdir -p "$T/cwd" && cp "${PLUGIN#plugin:}" "$T/cwd/libp.so"
(cd "$T/cwd" && "$UG_BIN" sweep --plan "$T/plan.json" --no-regressions --db "$DB4" --backend plugin:libp.so --limit 6 \
    -j1 --quiet >/dev/null 2>&1)
expect_eq "$(sqlite3 "$DB4" "SELECT backend FROM runs")" "plugin:$(cd "$T/cwd" && pwd -P)/libp.so" "absolute plugin path stored"
expect_eq "$(sqlite3 "$DB4" "SELECT backend_sha256 FROM runs")" "$(sha256sum <"$T/cwd/libp.so" | cut -c1-64)" "plugin SHA-256 stored"
id=$(sqlite3 "$DB4" "SELECT case_id FROM results LIMIT 1")
expect_status 2 ug triage "$id" --db "$DB4"
expect_grep 'triage loads a plugin only when you name it' "$T/err"
expect_status 0 ug triage "$id" --db "$DB4" --backend sim
sqlite3 "$DB4" "UPDATE runs SET status = 'interrupted'; DELETE FROM results WHERE case_id = '$id'"
printf 'x' >>"$T/cwd/libp.so" # still loadable, other bytes
expect_status 2 ug sweep --resume latest --db "$DB4" --backend "plugin:$T/cwd/libp.so"
expect_grep 'libp.so changed since the run started' "$T/err"

# --- --primary survives an interruption: the resumed cases (the crashed ones too) are decided by certified ---
DB3=$T/primary.db
interrupt_midway "$DB3" TERM --primary certified
expect_eq "$(cat "$T/bg.status")" 130 "exit status after SIGTERM (--primary)"
before=$(stored "$DB3")
if [ "$before" -ge 10 ] && [ "$before" -lt $N ]; then ok; else bad "--primary run stopped with $before of $N cases"; fi
expect_status 0 ug sweep --resume latest --db "$DB3" -j2 --quiet --backend "$PLUGIN" --fail-on never
expect_grep 'every outcome decided by the certified standard' "$T/out"
expect_eq "$(sqlite3 "$DB3" "SELECT primary_standard, status, n_cases, resumes FROM runs")" "certified|done|$N|1" \
    "run row after resuming a --primary run"
expect_eq "$(sqlite3 "$DB3" "SELECT primary_standard, count(*) FROM results GROUP BY 1")" "certified|$N" \
    "every case, before and after the resume, decided by certified"
expect_eq "$(sqlite3 "$DB3" "SELECT count(*) FROM results
                             WHERE verdict = 'CRASH' AND primary_standard = 'certified'")" 4 "crashes: certified"
# the outcome follows the certified verdict wherever the case was judged
expect_eq "$(sqlite3 "$DB3" "SELECT count(*) FROM results r JOIN verdicts v USING (run_id, case_id)
                             WHERE v.standard = 'certified' AND r.verdict IN ('PASS','FAIL')
                             AND r.verdict <> v.verdict")" 0 "outcome = certified verdict after resume"

# a schema-1 database (before sweep options were recorded) is migrated to the current schema; its
# runs cannot be resumed (their --op/--limit were not kept) but new sweeps go on in it
OLD=$T/v1.db
sqlite3 "$OLD" <"$ULPGYM_DATA/db/schema.sql"
sqlite3 "$OLD" "PRAGMA user_version = 1; INSERT INTO runs(started_at, backend, plan_path, plan_hash)
    VALUES ('2026-01-01T00:00:00Z', 'sim', '$T/plan.json', 'x')"
expect_status 2 ug sweep --resume latest --db "$OLD"
expect_grep 'older ulpgym that did not record its sweep options' "$T/err"
expect_eq "$(sqlite3 "$OLD" "PRAGMA user_version")" 11 "migrated to schema 11"
expect_eq "$(sqlite3 "$OLD" "SELECT status, resumes, jobs IS NULL, primary_standard IS NULL FROM runs")" \
    "running|0|1|1" "old run untouched (no --primary: each op's own)"
expect_status 0 ug sweep --op attn_softmax --limit 3 --db "$OLD" -j1 --quiet
expect_eq "$(sqlite3 "$OLD" "SELECT op_filter, case_limit, jobs, status FROM runs WHERE run_id = 2")" "attn_softmax|3|1|done" \
    "options recorded in the migrated database"
expect_status 0 ug sweep --op attn_softmax --limit 3 --db "$OLD" -j1 --quiet --primary certified
expect_eq "$(sqlite3 "$OLD" "SELECT primary_standard FROM runs WHERE run_id = 3")" certified \
    "--primary in the migrated database"
expect_eq "$(sqlite3 "$OLD" "SELECT count(*), sum(oracle_raised = 0 AND oracle_unsettled = 0) FROM results")" "6|6" \
    "the raised-precision counts stored (schema 8)"
# a schema-3 database (before --primary was recorded) gains the column: its runs read as each op's own primary
V3=$T/v3.db
cp "$OLD" "$V3"
sqlite3 "$V3" "ALTER TABLE runs DROP COLUMN primary_standard; ALTER TABLE runs DROP COLUMN backend_sha256;
    ALTER TABLE runs DROP COLUMN cost_from; ALTER TABLE runs DROP COLUMN cost_hash;
    ALTER TABLE results DROP COLUMN oracle_raised; ALTER TABLE results DROP COLUMN oracle_unsettled;
    ALTER TABLE results DROP COLUMN outputs_dir; ALTER TABLE results DROP COLUMN used; ALTER TABLE runs DROP COLUMN contracts;
    DROP TABLE bench_cases; DROP TABLE bench_scenes; DROP TABLE bench_runs; PRAGMA user_version = 3"
expect_status 0 ug history --db "$V3"
expect_eq "$(sqlite3 "$V3" "PRAGMA user_version")" 11 "schema 3 migrated to 11"
expect_eq "$(sqlite3 "$V3" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'bench_%' AND type = 'table'")" 3 \
    "the kernel-timing tables added"
expect_eq "$(sqlite3 "$V3" "SELECT count(*) FROM runs WHERE primary_standard IS NULL")" 3 "older runs: NULL (op's own)"
expect_eq "$(sqlite3 "$V3" "SELECT count(*) FROM runs WHERE backend_sha256 IS NULL")" 3 "older runs: no plugin digest"
expect_eq "$(sqlite3 "$V3" "SELECT count(*) FROM results WHERE oracle_raised IS NULL AND oracle_unsettled IS NULL")" 6 \
    "older results: no raised-precision counts"
expect_eq "$(sqlite3 "$V3" "SELECT count(*) FROM runs WHERE cost_from IS NULL AND cost_hash IS NULL")" 3 \
    "older runs: shards dealt by estimates"
finish
