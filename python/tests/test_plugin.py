"""The pytest plugin, run on small test files in pytester's folder."""
import sqlite3

import pytest

KERNEL = '''
import numpy as np, pytest

def softmax(case, bug=False):
    x = case.input_values("x") * float(np.float32(case.params["scale"])) + case.input_values("mask")
    x = np.where(np.isneginf(case.input_values("mask")), -np.inf, x)
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(m), 0, m))
    s = e.sum(axis=-1, keepdims=True)
    y = np.where(np.isneginf(m), 0, e / np.where(s == 0, 1, s)) * (1.05 if bug else 1)
    return case.encode_outputs({"y": y})
'''


def run(pytester, plugin_args, body, *args):
    pytester.makepyfile(test_k=KERNEL + body)
    return pytester.runpytest(*plugin_args, "-p", "no:cacheprovider", "-rA", *args)


def test_no_selection_skips_with_the_reason(pytester, plugin_args):
    result = run(pytester, plugin_args, "def test_k(ulpgym_case):\n    return softmax(ulpgym_case)\n")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no ulpgym cases selected*--ulpgym-op*"])


def test_returned_outputs_are_judged_and_recorded(pytester, plugin_args, tmp_path):
    db = tmp_path / "p.db"
    result = run(pytester, plugin_args, "def test_k(ulpgym_case):\n    return softmax(ulpgym_case)\n",
                 "--ulpgym-op", "attn_softmax", "--ulpgym-limit", "4", "--ulpgym-db", str(db), "--ulpgym-run", "mine")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_k?attn_softmax-fp32-cols1-rows1-1d87e89092494289?*"])
    result.stdout.fnmatch_lines([f"ulpgym: run 1 (mine) in {db}: 4 PASS*"])
    assert "returned non-None" not in result.stdout.str()
    con = sqlite3.connect(db)
    assert con.execute("select plan_name, status, n_cases from runs").fetchall() == [("mine", "done", 4)]


def test_a_failure_shows_the_verdict_and_the_triage_line(pytester, plugin_args, tmp_path):
    db = tmp_path / "f.db"
    body = "def test_k(ulpgym_case):\n    ulpgym_case.check(softmax(ulpgym_case, bug=True))\n"
    result = run(pytester, plugin_args, body,
                 "--ulpgym-op", "attn_softmax", "--ulpgym-limit", "1", "--ulpgym-db", str(db))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["case 1d87e89092494289 attn_softmax fp32 FAIL under certified: *",
                                 f"triage: *ulpgym triage 1d87e89092494289 --db {db}*"])
    assert "VerdictFailure" not in result.stdout.str()  # the text, not a traceback


def test_skip_error_and_forgotten_outputs(pytester, plugin_args, tmp_path):
    db = tmp_path / "s.db"
    body = '''
def test_skip(ulpgym_case):
    pytest.skip("no kernel for " + ulpgym_case.dtype)

def test_error(ulpgym_case):
    raise RuntimeError("device lost")

def test_nothing(ulpgym_case):
    ulpgym_case.inputs
'''
    result = run(pytester, plugin_args, body, "--ulpgym-op", "attn_softmax", "--ulpgym-limit", "1",
                 "--ulpgym-db", str(db), "--ulpgym-run", "statuses")
    result.assert_outcomes(skipped=1, failed=2)
    result.stdout.fnmatch_lines(["*test_nothing* returned no outputs and did not call ulpgym_case.check()*"])
    messages = [m for (m,) in sqlite3.connect(db).execute("select verdict || ' ' || message from results")]
    assert len(messages) == 1 and messages[0].startswith("ERROR") and "device lost" in messages[0]


def test_marker_narrows_the_selection(pytester, plugin_args, tmp_path):
    body = '''
@pytest.mark.ulpgym(op="attn_softmax")
def test_softmax(ulpgym_case):
    assert ulpgym_case.op == "attn_softmax"
    return softmax(ulpgym_case)

@pytest.mark.ulpgym(op="apply_adamw")
def test_adamw(ulpgym_case):
    raise AssertionError("never runs: the command line selects no apply_adamw case")
'''
    result = run(pytester, plugin_args, body, "--ulpgym-op", "attn_softmax", "--ulpgym-op", "rms_norm_rope",
                 "--ulpgym-per-op", "2", "--ulpgym-db", str(tmp_path / "m.db"), "-k", "softmax or adamw")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*has no cases*"])


def test_bad_options_are_usage_errors(pytester, plugin_args):
    result = run(pytester, plugin_args, "def test_k(ulpgym_case):\n    pass\n", "--ulpgym-op", "no_such_op")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ulpgym: *no_such_op*"])
    result = run(pytester, plugin_args, "def test_k(ulpgym_case):\n    pass\n", "--ulpgym-sample", "many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ulpgym-sample many: a number of elements or all"])
