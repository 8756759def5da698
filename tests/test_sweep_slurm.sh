#!/usr/bin/env bash
# test_sweep_slurm.sh — scripts/slurm/sweep.sbatch without a cluster: the array tasks are
# run one after another with the environment Slurm would give them, `sbatch` is a stub
# that keeps the merge job's command, and the merged database must equal an unsharded
# sweep case for case. A requeued task resumes its shard instead of starting over.
. "$(dirname "$0")/lib.sh"
SCRIPT=${ULPGYM_DATA:?}/scripts/slurm/sweep.sbatch
mkdir -p "$T/bin"
cat >"$T/bin/sbatch" <<'STUB'
#!/usr/bin/env bash
for a in "$@"; do case $a in --wrap=*) printf '%s\n' "${a#--wrap=}" >"$STUB_DIR/merge_job.sh" ;; --dependency=*) echo "$a" >"$STUB_DIR/dependency" ;; esac; done
echo "Submitted batch job 4242"
STUB
chmod +x "$T/bin/sbatch"
export PATH=$T/bin:$PATH STUB_DIR=$T ULPGYM_BIN=$UG_BIN ULPGYM_SHARD_DIR=$T/shards
export SLURM_ARRAY_JOB_ID=4241 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 SLURM_CPUS_PER_TASK=2
SEL=(--op attn_softmax --limit 45)
for k in 1 2 3; do
    SLURM_ARRAY_TASK_ID=$k expect_status 0 bash "$SCRIPT" "${SEL[@]}"
done
expect_eq "$(cat "$T/dependency" 2>/dev/null)" "--dependency=afterany:4241" "merge waits for the whole array"
expect_status 0 bash "$T/merge_job.sh"
expect_grep '^ *1 ' "$T/out"
expect_status 0 ug sweep "${SEL[@]}" --db "$T/whole.db" --quiet
expect_same_results "$T/shards/merged.db" "$T/whole.db" "merged array = unsharded sweep"
expect_eq "$(sqlite3 "$T/shards/merged.db" "SELECT shard, n_cases FROM runs")" "1/3,2/3,3/3|45" "merged run row"

# a requeued task finds its shard database and resumes it: no second run, no duplicates
# (shards are balanced by cost, so the largest shard loses up to 5 of its cases)
big=$(for k in 1 2 3; do echo "$(sqlite3 "$T/shards/shard-$k.db" "SELECT count(*) FROM results") $k"; done | sort -n | tail -1 | cut -d' ' -f2)
all=$(sqlite3 "$T/shards/shard-$big.db" "SELECT count(*) FROM results")
sqlite3 "$T/shards/shard-$big.db" "DELETE FROM metrics WHERE case_id IN (SELECT case_id FROM results LIMIT 5);
    DELETE FROM verdicts WHERE case_id IN (SELECT case_id FROM results LIMIT 5);
    DELETE FROM results WHERE case_id IN (SELECT case_id FROM results LIMIT 5); UPDATE runs SET status = 'running'"
n2=$(sqlite3 "$T/shards/shard-$big.db" "SELECT count(*) FROM results")
lost=$((all - n2))
[ "$lost" -ge 1 ] && ok || bad "nothing deleted from shard $big"
SLURM_RESTART_COUNT=1 SLURM_ARRAY_TASK_ID=$big expect_status 0 bash "$SCRIPT" "${SEL[@]}"
expect_grep "^run 1: $lost cases" "$T/out"
expect_eq "$(sqlite3 "$T/shards/shard-$big.db" "SELECT count(*), count(DISTINCT case_id) FROM results")" "$all|$all" \
    "requeued shard completed once"
# a task requeued after its shard finished has nothing left to run: exit 0, nothing added
SLURM_RESTART_COUNT=2 SLURM_ARRAY_TASK_ID=$big expect_status 0 bash "$SCRIPT" "${SEL[@]}"
expect_eq "$(sqlite3 "$T/shards/shard-$big.db" "SELECT count(*) FROM results")" "$all" "finished shard left alone"
# the script asks for what any node has, and a failed merge-job submission does not cost task 1 its shard
grep -q '^#SBATCH --cpus-per-task=2$' "$SCRIPT" && ok || bad "sweep.sbatch must not hard-code a large CPU count"
printf '#!/usr/bin/env bash\necho "sbatch: error: Batch job submission failed" >&2; exit 1\n' >"$T/bin/sbatch"
export ULPGYM_SHARD_DIR=$T/shards_b
SLURM_ARRAY_TASK_ID=1 expect_status 0 bash "$SCRIPT" "${SEL[@]}"
expect_grep 'submitting the merge job failed' "$T/err"
[ -n "$(sqlite3 "$T/shards_b/shard-1.db" "SELECT count(*) FROM results")" ] && ok || bad "task 1 swept no shard"
# submitted from outside the source tree (no build/ulpgym there, no ULPGYM_BIN): refused with the fix, nothing made
SLURM_SUBMIT_DIR=$T SLURM_ARRAY_TASK_ID=1 ULPGYM_SHARD_DIR=$T/shards_c expect_status 2 env -u ULPGYM_BIN bash "$SCRIPT"
expect_grep "no ulpgym at $T/build/ulpgym; submit from the source tree" "$T/err"
[ ! -e "$T/shards_c" ] && ok || bad "a refused task made its shard folder"
# not an array, or not 1..N: refused
SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_ID=1 expect_status 2 bash "$SCRIPT"
SLURM_ARRAY_TASK_ID=1 expect_status 1 env -u SLURM_ARRAY_JOB_ID bash "$SCRIPT"
expect_grep "submit as a job array" "$T/err"
finish
