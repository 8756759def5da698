"""Case.judge: the oracle's own rounded values pass every standard; outputs in every accepted
form; outputs that do not fit raise ValueError naming the output."""
import json

import numpy as np
import pytest

import ulpgym


@pytest.fixture(scope="module")
def exact(run_cli, tmp_path_factory):
    """exact(case) -> {output: the oracle's correctly rounded values (float64)}, from triage --dump."""
    folder = tmp_path_factory.mktemp("exact")
    db = folder / "sim.db"

    def get(case):
        plan = folder / f"{case.id}.json"
        plan.write_text(json.dumps({"name": "one", "version": 1, "cases": [json.loads(case.spec)]}))
        swept = run_cli("sweep", "--plan", plan, "--db", db, "--quiet", "--no-regressions")
        dumped = run_cli("triage", case.id, "--db", db, "--dump", folder / case.id)
        assert dumped.returncode in (0, 1), swept.stderr + dumped.stderr
        return {o.name: np.load(folder / case.id / "exact" / f"{o.name}_rounded.npy") for o in case.outputs}
    return get


def first(op, dtype):
    return next(c for c in ulpgym.cases(op=op) if c.dtype == dtype)


@pytest.mark.parametrize("op,dtype", [("attn_softmax", "bf16"), ("attn_softmax", "fp32"),
                                      ("inplace_add_rmsnorm", "fp16"), ("rms_norm_rope", "bf16")])
def test_oracle_values_pass_every_standard(op, dtype, exact):
    case = first(op, dtype)
    values = exact(case)
    verdict = case.judge(values, sample="all")  # float64 values, each exactly of its dtype
    assert verdict.passed, verdict.report()
    assert set(verdict.standards.values()) <= {"PASS", "NA"}, verdict.standards
    assert verdict.case_id == case.id and verdict.op == op and verdict.dtype == dtype
    assert verdict.line().startswith(f"case {case.id} {op} {dtype} PASS under certified: ")  # the op's primary
    native = case.encode_outputs(values)  # the same values in the documented form
    assert case.judge(native).passed
    out = verdict.outputs[case.outputs[0].name]
    assert out.n_checked == out.n_total > 0 and out.metrics["max_ulp"] <= 0.5  # correctly rounded
    assert out.verdict("pypto") == "PASS" and "atol" in out.standards["pypto"]["thresholds"]


def test_forms_of_outputs(exact):
    case = first("inplace_add_rmsnorm", "bf16")
    values = exact(case)
    names = [o.name for o in case.outputs]
    assert names == ["y", "x_add", "rstd"]
    assert case.judge([values[n] for n in names]).passed  # a list in declared order
    single = first("attn_softmax", "bf16")
    assert single.judge(exact(single)["y"]).passed  # one array for a one-output op


def test_a_wrong_kernel_fails_with_its_figure(exact):
    case = first("attn_softmax", "bf16")
    y = exact(case)["y"]
    wrong = case.encode_outputs({"y": y * 1.05})
    verdict = case.judge(wrong)
    assert verdict.outcome == "FAIL" and not verdict.passed
    assert "under certified" in verdict.line() and verdict.figure
    assert verdict.triage is None
    with pytest.raises(ulpgym.VerdictFailure) as info:
        case.check(wrong)
    assert verdict.line().split(":")[0] in str(info.value) and info.value.verdict.outcome == "FAIL"
    assert case.judge({"y": y}, primary="pypto").primary_standard == "pypto"


def test_outputs_that_do_not_fit():
    case = first("inplace_add_rmsnorm", "fp16")
    y = np.zeros(case.output("y").shape, np.float16)
    rstd = np.ones(case.output("rstd").shape, np.float32)
    with pytest.raises(ValueError, match="unknown output 'z' of inplace_add_rmsnorm"):
        case.judge({"y": y, "x_add": y, "rstd": rstd, "z": y})
    with pytest.raises(ValueError, match="missing required output x_add"):
        case.judge({"y": y, "rstd": rstd})
    with pytest.raises(ValueError, match=rf"output rstd: shape \({rstd.size}, 1\), the case declares \({rstd.size},\)"):
        case.judge({"y": y, "x_add": y, "rstd": rstd[:, None]})
    with pytest.raises(ValueError, match="one array given"):
        case.judge(y)
    with pytest.raises(ValueError, match="output y of inplace_add_rmsnorm"):
        case.judge({"y": np.full(y.shape, 0.1), "x_add": y, "rstd": rstd})  # 0.1 is no fp16 value
    with pytest.raises(ValueError, match=r"output y \(fp16\): an array of int16"):
        case.judge({"y": y.view(np.int16), "x_add": y, "rstd": rstd})


def test_bf16_outputs_as_float32_values():
    case = first("attn_softmax", "bf16")
    ones = ulpgym.decode(ulpgym.encode(np.full(case.output("y").shape, 1.0), "bf16"), "bf16").astype(np.float32)
    assert case.judge({"y": ones}).outcome in ("PASS", "FAIL")  # accepted: each value is a bf16 value
