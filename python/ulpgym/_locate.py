"""Where libulpgym.so is: the search order of the Python package, as a pure function.

1. $ULPGYM_LIB, a file;
2. the `ulpgym` program ($ULPGYM_BIN, else the one on $PATH), its real path: the
   library beside it (a build folder) or in ../lib (an install prefix);
3. a source checkout: the package imported from python/ulpgym/ of the tree (beside
   python/pyproject.toml) uses ../../build/libulpgym.so; an installed copy of the package
   source (PREFIX/share/ulpgym/python/ulpgym) uses PREFIX/lib. An installed wheel has no
   such place: it relies on 1 or 2.

find_library() returns the path found and every place it tried, so the error of a failed
search names them all (errors.LibraryNotFoundError).
"""
import os
import shutil
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

LIB_NAME = "libulpgym.so"
PREFIX_LIB_DIRS = ("lib", "lib64")


def _program_candidates(program: str) -> List[Path]:
    """The library beside a ulpgym program (build folder) or in its prefix's lib/."""
    real = Path(os.path.realpath(program))
    found = [real.parent / LIB_NAME]
    found += [real.parent.parent / d / LIB_NAME for d in PREFIX_LIB_DIRS]
    return found


def _program(env: Mapping[str, str]) -> Tuple[Optional[str], str]:
    """The ulpgym program to start from and how it was named (for the message)."""
    given = env.get("ULPGYM_BIN")
    if given:
        return given, f"$ULPGYM_BIN={given}"
    on_path = shutil.which("ulpgym", path=env.get("PATH", os.defpath))
    if on_path:
        return on_path, f"ulpgym on PATH ({on_path})"
    return None, "ulpgym on PATH (none)"


def _tree_candidates(package_dir: Path) -> List[Path]:
    """A source checkout's build folder, or an installed prefix's lib/."""
    pkg = package_dir.resolve()
    src = pkg.parent  # python/, holding pyproject.toml, when this is not an installed wheel
    if src.name != "python" or not (src / "pyproject.toml").is_file():
        return []
    if src.parent.name == "ulpgym" and src.parent.parent.name == "share":
        prefix = src.parent.parent.parent  # PREFIX/share/ulpgym/python/ulpgym
        return [prefix / d / LIB_NAME for d in PREFIX_LIB_DIRS]
    return [src.parent / "build" / LIB_NAME]


def find_library(env: Mapping[str, str], package_dir: Path) -> Tuple[Optional[Path], List[str]]:
    """(the library's path or None, what was tried, one entry per place)."""
    tried: List[str] = []
    explicit = env.get("ULPGYM_LIB")
    if explicit:
        if Path(explicit).is_file():
            return Path(explicit), tried
        tried.append(f"$ULPGYM_LIB={explicit} (no such file)")
        return None, tried  # an explicit choice is never silently replaced
    tried.append("$ULPGYM_LIB (unset)")
    program, named = _program(env)
    if program is not None:
        for cand in _program_candidates(program):
            if cand.is_file():
                return cand, tried
        tried.append(f"{named}: no {LIB_NAME} beside it or in its prefix's lib/")
    else:
        tried.append(named)
    for cand in _tree_candidates(package_dir):
        if cand.is_file():
            return cand, tried
        tried.append(f"{cand} (no such file)")
    return None, tried


def not_found_message(tried: List[str]) -> str:
    """The error text of a failed search: what was tried and how to fix it."""
    return (f"{LIB_NAME} not found; tried: " + "; ".join(tried) + ". Fix: build it (./scripts/build.sh "
            f"gives build/{LIB_NAME} and build/ulpgym), or install ulpgym (cmake --install build --prefix P) "
            f"and put P/bin on PATH, or set ULPGYM_LIB=/path/to/{LIB_NAME}")
