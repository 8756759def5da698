"""The ctypes binding of libulpgym.so (include/ulpgym/ulpgym.h, API version 1).

The library is found (_locate.find_library) and loaded on first use, never at import, so
`import ulpgym` works without it and the first call that needs it raises
LibraryNotFoundError with what was tried. The helpers turn the header's conventions into
Python: malloc'd answers are copied out and freed with ulpgym_free, a NULL or negative
return with *err set becomes EngineError carrying the engine's message.
"""
import ctypes
import json
import os
from ctypes import POINTER, c_char_p, c_double, c_int, c_long, c_size_t, c_void_p
from pathlib import Path
from typing import Any, Callable, Optional

from . import _locate
from .errors import EngineError, LibraryNotFoundError

API_VERSION = 1
ENC_NATIVE = 0
ENC_F64 = 1

_ERR = POINTER(c_void_p)
# name: (restype, argtypes); char* answers are c_void_p so that they can be freed
_PROTOTYPES = {
    "ulpgym_api_version": (c_int, []),
    "ulpgym_version": (c_char_p, []),
    "ulpgym_free": (None, [c_void_p]),
    "ulpgym_plan_cases": (c_void_p, [c_char_p, _ERR]),
    "ulpgym_find_case": (c_void_p, [c_char_p, c_char_p, c_char_p, _ERR]),
    "ulpgym_op_contract": (c_void_p, [c_char_p, _ERR]),
    "ulpgym_encode": (c_int, [c_char_p, POINTER(c_double), c_size_t, c_void_p, _ERR]),
    "ulpgym_decode": (c_int, [c_char_p, c_void_p, c_size_t, POINTER(c_double), _ERR]),
    "ulpgym_case_open": (c_void_p, [c_char_p, _ERR]),
    "ulpgym_case_close": (None, [c_void_p]),
    "ulpgym_case_describe": (c_void_p, [c_void_p]),
    "ulpgym_case_input": (c_void_p, [c_void_p, c_int, POINTER(c_size_t)]),
    "ulpgym_case_set_output": (c_int, [c_void_p, c_int, c_void_p, c_size_t, c_int, _ERR]),
    "ulpgym_case_set_status": (c_int, [c_void_p, c_int, c_char_p, _ERR]),
    "ulpgym_case_judge": (c_void_p, [c_void_p, c_char_p, _ERR]),
    "ulpgym_recorder_open": (c_void_p, [c_char_p, _ERR]),
    "ulpgym_recorder_run_id": (c_long, [c_void_p]),
    "ulpgym_recorder_add": (c_void_p, [c_void_p, c_void_p, _ERR]),
    "ulpgym_recorder_close": (c_int, [c_void_p, _ERR]),
}

_loaded: Optional[ctypes.CDLL] = None
_loaded_path: Optional[Path] = None


def _package_dir() -> Path:
    return Path(__file__).resolve().parent


def _bind(dll: ctypes.CDLL, path: Path) -> None:
    """Declares every prototype; a missing symbol means a library of another API."""
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(dll, name)
        except AttributeError:
            raise LibraryNotFoundError(f"{path} lacks {name}: not a libulpgym of API version {API_VERSION}")
        fn.restype = restype
        fn.argtypes = argtypes


def load() -> ctypes.CDLL:
    """The loaded library (found and checked on the first call)."""
    global _loaded, _loaded_path
    if _loaded is not None:
        return _loaded
    path, tried = _locate.find_library(os.environ, _package_dir())
    if path is None:
        raise LibraryNotFoundError(_locate.not_found_message(tried))
    try:
        dll = ctypes.CDLL(str(path))
    except OSError as exc:
        raise LibraryNotFoundError(f"cannot load {path}: {exc}") from exc
    _bind(dll, path)
    got = dll.ulpgym_api_version()
    if got != API_VERSION:
        raise LibraryNotFoundError(f"{path} is API version {got}; this package needs {API_VERSION} "
                                   f"(install the package and the library from the same ulpgym)")
    _loaded, _loaded_path = dll, path
    return dll


def library_path() -> Path:
    """The path of the library the package uses (loading it if needed)."""
    load()
    assert _loaded_path is not None
    return _loaded_path


def engine_version() -> str:
    """ulpgym_version(): "ulpgym VERSION (git REV, plugin ABI N, API N)"."""
    return load().ulpgym_version().decode()


def encode_arg(text: Optional[str]) -> Optional[bytes]:
    """A Python string as a C string (None stays NULL)."""
    return None if text is None else text.encode("utf-8")


def take_text(ptr: Optional[int]) -> str:
    """Copies out a malloc'd C string and frees it."""
    dll = load()
    try:
        return ctypes.string_at(ptr).decode("utf-8", errors="replace")
    finally:
        dll.ulpgym_free(ptr)


def _raise(err: c_void_p, what: str) -> None:
    message = take_text(err.value) if err.value else f"{what} failed (the engine gave no reason)"
    raise EngineError(message)


def _call(name: str, args: tuple, failed: Callable[[Any], bool]) -> Any:
    """Calls engine function name with args and a trailing char **err; EngineError (the
    engine's message) when failed(result); any message left beside a success is freed."""
    err = c_void_p()
    result = getattr(load(), name)(*args, ctypes.byref(err))
    if failed(result):
        _raise(err, name)
    if err.value:
        load().ulpgym_free(err.value)
    return result


def call_text(name: str, *args: Any) -> str:
    """Calls a function returning malloc'd text; EngineError on NULL."""
    return take_text(_call(name, args, lambda ptr: not ptr))


def call_json(name: str, *args: Any) -> Any:
    """call_text, parsed as JSON."""
    return json.loads(call_text(name, *args))


def call_status(name: str, *args: Any) -> int:
    """Calls a function returning 0 or negative; EngineError when negative."""
    return _call(name, args, lambda status: status < 0)


def call_handle(name: str, *args: Any) -> int:
    """Calls a constructor returning a handle; EngineError on NULL."""
    return _call(name, args, lambda handle: not handle)
