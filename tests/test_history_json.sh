#!/usr/bin/env bash
# test_history_json.sh — `ulpgym history --json`: each run carries what was run, read back
# from the runs table — plan, plan path and hash, status, git revision, started and finished,
# backend, deciding standard (--primary), selection — per run and per --by row alike; a
# string that is not valid UTF-8 in the database (a database may come from elsewhere)
# still gives valid JSON.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
db=$T/h.db
expect_status 0 ug sweep --op attn_softmax --limit 6 --sample 512 --db "$db" --quiet
expect_status 0 ug sweep --op attn_softmax --limit 4 --primary certified --sample all --db "$db" --quiet
rev=$(ug --version | sed -n 's/.*(git \([^,]*\),.*/\1/p')
[ -n "$rev" ] && ok || bad "no git revision in --version"
expect_status 0 ug history --db "$db" --json
python3 - "$T/out" "$rev" "${ULPGYM_DATA:?}" <<'PY' && ok || bad "history --json run fields"
import json, re, sys
runs = json.load(open(sys.argv[1]))["runs"]
rev, data = sys.argv[2], sys.argv[3]
assert [r["run_id"] for r in runs] == [1, 2], runs
for r in runs:
    assert r["plan"] == "nightly" and r["plan_path"].endswith("/gen/plans/nightly.json"), r
    assert re.fullmatch(r"[0-9a-f]{16}", r["plan_hash"]), r["plan_hash"]
    assert r["status"] == "done" and r["git_rev"] == rev and r["backend"] == "sim", r
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["started_at"]), r["started_at"]
    assert r["finished_at"] >= r["started_at"], r
    assert r["op_filter"] == "attn_softmax" and r["group_filter"] is None and r["shard"] is None, r
    assert r["merged"] is False and r["backend_sha256"] is None, r
assert runs[0]["plan_hash"] == runs[1]["plan_hash"]
assert runs[0]["primary_standard"] is None and runs[1]["primary_standard"] == "certified", runs
assert runs[0]["case_limit"] == 6 and runs[1]["case_limit"] == 4, runs
assert runs[0]["sample"] == 512 and runs[1]["sample"] == 0, runs
assert runs[0]["cases"] == 6 and runs[1]["cases"] == 4, runs
PY
# --by: every row carries its run's fields too
expect_status 0 ug history --db "$db" --json --by dtype
python3 - "$T/out" <<'PY' && ok || bad "history --json --by dtype"
import json, sys
rows = json.load(open(sys.argv[1]))["runs"]
assert len(rows) >= 3 and all(r["dtype"] in ("fp32", "fp16", "bf16") for r in rows), rows
assert all(r["status"] == "done" and r["git_rev"] and r["plan_hash"] for r in rows), rows
assert {r["primary_standard"] for r in rows if r["run_id"] == 2} == {"certified"}, rows
PY
# a run row whose strings are not valid UTF-8 (written here as another machine might have)
python3 - "$db" <<'PY' && ok || bad "writing the damaged strings"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE runs SET plan_name = CAST(x'6e696768746c79ff' AS TEXT), git_rev = CAST(x'c3' AS TEXT) WHERE run_id = 2")
c.commit()
PY
expect_status 0 ug history --db "$db" --json
python3 - "$T/out" <<'PY' && ok || bad "history --json with invalid UTF-8 in the database"
import json, sys
raw = open(sys.argv[1], "rb").read()
runs = json.loads(raw.decode("utf-8"))["runs"]       # strict: fails on invalid UTF-8
assert runs[1]["plan"].startswith("nightly") and runs[1]["plan"] != "nightly", runs[1]["plan"]
assert runs[1]["git_rev"], runs[1]
PY
finish
