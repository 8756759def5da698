"""ulpgym.torch: the documented numpy forms as torch tensors and back; torch is imported
only when one of these is called (ImportError with the fix when it is not installed).

    x = ulpgym.torch.to_torch(case.inputs["x"], "bf16", device="cuda")   # torch.bfloat16
    inputs = case.torch_inputs(device="npu")                            # every input
    bits = ulpgym.torch.from_torch(y)   # bfloat16 -> uint16 bits, float8 -> uint8 codes

bf16 travels as uint16 bits (viewed through torch.int16 as torch.bfloat16), e4m3 / e5m2 /
e8m0 as uint8 codes (viewed as torch.float8_e4m3fn / float8_e5m2 / float8_e8m0fnu, where
this torch has them), the other dtypes as themselves. Case.judge takes torch tensors
directly (converted on the CPU with from_torch).
"""
import importlib
from typing import Any

import numpy as np

from .dtypes import as_form

_TORCH_NAMES = {
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8", "int32": "int32",
    "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e8m0": "float8_e8m0fnu",
}
_VIEWED = {"bf16": np.int16, "e4m3": np.uint8, "e5m2": np.uint8, "e8m0": np.uint8}


def torch_module() -> Any:
    """torch, or ImportError saying how to install it."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise ImportError("ulpgym.torch needs torch, which this python lacks "
                          "(pip install torch, or Debian: apt-get install python3-torch)") from exc


def torch_dtype(dtype: str) -> Any:
    """The torch dtype of a ulpgym dtype; TypeError when this torch lacks it (float8 before 2.1)."""
    torch = torch_module()
    if dtype not in _TORCH_NAMES:
        raise ValueError(f"unknown ulpgym dtype {dtype!r}")
    found = getattr(torch, _TORCH_NAMES[dtype], None)
    if found is None:
        raise TypeError(f"torch {torch.__version__} has no torch.{_TORCH_NAMES[dtype]} for {dtype}: "
                        f"use the uint8 codes (ulpgym.decode gives their values)")
    return found


def to_torch(array: Any, dtype: str, device: Any = None) -> Any:
    """An array in dtype's documented form as a torch tensor of dtype's torch type, on device."""
    torch = torch_module()
    a = np.array(as_form(array, dtype, "to_torch"), copy=True)  # writable, C order, owned by the tensor
    if dtype in _VIEWED:
        t = torch.from_numpy(a.view(_VIEWED[dtype])).view(torch_dtype(dtype))
    else:
        t = torch.from_numpy(a)
    return t if device is None else t.to(device)


def from_torch(tensor: Any) -> np.ndarray:
    """A tensor as a numpy array on the CPU: bfloat16 as uint16 bits, float8 as uint8 codes,
    other dtypes as themselves (C order)."""
    torch = torch_module()
    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if "float8" in str(t.dtype):
        return t.view(torch.uint8).numpy()
    return t.numpy()
