"""ulpgym.torch: torch tensors to and from the documented forms; judging torch outputs."""
import numpy as np
import pytest

import ulpgym

torch = pytest.importorskip("torch")


def test_to_and_from_torch():
    values = np.array([1.0, -2.5, 3.140625, 0.0])
    bits = ulpgym.encode(values, "bf16")
    t = ulpgym.torch.to_torch(bits, "bf16")
    assert t.dtype == torch.bfloat16 and t.float().tolist() == values.tolist()
    back = ulpgym.torch.from_torch(t)
    assert back.dtype == np.uint16 and np.array_equal(back, bits)
    h = ulpgym.torch.to_torch(ulpgym.encode(values, "fp16"), "fp16")
    assert h.dtype == torch.float16 and h.double().tolist() == values.tolist()


def test_case_torch_inputs():
    case = next(c for c in ulpgym.cases(op="rms_norm_rope", limit=4) if c.dtype == "bf16")
    tensors = case.torch_inputs()
    assert set(tensors) == set(case.inputs) and tensors["q"].dtype == torch.bfloat16
    assert np.array_equal(tensors["q"].double().numpy(), case.input_values("q"))


def test_judge_takes_tensors():
    case = next(c for c in ulpgym.cases(op="attn_softmax", limit=3) if c.dtype == "bf16")
    x = case.torch_inputs()["x"].double()
    y = torch.softmax(x * float(np.float32(case.params["scale"])), dim=-1).to(torch.bfloat16)
    verdict = case.judge({"y": y})
    assert verdict.outcome in ("PASS", "FAIL") and verdict.outputs["y"].n_checked > 0
    assert case.judge(y.float()).outcome == verdict.outcome  # float32 holding bf16 values: the same


def test_float8_needs_a_recent_torch():
    codes = ulpgym.encode([1.0, 448.0], "e4m3")
    if not hasattr(torch, "float8_e4m3fn"):
        with pytest.raises(TypeError, match="has no torch.float8_e4m3fn"):
            ulpgym.torch.to_torch(codes, "e4m3")
    else:
        assert ulpgym.torch.to_torch(codes, "e4m3").float().tolist() == [1.0, 448.0]
