"""The package's console commands: ulpgym-replay-numpy, ulpgym-replay-torch and ulpgym-py.

Each checks its dependencies before importing anything that needs them, so a python
without numpy or torch gets one line naming what is missing and how to install it, and
exit status 2, never a ModuleNotFoundError traceback.
"""
import importlib
import sys
from typing import List, Optional, Sequence

_INSTALL = {
    "numpy": "pip install numpy, or Debian: apt-get install python3-numpy",
    "torch": "pip install torch, or Debian: apt-get install python3-torch",
}


def missing(modules: Sequence[str]) -> Optional[str]:
    """The message for the first module of modules that cannot be imported, else None."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            broken = "" if getattr(exc, "name", None) == name else f": {exc}"  # installed, but fails to import
            return f"needs {name}, which {sys.executable} lacks ({_INSTALL.get(name, 'pip install ' + name)}){broken}"
    return None


def _refuse(prog: str, modules: Sequence[str]) -> bool:
    message = missing(modules)
    if message:
        print(f"{prog}: {message}", file=sys.stderr)
    return message is not None


def run_replay_numpy(argv: Optional[List[str]] = None, prog: str = "ulpgym-replay-numpy") -> int:
    """ulpgym-replay-numpy EXPORT_DIR: the numpy replay driver (ulpgym.replay_numpy)."""
    if _refuse(prog, ["numpy"]):
        return 2
    from . import replay_numpy
    return replay_numpy.main(sys.argv[1:] if argv is None else argv, prog=prog)


def run_replay_torch(argv: Optional[List[str]] = None, prog: str = "ulpgym-replay-torch",
                     search: Sequence[str] = ()) -> int:
    """ulpgym-replay-torch EXPORT_DIR OUT_DIR [...]: the torch replay driver (ulpgym.replay_torch)."""
    if _refuse(prog, ["numpy", "torch"]):
        return 2
    from . import replay_torch
    return replay_torch.main(sys.argv[1:] if argv is None else argv, prog=prog, search=search)


def replay_numpy() -> None:
    """Console entry point of ulpgym-replay-numpy."""
    sys.exit(run_replay_numpy())


def replay_torch() -> None:
    """Console entry point of ulpgym-replay-torch."""
    sys.exit(run_replay_torch())


def info(prog: str) -> int:
    """Versions, the library in use and the dependencies: what to paste into a bug report."""
    from . import __version__, _lib
    from .errors import LibraryNotFoundError
    print(f"ulpgym package {__version__} ({__file__.rsplit('/', 1)[0]})")
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    for name in ("numpy", "torch"):
        try:
            print(f"{name} {importlib.import_module(name).__version__}")
        except ImportError:
            print(f"{name}: not installed")
    try:
        print(f"library {_lib.library_path()}: {_lib.engine_version()}")
    except LibraryNotFoundError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """ulpgym-py [--version | info]: the package's version, or where everything it uses is."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from . import __version__
        print(f"ulpgym (python) {__version__}")
        return 0
    if args in ([], ["info"]):
        return info("ulpgym-py")
    print("usage: ulpgym-py [--version | info]", file=sys.stderr)
    return 2


def console_main() -> None:
    """Console entry point of ulpgym-py (and python -m ulpgym)."""
    sys.exit(main())
