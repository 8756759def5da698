"""Outputs a kernel hands to Case.judge, checked and turned into what ulpgym_case_set_output reads.

Accepted: a dict name -> array, a sequence in the declared order, or one array for an op
with one output (or one required output). Each array is a numpy array (or anything
np.asarray takes) or a torch tensor (converted on the CPU), either in the output's
documented form (exact dtype match: passed as its own bits) or as floating values (passed
as float64; the engine refuses values that are not exactly of the output's dtype: round
on the device, or with ulpgym.encode). A None entry leaves an optional output unset.
Anything that does not fit raises ValueError naming the output.
"""
from typing import Any, Dict, List, NamedTuple, Tuple

import numpy as np

from . import _lib
from .dtypes import FLOATS, RAW_BITS, numpy_dtype


class OutputSpec(NamedTuple):
    """A declared output of a case: name, ulpgym dtype, shape, numpy form, optional."""
    index: int
    name: str
    dtype: str
    shape: Tuple[int, ...]
    npy_dtype: np.dtype
    optional: bool


def is_torch_tensor(x: Any) -> bool:
    """A torch tensor, recognised without importing torch."""
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def _single(outputs: Any) -> bool:
    return isinstance(outputs, np.ndarray) or is_torch_tensor(outputs) or np.isscalar(outputs)


def _names(declared: List[OutputSpec]) -> str:
    return ", ".join(o.name + (" (optional)" if o.optional else "") for o in declared)


def by_name(outputs: Any, declared: List[OutputSpec], op: str) -> Dict[str, Any]:
    """outputs as {declared name: value}, None entries dropped; ValueError for what does not fit."""
    if isinstance(outputs, dict):
        known = {o.name for o in declared}
        for name in outputs:
            if name not in known:
                raise ValueError(f"unknown output {name!r} of {op}: its outputs are {_names(declared)}")
        given = dict(outputs)
    elif _single(outputs):
        required = [o for o in declared if not o.optional]
        target = declared if len(declared) == 1 else required
        if len(target) != 1:
            raise ValueError(f"one array given, but {op} has the outputs {_names(declared)}: "
                             f"give a dict name -> array")
        given = {target[0].name: outputs}
    elif isinstance(outputs, (list, tuple)):
        if len(outputs) > len(declared):
            raise ValueError(f"{len(outputs)} outputs given, {op} declares {len(declared)}: {_names(declared)}")
        given = {o.name: v for o, v in zip(declared, outputs)}
    else:
        raise ValueError(f"outputs of {op}: a dict name -> array, a list in declared order or one array, "
                         f"not {type(outputs).__name__}")
    given = {k: v for k, v in given.items() if v is not None}
    missing = [o.name for o in declared if not o.optional and o.name not in given]
    if missing:
        raise ValueError(f"missing required output{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"of {op} (its outputs: {_names(declared)})")
    return given


def _as_numpy(value: Any) -> np.ndarray:
    if is_torch_tensor(value):
        from .torch import from_torch
        return from_torch(value)
    return np.asarray(value)


def encoded(value: Any, spec: OutputSpec) -> Tuple[np.ndarray, int]:
    """(C-order array, encoding) for one output; ValueError naming it when it cannot be."""
    a = _as_numpy(value)
    if a.shape != spec.shape:
        if a.size == int(np.prod(spec.shape)) and a.ndim != len(spec.shape):
            hint = f" (same element count: reshape it to {spec.shape})"
        else:
            hint = ""
        raise ValueError(f"output {spec.name}: shape {tuple(a.shape)}, the case declares {spec.shape}{hint}")
    if a.dtype == spec.npy_dtype:
        return np.ascontiguousarray(a), _lib.ENC_NATIVE
    if spec.dtype == "bf16" and a.dtype == np.dtype("<i2"):
        return np.ascontiguousarray(a.view(np.uint16)), _lib.ENC_NATIVE  # bfloat16 viewed as int16
    if a.dtype.kind == "f" or (a.dtype.kind in "iu" and spec.dtype not in FLOATS):
        return np.ascontiguousarray(a, dtype=np.float64), _lib.ENC_F64
    form = numpy_dtype(spec.dtype).str + (" raw bits" if spec.dtype in RAW_BITS else "")
    raise ValueError(f"output {spec.name} ({spec.dtype}): an array of {a.dtype} is neither its documented form "
                     f"({form}) nor floating values")
