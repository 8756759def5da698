"""ulpgym.Recorder: a Python loop stored as a run that the command line reads."""
import shlex
import sqlite3
import subprocess

import numpy as np
import pytest

import ulpgym


def softmax_kernel(case, bug=False):
    """attn_softmax in float64 (no cap, no mask here), rounded once; bug: 3 % too large."""
    x = case.input_values("x") * float(np.float32(case.params["scale"])) + case.input_values("mask")
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return case.encode_outputs({"y": e / e.sum(axis=-1, keepdims=True) * (1.03 if bug else 1.0)})


def plain_softmax_cases(n):
    return [c for c in ulpgym.cases(op="attn_softmax", limit=12) if c.info["params"].get("cap", 0) == 0
            and c.info["params"].get("mask", "none") == "none"][:n]


def test_a_recorded_loop_is_a_run(tmp_path, run_cli, ulpgym_bin):
    db = tmp_path / "py.db"
    with ulpgym.Recorder(db, name="unit-test") as rec:
        verdicts = [c.judge(softmax_kernel(c, bug=k == 0), recorder=rec)
                    for k, c in enumerate(plain_softmax_cases(4))]
        assert rec.run_id >= 1
    assert [v.outcome for v in verdicts][1:] == ["PASS"] * 3 and verdicts[0].outcome == "FAIL"
    assert rec.counts == {"FAIL": 1, "PASS": 3}
    for v in verdicts:
        assert v.triage and f"triage {v.case_id}" in v.triage and str(db) in v.triage
        assert v.recorded["run_id"] == rec.run_id
    history = run_cli("history", "--db", db)
    assert history.returncode == 0 and "unit-test" in history.stdout and "done" in history.stdout
    # the triage line, pasted: it rejudges the stored outputs and finds the same FAIL
    pasted = subprocess.run(verdicts[0].triage, shell=True, capture_output=True, text=True)
    assert "now: FAIL" in pasted.stdout, pasted.stdout + pasted.stderr


def test_statuses_are_stored(tmp_path):
    db = tmp_path / "s.db"
    a, b = plain_softmax_cases(2)
    with ulpgym.Recorder(db) as rec:
        a.set_status(True, "no kernel for this shape")
        rec.record(a)
        b.set_status(False, "device error 7")
        rec.record(b)
    rows = dict(sqlite3.connect(db).execute("select case_id, verdict || ': ' || message from results").fetchall())
    assert rows[a.id].startswith("SKIP") and "no kernel for this shape" in rows[a.id]
    assert rows[b.id].startswith("ERROR") and "device error 7" in rows[b.id]


def test_refusals(tmp_path):
    (case,) = plain_softmax_cases(1)
    with ulpgym.Recorder(tmp_path / "r.db", primary="certified", sample="all") as rec:
        with pytest.raises(ulpgym.EngineError):
            rec.record(case)  # never judged
        with pytest.raises(ValueError, match="decided by certified"):
            case.judge(softmax_kernel(case), primary="pypto", recorder=rec)
        verdict = case.judge(softmax_kernel(case), recorder=rec)
        assert verdict.primary_standard == "certified" and verdict.passed
    with pytest.raises(ulpgym.EngineError, match="closed"):
        rec.record(case)
    not_a_db = tmp_path / "text.db"
    not_a_db.write_text("hello " * 200)
    with pytest.raises(ulpgym.EngineError):
        ulpgym.Recorder(not_a_db)


def test_triage_line_pastes(tmp_path):
    (case,) = plain_softmax_cases(1)
    db = tmp_path / "dir with space" / "x.db"
    db.parent.mkdir()
    with ulpgym.Recorder(db) as rec:
        verdict = case.judge(softmax_kernel(case), recorder=rec)
    argv = shlex.split(verdict.triage)
    assert str(db) in argv
