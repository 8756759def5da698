"""ulpgym.cases / ulpgym.case / Case: plan listing, IDs, params, inputs bit for bit."""
import json
import re

import numpy as np
import pytest

import ulpgym


def test_cases_of_an_op():
    found = list(ulpgym.cases(op="attn_softmax", limit=3))
    assert len(found) == 3
    for c in found:
        assert re.fullmatch(r"[0-9a-f]{16}", c.id) and c.op == "attn_softmax" and c.group == "GreenLight"
        assert c.dtype in ("fp32", "fp16", "bf16")
        assert json.loads(c.spec)["op"] == "attn_softmax"


def test_per_op_and_groups():
    found = list(ulpgym.cases(op=["attn_softmax", "rms_norm_rope"], per_op=4))
    assert sorted(c.op for c in found) == ["attn_softmax"] * 4 + ["rms_norm_rope"] * 4
    assert {c.group for c in ulpgym.cases(group="GreenLight", per_op=1)} == {"GreenLight"}


def test_seed_gives_new_ids():
    a = [c.id for c in ulpgym.cases(op="attn_softmax", limit=3)]
    b = [c.id for c in ulpgym.cases(op="attn_softmax", limit=3, seed=7)]
    assert a != b


def test_bad_queries_raise_at_the_call():
    with pytest.raises(ulpgym.EngineError, match="no_such_op"):
        ulpgym.cases(op="no_such_op")
    with pytest.raises(ulpgym.EngineError):
        ulpgym.case("0123456789abcdef")


def test_case_by_prefix_and_by_spec():
    first = next(ulpgym.cases(op="rms_norm_rope", limit=1))
    by_prefix = ulpgym.case(first.id[:8])
    assert by_prefix.id == first.id and by_prefix.spec == first.spec
    by_spec = ulpgym.case(json.loads(first.spec))
    assert by_spec.id == first.id


def test_params_have_defaults_and_outputs_are_declared():
    c = next(ulpgym.cases(op="attn_softmax", limit=1))
    assert set(c.params) == {"rows", "cols", "scale", "cap", "mask"}
    assert json.loads(c.params_json) == c.params
    (y,) = c.outputs
    assert (y.name, y.dtype, y.optional) == ("y", c.dtype, False)
    assert y.shape == (c.params["rows"], c.params["cols"])
    assert c.contract["op"] == "attn_softmax" and c.primary_standard == "certified"
    with pytest.raises(KeyError, match="no output 'z'"):
        c.output("z")


def some_cases():
    """A bf16 softmax with a causal (built) mask, a bf16 rms_norm_rope (built cos/sin), an fp16 one."""
    softmax = [c for c in ulpgym.cases(op="attn_softmax") if c.info["params"].get("mask") == "causal"][0]
    rope = list(ulpgym.cases(op="rms_norm_rope", limit=8))
    return [softmax, rope[6], rope[7]]


@pytest.mark.parametrize("index", range(3))
def test_inputs_equal_the_export_bit_for_bit(index, run_cli, tmp_path):
    case = some_cases()[index]
    got = run_cli("export", case.id, "--dir", tmp_path)
    assert got.returncode == 0, got.stderr
    described = json.loads((tmp_path / "case.json").read_text())
    assert list(case.inputs) == [t["name"] for t in described["inputs"]]
    for t in described["inputs"]:
        exported = np.load(tmp_path / t["file"])
        mine = case.inputs[t["name"]]
        assert mine.dtype == exported.dtype and mine.dtype.str == t["npy_dtype"]
        assert mine.shape == exported.shape and mine.tobytes() == exported.tobytes(), t["name"]


def test_input_values_decode_bits():
    case = some_cases()[1]
    assert case.dtype == "bf16" and case.inputs["q"].dtype == np.uint16
    expected = (case.inputs["q"].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert np.array_equal(case.input_values("q"), expected)
    assert case.input_values("q", np.float32).dtype == np.float32
    assert set(case.input_values()) == set(case.inputs)


def test_close_and_reuse():
    c = next(ulpgym.cases(op="attn_softmax", limit=1))
    with c:
        x = c.inputs["x"].copy()
    assert c._handle is None
    assert np.array_equal(c.inputs["x"], x)  # read before closing: still there
    assert c.outputs[0].name == "y"  # rebuilt on use
    c.close()
