"""ulpgym: precision fuzzing of AI-accelerator operators against an MPFR oracle, from Python.

A ctypes binding of the engine's C library (libulpgym.so; include/ulpgym/ulpgym.h):
list a plan's cases, build each case's inputs bit for bit in this process, hand in the
outputs your kernel (numpy, torch, torch_npu, ...) computed, and get the verdict under
every standard, optionally recorded as a ulpgym run (`history`, `triage`). docs/PYTHON.md.

    import ulpgym
    for case in ulpgym.cases(op="rms_norm_rope", per_op=10):
        with case:
            verdict = case.judge(my_kernel(**case.inputs))
            print(verdict.line())

Names: cases, case, Case, contract, Verdict, Recorder, encode, decode, numpy_dtype,
library_path, engine_version, and the errors (UlpgymError, LibraryNotFoundError,
EngineError, VerdictFailure); ulpgym.torch holds the torch helpers. Importing the package
needs neither numpy nor the library: each is loaded on first use, with a clear error
when missing.
"""
import importlib
from pathlib import Path
from typing import Any

from .errors import EngineError, LibraryNotFoundError, UlpgymError, VerdictFailure

_LAZY = {
    "cases": "_case", "case": "_case", "Case": "_case", "contract": "_case",
    "Verdict": "verdict", "OutputVerdict": "verdict",
    "Recorder": "recorder",
    "encode": "dtypes", "decode": "dtypes", "numpy_dtype": "dtypes",
    "library_path": "_lib", "engine_version": "_lib",
}
_NEEDS_NUMPY = frozenset(("_case", "dtypes"))

__all__ = sorted(_LAZY) + ["EngineError", "LibraryNotFoundError", "UlpgymError", "VerdictFailure", "__version__"]


def _read_version() -> str:
    """The wheel's _version.py, else VERSION beside python/ or at the tree's root."""
    try:
        from ._version import version  # type: ignore  # written into the wheel by the build backend
        return version
    except ImportError:
        pass
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "VERSION", here.parent.parent / "VERSION"):
        if candidate.is_file():
            return candidate.read_text().strip()
    return "0+unknown"


__version__ = _read_version()


def _need_numpy(name: str) -> None:
    try:
        importlib.import_module("numpy")
    except ImportError as exc:
        raise ImportError(f"ulpgym.{name} needs numpy, which this python lacks "
                          f"(pip install numpy, or Debian: apt-get install python3-numpy)") from exc


def __getattr__(name: str) -> Any:
    """Loads the module that defines a public name on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        if name == "torch":
            return importlib.import_module(".torch", __name__)
        raise AttributeError(f"module 'ulpgym' has no attribute {name!r}")
    if module in _NEEDS_NUMPY:
        _need_numpy(name)
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | {"torch"})
