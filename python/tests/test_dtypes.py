"""ulpgym.encode / ulpgym.decode: the engine's conversions against known bits and every code."""
import numpy as np
import pytest

import ulpgym

KNOWN = [  # (dtype, value, bits of the rounded value)
    ("bf16", 1.0, 0x3F80), ("bf16", -2.0, 0xC000), ("bf16", 1 + 2**-8, 0x3F80),  # a tie: to even
    ("bf16", 1 + 3 * 2**-8, 0x3F82), ("bf16", float("inf"), 0x7F80), ("bf16", 1e39, 0x7F80),
    ("fp16", 1.0, 0x3C00), ("fp16", 65504.0, 0x7BFF), ("fp16", 65520.0, 0x7C00), ("fp16", 2**-24, 0x0001),
    ("fp32", 1.0, 0x3F800000), ("fp32", 1 + 2**-24, 0x3F800000),
    ("e4m3", 1.0, 0x38), ("e4m3", 448.0, 0x7E), ("e4m3", 1000.0, 0x7E), ("e4m3", -1000.0, 0xFE),
    ("e5m2", 1.0, 0x3C), ("e5m2", 57344.0, 0x7B),
    ("e8m0", 1.0, 127), ("e8m0", 3.0, 128), ("e8m0", 0.5, 126),
    ("int8", 300.0, 127), ("int8", -300.0, -128), ("int8", 2.5, 2), ("int8", 3.5, 4), ("int8", float("nan"), 0),
    ("int32", 1e12, 2**31 - 1), ("int32", -7.5, -8),
]


def bits(out):
    """The first element's bits (its value for int8 / int32)."""
    return int(out[0]) if out.dtype.kind == "i" else int(out.view(f"<u{out.itemsize}")[0])


@pytest.mark.parametrize("dtype,value,expected", KNOWN)
def test_known_bits(dtype, value, expected):
    out = ulpgym.encode([value], dtype)
    assert out.dtype == ulpgym.numpy_dtype(dtype)
    assert bits(out) == expected, f"{dtype}({value}) = {bits(out):#x}, expected {expected:#x}"


@pytest.mark.parametrize("dtype,n", [("bf16", 1 << 16), ("fp16", 1 << 16), ("e4m3", 256), ("e5m2", 256),
                                     ("e8m0", 256)])
def test_every_code_round_trips(dtype, n):
    """decode then encode gives every non-NaN code back; NaN codes decode to NaN."""
    form = ulpgym.numpy_dtype(dtype)
    codes = np.arange(n, dtype=np.uint32).astype(f"<u{form.itemsize}").view(form)
    values = ulpgym.decode(codes, dtype)
    again = ulpgym.encode(values, dtype)
    finite = ~np.isnan(values)
    same = again.view(f"<u{form.itemsize}") == codes.view(f"<u{form.itemsize}")
    assert same[finite].all(), f"{dtype}: {np.count_nonzero(~same[finite])} codes do not round-trip"
    assert np.isnan(ulpgym.decode(again[~finite], dtype)).all()


def test_decode_matches_numpy():
    x = np.random.default_rng(1).standard_normal(1000)
    half = x.astype(np.float16)
    assert np.array_equal(ulpgym.decode(half, "fp16"), half.astype(np.float64))
    bf = ulpgym.encode(x, "bf16")
    assert np.array_equal(ulpgym.decode(bf, "bf16"), (bf.astype(np.uint32) << 16).view(np.float32).astype(np.float64))


def test_shapes_are_kept():
    assert ulpgym.encode(np.zeros((2, 3, 4)), "bf16").shape == (2, 3, 4)
    assert ulpgym.encode([], "fp16").shape == (0,)
    assert ulpgym.decode(np.zeros((5, 1), np.float32), "fp32").shape == (5, 1)


def test_refusals():
    with pytest.raises(ValueError, match="unknown ulpgym dtype 'fp64'"):
        ulpgym.encode([1.0], "fp64")
    with pytest.raises(ValueError, match="bf16 tensor is held as <u2"):
        ulpgym.decode(np.zeros(3, np.float32), "bf16")
