"""ulpgym dtypes, their numpy form, and the engine's own conversions (encode / decode).

Every tensor has a ulpgym dtype and a documented form in memory, the same `ulpgym export`
writes to .npy: fp32 float32, fp16 float16, int8 int8, int32 int32, and, as raw bits,
bf16 uint16 (the top half of binary32) and e4m3 / e5m2 / e8m0 uint8 codes.

encode(values, dtype) rounds float64 values once to dtype by the engine's rules (round to
nearest even; e4m3 saturating to +-448, e8m0 to the floor power of two, int8/int32
saturating with NaN -> 0) and returns that form: what a numpy reference kernel uses to
round its float64 result once to bf16, fp16 or fp8. decode(array, dtype) reads the form
back as exact float64 values.
"""
import ctypes
from typing import Any, Dict

import numpy as np

from . import _lib

NUMPY_FORM: Dict[str, np.dtype] = {
    "fp32": np.dtype("<f4"),
    "fp16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "e4m3": np.dtype("u1"),
    "e5m2": np.dtype("u1"),
    "e8m0": np.dtype("u1"),
    "int8": np.dtype("i1"),
    "int32": np.dtype("<i4"),
}
RAW_BITS = frozenset(("bf16", "e4m3", "e5m2", "e8m0"))
FLOATS = frozenset(("fp32", "fp16", "bf16", "e4m3", "e5m2", "e8m0"))


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a ulpgym dtype's documented form; ValueError for an unknown one."""
    try:
        return NUMPY_FORM[dtype]
    except KeyError:
        raise ValueError(f"unknown ulpgym dtype {dtype!r}: one of {', '.join(NUMPY_FORM)}") from None


def _double_ptr(a: np.ndarray) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def encode(values: Any, dtype: str) -> np.ndarray:
    """values (any array-like of reals) rounded once to dtype, in its documented form, same shape."""
    form = numpy_dtype(dtype)
    src = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty(src.shape, dtype=form)
    _lib.call_status("ulpgym_encode", _lib.encode_arg(dtype), _double_ptr(src), src.size,
                     ctypes.c_void_p(out.ctypes.data))
    return out


def as_form(array: Any, dtype: str, what: str = "array") -> np.ndarray:
    """array checked to be in dtype's documented form (C order); int16 is taken as bf16 bits."""
    form = numpy_dtype(dtype)
    a = np.asarray(array)
    if dtype == "bf16" and a.dtype == np.dtype("<i2"):
        a = a.view(np.uint16)  # torch's bfloat16 viewed as int16
    if a.dtype != form:
        hint = " (raw bits)" if dtype in RAW_BITS else ""
        raise ValueError(f"{what}: a {dtype} tensor is held as {form.str}{hint}, not {a.dtype.str}")
    return np.ascontiguousarray(a)


def decode(array: Any, dtype: str) -> np.ndarray:
    """The exact float64 values of an array in dtype's documented form, same shape."""
    src = as_form(array, dtype)
    out = np.empty(src.shape, dtype=np.float64)
    _lib.call_status("ulpgym_decode", _lib.encode_arg(dtype), ctypes.c_void_p(src.ctypes.data), src.size,
                     _double_ptr(out))
    return out
